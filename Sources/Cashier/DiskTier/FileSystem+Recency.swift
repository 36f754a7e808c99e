import CashierPlatform

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
            // UTIME_OMIT (<sys/stat.h>), from CCashierPlatform: Swift does not import the macro.
            timespec(tv_sec: 0, tv_nsec: CCashierPlatform_UTIME_OMIT),
        ]
        guard utimensat(AT_FDCWD, path, &times, 0) == 0 else {
            throw SystemError(code: errno, operation: "utimensat", path: path)
        }
    }
}
