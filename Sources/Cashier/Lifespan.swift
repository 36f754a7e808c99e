import Foundation

/// How long a stored value stays valid.
///
/// Precedence when a value is written: the `lifespan` argument of
/// ``Cache/set(_:for:lifespan:)``, then the key's ``CacheKey/lifespan``, then
/// ``Cache/Configuration/defaultLifespan``. A locked entry never expires.
///
/// A lifespan that does not end (`.seconds(.infinity)`, `.until` an infinite date)
/// is stored as ``never``; one that ended infinitely long ago (`-infinity`) as
/// ``until(_:)`` `Date.distantPast`, already expired. `set` refuses a NaN lifespan
/// with a ``CacheError`` of kind ``CacheError/Kind/invalidValue``.
public enum Lifespan: Sendable, Hashable {
    /// Valid until removed.
    case never
    /// Valid for this many seconds after the last validation (a write or ``Cache/refresh(_:)``).
    case seconds(TimeInterval)
    /// Valid until this moment, whenever it was written.
    case until(Date)

    /// Valid for `n` minutes after the last validation.
    public static func minutes(_ n: Double) -> Lifespan { .seconds(n * 60) }
    /// Valid for `n` hours after the last validation.
    public static func hours(_ n: Double) -> Lifespan { .seconds(n * 3600) }
    /// Valid for `n` days after the last validation.
    public static func days(_ n: Double) -> Lifespan { .seconds(n * 86_400) }
}

extension Lifespan {
    /// The lifespan as an entry stores it: every value finite, so the header reads back.
    ///
    /// Endless (`+infinity`) becomes ``never``; ended forever ago (`-infinity`) becomes
    /// ``until(_:)`` `Date.distantPast`.
    /// - Throws: ``CacheError`` of kind ``CacheError/Kind/invalidValue`` for NaN, which has no meaning.
    func storable(forKey key: String) throws(CacheError) -> Lifespan {
        let amount: Double, what: String
        switch self {
        case .never: return self
        case .seconds(let seconds): (amount, what) = (seconds, ".seconds")
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
