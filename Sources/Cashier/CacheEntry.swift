import Foundation

/// A stored value with its metadata, as returned by ``Cache/entry(for:)`` even when expired.
///
/// ``Cache/entry(for:policy:fetch:)`` answers one too: for a fetched value, the
/// metadata is that of the entry it stored (see ``origin``).
public struct CacheEntry<Value: Codable & Sendable>: Sendable {
    /// The decoded value.
    public let value: Value
    /// When the value was written (a refresh keeps it; a new write starts it anew).
    public let createdAt: Date
    /// The last write or ``Cache/refresh(_:)``; `.seconds` lifespans run from here.
    public let validatedAt: Date
    /// When the entry expires, or `nil` for never. A locked entry keeps this date but does not expire.
    ///
    /// For a ``Lifespan/sinceLastUse(_:)`` lifespan, the lifespan after the entry's last
    /// use, which the read that answered this entry is when it found the entry valid.
    public let expiresAt: Date?
    /// Whether the entry is past `expiresAt` (never true for a locked entry).
    public let isExpired: Bool
    /// Whether the entry is locked (pinned) by ``Cache/lock(_:)``.
    public let isLocked: Bool
    /// The schema version the entry was written under.
    public let schemaVersion: Int?
    /// The app version the entry was written under.
    public let appVersion: String?
    /// Bytes the entry takes on disk, header included; 0 in a memory-only cache.
    public let size: Int
    /// Where the value came from: ``Origin/memory`` or ``Origin/disk`` for ``Cache/entry(for:)``,
    /// ``Origin/fetch`` for a value ``Cache/entry(for:policy:fetch:)`` fetched, ``Origin/shared``
    /// for one it found in the cache's ``SharedTier`` (<doc:OnAServer>).
    ///
    /// A fetched entry's metadata is that of the entry the fetch stored. When the
    /// write failed (the failure went to ``Cache/Configuration-swift.struct/onEvent``),
    /// it is what would have been stored, with a ``size`` of 0, and nothing is stored.
    public let origin: Origin
}

extension CacheEntry {
    /// The entry for `value` stored with `metadata`, judged expired or not at `now`.
    init(_ value: Value, metadata: EntryMetadata, origin: Origin, now: Double) {
        self.init(
            value: value, createdAt: Date(timeIntervalSince1970: metadata.createdAt),
            validatedAt: Date(timeIntervalSince1970: metadata.validatedAt),
            expiresAt: metadata.expiresAt.map { Date(timeIntervalSince1970: $0) },
            isExpired: metadata.isExpired(at: now), isLocked: metadata.isLocked,
            schemaVersion: metadata.schemaVersion, appVersion: metadata.appVersion, size: metadata.size,
            origin: origin)
    }
}

/// Counters kept since the ``Cache`` instance was made.
public struct CacheStatistics: Sendable, Hashable {
    /// Reads that returned a value.
    public var hits: Int = 0
    /// Reads that returned nothing (absent, expired, or discarded).
    public var misses: Int = 0
    /// Values written.
    public var writes: Int = 0
    /// Entries removed to keep within the size, count or free-space limits.
    public var evictions: Int = 0
    /// Entries removed because they could not be used (see ``DiscardReason``).
    public var discards: Int = 0

    /// Counters with the given values (all zero by default).
    public init(hits: Int = 0, misses: Int = 0, writes: Int = 0, evictions: Int = 0, discards: Int = 0) {
        self.hits = hits
        self.misses = misses
        self.writes = writes
        self.evictions = evictions
        self.discards = discards
    }
}
