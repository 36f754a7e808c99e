import Foundation

/// How long a stored value stays valid.
///
/// Precedence when a value is written: the `lifespan` argument of
/// ``Cache/set(_:for:lifespan:)``, then the key's ``CacheKey/lifespan``, then
/// ``Cache/Configuration/defaultLifespan``. A locked entry never expires.
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

    /// The moment an entry validated at `validatedAt` expires, or `nil` for never.
    package func expiration(validatedAt: Date) -> Date? {
        switch self {
        case .never: nil
        case .seconds(let seconds): validatedAt.addingTimeInterval(seconds)
        case .until(let date): date
        }
    }
}
