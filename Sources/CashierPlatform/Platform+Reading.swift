extension Platform {
    /// Flags every entry file is opened with for reading, on every platform:
    /// - `O_NONBLOCK`: a FIFO (or a device) planted where an entry would be opens at once
    ///   instead of waiting for a writer; on a regular file the flag changes nothing.
    /// - `O_NOFOLLOW`: a symbolic link in an entry's place fails (`ELOOP`) instead of
    ///   reading a file outside the folder.
    /// - `O_NOCTTY`: a terminal never becomes the process's controlling terminal.
    package static let readingFlags: Int32 = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY

    /// `O_NOATIME` on Linux, the C library's own (CCashierPlatform defines `_GNU_SOURCE` for it):
    /// reading is not a metadata write, and listing must not make entries look used. 0 on Apple
    /// platforms, which have no such flag: their file systems (APFS) do not update the access
    /// time on every read by default (`noatime`-like "strictatime" is off).
    package static let noAccessTime: Int32 = CCashierPlatform_O_NOATIME

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
