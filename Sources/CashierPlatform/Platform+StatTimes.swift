#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension FileInfo {
    /// What Cashier uses of a `stat`: sizes clamp instead of trapping where `Int` is 32 bits.
    package init(_ st: stat) {
        #if canImport(Darwin)
        // <sys/stat.h>: struct stat's st_atimespec / st_mtimespec (struct timespec).
        let access = Platform.seconds(st.st_atimespec)
        let modification = Platform.seconds(st.st_mtimespec)
        #else
        let access = Platform.seconds(st.st_atim)
        let modification = Platform.seconds(st.st_mtim)
        #endif
        self.init(
            // off_t is 64 bits everywhere; a larger file than `Int` holds (watchOS) is never an entry.
            size: Int(clamping: st.st_size), accessedAt: access, modifiedAt: modification,
            isRegularFile: st.st_mode & S_IFMT == S_IFREG, isDirectory: st.st_mode & S_IFMT == S_IFDIR, owner: st.st_uid
        )
    }
}

extension Platform {
    /// A `timespec` as seconds since 1970.
    static func seconds(_ time: timespec) -> Double {
        Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
