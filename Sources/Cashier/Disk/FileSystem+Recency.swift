#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension POSIXFileSystem {
    /// `utimensat(2)` with the modification time omitted.
    ///
    /// An explicit time is set whatever the mount's atime policy (`noatime`,
    /// `relatime`), and needs the file's owner, which Cashier's entries have. Entries
    /// are read with `O_NOATIME` where the system has it, so the kernel never moves the
    /// access time by itself: what Cashier sets is what the next launch reads.
    package func setAccessTime(_ path: String, to seconds: Double) throws(SystemError) {
        guard seconds.isFinite, abs(seconds) < 1e15 else {
            throw SystemError(code: EINVAL, operation: "utimensat", path: path)
        }
        let whole = seconds.rounded(.down)
        var times = [
            timespec(tv_sec: time_t(whole), tv_nsec: Int(((seconds - whole) * 1e9).rounded(.down))),
            timespec(tv_sec: 0, tv_nsec: Self.omitTime),
        ]
        guard utimensat(AT_FDCWD, path, &times, 0) == 0 else {
            throw SystemError(code: errno, operation: "utimensat", path: path)
        }
    }

    /// `UTIME_OMIT`, whose C definitions (a shift, a cast) Swift does not import.
    #if canImport(Darwin)
    private static let omitTime = -2
    #else
    private static let omitTime = (1 << 30) - 2
    #endif
}
