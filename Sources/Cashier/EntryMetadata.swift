import CashierEntryFormat

/// What Cashier knows of a stored entry besides its value.
struct EntryMetadata: Sendable, Hashable {
    var createdAt: Double
    var validatedAt: Double
    var lifespan: Lifespan
    var isLocked: Bool
    var schemaVersion: Int?
    var appVersion: String?
    var size: Int
    /// The entry's last use as far as it is known, for a ``Lifespan/sinceLastUse(_:)``
    /// lifespan (which runs from the later of this and `validatedAt`); `nil`: unknown,
    /// taken as `validatedAt`. Other lifespans ignore it.
    var lastUsedAt: Double?

    init(
        createdAt: Double, validatedAt: Double, lifespan: Lifespan, isLocked: Bool,
        schemaVersion: Int?, appVersion: String?, size: Int, lastUsedAt: Double? = nil
    ) {
        self.createdAt = createdAt
        self.validatedAt = validatedAt
        self.lifespan = lifespan
        self.isLocked = isLocked
        self.schemaVersion = schemaVersion
        self.appVersion = appVersion
        self.size = size
        self.lastUsedAt = lastUsedAt
    }

    @inline(__always)
    init(_ header: EntryHeader, size: Int, lastUsedAt: Double? = nil) {
        self.init(
            createdAt: header.createdAt, validatedAt: header.validatedAt, lifespan: header.lifespan,
            isLocked: header.isLocked, schemaVersion: header.schemaVersion,
            appVersion: header.appVersion, size: size, lastUsedAt: lastUsedAt)
    }

    /// When the entry expires, ignoring the lock.
    var expiresAt: Double? {
        lifespan.expiration(validatedAt: validatedAt, lastUsedAt: lastUsedAt)
    }

    /// The moment a ``Lifespan/sinceLastUse(_:)`` lifespan runs from: the later of the
    /// last use known and the last validation.
    var lastUse: Double { Lifespan.lastUse(validatedAt: validatedAt, lastUsedAt: lastUsedAt) }

    /// The moment after which the entry counts as expired: `nil` when locked or never.
    var expiryDeadline: Double? { isLocked ? nil : expiresAt }

    /// Whether an entry with this metadata is usable for a key of `schemaVersion` in a cache
    /// of `appVersion`: same schema version, and for unversioned keys the same app version.
    func matches(schemaVersion: Int?, appVersion: String?) -> Bool {
        self.schemaVersion == schemaVersion && (schemaVersion != nil || self.appVersion == appVersion)
    }

    func isExpired(at now: Double) -> Bool {
        guard let deadline = expiryDeadline else { return false }
        return now >= deadline
    }

    /// The moment a read at `now` records as the entry's last use: `now`, except that a read
    /// of an expired ``Lifespan/sinceLastUse(_:)`` entry leaves its last use where it was
    /// (a read never brings an expired entry back).
    func use(at now: Double) -> Double {
        lifespan.slidingSeconds != nil && isExpired(at: now) ? lastUse : now
    }
}
