import CashierPlatform
import Foundation

/// A failed system call: which one, on what, and `errno`.
package struct SystemError: Error, Sendable, Hashable, CustomStringConvertible {
    package var code: Int32
    package var operation: String
    package var path: String
    /// Why the folder at `path` is refused (see `FolderTrust.swift`); `nil` for a failed call.
    package var refusal: String?

    package init(code: Int32, operation: String, path: String) {
        self.code = code
        self.operation = operation
        self.path = path
    }

    /// The folder at `path` is not trusted, for `reason` (no system call failed).
    package init(untrustedFolder path: String, reason: String) {
        self.init(code: EPERM, operation: "trust folder", path: path)
        refusal = reason
    }

    package var description: String {
        refusal ?? "\(operation) failed: \(String(cString: strerror(code))) (errno \(code))"
    }

    /// The ``CacheError`` a caller sees for this failure.
    func cacheError(key: String?) -> CacheError {
        if let refusal { return CacheError(kind: .untrustedFolder, key: key, path: path, message: refusal) }
        let kind: CacheError.Kind =
            switch code {
            case ENOSPC, EDQUOT, EFBIG: .noSpace
            case EACCES, EPERM, EROFS: .permissionDenied
            case ENOENT, ENOTDIR, EEXIST, EISDIR: .folderUnavailable
            case EBUSY: .busy
            default: .ioFailure
            }
        return CacheError(kind: kind, key: key, path: path, message: description, code: code)
    }
}

extension DiskTier.StoreNotice {
    /// The failure a cache reports for it: with no key when it concerns the folder's store; nil
    /// for an eviction, which is not one.
    package var cacheError: CacheError? {
        switch self {
        case .setAside(let setAside):
            CacheError(
                kind: .ioFailure, path: setAside.path,
                message:
                    "the store of small entries could not be used and was set aside "
                    + "(\(setAside.movedTo.map { "to \($0)" } ?? "deleted")): \(setAside.reason); "
                    + "its entries are gone and the cache goes on with a fresh store")
        case .unavailable(let reason):
            CacheError(
                kind: .ioFailure, message: "SQLite is unavailable (\(reason)): every entry is kept as a file")
        case .openFailed(let failure):
            failure.cacheError(key: nil)
        case .removalAwaitingRoom(let key, let failure):
            failure.cacheError(key: key)
        case .evictedForRoom:
            nil
        }
    }
}
