import CashierEntryFormat
import Foundation

/// What the cache reads into an entry's header: its lifespan as the public `Lifespan`, when
/// it expires, and the cache's refusal of a value too large to store. The format module
/// (`CashierEntryFormat`) knows bytes; these know what they mean to a cache.
extension EntryHeader {
    package init(
        key: String, typeName: String, format: PayloadFormat, createdAt: Double, validatedAt: Double,
        lifespan: Lifespan, schemaVersion: Int?, appVersion: String?, isLocked: Bool, payloadLength: Int
    ) {
        self.init(
            key: key, typeName: typeName, format: format, createdAt: createdAt, validatedAt: validatedAt,
            storedLifespan: lifespan.stored, schemaVersion: schemaVersion, appVersion: appVersion,
            isLocked: isLocked, payloadLength: payloadLength)
    }

    /// The stored lifespan, as the cache's ``Lifespan``.
    package var lifespan: Lifespan {
        @inline(__always) get { Lifespan(stored: storedLifespan) }
        set { storedLifespan = newValue.stored }
    }

    /// The moment the entry expires, ignoring the lock; `nil` for never.
    ///
    /// `lastUsedAt` is the entry's last use, for a ``Lifespan/sinceLastUse(_:)`` lifespan:
    /// the file's access time (``FileInfo/accessedAt``), or later if the caller knows better;
    /// `nil` when unknown (the lifespan then runs from "validated at").
    package func expiresAt(lastUsedAt: Double?) -> Double? {
        lifespan.expiration(validatedAt: validatedAt, lastUsedAt: lastUsedAt)
    }

    /// Whether the entry counts as expired at `now`, last used at `lastUsedAt` (see
    /// ``expiresAt(lastUsedAt:)``): never when locked.
    package func isExpired(at now: Double, lastUsedAt: Double?) -> Bool {
        guard !isLocked, let expiresAt = expiresAt(lastUsedAt: lastUsedAt) else { return false }
        return now >= expiresAt
    }

    /// Throws unless an entry of this header (and its `payloadLength`) is one a read accepts:
    /// a header of at most `EntryHeader.maximumLength` bytes, an entry of at most `EntryHeader.maximumEntryLength`.
    ///
    /// - Throws: ``CacheError`` of kind ``CacheError/Kind/invalidValue`` naming the key and the limit.
    package func checkWritable() throws(CacheError) {
        let headerLength = length
        if headerLength > Self.maximumLength {
            throw CacheError(
                kind: .invalidValue, key: key,
                message:
                    "the entry's header would be \(headerLength) bytes (the key, type name and app version), more than the \(Self.maximumLength) bytes a header may hold"
            )
        }
        if payloadLength > Self.maximumEntryLength - headerLength {
            throw CacheError(
                kind: .invalidValue, key: key,
                message:
                    "the entry would be \(headerLength + payloadLength) bytes, more than the \(Self.maximumEntryLength) bytes (1 GiB) an entry may hold"
            )
        }
    }

}

extension Lifespan {
    /// The lifespan as an entry's header stores it.
    var stored: StoredLifespan {
        switch self {
        case .never: .never
        case .seconds(let seconds): .seconds(seconds)
        case .until(let date): .until(date.timeIntervalSince1970)
        case .sinceLastUse(let seconds): .sinceLastUse(seconds)
        }
    }

    /// The lifespan a header stores.
    @inline(__always)
    init(stored: StoredLifespan) {
        switch stored {
        case .never: self = .never
        case .seconds(let seconds): self = .seconds(seconds)
        case .until(let date): self = .until(Date(timeIntervalSince1970: date))
        case .sinceLastUse(let seconds): self = .sinceLastUse(seconds)
        }
    }
}
