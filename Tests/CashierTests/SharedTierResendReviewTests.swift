import CashierEntryFormat
import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile review of the retry timer of failed changes (``SharedTierWrites/FailedChanges``):
/// a change that failed to reach the shared tier goes again on a backing-off timer, at once
/// when another change gets through (its first three resends) or on a reconnection, a store
/// refused three times becomes a removal of what is older, and at most 65,536 keys are kept.
///
/// What the review found was fixed; its tests and those of what held pin the behaviour.
extension SharedTierTests {
    @Suite struct ResendReview: TwoServerSuite {
        let servers = TwoServers()
        static let other = CacheKey<Int>("other", schemaVersion: 1)

        /// Server `server`'s cache (1 on folder A, 2 on folder B) on `tier` (the backing's by
        /// default); `retryDelay`: the retry timer's first wait (an hour: only what the test
        /// does sends a failed change again).
        func server(
            _ server: Int, retryDelay: TimeInterval = 3600, tier: (any SharedTier)? = nil
        ) -> Cache {
            Cache(servers.configuration(server, tier: tier, retryDelay: retryDelay))
        }

        // MARK: Order against a removal of every key

        /// A's write of `n` failed; the tier takes the key again while a `removeAll()` of A's is
        /// queued (behind a store held at the gate). A resend then, queued behind the removal
        /// of every key, would land after it: the tier would clear everything, then take the
        /// store, and every other instance would read back a value A removed (a tier that
        /// orders changes cannot help: `removeAllRecords()` carries no time and leaves no
        /// tombstone). The review found the timer did that. Now the failed change is forgotten
        /// as the removal of every key is queued (the removal clears it from the tier), so no
        /// timer sends it.
        @Test func theTimerDoesNotSendAnOldWriteAfterARemovalOfEveryKey() async throws {
            let a = server(1, retryDelay: 1)
            let queue = a.folderState.sharedTierWrites
            backing.failCalls(of: Self.key.name)
            try a.set(1, for: Self.key)
            await a.waitForSharedTierWork()
            #expect(backing.orderedCalls(of: Self.key.name) == 1)
            #expect(queue.keptFailures == 1)
            // The queue is held by a store at the gate (reached before the removal of every key
            // comes, which would supersede it queued); the removal waits behind it.
            backing.closeGate()
            try a.set(5, for: Self.other)
            await eventually("the other key's store at the gate") { backing.storesAtGate == 1 }
            a.removeAll()
            #expect(queue.keptFailures == 0, "the removal of every key makes the failed write moot")
            backing.restoreCalls(of: Self.key.name)
            backing.openGate()
            await a.waitForSharedTierWork()
            #expect(a.value(for: Self.key) == nil, "A removed it")
            #expect(backing.record(in: Self.slot) == nil, "the tier holds no value removed after it was written")
            let b = server(2)
            #expect(try await b.value(for: Self.key) { 9 } == 9, "B fetches: A removed every key")
        }

        /// The same overtaking, without the timer and without timing: a change that gets
        /// through sends the failed ones again at once (``SharedTierWrites/ResendReason/changeReached``),
        /// queued behind the removal of every key that came while that change was on its way.
        @Test func aChangeGettingThroughDoesNotSendAnOldWriteAfterARemovalOfEveryKey() async throws {
            let a = server(1)
            backing.failCalls(of: Self.key.name)
            try a.set(1, for: Self.key)
            await a.waitForSharedTierWork()
            backing.restoreCalls(of: Self.key.name)
            backing.closeGate()
            try a.set(5, for: Self.other)
            await eventually("the other key's store at the gate") { backing.storesAtGate == 1 }
            a.removeAll()
            backing.openGate()
            await a.waitForSharedTierWork() // the resends the store getting through sets off included
            #expect(backing.record(in: SharedSlot(name: Self.other.name, version: "schema-1")) == nil)
            #expect(backing.record(in: Self.slot) == nil, "the tier holds no value removed after it was written")
        }

        // MARK: A tier that answers again

        /// A's write failed; the tier is back, and A only reads (no change of A's gets through,
        /// no reconnection, the timer an hour away): a read the tier answers sends the failed
        /// write again at once. Before, it waited for the timer, and every other instance read
        /// the record from before the write (FleetBench's outage runs under load).
        @Test func aReadTheTierAnswersSendsAFailedWriteAgain() async throws {
            let a = server(1)
            let b = server(2)
            try b.set(5, for: Self.other)
            await b.waitForSharedTierWork()
            backing.failCalls(of: Self.key.name)
            try a.set(1, for: Self.key)
            await a.waitForSharedTierWork()
            #expect(a.folderState.sharedTierWrites.keptFailures == 1)
            #expect(backing.record(in: Self.slot) == nil)
            backing.restoreCalls(of: Self.key.name)
            // A read of a key B stored: found in the tier, kept locally, nothing sent.
            #expect(try await a.value(for: Self.other) { 9 } == 5)
            await a.waitForSharedTierWork()
            #expect(a.folderState.sharedTierWrites.keptFailures == 0)
            #expect(backing.record(in: Self.slot) != nil, "the failed write went again")
            #expect(try await b.value(for: Self.key) { 9 } == 1, "B reads A's write, not a fetch")
        }

        // MARK: The bound of failed changes

        /// At ``SharedTierWrites/FailedChanges/countLimit`` keys all within their quick resends,
        /// a further failed store is not kept, but ``SharedTierWrites/FailedChanges/keep(_:for:resends:sinceBack:at:)``
        /// has already counted its payload against the 4 MiB budget, and nothing ever takes it
        /// back (only a removal of every key reaching the tier resets it). Here one lost 4 MiB
        /// store leaves no budget: every later failed store, however small, is kept as a
        /// removal, so the other instances refetch what would have been sent.
        @Test func aFailedStoreNotKeptAtTheCountLimitTakesNoPayloadBudget() throws {
            var failed = SharedTierWrites.FailedChanges()
            let destination = SharedTierWrites.Destination(tier: backing.tier(1), timeout: 1, onEvent: nil)
            let date = Date(timeIntervalSince1970: 1_000)
            let header = EntryHeader(
                key: "k", typeName: "Data", format: .json, createdAt: 0, validatedAt: 0, lifespan: .never,
                schemaVersion: 1, appVersion: nil, isLocked: false, payloadLength: 0)
            func store(_ name: String, bytes: Int) -> SharedTierWrites.Change {
                .store(
                    SharedSlot(name: name, version: "schema-1"), header: header, payload: Data(count: bytes),
                    expiresAt: nil, removingOthers: true, writtenAt: date)
            }
            let limit = SharedTierWrites.FailedChanges.countLimit
            for index in 0..<limit {
                _ = failed.keep(.remove("k\(index)", at: date), for: destination, resends: 0, sinceBack: 0, at: 0)
            }
            #expect(
                failed.keep(
                    store("big", bytes: SharedTierWrites.FailedChanges.byteLimit), for: destination, resends: 0,
                    sinceBack: 0, at: 0)
                    == nil)
            failed.forget("k0", of: destination) // room for one more key
            #expect(failed.keep(store("small", bytes: 1), for: destination, resends: 0, sinceBack: 0, at: 0) != nil)
            let taken = failed.take(for: .reconnected, at: 0) { name, _ in name == "small" }
            #expect(taken.count == 1)
            guard case .store = taken.first?.change else {
                Issue.record("kept as \(String(describing: taken.first?.change)): the store not kept took the budget")
                return
            }
        }

        // MARK: Two caches on one folder, each with a tier of its own

        /// Two caches on one folder share its queue, and the queue keeps each change's
        /// destination (only a change for the same tier supersedes another). The failed changes
        /// are kept by key alone: X's failed write of `n` is forgotten when Y's write of `n`
        /// reaches Y's tier, so X's tier, back up, keeps its older record for good.
        @Test func aFailedChangeIsNotForgottenForAChangeThatReachedAnotherTier() async throws {
            let other = SharedBacking()
            let x = server(1, tier: backing.tier(1))
            let y = server(1, tier: other.tier(1))
            try x.set(1, for: Self.key)
            await x.waitForSharedTierWork()
            #expect(backing.value(Int.self, in: Self.slot) == 1)
            clockA.advance(by: 1)
            backing.failCalls(of: Self.key.name)
            try x.set(2, for: Self.key) // fails to reach X's tier
            await x.waitForSharedTierWork()
            try y.set(3, for: Self.key) // reaches Y's tier
            await y.waitForSharedTierWork()
            #expect(other.value(Int.self, in: Self.slot) == 3)
            backing.restoreCalls(of: Self.key.name)
            backing.send(.all, to: 1) // X's tier is back: what failed goes again
            try x.set(7, for: Self.other) // and a change of X's gets through
            await x.waitForSharedTierWork()
            await eventually("X's write reaching X's tier") { backing.value(Int.self, in: Self.slot) == 2 }
        }

        // MARK: What held

        /// The timer resending an old write of `n` while the instance writes `n` again and
        /// again: whatever the interleaving, the tier ends holding the last write. All the
        /// writes carry the same time (the test clock stands still), so a tier that orders by
        /// time cannot hide an old change arriving last: order alone decides.
        @Test func theTimerNeverSendsAnOldWriteAfterANewerOne() async throws {
            let a = server(1, retryDelay: 0.001)
            backing.failCalls(of: Self.key.name)
            try a.set(0, for: Self.key)
            await a.waitForSharedTierWork()
            backing.restoreCalls(of: Self.key.name)
            for value in 1...200 {
                try a.set(value, for: Self.key)
                if value.isMultiple(of: 20) { try await Task.sleep(nanoseconds: 1_000_000) }
            }
            await a.waitForSharedTierWork()
            await eventually("the last write in the tier") { backing.value(Int.self, in: Self.slot) == 200 }
            // Nothing older comes after it: the failed write is forgotten, the timer idle.
            await a.waitForSharedTierWork()
            #expect(backing.value(Int.self, in: Self.slot) == 200)
            #expect(a.folderState.sharedTierWrites.hasQueuedChange(of: Self.key.name) == false)
        }

        /// A store refused three times is sent as a removal of what is older, at its own
        /// time: another instance's newer record of the key stays in the tier.
        @Test func aWriteTurnedRemovalLeavesAnotherInstancesNewerRecord() async throws {
            let a = server(1)
            let b = server(2)
            backing.failCalls(of: Self.key.name)
            try a.set(1, for: Self.key)
            await a.waitForSharedTierWork()
            for index in 0..<SharedTierWrites.FailedChanges.maximumResends {
                try a.set(index, for: CacheKey<Int>("other\(index)", schemaVersion: 1))
                await a.waitForSharedTierWork()
            }
            // A's write is now kept as a removal; B writes the key later, then the tier is back.
            backing.restoreCalls(of: Self.key.name)
            clockB.advance(by: 1)
            try b.set(2, for: Self.key)
            await b.waitForSharedTierWork()
            let removalsBefore = backing.removals.count
            backing.send(.all, to: 1)
            await eventually("A's removal sent") { backing.removals.count > removalsBefore }
            await a.waitForSharedTierWork()
            #expect(backing.removals.last == Self.key.name)
            #expect(backing.value(Int.self, in: Self.slot) == 2)
        }

        /// A key the tier refuses for good, with the timer at its fastest: once the folder's
        /// cache is gone, the queue goes (the timer holds it weakly) and the calls stop.
        @Test func theTimerOfAKeyRefusedForGoodStopsWithTheLastCache() async throws {
            weak var queue: SharedTierWrites?
            backing.failCalls(of: Self.key.name)
            do {
                let a = server(1, retryDelay: 0.001)
                try a.set(1, for: Self.key)
                await a.waitForSharedTierWork()
                queue = a.folderState.sharedTierWrites
                await eventually("the timer resending") { backing.orderedCalls(of: Self.key.name) >= 3 }
                await a.waitForSharedTierWork()
            }
            await eventually("the queue going with the cache") { queue == nil }
            let calls = backing.orderedCalls(of: Self.key.name)
            try await Task.sleep(nanoseconds: 100_000_000)
            #expect(backing.orderedCalls(of: Self.key.name) == calls)
        }
    }
}

/// A tier that implements only the six original requirements (the change that arrives last
/// wins), refusing every change while `down` holds.
private struct UnorderedTier: SharedTier {
    let inner: FakeSharedTier
    let down = Locked(false)

    private func enter() throws {
        if down.withLock({ $0 }) { throw SharedBacking.Unavailable() }
    }

    func record(in slot: SharedSlot) async throws -> SharedRecord? { try await inner.record(in: slot) }
    func store(_ record: SharedRecord, in slot: SharedSlot) async throws {
        try enter()
        try await inner.store(record, in: slot)
    }
    func storeRemovingOtherVersions(_ record: SharedRecord, in slot: SharedSlot) async throws {
        try enter()
        try await inner.storeRemovingOtherVersions(record, in: slot)
    }
    func removeRecords(named name: String) async throws {
        try enter()
        try await inner.removeRecords(named: name)
    }
    func removeAllRecords() async throws {
        try enter()
        try await inner.removeAllRecords()
    }
    func changes() -> AsyncStream<SharedChange> { inner.changes() }
}

extension SharedTierTests.ResendReview {
    /// With a tier that keeps the change that arrives last (one implementing only the original
    /// requirements, which the protocol allows), a write that failed, sent again later by the
    /// timer, would overwrite B's newer write made meanwhile, and every instance but B would
    /// read A's older value until the key was written again (the review found it did). Such a
    /// tier does not order changes (``SharedTier/ordersChanges``), so the failed write goes
    /// again as a removal of the key: the tier holds nothing of A's older value, and the other
    /// instances fetch.
    @Test func theTimerDoesNotOverwriteANewerWriteInATierWithoutOrder() async throws {
        let tierA = UnorderedTier(inner: backing.tier(1))
        let a = server(1, retryDelay: 0.05, tier: tierA)
        let b = server(2, tier: UnorderedTier(inner: backing.tier(2)))
        tierA.down.withLock { $0 = true }
        try a.set(1, for: Self.key)
        await a.waitForSharedTierWork()
        clockB.advance(by: 1)
        try b.set(2, for: Self.key)
        await b.waitForSharedTierWork()
        #expect(backing.value(Int.self, in: Self.slot) == 2)
        let storesBefore = backing.stores(in: Self.slot)
        tierA.down.withLock { $0 = false }
        await eventually("A's timer sending its failed write as a removal") { backing.record(in: Self.slot) == nil }
        await a.waitForSharedTierWork()
        #expect(backing.stores(in: Self.slot) == storesBefore, "A's older write is not stored again")
        #expect(
            try await a.value(for: Self.key) { 2 } == 2, "A dropped its 1 when B's write was announced, and fetches")
    }
}
