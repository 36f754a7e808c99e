import Foundation

extension Cache.Configuration {
    /// ``diskSizeLimit``'s default for a cache in ``Cache/Location/caches``: 150 MiB.
    ///
    /// The figure Nuke's `DataCache` uses for the same job (a cache of downloaded data in
    /// `Library/Caches`): large enough for a day of API responses and thumbnails, small
    /// next to the free space of any supported device, and a bound on what the system's
    /// own purge of `Library/Caches` has to reclaim. ``Cache/Location/persistent`` and
    /// ``Cache/Location/directory(_:)`` caches hold what their app chose to keep, so they
    /// stay unbounded unless given a limit.
    public static let defaultDiskSizeLimit = 150 << 20

    /// ``garbageCollectionInterval``'s default for a cache in ``Cache/Location/caches``: 30 minutes.
    ///
    /// Writes past the size limit already start a sweep; the scheduled collection removes
    /// expired entries and catches up on what other processes wrote. Every 30 minutes is
    /// Nuke's `DataCache` sweep interval too: rare enough to cost nothing measurable, often
    /// enough that an app session sees at least one round.
    public static let defaultGarbageCollectionInterval: TimeInterval = 30 * 60
}

/// A setting whose default depends on another (``Cache/Configuration-swift.struct/location``),
/// so the default is resolved when read, while a value the caller set, `nil` included, is
/// kept as set.
///
/// Resolving when read, rather than in `init(name:)`, keeps `location = .persistent` after
/// `init` unbounded, and needs no `didSet` on `location` that would have to tell a default
/// from a value the caller happened to set equal to it.
enum DefaultedSetting<Value: Sendable & Equatable>: Sendable, Equatable {
    /// Not set: the location's default.
    case locationDefault
    /// Set by the caller; `nil` means none.
    case explicit(Value?)

    func resolved(locationDefault: Value?) -> Value? {
        switch self {
        case .locationDefault: return locationDefault
        case .explicit(let value): return value
        }
    }
}
