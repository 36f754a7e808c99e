extension Platform {
    /// Puts `source` in place of `destination`, atomically for readers; 0 or -1 with `errno`.
    package static func replace(_ source: String, _ destination: String) -> Int32 {
        #if canImport(Glibc) || canImport(Musl)
        // Replacing an existing file by rename makes ext4 (auto_da_alloc) allocate and start
        // writing the new file's blocks inside the call. Exchanging the two names and then
        // unlinking the old file is as atomic for readers and cheaper: 13 + 17 µs against
        // 70 µs measured on this project's machines. Where exchange is not possible (no
        // file to replace, a file system without it) a plain rename follows.
        // `renameat2(2)` and `RENAME_EXCHANGE` come from CCashierPlatform, which compiles them
        // with `_GNU_SOURCE` (`ENOSYS` from a kernel or C library without it: rename follows).
        let exchange = CCashierPlatform_RENAME_EXCHANGE
        if CCashierPlatform_renameat2(AT_FDCWD, source, AT_FDCWD, destination, exchange) == 0 {
            // The previous occupant, now under the temporary name. If it cannot be unlinked
            // (a folder in the entry's place), swap it back and fail as rename(2) would.
            guard unlink(source) != 0 else { return 0 }
            let code = errno
            _ = CCashierPlatform_renameat2(AT_FDCWD, source, AT_FDCWD, destination, exchange)
            errno = code
            return -1
        }
        #endif
        #if canImport(Darwin)
        // <stdio.h>: rename(2). A plain rename is atomic for readers on APFS and HFS+.
        return Darwin.rename(source, destination)
        #elseif canImport(Glibc)
        return Glibc.rename(source, destination)
        #else
        return Musl.rename(source, destination)
        #endif
    }

    /// Exchanges the files at `first` and `second` atomically (each name keeps a file
    /// throughout); 0, or -1 with `errno`: `ENOENT` when either is missing, `ENOTSUP` where the
    /// platform or file system cannot (the caller then renames). Linux only: `renameat2(2)`
    /// with `RENAME_EXCHANGE`; elsewhere replacing by rename costs nothing more.
    package static func exchange(_ first: String, _ second: String) -> Int32 {
        #if canImport(Glibc) || canImport(Musl)
        if CCashierPlatform_renameat2(AT_FDCWD, first, AT_FDCWD, second, CCashierPlatform_RENAME_EXCHANGE) == 0 {
            return 0
        }
        if errno == ENOSYS || errno == EINVAL { errno = ENOTSUP }
        return -1
        #else
        errno = ENOTSUP
        return -1
        #endif
    }
}
