/// A property backed by a cache key.
///
/// ```swift
/// struct Session {
///     @Cached(Keys.profile) var profile: User?
/// }
/// session.profile = user          // stores
/// session.profile = nil           // removes
/// session.$profile?.isExpired     // metadata
/// ```
///
/// Reads go to the cache every time (a memory hit once the value has been read or
/// written); nothing is copied into the property.
///
/// In an `@Observable` class, mark the property `@ObservationIgnored`: the `Observable`
/// macro and the property wrapper would otherwise both declare the storage `_profile`
/// ("invalid redeclaration of synthesized property"). The property stays observable all
/// the same: `Cached` reports its reads and every change to its key made through a
/// ``Cache`` of this process to Observation, so a SwiftUI view that reads it is updated
/// (where Observation is available: iOS 17, macOS 14, tvOS 17, watchOS 10, and Linux).
///
/// ```swift
/// @Observable final class ProfileModel {
///     @ObservationIgnored @Cached(Keys.profile) var profile: User?
/// }
/// ```
///
/// A read that misses the memory tier reads the disk on the calling thread; see
/// <doc:SwiftUIAndObservation> for keeping that off the main actor.
@propertyWrapper
public struct Cached<Value: Codable & Sendable>: Sendable {
    /// The key the property reads and writes.
    public let key: CacheKey<Value>
    /// The cache it lives in.
    public let cache: Cache
    /// What tells Observation about reads and changes.
    private let observation = CachedObservation()

    /// A property backed by `key` in `cache`.
    public init(_ key: CacheKey<Value>, in cache: Cache = .default) {
        self.key = key
        self.cache = cache
    }

    /// The cached value, `nil` on a miss; assigning stores it, assigning `nil` removes it.
    /// Write failures go to the cache's ``Cache/Configuration/onEvent``.
    public var wrappedValue: Value? {
        get {
            observation.access(key.name, in: cache)
            return cache.value(for: key)
        }
        nonmutating set { cache[key] = newValue }
    }

    /// The entry with its metadata (``CacheEntry/isExpired``, dates, size), even when expired.
    public var projectedValue: CacheEntry<Value>? {
        observation.access(key.name, in: cache)
        return cache.entry(for: key)
    }
}
