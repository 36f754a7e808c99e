import Cashier
import CashierHummingbird
import Foundation
import Hummingbird
import Testing

/// One store two instances share, in memory: what one stores, the other reads.
final class SharedDictionary: SharedTier, @unchecked Sendable {
    private let lock = NSLock()
    private var records: [SharedSlot: SharedRecord] = [:]

    func record(in slot: SharedSlot) async throws -> SharedRecord? { lock.withLock { records[slot] } }
    func store(_ record: SharedRecord, in slot: SharedSlot) async throws { lock.withLock { records[slot] = record } }
    func removeRecords(named name: String) async throws {
        lock.withLock { records = records.filter { $0.key.name != name } }
    }
    func removeAllRecords() async throws { lock.withLock { records = [:] } }
    func changes() -> AsyncStream<SharedChange> { AsyncStream { _ in } }

    /// A cache on a folder of its own, sharing this tier.
    func cache(_ folder: URL) -> Cashier.Cache {
        var configuration = Cashier.Cache.Configuration(name: "shared")
        configuration.location = .directory(folder)
        configuration.sharedTier = self
        configuration.sharedTierTimeout = 30
        return Cashier.Cache(configuration)
    }
}

/// A session stored by one instance of a fleet is found by another: the point of the shared tier.
@Test func aSessionStoredOnOneInstanceIsReadOnAnother() async throws {
    let tier = SharedDictionary()
    let base = FileManager.default.temporaryDirectory.appendingPathComponent("CashierHummingbird-\(UUID())")
    defer { try? FileManager.default.removeItem(at: base) }
    let a = tier.cache(base.appendingPathComponent("a"))
    let b = tier.cache(base.appendingPathComponent("b"))
    let (driverA, driverB) = (CashierPersistDriver(cache: a), CashierPersistDriver(cache: b))
    try await driverA.create(key: "session", value: "ann", expires: .seconds(60))
    a.waitForBackgroundWork()
    #expect(try await driverB.get(key: "session", as: String.self) == "ann")
    let ttl = try await driverB.getWithTTL(key: "session", as: String.self)?.ttl
    #expect(ttl.map { $0 > .seconds(50) && $0 <= .seconds(60) } == true)
    // A create elsewhere of a key the fleet holds is a duplicate.
    let c = CashierPersistDriver(cache: tier.cache(base.appendingPathComponent("c")))
    await #expect(throws: PersistError.duplicate) {
        try await c.create(key: "session", value: "bob", expires: nil)
    }
}
