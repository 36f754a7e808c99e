import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// To a tier that takes several changes in one call (``SharedTier/maximumBatch``), the changes
/// queued one after another go in one ``SharedTier/apply(_:)``: after an outage, the failed
/// changes of many keys go again in a few calls instead of one each. A call holds a prefix of
/// the queue, for one tier, of distinct keys; a removal of every record goes alone; each change
/// of a call is settled as a call of its own would settle it.
extension SharedTierTests {
    @Suite struct Batch: TwoServerSuite {
        let servers = TwoServers()

        static let first = CacheKey<Int>("first", schemaVersion: 1)
        static let other = CacheKey<Int>("other", schemaVersion: 1)

        static func key(_ name: String, schema: Int = 1) -> CacheKey<Int> {
            CacheKey<Int>(name, schemaVersion: schema)
        }

        static func slot(_ name: String, schema: Int = 1) -> SharedSlot {
            SharedSlot(name: name, version: "schema-\(schema)")
        }

        /// `retryDelay` an hour: only what a test does sends a failed change again.
        func server(_ server: Int) -> Cache {
            Cache(servers.configuration(server, retryDelay: 3600))
        }

        /// Holds `cache`'s next write at the fake's gate until ``SharedBacking/openGate()``, so
        /// that the changes made next queue behind it and go in the calls that follow.
        func holdAWrite(of cache: Cache) async throws {
            backing.closeGate()
            try cache.set(0, for: Self.first)
            await eventually("the first write waits at the gate") { backing.storesAtGate == 1 }
        }

        @Test func afterAnOutageTheFailedWritesOfManyKeysGoAgainInAFewCalls() async throws {
            backing.maximumBatch = 8
            let a = server(1)
            backing.mode = .failing
            for number in 0..<20 { try a.set(number, for: Self.key("k\(number)")) }
            await a.waitForSharedTierWork()
            #expect(backing.record(in: Self.slot("k0")) == nil)
            let callsBefore = backing.batches.count
            backing.mode = .working
            backing.send(.reconnected(changed: []), to: 1)
            let backing = backing
            @Sendable func landed(_ number: Int) -> Bool {
                backing.value(Int.self, in: Self.slot("k\(number)")) == number
            }
            await eventually("every failed write sent again") { (0..<20).allSatisfy(landed) }
            await a.waitForSharedTierWork()
            let resent = backing.batches[callsBefore...]
            #expect(resent.map(\.count) == [8, 8, 4], "20 changes, 8 a call")
        }

        @Test func aCallHoldsNoTwoChangesOfOneKey() async throws {
            backing.maximumBatch = 8
            let a = server(1)
            try await holdAWrite(of: a)
            try a.set(1, for: Self.key("n"))
            try a.set(2, for: Self.key("b"))
            // Another slot of n: it does not make the first moot, and may not share its call.
            try a.set(3, for: Self.key("n", schema: 2))
            try a.set(4, for: Self.key("c"))
            backing.openGate()
            await a.waitForSharedTierWork()
            #expect(backing.batches == [["n", "b"], ["n", "c"]])
            #expect(backing.value(Int.self, in: Self.slot("n", schema: 2)) == 3)
            #expect(backing.record(in: Self.slot("n")) == nil, "the later write removed the other version")
            #expect(backing.value(Int.self, in: Self.slot("c")) == 4)
        }

        @Test func aRemovalOfEveryRecordGoesInACallOfItsOwn() async throws {
            backing.maximumBatch = 8
            let a = server(1)
            try await holdAWrite(of: a)
            try a.set(1, for: Self.key("a"))
            a.removeAll()
            try a.set(2, for: Self.key("b"))
            try a.set(3, for: Self.key("c"))
            backing.openGate()
            await a.waitForSharedTierWork()
            #expect(backing.batches == [["b", "c"]])
            #expect(backing.removalsOfAll == 1)
            #expect(backing.record(in: Self.slot("first")) == nil, "the write under way landed before the removal")
            #expect(backing.record(in: Self.slot("a")) == nil)
            #expect(backing.value(Int.self, in: Self.slot("b")) == 2)
            #expect(backing.value(Int.self, in: Self.slot("c")) == 3)
        }

        @Test func aWriteRefusedInACallDropsThatKeysCopyAlone() async throws {
            backing.maximumBatch = 8
            let (a, b) = (server(1), server(2))
            clockB.advance(by: 10)
            try b.set(9, for: Self.key)
            await b.waitForSharedTierWork()
            try await holdAWrite(of: a)
            // Older than B's by A's clock: the tier refuses it.
            try a.set(1, for: Self.key)
            try a.set(5, for: Self.other)
            backing.openGate()
            await a.waitForSharedTierWork()
            #expect(backing.batches == [["n", "other"]])
            #expect(backing.value(Int.self, in: Self.slot) == 9)
            await eventually("A drops the copy the tier refused") { a.value(for: Self.key) == nil }
            #expect(try await a.value(for: Self.key, fetch: Self.noFetch) == 9)
            #expect(a.value(for: Self.other) == 5)
            #expect(backing.value(Int.self, in: Self.slot("other")) == 5)
        }

        /// The call counts as failed (neither outcome is trusted), so each change goes again at
        /// once in a call of its own, and lands.
        @Test func aTierThatAnswersTheWrongNumberOfOutcomesReachedNothingAndEachGoesAgainAlone() async throws {
            let tier = MiscountingTier(inner: backing.tier(1))
            let a = Cache(servers.configuration(1, tier: tier, retryDelay: 3600))
            backing.maximumBatch = 8
            try await holdAWrite(of: a)
            try a.set(1, for: Self.key("x"))
            try a.set(2, for: Self.key("y"))
            backing.openGate()
            await a.waitForSharedTierWork()
            #expect(backing.batches == [["x", "y"]], "one call of both, then one call each")
            #expect(backing.value(Int.self, in: Self.slot("x")) == 1)
            #expect(backing.value(Int.self, in: Self.slot("y")) == 2)
            #expect(a.shared?.writes.queue.keptFailures == 0)
        }

        /// A call of several that throws: each change goes again at once, alone, before what was
        /// queued after them; the one the tier refuses is kept, and counted toward a removal only
        /// for its own calls.
        @Test func aCallThatThrowsSendsEachOfItsChangesAgainAloneAtOnce() async throws {
            backing.maximumBatch = 8
            backing.failCalls(of: "poison")
            let a = server(1)
            try await holdAWrite(of: a)
            try a.set(1, for: Self.key("poison"))
            try a.set(2, for: Self.key("good"))
            backing.openGate()
            await a.waitForSharedTierWork()
            #expect(backing.batches == [["poison", "good"]])
            #expect(backing.value(Int.self, in: Self.slot("good")) == 2)
            #expect(a.shared?.writes.queue.keptFailures == 1, "poison alone is kept")
        }
    }
}

/// A tier whose `apply` answers one outcome fewer than its changes.
private struct MiscountingTier: SharedTier {
    let inner: FakeSharedTier

    func record(in slot: SharedSlot) async throws -> SharedRecord? { try await inner.record(in: slot) }
    func store(_ record: SharedRecord, in slot: SharedSlot) async throws { try await inner.store(record, in: slot) }
    func removeRecords(named name: String) async throws { try await inner.removeRecords(named: name) }
    func removeAllRecords() async throws { try await inner.removeAllRecords() }
    func changes() -> AsyncStream<SharedChange> { inner.changes() }
    var ordersChanges: Bool { true }
    var maximumBatch: Int { inner.maximumBatch }

    func store(
        _ record: SharedRecord, in slot: SharedSlot, removingOtherVersions: Bool
    ) async throws -> SharedStoreOutcome {
        try await inner.store(record, in: slot, removingOtherVersions: removingOtherVersions)
    }

    func removeRecords(named name: String, writtenBefore date: Date) async throws {
        try await inner.removeRecords(named: name, writtenBefore: date)
    }

    func apply(_ changes: [SharedTierChange]) async throws -> [SharedStoreOutcome] {
        Array(try await inner.apply(changes).dropLast())
    }
}
