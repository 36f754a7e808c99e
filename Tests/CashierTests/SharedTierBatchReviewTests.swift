import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile review of batches (``SharedTier/apply(_:)``, ``SharedTier/maximumBatch``): what one
/// change that fails does to the others of its call, and how a call's changes settle when the
/// call is held, times out or fails while later changes of its keys, or a removal of every
/// record, are queued.
extension SharedTierTests {
    @Suite struct BatchReview: TwoServerSuite {
        let servers = TwoServers()

        static func key(_ name: String, schema: Int = 1) -> CacheKey<Int> {
            CacheKey<Int>(name, schemaVersion: schema)
        }

        static func slot(_ name: String, schema: Int = 1) -> SharedSlot {
            SharedSlot(name: name, version: "schema-\(schema)")
        }

        /// `retryDelay` an hour: only what a test does sends a failed change again.
        func server(_ server: Int, tier: (any SharedTier)? = nil, timeout: TimeInterval = 30, events: EventLog? = nil)
            -> Cache
        {
            Cache(servers.configuration(server, events: events, tier: tier, timeout: timeout, retryDelay: 3600))
        }

        /// Holds `cache`'s next write (of "first") at the fake's gate until
        /// ``SharedBacking/openGate()``, so that the changes made next queue behind it.
        func holdAWrite(of cache: Cache) async throws {
            backing.closeGate()
            try cache.set(0, for: Self.key("first"))
            await eventually("the first write waits at the gate") { backing.storesAtGate == 1 }
        }

        /// Queues every kept failed change again (as the tier's stream coming back does) and
        /// waits until the queue is idle.
        func resendFailed(of cache: Cache) async {
            cache.shared?.writes.queue.resendFailed(.reconnected)
            await cache.waitForSharedTierWork()
        }

        // MARK: Findings

        /// (Each finding runs with one change a call too, which passes: the difference is the batch's.)
        ///
        /// Pins: a change the tier refuses for good (a key PostgreSQL cannot store, e.g. a name
        /// with a NUL or longer than its index takes) does not keep an unrelated key's write off
        /// the tier. One change a call, "good" lands at once; in a call with "poison" it fails
        /// with it, is kept, and is resent in the same call as "poison" at every resend (both
        /// are kept at the same moment with the same counts), so it never lands while
        /// "poison" fails, and the other instances read the tier's older record meanwhile.
        @Test(arguments: [1, 8]) func aKeyTheTierRefusesForGoodDoesNotKeepAnotherKeysWriteOffTheTier(maximumBatch: Int)
            async throws
        {
            backing.maximumBatch = maximumBatch
            backing.failCalls(of: "poison")
            let a = server(1)
            try await holdAWrite(of: a)
            try a.set(1, for: Self.key("poison"))
            try a.set(2, for: Self.key("good"))
            backing.openGate()
            await a.waitForSharedTierWork()
            // A fix may let the first call fail whole; one resend must then get "good" through.
            await resendFailed(of: a)
            #expect(
                backing.value(Int.self, in: Self.slot("good")) == 2, "good never reached the tier: \(backing.batches)")
            #expect(a.shared?.writes.queue.keptFailures == 1, "only poison is kept")
        }

        /// Pins: a write that failed only because it shared calls with a key the tier refuses
        /// is not turned into a removal (``FailedChanges`` turns a store resent
        /// ``FailedChanges/maximumResends`` times into a removal of what is older): once the
        /// tier takes "poison" again, "good"'s value is what the tier holds.
        @Test(arguments: [1, 8]) func aWriteBatchedWithARefusedKeyIsNotTurnedIntoARemoval(maximumBatch: Int)
            async throws
        {
            backing.maximumBatch = maximumBatch
            backing.failCalls(of: "poison")
            let a = server(1)
            try await holdAWrite(of: a)
            try a.set(1, for: Self.key("poison"))
            try a.set(2, for: Self.key("good"))
            backing.openGate()
            await a.waitForSharedTierWork()
            for _ in 0..<4 { await resendFailed(of: a) }
            backing.restoreCalls(of: "poison")
            await resendFailed(of: a)
            #expect(backing.value(Int.self, in: Self.slot("good")) == 2, "good's write became a removal")
            #expect(!backing.removals.contains("good"), "removals sent: \(backing.removals)")
        }

        /// Pins: a key the tier refuses takes down the unrelated changes queued behind each of
        /// its resends. "fresh" is written after "poison" failed, queued behind poison's resend:
        /// one change a call it lands; in poison's call it fails.
        @Test(arguments: [1, 8]) func aResendOfARefusedKeyDoesNotFailTheChangesQueuedBehindIt(maximumBatch: Int)
            async throws
        {
            backing.maximumBatch = maximumBatch
            backing.failCalls(of: "poison")
            let a = server(1)
            try a.set(1, for: Self.key("poison"))
            await a.waitForSharedTierWork()
            #expect(a.shared?.writes.queue.keptFailures == 1)
            // Poison's resend queued behind a held write, and a fresh change behind it.
            try await holdAWrite(of: a)
            a.shared?.writes.queue.resendFailed(.reconnected)
            #expect(a.shared?.writes.queue.hasQueuedChange(of: "poison") == true)
            try a.set(3, for: Self.key("fresh"))
            backing.openGate()
            await a.waitForSharedTierWork()
            #expect(backing.value(Int.self, in: Self.slot("fresh")) == 3, "calls: \(backing.batches)")
        }

        // MARK: What held (pinned)

        /// Pinned: a removal of every record queued while a call is on its way, which then
        /// fails: none of its changes is kept, and none is resent over the removal.
        @Test func aCallThatFailsAfterARemovalOfEveryRecordWasQueuedKeepsNothing() async throws {
            backing.maximumBatch = 8
            let held = HeldBatches()
            let tier = HeldBatchTier(inner: backing.tier(1), held: held)
            let a = server(1, tier: tier)
            try await holdAWrite(of: a)
            held.hold()
            try a.set(1, for: Self.key("x"))
            try a.set(2, for: Self.key("y"))
            backing.openGate()
            await eventually("the call of x and y is held") { held.waiting == 1 }
            a.removeAll()
            held.release(failing: true)
            await a.waitForSharedTierWork()
            #expect(a.shared?.writes.queue.keptFailures == 0)
            await resendFailed(of: a)
            #expect(backing.record(in: Self.slot("x")) == nil)
            #expect(backing.record(in: Self.slot("y")) == nil)
            #expect(backing.removalsOfAll == 1)
        }

        /// Pinned: a call that times out (its tier ignores cancellation) while a later write of
        /// one of its keys is queued: the later write goes only after the call ended, and wins.
        @Test func aLaterWriteQueuedWhileACallTimesOutLandsAfterIt() async throws {
            backing.maximumBatch = 8
            let held = HeldBatches()
            let tier = HeldBatchTier(inner: backing.tier(1), held: held)
            let events = EventLog()
            let a = server(1, tier: tier, timeout: 0.05, events: events)
            try await holdAWrite(of: a)
            held.hold()
            try a.set(1, for: Self.key("x"))
            try a.set(1, for: Self.key("y"))
            backing.openGate()
            await eventually("the call of x and y is held") { held.waiting == 1 }
            await eventually("the call timed out") {
                events.all.contains { if case .failure(let key, _) = $0 { key == "x" } else { false } }
            }
            clockA.advance(by: 1)
            try a.set(2, for: Self.key("x"))
            #expect(backing.record(in: Self.slot("x")) == nil, "nothing else sent while the call is under way")
            held.release(failing: false)
            await a.waitForSharedTierWork()
            #expect(backing.value(Int.self, in: Self.slot("x")) == 2)
            #expect(backing.value(Int.self, in: Self.slot("y")) == 1)
            #expect(a.shared?.writes.queue.keptFailures == 0)
            #expect(a.value(for: Self.key("x")) == 2)
        }

        /// Pinned: a store of a call refused as older, while a later write of the key is
        /// queued, leaves the writer's newer copy in place; that write then lands.
        @Test func aRefusedStoreOfACallKeepsTheNewerCopyQueuedMeanwhile() async throws {
            backing.maximumBatch = 8
            let (held, b) = (HeldBatches(), server(2))
            clockB.advance(by: 10)
            try b.set(9, for: Self.key("x"))
            await b.waitForSharedTierWork()
            let a = server(1, tier: HeldBatchTier(inner: backing.tier(1), held: held))
            try await holdAWrite(of: a)
            held.hold()
            try a.set(1, for: Self.key("x")) // older than B's: refused
            try a.set(5, for: Self.key("y"))
            backing.openGate()
            await eventually("the call of x and y is held") { held.waiting == 1 }
            clockA.advance(by: 20)
            try a.set(3, for: Self.key("x"))
            held.release(failing: false)
            await a.waitForSharedTierWork()
            #expect(backing.value(Int.self, in: Self.slot("x")) == 3)
            #expect(a.value(for: Self.key("x")) == 3, "the newer copy was dropped")
            #expect(backing.value(Int.self, in: Self.slot("y")) == 5)
        }

        /// Pinned: a maximumBatch of 0, negative or huge: one change a call for the first two,
        /// the queue's distinct keys in one call for the last; every change lands.
        @Test(arguments: [0, -5, Int.max])
        func anOddMaximumBatch(_ maximum: Int) async throws {
            backing.maximumBatch = maximum
            let a = server(1)
            try await holdAWrite(of: a)
            for number in 0..<5 { try a.set(number, for: Self.key("k\(number)")) }
            backing.openGate()
            await a.waitForSharedTierWork()
            for number in 0..<5 { #expect(backing.value(Int.self, in: Self.slot("k\(number)")) == number) }
            #expect(backing.batches == (maximum > 1 ? [(0..<5).map { "k\($0)" }] : []))
        }
    }
}

/// Holds the calls of several changes (`apply` of more than one) until released, ignoring
/// cancellation (as PostgreSQL's statements already on the wire run on), then fails or applies them.
final class HeldBatches: Sendable {
    private struct State {
        var holding = false
        var waiters: [CheckedContinuation<Bool, Never>] = []
        var calls = 0
    }
    private let state = Locked(State())

    func hold() { state.withLock { $0.holding = true } }

    var waiting: Int { state.withLock { $0.waiters.count } }
    var calls: Int { state.withLock { $0.calls } }

    func release(failing: Bool) {
        let waiters = state.withLock { state in
            state.holding = false
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: failing) }
    }

    /// Whether the call fails.
    fileprivate func pass() async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let passes = state.withLock { state in
                state.calls += 1
                if state.holding { state.waiters.append(continuation) }
                return !state.holding
            }
            if passes { continuation.resume(returning: false) }
        }
    }
}

private struct HeldBatchTier: SharedTier {
    let inner: FakeSharedTier
    let held: HeldBatches

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
        if changes.count > 1, await held.pass() { throw SharedBacking.Unavailable() }
        return try await inner.apply(changes)
    }
}
