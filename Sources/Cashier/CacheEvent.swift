/// What ``Cache/Configuration/onEvent`` receives, synchronously, on the thread that caused it.
public enum CacheEvent: Sendable {
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
    case failure(key: String?, error: CacheError)
    /// An entry stored under an older schema version was converted and rewritten.
    case migrated(key: String, from: Int?, to: Int?)
}

/// Why a stored entry was discarded.
public enum DiscardReason: Sendable, Equatable {
    /// Stored under another schema version, with no migration from it.
    case schemaMismatch(stored: Int?, expected: Int?)
    /// An unversioned key's entry written by another app version.
    case appVersionMismatch(stored: String?, current: String?)
    /// Stored as another type than the key's `Value`.
    case typeMismatch(stored: String, expected: String)
    /// A bad header, a checksum mismatch, or a truncated or extended file.
    case corrupt
    /// The payload no longer decodes as the key's `Value`.
    case undecodable
    /// Removed by ``Cache/removeExpired()`` or garbage collection after its lifespan ran out.
    case expired
    /// A migration was found but decoding the old payload or converting it threw.
    case migrationFailed
}
