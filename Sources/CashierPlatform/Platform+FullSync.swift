extension Platform {
    /// Flushes a file (`dataOnly`: its data and length) or a folder (its entries: the names
    /// created, renamed and removed) to stable storage; returns 0 or -1 with `errno` set.
    ///
    /// On Apple platforms `fsync` hands the data to the drive but does not make the drive
    /// write its cache to the media; `F_FULLFSYNC` does, for files and folders alike
    /// (<sys/fcntl.h>: `F_FULLFSYNC`, "fsync + ask the drive to flush to the media"). Some
    /// file systems (network, FAT) refuse it: `fsync` is the fallback. Linux: `fdatasync`
    /// for a file's data, since its other metadata does not matter to a reader; `fsync`
    /// for a folder.
    package static func synchronize(_ fd: Int32, dataOnly: Bool) -> Int32 {
        #if canImport(Darwin)
        return fcntl(fd, F_FULLFSYNC) == 0 ? 0 : fsync(fd)
        #else
        return dataOnly ? fdatasync(fd) : fsync(fd)
        #endif
    }
}
