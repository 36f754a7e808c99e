extension Platform {
    /// Bytes available to this user on the volume holding `path`, clamped to `Int.max`.
    ///
    /// The product is taken in `UInt64`: where `Int` is 32 bits (watchOS on arm64_32),
    /// blocks times block size overflows it once more than 2 GiB are free.
    package static func availableBytes(_ path: String) -> Int? {
        #if canImport(Darwin)
        // <sys/mount.h>: statfs's f_bavail is uint64_t and f_bsize uint32_t. (statvfs's
        // f_bavail is only an unsigned int there, and f_frsize an unsigned long, 32 bits on
        // arm64_32.)
        var fs = statfs()
        guard statfs(path, &fs) == 0 else { return nil }
        let (bytes, overflow) = UInt64(fs.f_bavail).multipliedReportingOverflow(by: UInt64(fs.f_bsize))
        #else
        var fs = statvfs()
        guard statvfs(path, &fs) == 0 else { return nil }
        let (bytes, overflow) = UInt64(fs.f_bavail).multipliedReportingOverflow(by: UInt64(fs.f_frsize))
        #endif
        return overflow ? Int.max : Int(clamping: bytes)
    }
}
