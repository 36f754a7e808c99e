import Cashier
import Foundation
import Hummingbird

/// Hummingbird's `PersistDriver` on a Cashier ``Cashier/Cache``: sessions and other persisted
/// values live in its memory and disk tiers, and in its shared tier when one is configured, so
/// every instance of a fleet sees them.
///
/// ```swift
/// let persist = CashierPersistDriver(cache: Cache.named("persist"))
/// router.addRoutes(...)   // use `persist` as any PersistDriver
/// let app = Application(router: router, services: [persist])
/// ```
///
/// Each value is stored as its JSON, `Data` under a key of the driver's
/// (``keyPrefix`` followed by Hummingbird's key, schema version 1). Hummingbird names the type
/// only when it reads, and may read a key as another type than it wrote: a key typed by the value
/// would have Cashier discard the entry on such a read, where Hummingbird expects
/// `PersistError.invalidConversion` and the value kept.
///
/// Expiry is Hummingbird's: `expires` counts from the write; `set` without `expires` keeps the
/// expiry the key already had; `create` throws `PersistError.duplicate` when the key holds a
/// value that has not expired. That check and the write are one step within this process;
/// instances sharing a tier can each create a key at once (the last write wins).
public struct CashierPersistDriver: PersistDriver {
    /// The cache the values live in.
    public let cache: Cashier.Cache
    /// What the driver puts before each key, keeping its keys apart from others in ``cache``.
    public let keyPrefix: String

    private let creations = Stripes()

    /// A driver storing in `cache`, each key prefixed with `keyPrefix`.
    public init(cache: Cashier.Cache, keyPrefix: String = "hummingbird.persist.") {
        self.cache = cache
        self.keyPrefix = keyPrefix
    }

    public func create<Object: Codable & Sendable>(key: String, value: Object, expires: Duration?) async throws {
        let data = try JSONEncoder().encode(value)
        let cacheKey = cacheKey(key)
        // Brings what another instance stored in the shared tier into the local tiers, which
        // the check below reads.
        _ = await lookUp(cacheKey)
        try creations.withLock(for: key) {
            if let entry = cache.entry(for: cacheKey), !entry.isExpired { throw PersistError.duplicate }
            try cache.set(data, for: cacheKey, lifespan: Self.lifespan(expires))
        }
    }

    public func set<Object: Codable & Sendable>(key: String, value: Object, expires: Duration?) async throws {
        let data = try JSONEncoder().encode(value)
        let cacheKey = cacheKey(key)
        if expires == nil { _ = await lookUp(cacheKey) } // the expiry it keeps may be another instance's
        try creations.withLock(for: key) {
            var lifespan = Self.lifespan(expires)
            if expires == nil, let entry = cache.entry(for: cacheKey), !entry.isExpired, let expiresAt = entry.expiresAt
            {
                lifespan = .until(expiresAt)
            }
            try cache.set(data, for: cacheKey, lifespan: lifespan)
        }
    }

    public func get<Object: Codable & Sendable>(key: String, as type: Object.Type) async throws -> Object? {
        try await read(key, as: type)?.object
    }

    public func getWithTTL<Object: Codable & Sendable>(
        key: String, as type: Object.Type
    ) async throws -> (object: Object, ttl: Duration?)? {
        try await read(key, as: type)
    }

    public func remove(key: String) async throws {
        cache.removeValue(for: cacheKey(key))
    }

    private func read<Object: Decodable>(_ key: String, as: Object.Type) async throws -> (
        object: Object, ttl: Duration?
    )? {
        guard let entry = await lookUp(cacheKey(key)), !entry.isExpired else { return nil }
        let object: Object
        do {
            object = try JSONDecoder().decode(Object.self, from: entry.value)
        } catch {
            throw PersistError.invalidConversion
        }
        let ttl = entry.expiresAt.map { Duration.seconds(max(0, $0.timeIntervalSince(cache.configuration.now()))) }
        return (object, ttl)
    }

    /// The entry of `key` in memory, on disk, else in the shared tier (which the synchronous
    /// `entry(for:)` never asks: values another instance stored would never be seen); `nil`
    /// for none, or an expired one.
    private func lookUp(_ key: CacheKey<Data>) async -> CacheEntry<Data>? {
        try? await cache.entry(for: key) { () async throws -> Fetched<Data> in throw Absent() }
    }

    private struct Absent: Error {}

    private func cacheKey(_ key: String) -> CacheKey<Data> {
        CacheKey<Data>(keyPrefix + key, schemaVersion: 1)
    }

    /// `nil` is no expiry, whatever the cache's default lifespan; a duration counts from now.
    private static func lifespan(_ expires: Duration?) -> Lifespan {
        guard let expires else { return .never }
        let (seconds, attoseconds) = expires.components
        return .seconds(Double(seconds) + Double(attoseconds) / 1e18)
    }
}

/// Locks by key, so that a `create`'s check and write are one step against other calls of this
/// driver on the same key, while calls on other keys (which hash to other stripes) go on. A
/// stripe is held across the cache's disk I/O for its key, never across an `await`.
private final class Stripes: Sendable {
    private let locks = (0..<32).map { _ in NSLock() }

    func withLock<R>(for key: String, _ body: () throws -> R) rethrows -> R {
        var hasher = Hasher()
        hasher.combine(key)
        let lock = locks[Int(UInt(bitPattern: hasher.finalize()) % UInt(locks.count))]
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}
