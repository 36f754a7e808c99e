/// What went wrong, to which key, and why.
///
/// Writes throw it; reads never do (what is wrong on disk is a miss and a
/// ``CacheEvent/discarded(key:reason:)`` event). Match on ``kind``, in a `catch`
/// clause by the kind alone:
///
/// ```swift
/// do { try cache.set(user, for: Keys.profile) }
/// catch CacheError.Kind.noSpace { … }
/// catch let error as CacheError where error.kind == .permissionDenied { … }
/// ```
public struct CacheError: Error, Sendable, Hashable {
    /// The category of a failure: what a caller can act on.
    ///
    /// A kind is its token, a stable identifier such as `"noSpace"` (the static member's
    /// name): rewording what a kind prints never changes which kinds are equal. Match one
    /// in a `catch` clause, as swift-system's `Errno` does:
    ///
    /// ```swift
    /// do { try cache.set(user, for: Keys.profile) }
    /// catch CacheError.Kind.noSpace { … }
    /// ```
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        /// The kind's stable token, such as `"noSpace"`: what equality and hashing compare.
        public let rawValue: String
        /// The kind with this token; the static members are the kinds Cashier reports.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The kind's name in words, as printed by ``CacheError/description``
        /// (for a token Cashier does not define, the token itself).
        public var description: String { Self.words[rawValue] ?? rawValue }

        /// The value could not be encoded with the key's codec.
        public static let encodingFailed = Kind(rawValue: "encodingFailed")
        /// The value is not acceptable for this accessor (for example bytes that are not a PNG).
        public static let invalidValue = Kind(rawValue: "invalidValue")
        /// The cache folder could not be created or used (a file is in its place, a parent is missing).
        public static let folderUnavailable = Kind(rawValue: "folderUnavailable")
        /// The file system refused for lack of permission or because it is read-only.
        public static let permissionDenied = Kind(rawValue: "permissionDenied")
        /// The cache folder is owned by another user, or others (or, unless
        /// ``Cache/Configuration-swift.struct/sharing`` is ``Cache/Sharing/group``, its group)
        /// can write it, or it is a symbolic link another user owns: anyone who can write it
        /// could plant entries. Writes throw it, reads miss and report it as a
        /// ``CacheEvent/failure(key:error:)``; the message says who owns the folder and its mode.
        public static let untrustedFolder = Kind(rawValue: "untrustedFolder")
        /// The volume is full or a quota is exceeded.
        public static let noSpace = Kind(rawValue: "noSpace")
        /// Any other input/output failure.
        public static let ioFailure = Kind(rawValue: "ioFailure")
        /// Another process sharing the folder held the folder's store past
        /// ``Cache/Configuration-swift.struct/busyTimeout``: the write did nothing, what was
        /// stored is as it was, and trying again later may succeed. Not an I/O fault.
        public static let busy = Kind(rawValue: "busy")
        /// A stored payload did not decode as the key's value type, or its migration threw.
        ///
        /// Reported through events only, right after the ``CacheEvent/discarded(key:reason:)``
        /// it explains; the message names the field (its coding path) and what was expected.
        public static let decodingFailed = Kind(rawValue: "decodingFailed")
        /// The fetch closure of ``Cache/value(for:lifespan:fetch:)`` threw (reported through events only).
        public static let fetchFailed = Kind(rawValue: "fetchFailed")
        /// A call of the cache's ``SharedTier`` threw, or took longer than
        /// ``Cache/Configuration-swift.struct/sharedTierTimeout``: a read went on as a miss
        /// there, a write or removal reached the local tiers only. Reported through events only.
        public static let sharedTierUnavailable = Kind(rawValue: "sharedTierUnavailable")

        /// What each of Cashier's kinds prints, by token.
        private static let words: [String: String] = [
            "encodingFailed": "encoding failed", "invalidValue": "invalid value",
            "folderUnavailable": "folder unavailable", "permissionDenied": "permission denied",
            "untrustedFolder": "untrusted folder", "noSpace": "no space", "ioFailure": "I/O failure",
            "busy": "busy (another process holds the store)",
            "decodingFailed": "decoding failed", "fetchFailed": "fetch failed",
            "sharedTierUnavailable": "shared tier unavailable",
        ]

        /// Whether `error` is a ``CacheError`` of this kind: lets `catch CacheError.Kind.noSpace`
        /// (and `case .noSpace` in a `switch` over any error) match by kind.
        public static func ~= (kind: Kind, error: any Error) -> Bool {
            (error as? CacheError)?.kind == kind
        }
    }

    /// The category of the failure.
    public let kind: Kind
    /// The key's name, when the failure concerns one key.
    public let key: String?
    /// The file or folder involved, when there is one.
    public let path: String?
    /// The underlying cause in words (an `errno` string, an encoder's message).
    public let message: String
    /// The `errno` value behind the failure, when it came from a system call.
    public let code: Int32?

    /// An error of `kind` about `key` and `path`, with the cause in words.
    public init(kind: Kind, key: String? = nil, path: String? = nil, message: String, code: Int32? = nil) {
        self.kind = kind
        self.key = key
        self.path = path
        self.message = message
        self.code = code
    }

}

extension CacheError: CustomStringConvertible {
    /// What happened, to which key and file, and why, in one line.
    public var description: String {
        var text = "Cashier: \(kind)"
        if let key { text += " for key \"\(key.debugDescription.dropFirst().dropLast())\"" }
        if let path { text += " at \(path)" }
        return text + ": \(message)"
    }
}
