import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension DiskStore {
    /// The identity of the folder at `path` in this process: the path with every symbolic
    /// link, `.` and `..` resolved by `realpath(3)` (stdlib.h) up to the deepest part that
    /// exists, the parts not made yet appended as spelled.
    ///
    /// Two spellings of one folder (a symbolic link to it, `/tmp` and `/private/tmp` on
    /// macOS) have one identity, so their caches share one ``Store``: locks, memory
    /// invalidation and observers. A path rather than a device and inode, because the
    /// folder usually does not exist yet when a cache is made (the first write creates it)
    /// and may be removed and made again under a new inode while caches use it: the
    /// identity must be fixed when the cache is made and stay right across both.
    static func resolvedPath(of path: String) -> String {
        var existing = path
        var missing: [String] = []
        while true {
            if let resolved = realpath(existing, nil) {
                defer { free(resolved) }
                let base = String(cString: resolved)
                return missing.reversed().reduce(base) { $0.hasSuffix("/") ? $0 + $1 : $0 + "/" + $1 }
            }
            let parent = (existing as NSString).deletingLastPathComponent
            guard !parent.isEmpty, parent != existing else { return path }
            missing.append((existing as NSString).lastPathComponent)
            existing = parent
        }
    }
}
