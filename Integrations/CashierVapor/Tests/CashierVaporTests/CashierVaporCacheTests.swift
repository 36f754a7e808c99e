import Cashier
import CashierVapor
import Foundation
import Testing
import Vapor
import VaporTesting

@Suite final class CashierVaporCacheTests {
    struct Greeting: Codable, Equatable {
        var text: String
    }

    let folder: URL
    let clock = TestClock()
    let cache: Cashier.Cache

    init() {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("CashierVapor-\(UUID())")
        var configuration = Cashier.Cache.Configuration(name: "vapor")
        configuration.location = .directory(folder)
        configuration.now = { [clock] in clock.now }
        // A default lifespan the adapter must not apply: Vapor's `nil` is "never expires".
        configuration.defaultLifespan = .seconds(1)
        cache = Cashier.Cache(configuration)
    }

    deinit { try? FileManager.default.removeItem(at: folder) }

    @Test func providerMakesCashierTheApplicationsCache() async throws {
        try await withApp { app in
            app.caches.use(.cashier(cache))
            #expect(app.cache is CashierVaporCache)
            try await app.cache.set("hello", to: Greeting(text: "hi")).get()
            #expect(try await app.cache.get("hello", as: Greeting.self).get() == Greeting(text: "hi"))
            #expect(try await app.cache.get("absent", as: Greeting.self).get() == nil)
        }
    }

    @Test func requestsReadWhatTheApplicationWrote() async throws {
        try await withApp { app in
            app.caches.use(.cashier(cache))
            app.get("greeting") { request async throws -> String in
                try await request.cache.get("greeting", as: String.self).get() ?? "none"
            }
            app.post("greeting") { request async throws -> HTTPStatus in
                try await request.cache.set("greeting", to: request.body.string, expiresIn: .minutes(1)).get()
                return .created
            }
            try await app.testing().test(.GET, "greeting") { response in
                #expect(response.body.string == "none")
            }
            try await app.testing().test(.POST, "greeting", body: ByteBuffer(string: "hello")) { response in
                #expect(response.status == .created)
            }
            try await app.testing().test(.GET, "greeting") { response in
                #expect(response.body.string == "hello")
            }
        }
    }

    @Test func expiresInCountsFromTheWriteAndNilNeverExpires() async throws {
        try await withApp { app in
            app.caches.use(.cashier(cache))
            try await app.cache.set("short", to: "a", expiresIn: .seconds(30)).get()
            try await app.cache.set("forever", to: "b").get()
            clock.advance(by: 29)
            #expect(try await app.cache.get("short", as: String.self).get() == "a")
            clock.advance(by: 2)
            #expect(try await app.cache.get("short", as: String.self).get() == nil)
            clock.advance(by: 100_000)
            #expect(try await app.cache.get("forever", as: String.self).get() == "b")
            // A set without an expiry replaces the one before, as Vapor's caches do.
            try await app.cache.set("short", to: "c", expiresIn: .seconds(5)).get()
            try await app.cache.set("short", to: "d").get()
            clock.advance(by: 10)
            #expect(try await app.cache.get("short", as: String.self).get() == "d")
        }
    }

    @Test func settingNilOrDeletingRemoves() async throws {
        try await withApp { app in
            app.caches.use(.cashier(cache))
            try await app.cache.set("k", to: 1).get()
            try await app.cache.set("k", to: Int?.none).get()
            #expect(try await app.cache.get("k", as: Int.self).get() == nil)
            try await app.cache.set("k", to: 2).get()
            try await app.cache.delete("k").get()
            #expect(try await app.cache.get("k", as: Int.self).get() == nil)
        }
    }

    @Test func readingAsAnotherTypeFailsAndKeepsTheValue() async throws {
        try await withApp { app in
            app.caches.use(.cashier(cache))
            try await app.cache.set("k", to: Greeting(text: "hi")).get()
            await #expect(throws: DecodingError.self) { try await app.cache.get("k", as: Int.self).get() }
            #expect(try await app.cache.get("k", as: Greeting.self).get() == Greeting(text: "hi"))
        }
    }

    @Test func keysLiveUnderTheAdaptersPrefix() async throws {
        try await withApp { app in
            app.caches.use(.cashier(cache, keyPrefix: "v/"))
            try await app.cache.set("k", to: "v").get()
            #expect(cache.keys == ["v/k"])
        }
    }
}

/// The cache's clock, moved by the test.
final class TestClock: Sendable {
    private let seconds = LockedSeconds()
    var now: Date { Date(timeIntervalSince1970: 1_800_000_000 + seconds.value) }
    func advance(by interval: TimeInterval) { seconds.add(interval) }
}

private final class LockedSeconds: @unchecked Sendable {
    // Invariant: `stored` is read and written only with `lock` held.
    private let lock = NSLock()
    private var stored: TimeInterval = 0
    var value: TimeInterval { lock.withLock { stored } }
    func add(_ interval: TimeInterval) { lock.withLock { stored += interval } }
}
