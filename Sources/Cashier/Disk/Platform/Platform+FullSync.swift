#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Platform {
    /// Flushes a file's data to stable storage; returns 0 or -1 with `errno` set.
    ///
    /// On Apple platforms `fsync` hands the data to the drive but does not make the drive
    /// write its cache to the media; `F_FULLFSYNC` does (<sys/fcntl.h>: `F_FULLFSYNC`,
    /// "fsync + ask the drive to flush to the media"). Some file systems (network,
    /// FAT) refuse it: `fsync` is the fallback. Linux: `fdatasync`, since the file's
    /// metadata other than its length does not matter to a reader.
    static func synchronizeData(_ fd: Int32) -> Int32 {
        #if canImport(Darwin)
        return fcntl(fd, F_FULLFSYNC) == 0 ? 0 : fsync(fd)
        #else
        return fdatasync(fd)
        #endif
    }

    /// Flushes a folder (its entries: the names created, renamed and removed) to stable storage.
    ///
    /// On Apple platforms the same `F_FULLFSYNC`, with the same `fsync` fallback, so that a
    /// `.synchronized` write's rename reaches the media, not only the drive's cache.
    static func synchronizeFolder(_ fd: Int32) -> Int32 {
        #if canImport(Darwin)
        return fcntl(fd, F_FULLFSYNC) == 0 ? 0 : fsync(fd)
        #else
        return fsync(fd)
        #endif
    }
}
