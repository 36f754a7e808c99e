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

    /// A `timespec` as seconds since 1970.
    package static func seconds(_ time: timespec) -> Double {
        Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
