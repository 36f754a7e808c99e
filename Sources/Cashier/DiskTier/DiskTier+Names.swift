import CashierEntryFormat
import CashierPlatform
import Foundation

/// Names in a cache folder: entry files, temporaries, the lock file, and the folder's own identity.
extension DiskTier {
    /// The file an entry for `key` lives in: 32 hex digits of two XXH64 hashes, then `.cache`.
    ///
    /// Hashed from ``canonicalSpelling(of:)``, so keys equal as Swift strings share one file.
    package static func fileName(for key: String) -> String {
        let key = canonicalSpelling(of: key)
        let high = XXHash64.hash(key)
        let low = XXHash64.hash(key, seed: 0x9E37_79B9_7F4A_7C15)
        // Plain loops over the two words and the suffix's bytes: an array literal of the words
        // and `enumerated()` over the suffix's UTF-8 cost a read more than the two hashes.
        return String(unsafeUninitializedCapacity: 38) { buffer in
            let digits: StaticString = "0123456789abcdef"
            let suffix: StaticString = ".cache"
            digits.withUTF8Buffer { digits in
                for i in 0..<16 {
                    let shift = UInt64(60 - 4 * i)
                    buffer[i] = digits[Int((high >> shift) & 0xF)]
                    buffer[16 + i] = digits[Int((low >> shift) & 0xF)]
                }
            }
            suffix.withUTF8Buffer { suffix in
                for i in 0..<suffix.count { buffer[32 + i] = suffix[i] }
            }
            return 38
        }
    }

    /// Whether `name` is an entry file name (as opposed to a temporary, the lock file or a stranger).
    package static func isEntryFileName(_ name: String) -> Bool {
        let utf8 = name.utf8
        guard utf8.count == 38, name.hasSuffix(".cache") else { return false }
        return utf8.prefix(32).allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// The entry file names the folder holds now; nil when it cannot be listed.
    func entryFileNames() -> [String]? {
        (try? fileSystem.contentsOfDirectory(folder))?.filter(Self.isEntryFileName)
    }

    package static let temporaryPrefix = ".tmp-"
    package static let lockFileName = ".lock"

    package func path(_ name: String) -> String { folder + "/" + name }

    /// The identity of the folder at `path` in this process: the path with every symbolic
    /// link, `.` and `..` resolved by `realpath(3)` (stdlib.h) up to the deepest part that
    /// exists, the parts not made yet appended as spelled.
    ///
    /// Two spellings of one folder (a symbolic link to it, `/tmp` and `/private/tmp` on
    /// macOS) have one identity, so their caches share one ``FolderState``: locks, memory
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
