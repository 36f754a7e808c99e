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
@propertyWrapper
public struct Cached<Value: Codable & Sendable>: Sendable {
    /// The key the property reads and writes.
    public let key: CacheKey<Value>
    /// The cache it lives in.
    public let cache: Cache

    /// A property backed by `key` in `cache`.
    public init(_ key: CacheKey<Value>, in cache: Cache = .default) {
        self.key = key
        self.cache = cache
    }

    /// The cached value, `nil` on a miss; assigning stores it, assigning `nil` removes it.
    /// Write failures go to the cache's ``Cache/Configuration/onEvent``.
    public var wrappedValue: Value? {
        get { cache.value(for: key) }
        nonmutating set { cache[key] = newValue }
    }

    /// The entry with its metadata (``CacheEntry/isExpired``, dates, size), even when expired.
    public var projectedValue: CacheEntry<Value>? { cache.entry(for: key) }
}
