/// What ``Cache/Configuration/onEvent`` receives, synchronously, on the thread that caused it.
public enum CacheEvent: Sendable, Hashable {
    /// A read returned a value.
    case hit(key: String)
    /// A read found nothing usable.
    case miss(key: String)
    /// A value was written; `bytes` is its size on disk (0 in memory-only caches).
    case write(key: String, bytes: Int)
    /// A stored entry could not be used and was removed.
    case discarded(key: String, reason: DiscardReason)
    /// An entry was removed to respect a size, count or free-space limit.
    case evicted(key: String, bytes: Int)
    /// Something failed; reads report failures here instead of throwing.
    ///
    /// Also follows a ``discarded(key:reason:)`` for ``DiscardReason/undecodable`` or
    /// ``DiscardReason/migrationFailed``, with kind ``CacheError/Kind/decodingFailed``
    /// and the decoder's complaint as its message.
    case failure(key: String?, error: CacheError)
    /// An entry stored under an older schema version was converted and rewritten.
    case migrated(key: String, from: Int?, to: Int?)
}

/// Why a stored entry was discarded.
public enum DiscardReason: Sendable, Hashable {
    /// Stored under another schema version, with no migration from it.
    case schemaMismatch(stored: Int?, expected: Int?)
    /// An unversioned key's entry written by another app version.
    case appVersionMismatch(stored: String?, current: String?)
    /// Stored as another type than the key's `Value`.
    case typeMismatch(stored: String, expected: String)
    /// A bad header, a checksum mismatch, or a truncated or extended file.
    case corrupt
    /// The payload no longer decodes as the key's `Value`.
    ///
    /// A ``CacheEvent/failure(key:error:)`` of kind ``CacheError/Kind/decodingFailed``
    /// follows the discard and says which field failed and what was expected.
    case undecodable
    /// Removed by ``Cache/removeExpired()`` or garbage collection after its lifespan ran out.
    case expired
    /// A migration was found but decoding the old payload or converting it threw.
    ///
    /// A ``CacheEvent/failure(key:error:)`` of kind ``CacheError/Kind/decodingFailed``
    /// follows the discard and carries what the migration threw.
    case migrationFailed
}

extension CacheEvent: CustomStringConvertible {
    /// The event as a plain sentence, such as
    /// `discarded "profile": stored under schema version none, the key expects 1`.
    public var description: String {
        switch self {
        case .hit(let key): "hit \(key.debugDescription)"
        case .miss(let key): "miss \(key.debugDescription)"
        case .write(let key, let bytes): "wrote \(key.debugDescription): \(bytes) bytes"
        case .discarded(let key, let reason): "discarded \(key.debugDescription): \(reason)"
        case .evicted(let key, let bytes): "evicted \(key.debugDescription): \(bytes) bytes"
        case .failure(let key, let error):
            "failed\(key.map { " " + $0.debugDescription } ?? ""): \(error.kind)\(error.path.map { " at " + $0 } ?? ""): \(error.message)"
        case .migrated(let key, let from, let to):
            "migrated \(key.debugDescription) from schema version \(DiscardReason.spell(from)) to \(DiscardReason.spell(to))"
        }
    }
}

extension DiscardReason: CustomStringConvertible {
    /// Why the entry was discarded, as a plain sentence, such as
    /// `stored under schema version none, the key expects 1`.
    public var description: String {
        switch self {
        case .schemaMismatch(let stored, let expected):
            "stored under schema version \(Self.spell(stored)), the key expects \(Self.spell(expected))"
        case .appVersionMismatch(let stored, let current):
            "written by app version \(Self.spell(stored)), the app is now \(Self.spell(current))"
        case .typeMismatch(let stored, let expected):
            "stored as \(stored), the key's type is \(expected)"
        case .corrupt:
            "the file is damaged (bad header, checksum mismatch, or wrong length)"
        case .undecodable:
            "the payload no longer decodes as the key's type"
        case .expired:
            "its lifespan ran out"
        case .migrationFailed:
            "its migration threw"
        }
    }

    /// A schema version in words: the number, or "none".
    static func spell(_ version: Int?) -> String { version.map(String.init) ?? "none" }

    /// An app version in words: quoted, or "none".
    static func spell(_ version: String?) -> String { version?.debugDescription ?? "none" }
}
