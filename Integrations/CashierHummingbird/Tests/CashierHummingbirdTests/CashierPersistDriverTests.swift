import Cashier
import CashierHummingbird
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@Suite final class CashierPersistDriverTests {
    struct Session: Codable, Sendable, Equatable {
        var user: String
        var visits: Int
    }

    let folder: URL
    let clock = TestClock()
    let driver: CashierPersistDriver

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("CashierHummingbird-\(UUID())")
        driver = CashierPersistDriver(cache: Self.cache(in: folder, clock: clock))
    }

    deinit { try? FileManager.default.removeItem(at: folder) }

    static func cache(in folder: URL, clock: TestClock) -> Cashier.Cache {
        var configuration = Cashier.Cache.Configuration(name: "persist")
        configuration.location = .directory(folder)
        configuration.now = { clock.now }
        return Cashier.Cache(configuration)
    }

    @Test func setValueIsReadBackAndOutlivesTheCacheInstance() async throws {
        try await driver.set(key: "s1", value: Session(user: "ann", visits: 3))
        #expect(try await driver.get(key: "s1", as: Session.self) == Session(user: "ann", visits: 3))
        let again = CashierPersistDriver(cache: Self.cache(in: folder, clock: clock))
        #expect(try await again.get(key: "s1", as: Session.self) == Session(user: "ann", visits: 3))
        try await driver.set(key: "s1", value: Session(user: "ann", visits: 4))
        #expect(try await driver.get(key: "s1", as: Session.self)?.visits == 4)
    }

    @Test func missingKeyIsNil() async throws {
        #expect(try await driver.get(key: "absent", as: String.self) == nil)
        #expect(try await driver.getWithTTL(key: "absent", as: String.self) == nil)
    }

    @Test func createThrowsDuplicateWhileTheKeyHoldsAValue() async throws {
        try await driver.create(key: "k", value: "first", expires: .seconds(10))
        await #expect(throws: PersistError.duplicate) {
            try await driver.create(key: "k", value: "second", expires: nil)
        }
        #expect(try await driver.get(key: "k", as: String.self) == "first")
        clock.advance(by: 11)
        try await driver.create(key: "k", value: "third", expires: nil)
        #expect(try await driver.get(key: "k", as: String.self) == "third")
    }

    @Test func expiresCountsFromTheWrite() async throws {
        try await driver.set(key: "short", value: "a", expires: .seconds(5))
        try await driver.set(key: "forever", value: "b", expires: nil)
        let ttl = try #require(try await driver.getWithTTL(key: "short", as: String.self)?.ttl)
        #expect(abs((ttl - .seconds(5)) / .seconds(1)) < 0.01)
        #expect(try await driver.getWithTTL(key: "forever", as: String.self)! == ("b", nil))
        clock.advance(by: 6)
        #expect(try await driver.get(key: "short", as: String.self) == nil)
        #expect(try await driver.get(key: "forever", as: String.self) == "b")
    }

    @Test func setWithoutExpiresKeepsTheExpiryTheKeyHad() async throws {
        try await driver.set(key: "k", value: 1, expires: .seconds(10))
        clock.advance(by: 4)
        try await driver.set(key: "k", value: 2)
        clock.advance(by: 5)
        #expect(try await driver.get(key: "k", as: Int.self) == 2)
        clock.advance(by: 2)
        #expect(try await driver.get(key: "k", as: Int.self) == nil)
        // An expired value's expiry is not carried over: the new value never expires.
        try await driver.set(key: "k", value: 3)
        clock.advance(by: 1000)
        #expect(try await driver.get(key: "k", as: Int.self) == 3)
    }

    @Test func readingAsAnotherTypeThrowsAndKeepsTheValue() async throws {
        try await driver.set(key: "k", value: Session(user: "bo", visits: 1))
        await #expect(throws: PersistError.invalidConversion) {
            try await driver.get(key: "k", as: Int.self)
        }
        #expect(try await driver.get(key: "k", as: Session.self) == Session(user: "bo", visits: 1))
    }

    @Test func removeForgetsTheKey() async throws {
        try await driver.set(key: "k", value: "v")
        try await driver.remove(key: "k")
        #expect(try await driver.get(key: "k", as: String.self) == nil)
        try await driver.create(key: "k", value: "again")
    }

    @Test func concurrentCreatesOfOneKeyHaveOneWinner() async throws {
        let driver = driver
        let successes = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<32 {
                group.addTask { (try? await driver.create(key: "race", value: index, expires: nil)) != nil }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(successes == 1)
    }

    @Test func servesAnApplicationAsItsPersistDriver() async throws {
        let router = Router()
        let persist = driver
        router.put("/session/:id") { request, context -> HTTPResponse.Status in
            let id = try context.parameters.require("id")
            let body = try await request.body.collect(upTo: 1024)
            try await persist.create(key: id, value: String(buffer: body), expires: .seconds(60))
            return .created
        }
        router.get("/session/:id") { _, context -> String? in
            try await persist.get(key: try context.parameters.require("id"), as: String.self)
        }
        let app = Application(router: router, services: [persist])
        try await app.test(.router) { client in
            try await client.execute(uri: "/session/a", method: .put, body: ByteBuffer(string: "ann")) { response in
                #expect(response.status == .created)
            }
            try await client.execute(uri: "/session/a", method: .get) { response in
                #expect(String(buffer: response.body) == "ann")
            }
            try await client.execute(uri: "/session/b", method: .get) { response in
                #expect(response.status == .noContent)
            }
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
