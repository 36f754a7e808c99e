/// What went wrong, to which key, and why.
///
/// Writes throw it; reads never do (what is wrong on disk is a miss and a
/// ``CacheEvent/discarded(key:reason:)`` event). Match on ``kind``:
///
/// ```swift
/// do { try cache.set(user, for: Keys.profile) }
/// catch let error as CacheError where error.kind == .noSpace { … }
/// ```
public struct CacheError: Error, Sendable, Hashable {
    /// The category of a failure: what a caller can act on.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        /// The kind's name in words, as printed by ``CacheError/description``.
        public let rawValue: String
        /// A kind with this name; the static members are the kinds Cashier reports.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The kind's name in words.
        public var description: String { rawValue }

        /// The value could not be encoded with the key's codec.
        public static let encodingFailed = Kind(rawValue: "encoding failed")
        /// The value is not acceptable for this accessor (for example bytes that are not a PNG).
        public static let invalidValue = Kind(rawValue: "invalid value")
        /// The cache folder could not be created or used (a file is in its place, a parent is missing).
        public static let folderUnavailable = Kind(rawValue: "folder unavailable")
        /// The file system refused for lack of permission or because it is read-only.
        public static let permissionDenied = Kind(rawValue: "permission denied")
        /// The cache folder is owned by another user, or others (or, unless
        /// ``Cache/Configuration-swift.struct/sharing`` is ``Cache/Sharing/group``, its group)
        /// can write it, or it is a symbolic link another user owns: anyone who can write it
        /// could plant entries. Writes throw it, reads miss and report it as a
        /// ``CacheEvent/failure(key:error:)``; the message says who owns the folder and its mode.
        public static let untrustedFolder = Kind(rawValue: "untrusted folder")
        /// The volume is full or a quota is exceeded.
        public static let noSpace = Kind(rawValue: "no space")
        /// Any other input/output failure.
        public static let ioFailure = Kind(rawValue: "I/O failure")
        /// A stored payload did not decode as the key's value type, or its migration threw.
        ///
        /// Reported through events only, right after the ``CacheEvent/discarded(key:reason:)``
        /// it explains; the message names the field (its coding path) and what was expected.
        public static let decodingFailed = Kind(rawValue: "decoding failed")
        /// The fetch closure of ``Cache/value(for:lifespan:fetch:)`` threw (reported through events only).
        public static let fetchFailed = Kind(rawValue: "fetch failed")
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

    /// The same error, about `key`.
    func about(key: String) -> CacheError {
        CacheError(kind: kind, key: key, path: path, message: message, code: code)
    }

    /// Lets `catch CacheError.Kind.noSpace`-style patterns match an error by kind.
    public static func ~= (kind: Kind, error: CacheError) -> Bool { error.kind == kind }
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
