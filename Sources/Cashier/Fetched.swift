import Foundation

/// What a fetch answers to ``Cache/entry(for:policy:fetch:)``: the value, and how long it stays valid.
///
/// The fetch decides the lifespan, as an HTTP response's `max-age` would:
///
/// ```swift
/// let entry = try await cache.entry(for: Keys.feed) {
///     let (feed, maxAge) = try await api.feedWithMaxAge()
///     return Fetched(feed, lifespan: .seconds(maxAge))
/// }
/// if entry.origin == .fetch { print("fresh from the network") }
/// ```
public struct Fetched<Value: Codable & Sendable>: Sendable {
    /// The fetched value, stored before it is returned.
    public var value: Value
    /// How long `value` stays valid once stored; `nil` means the key's
    /// ``CacheKey/lifespan``, else the cache's ``Cache/Configuration-swift.struct/defaultLifespan``.
    ///
    /// A lifespan of `.seconds(0)` (a response that must not be cached) still
    /// answers the caller, but the entry is expired as soon as it is stored: the
    /// next ``FetchPolicy/cacheFirst`` call fetches again.
    public var lifespan: Lifespan?

    /// A fetched value with the lifespan it should be stored with (`nil`: the key's, else the default).
    public init(_ value: Value, lifespan: Lifespan? = nil) {
        self.value = value
        self.lifespan = lifespan
    }
}

/// Where the value of a ``CacheEntry`` came from.
public enum Origin: Sendable, Hashable {
    /// The memory tier: the value was already decoded.
    case memory
    /// The entry's file: the value was read and decoded.
    case disk
    /// A fetch of ``Cache/entry(for:policy:fetch:)`` (also for callers that joined a fetch already running).
    case fetch
    /// The cache's ``SharedTier``: another instance stored the entry there; it now fills this
    /// instance's local tiers (also for callers that joined the lookup).
    case shared
}
