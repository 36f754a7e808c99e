import Cashier
import Foundation
import Vapor

/// Vapor's `Cache` on a Cashier ``Cashier/Cache``: `req.cache` and `app.cache` read and write its
/// memory and disk tiers, and its shared tier when one is configured, so every instance of a fleet
/// sees the same values.
///
/// Set it up with ``Vapor/Application/Caches/Provider/cashier(_:keyPrefix:)``:
///
/// ```swift
/// app.caches.use(.cashier(Cache.named("vapor")))
/// try await req.cache.set("greeting", to: "hello", expiresIn: .minutes(5))
/// ```
///
/// Each value is stored as its JSON, `Data` under a key of the adapter's (``keyPrefix``
/// followed by Vapor's key, schema version 1): Vapor names the type only when it reads, and a key
/// typed by the value would have Cashier discard an entry read as another type, where Vapor
/// expects the decoding error and the value kept.
///
/// Expiry is Vapor's: `expiresIn` counts from the write and `nil` never expires (a `set` without
/// it replaces any earlier expiry, whatever the cache's default lifespan); a `nil` value removes
/// the key. A value that does not decode as the type asked for fails the future with the
/// decoding error.
public struct CashierVaporCache: Vapor.Cache, Sendable {
    /// The cache the values live in.
    public let cache: Cashier.Cache
    /// What the adapter puts before each key, keeping its keys apart from others in ``cache``.
    public let keyPrefix: String
    /// Where the futures complete: the request's event loop, or one of the application's.
    public let eventLoop: any EventLoop

    /// An adapter storing in `cache`, completing on `eventLoop`.
    public init(cache: Cashier.Cache, keyPrefix: String = "vapor.cache.", on eventLoop: any EventLoop) {
        self.cache = cache
        self.keyPrefix = keyPrefix
        self.eventLoop = eventLoop
    }

    // `Sendable` as Vapor's own caches declare it: the value is decoded in a task, off the event
    // loop, as the cache is read (a miss in memory reads the disk).
    public func get<T>(_ key: String, as type: T.Type) -> EventLoopFuture<T?> where T: Decodable & Sendable {
        let cacheKey = cacheKey(key)
        return eventLoop.makeFutureWithTask { [cache] in
            // Through the shared tier too: the synchronous `entry(for:)` reads memory and disk
            // only, and would never see what another instance stored.
            guard
                let entry = try? await cache.entry(
                    for: cacheKey, fetch: { () async throws -> Fetched<Data> in throw Absent() }),
                !entry.isExpired
            else { return nil }
            return try JSONDecoder().decode(T.self, from: entry.value)
        }
    }

    public func set<T>(_ key: String, to value: T?) -> EventLoopFuture<Void> where T: Encodable {
        set(key, to: value, expiresIn: nil)
    }

    public func set<T>(
        _ key: String, to value: T?, expiresIn expirationTime: CacheExpirationTime?
    ) -> EventLoopFuture<Void> where T: Encodable {
        // Encoded here: `T` need not be Sendable, the bytes are.
        let data: Data?
        do {
            data = try value.map { try JSONEncoder().encode($0) }
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        let cacheKey = cacheKey(key)
        return eventLoop.makeFutureWithTask { [cache] in
            guard let data else { return cache.removeValue(for: cacheKey) }
            let lifespan = expirationTime.map { Lifespan.seconds(Double($0.seconds)) } ?? .never
            try cache.set(data, for: cacheKey, lifespan: lifespan)
        }
    }

    public func `for`(_ request: Request) -> CashierVaporCache {
        CashierVaporCache(cache: cache, keyPrefix: keyPrefix, on: request.eventLoop)
    }

    private struct Absent: Error {}

    private func cacheKey(_ key: String) -> CacheKey<Data> {
        CacheKey<Data>(keyPrefix + key, schemaVersion: 1)
    }
}

extension Application.Caches.Provider {
    /// Vapor's cache on `cache`: `app.caches.use(.cashier(Cache.named("vapor")))`.
    public static func cashier(_ cache: Cashier.Cache, keyPrefix: String = "vapor.cache.") -> Self {
        .init { application in
            application.caches.use { application in
                CashierVaporCache(cache: cache, keyPrefix: keyPrefix, on: application.eventLoopGroup.next())
            }
        }
    }
}
