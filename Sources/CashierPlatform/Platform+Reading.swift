#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Platform {
    /// Flags every entry file is opened with for reading, on every platform:
    /// - `O_NONBLOCK`: a FIFO (or a device) planted where an entry would be opens at once
    ///   instead of waiting for a writer; on a regular file the flag changes nothing.
    /// - `O_NOFOLLOW`: a symbolic link in an entry's place fails (`ELOOP`) instead of
    ///   reading a file outside the folder.
    /// - `O_NOCTTY`: a terminal never becomes the process's controlling terminal.
    static let readingFlags: Int32 = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY

    #if os(Linux) && (arch(x86_64) || arch(arm64) || arch(i386) || arch(arm))
    /// `O_NOATIME`, which Glibc's Swift module does not export (it needs `_GNU_SOURCE`);
    /// this value holds on x86 and ARM Linux. Reading is not a metadata write, and
    /// listing must not make entries look used.
    static let noAccessTime: Int32 = 0o1000000
    #else
    /// Apple platforms have no `O_NOATIME`: their file systems (APFS) do not update the
    /// access time on every read by default (`noatime`-like "strictatime" is off).
    static let noAccessTime: Int32 = 0
    #endif

    /// Opens `path` for reading with ``readingFlags`` and, where allowed, ``noAccessTime``
    /// (the library and the `cashier-tool` inspector alike); -1 with `errno` on failure.
    package static func openForReading(_ path: String) -> Int32 {
        if noAccessTime != 0 {
            let fd = open(path, readingFlags | noAccessTime)
            // O_NOATIME needs the file's owner; other users' files open without it.
            if fd >= 0 || errno != EPERM { return fd }
        }
        return open(path, readingFlags)
    }
}
