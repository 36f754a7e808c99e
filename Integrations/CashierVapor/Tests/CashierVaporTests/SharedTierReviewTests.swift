import Cashier
import CashierVapor
import Foundation
import Testing
import Vapor

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

/// A value set by one instance of a fleet is read by another: the point of the shared tier.
@Test func aValueSetOnOneInstanceIsReadOnAnother() async throws {
    let tier = SharedDictionary()
    let base = FileManager.default.temporaryDirectory.appendingPathComponent("CashierVapor-\(UUID())")
    defer { try? FileManager.default.removeItem(at: base) }
    let a = tier.cache(base.appendingPathComponent("a"))
    let b = tier.cache(base.appendingPathComponent("b"))
    let loop = MultiThreadedEventLoopGroup.singleton.next()
    try await CashierVaporCache(cache: a, on: loop).set("greeting", to: "hi", expiresIn: nil).get()
    a.waitForBackgroundWork()
    #expect(try await CashierVaporCache(cache: b, on: loop).get("greeting", as: String.self).get() == "hi")
}
