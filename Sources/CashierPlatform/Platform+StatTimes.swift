extension Platform {
    /// The access and modification times of a `stat`, as seconds since 1970.
    package static func times(_ st: stat) -> (accessed: Double, modified: Double) {
        #if canImport(Darwin)
        // <sys/stat.h>: struct stat's st_atimespec / st_mtimespec (struct timespec).
        return (seconds(st.st_atimespec), seconds(st.st_mtimespec))
        #else
        return (seconds(st.st_atim), seconds(st.st_mtim))
        #endif
    }

    /// The status-change time of a `stat` (`st_ctime`: set by the file's creation, a rename of
    /// it, a change of its links), in nanoseconds since 1970: with the device and inode, it tells
    /// one file from a later one that was given the inode number a removed file had.
    package static func changeNanoseconds(_ st: stat) -> Int64 {
        #if canImport(Darwin)
        // <sys/stat.h>: struct stat's st_ctimespec (struct timespec).
        let time = st.st_ctimespec
        #else
        let time = st.st_ctim
        #endif
        return Int64(time.tv_sec) &* 1_000_000_000 &+ Int64(time.tv_nsec)
    }

    /// A `timespec` as seconds since 1970.
    package static func seconds(_ time: timespec) -> Double {
        Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
