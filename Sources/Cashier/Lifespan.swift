import Foundation

/// How long a stored value stays valid.
///
/// Precedence when a value is written: the `lifespan` argument of
/// ``Cache/set(_:for:lifespan:)``, then the key's ``CacheKey/lifespan``, then
/// ``Cache/Configuration/defaultLifespan``. A locked entry never expires.
///
/// A lifespan that does not end (`.seconds(.infinity)`, `.sinceLastUse(.infinity)`,
/// `.until` an infinite date) is stored as ``never``; one that ended infinitely long
/// ago (`-infinity`) as ``until(_:)`` `Date.distantPast`, already expired. `set`
/// refuses a NaN lifespan with a ``CacheError`` of kind ``CacheError/Kind/invalidValue``.
public enum Lifespan: Sendable, Hashable {
    /// Valid until removed.
    case never
    /// Valid for this many seconds after the last validation (a write or ``Cache/refresh(_:)``).
    case seconds(TimeInterval)
    /// Valid until this moment, whenever it was written.
    case until(Date)
    /// Valid until this many seconds pass without a use: SPTPersistentCache's default
    /// expiry, which every read of an entry pushes back.
    ///
    /// The entry expires this long after its last use, by
    /// ``Cache/Configuration-swift.struct/now``: the last read that found it valid
    /// (``Cache/value(for:)``, ``Cache/entry(for:)``, ``Cache/contains(_:)``,
    /// ``Cache/isValid(_:)``, a fetch's cache hit, a memory hit alike), or the last
    /// write, ``Cache/refresh(_:)``, ``Cache/lock(_:)`` or ``Cache/unlock(_:)``,
    /// whichever came last. A read of an entry that has already expired does not bring
    /// it back: only a write or a refresh does.
    ///
    /// The instance that made a use knows it exactly. The next launch, another instance
    /// or process, and this instance once its memory tier has dropped the value, know it
    /// from the entry file's access time, which the cache moves only when a use is a
    /// minute or more past the time it keeps (its granularity): seen from there, an
    /// entry may expire up to a minute early, never late. See <doc:ExpiryAndFetching>.
    case sinceLastUse(TimeInterval)

    /// Valid for `n` minutes after the last validation.
    public static func minutes(_ n: Double) -> Lifespan { .seconds(n * 60) }
    /// Valid for `n` hours after the last validation.
    public static func hours(_ n: Double) -> Lifespan { .seconds(n * 3600) }
    /// Valid for `n` days after the last validation.
    public static func days(_ n: Double) -> Lifespan { .seconds(n * 86_400) }
}

extension Lifespan {
    /// The moment an entry validated at `validatedAt` and last used at `lastUsedAt` (`nil`:
    /// unknown) expires, ignoring the lock; `nil` for never. The one place each case's
    /// expiry is defined, for the memory tier, the disk and the tool alike.
    package func expiration(validatedAt: Double, lastUsedAt: Double?) -> Double? {
        switch self {
        case .never: nil
        case .seconds(let seconds): validatedAt + seconds
        case .until(let date): date.timeIntervalSince1970
        case .sinceLastUse(let seconds): Self.lastUse(validatedAt: validatedAt, lastUsedAt: lastUsedAt) + seconds
        }
    }

    /// The moment a ``sinceLastUse(_:)`` lifespan runs from: the later of the last use
    /// known and the last validation.
    package static func lastUse(validatedAt: Double, lastUsedAt: Double?) -> Double {
        max(validatedAt, lastUsedAt ?? validatedAt)
    }

    /// The lifespan as an entry stores it: every value finite, so the header reads back.
    ///
    /// Endless (`+infinity`, of ``seconds(_:)``, ``sinceLastUse(_:)`` or ``until(_:)``)
    /// becomes ``never``; ended forever ago (`-infinity`) becomes ``until(_:)`` `Date.distantPast`.
    /// - Throws: ``CacheError`` of kind ``CacheError/Kind/invalidValue`` for NaN, which has no meaning.
    func storable(forKey key: String) throws(CacheError) -> Lifespan {
        let amount: Double
        let what: String
        switch self {
        case .never: return self
        case .seconds(let seconds): (amount, what) = (seconds, ".seconds")
        case .sinceLastUse(let seconds): (amount, what) = (seconds, ".sinceLastUse")
        case .until(let date): (amount, what) = (date.timeIntervalSince1970, ".until date")
        }
        if amount.isFinite { return self }
        if amount.isNaN {
            // Not `\(self)`: printing a Date that is not finite traps in Foundation.
            throw CacheError(kind: .invalidValue, key: key, message: "the lifespan's \(what) is not a number (NaN)")
        }
        return amount > 0 ? .never : .until(.distantPast)
    }
}

extension Lifespan {
    /// The seconds of a ``sinceLastUse(_:)`` lifespan, `nil` for every other kind.
    var slidingSeconds: Double? {
        if case .sinceLastUse(let seconds) = self { seconds } else { nil }
    }
}
