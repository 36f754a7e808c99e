import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Across instances, the newest change wins whatever order the changes reach the tier in:
/// each carries its local time, a store older than the tier's record or than the key's last
/// removal is refused (and its writer drops its own copy), and what failed to reach the tier
/// during an outage is sent again, with its original time, once the tier is back.
///
/// Each server has a clock of its own, so a test sets the order of the times apart from the
/// order of arrival (the fake's gate holds one server's stores).
extension SharedTierTests {
    @Suite struct Order: TwoServerSuite {
        let servers = TwoServers()

        /// `retryDelay`: the first wait of the retry timer (``SharedTierWrites/FailedChanges``);
        /// an hour, so that only what a test does sends a failed change again.
        func server(_ server: Int, retryDelay: TimeInterval = 3600) -> Cache {
            Cache(servers.configuration(server, retryDelay: retryDelay))
        }

        // MARK: Times

        @Test func aWriteCarriesItsLocalTimeAndARemovalItsOwn() async throws {
            let a = server(1)
            try a.set(1, for: Self.key)
            await a.waitForSharedTierWork()
            #expect(backing.record(in: Self.slot)?.writtenAt == clockA.now)
            clockA.advance(by: 10)
            a.removeValue(for: Self.key)
            await a.waitForSharedTierWork()
            #expect(backing.tombstone(of: "n") == clockA.now)
        }

        @Test func aFetchedValueCarriesTheTimeItsFetchStarted() async throws {
            let a = server(1)
            let started = clockA.now
            let value = try await a.value(for: Self.key) { [clockA] in
                clockA.advance(by: 5)
                return 3
            }
            #expect(value == 3)
            await a.waitForSharedTierWork()
            #expect(backing.record(in: Self.slot)?.writtenAt == started)
        }

        // MARK: Order across instances

        @Test func anOlderWriteArrivingLaterLeavesTheNewerRecord() async throws {
            let (a, b) = (server(1), server(2))
            clockB.advance(by: 1)
            backing.closeGate(for: [1])
            try a.set(1, for: Self.key)
            await eventually("A's store waits at the gate") { backing.storesAtGate == 1 }
            try b.set(2, for: Self.key)
            await b.waitForSharedTierWork()
            #expect(backing.value(Int.self, in: Self.slot) == 2)
            backing.openGate()
            await a.waitForSharedTierWork()
            #expect(backing.value(Int.self, in: Self.slot) == 2)
            #expect(backing.supersededStores == 1)
            #expect(try await a.value(for: Self.key) { 9 } == 2)
        }

        @Test func aWriterWhoseStoreIsRefusedDropsItsOwnCopyAndTellsNoOne() async throws {
            // B's clock is ahead: its write, made first, is the newer one.
            let (a, b) = (server(1), server(2))
            clockB.advance(by: 10)
            try b.set(2, for: Self.key)
            await b.waitForSharedTierWork()
            let notifications = backing.notifications
            try a.set(1, for: Self.key)
            await a.waitForSharedTierWork()
            #expect(backing.value(Int.self, in: Self.slot) == 2)
            #expect(backing.notifications == notifications)
            // A's copy went with the refusal; B's stays.
            #expect(a.value(for: Self.key) == nil)
            #expect(b.entry(for: Self.key)?.origin == .memory)
            #expect(try await a.value(for: Self.key) { 9 } == 2)
        }

        @Test func aWriteOlderThanARemovalDoesNotBringTheKeyBack() async throws {
            let (a, b) = (server(1), server(2))
            clockB.advance(by: 1)
            backing.closeGate(for: [1])
            try a.set(1, for: Self.key)
            await eventually("A's store waits at the gate") { backing.storesAtGate == 1 }
            b.removeValue(for: Self.key)
            await b.waitForSharedTierWork()
            backing.openGate()
            await a.waitForSharedTierWork()
            #expect(backing.record(in: Self.slot) == nil)
            #expect(a.value(for: Self.key) == nil)
            #expect(try await b.value(for: Self.key) { 7 } == 7)
        }

        @Test func aWriteNewerThanARemovalLands() async throws {
            let (a, b) = (server(1), server(2))
            clockA.advance(by: 1)
            b.removeValue(for: Self.key)
            await b.waitForSharedTierWork()
            try a.set(1, for: Self.key)
            await a.waitForSharedTierWork()
            #expect(backing.value(Int.self, in: Self.slot) == 1)
        }

        // MARK: After an outage

        @Test func aWriteThatFailedIsSentAgainWhenTheStreamSaysTheTierIsBack() async throws {
            let (a, b) = (server(1), server(2))
            try a.set(1, for: Self.key)
            await a.waitForSharedTierWork()
            backing.mode = .failing
            clockA.advance(by: 1)
            try a.set(2, for: Self.key)
            await a.waitForSharedTierWork()
            #expect(backing.value(Int.self, in: Self.slot) == 1)
            backing.mode = .working
            backing.send(.all, to: 1)
            await eventually("the failed write sent again") { backing.value(Int.self, in: Self.slot) == 2 }
            #expect(backing.record(in: Self.slot)?.writtenAt == clockA.now)
            #expect(try await b.value(for: Self.key) { 9 } == 2)
        }

        @Test func aRemovalThatFailedIsSentAgainWhenTheNextChangeGetsThrough() async throws {
            let a = server(1)
            try a.set(1, for: Self.key)
            await a.waitForSharedTierWork()
            backing.mode = .failing
            a.removeValue(for: Self.key)
            await a.waitForSharedTierWork()
            #expect(backing.record(in: Self.slot) != nil)
            backing.mode = .working
            try a.set(5, for: CacheKey<Int>("other", schemaVersion: 1))
            await eventually("the failed removal sent again") { backing.record(in: Self.slot) == nil }
        }

        @Test func aResentWriteLosesToANewerWriteMadeElsewhere() async throws {
            let (a, b) = (server(1), server(2))
            backing.mode = .failing
            try a.set(1, for: Self.key)
            await a.waitForSharedTierWork()
            backing.mode = .working
            clockB.advance(by: 1)
            try b.set(3, for: Self.key)
            await b.waitForSharedTierWork()
            backing.send(.all, to: 1)
            await eventually("the failed write sent again and refused") { backing.supersededStores == 1 }
            #expect(backing.value(Int.self, in: Self.slot) == 3)
        }

        /// A key the tier refuses for good, while the instance's other changes get through: its
        /// store goes again at most ``SharedTierWrites/FailedChanges/maximumResends`` times when
        /// they do, then as a removal of what is older as often, then only on the retry timer
        /// (an hour here): a change that can never land does not cost a failing call after
        /// every change that gets through.
        @Test func aChangeTheTierRefusesForGoodGoesAgainWithOtherChangesABoundedNumberOfTimes() async throws {
            let a = server(1)
            backing.failCalls(of: "n")
            try a.set(1, for: Self.key)
            await a.waitForSharedTierWork()
            let quick = SharedTierWrites.FailedChanges.maximumResends
            for index in 1...(4 * quick) {
                try a.set(index, for: CacheKey<Int>("other\(index)", schemaVersion: 1))
                await a.waitForSharedTierWork() // the resends a change that got through set off included
                #expect(backing.orderedCalls(of: "n") == 1 + min(index, 2 * quick), "after change \(index)")
            }
            #expect(backing.orderedCalls(of: "other\(4 * quick)") == 1)
        }

        /// A change past its quick resends (the tier refused it through an outage) goes again
        /// at the reconnection and fails once more, as calls on connections to the server that
        /// went down do for a moment: the reconnection started its count again, so it goes with
        /// the next change that gets through. Before, it was left to the timer, whose delay an
        /// outage of minutes had doubled to a minute, and the other instances read the older
        /// record until then.
        @Test func aChangeFailingJustAfterAReconnectionGoesAgainWithTheNextChangeThatGetsThrough() async throws {
            let a = server(1)
            backing.failCalls(of: "n")
            try a.set(1, for: Self.key)
            await a.waitForSharedTierWork()
            let quick = SharedTierWrites.FailedChanges.maximumResends
            for index in 1...(2 * quick) {
                try a.set(index, for: CacheKey<Int>("other\(index)", schemaVersion: 1))
                await a.waitForSharedTierWork()
            }
            #expect(backing.orderedCalls(of: "n") == 1 + 2 * quick, "past its quick resends")
            backing.send(.all, to: 1)
            await eventually("the reconnection's resend") { backing.orderedCalls(of: "n") == 2 + 2 * quick }
            await a.waitForSharedTierWork()
            backing.restoreCalls(of: "n")
            try a.set(0, for: CacheKey<Int>("other0", schemaVersion: 1))
            await a.waitForSharedTierWork()
            #expect(backing.orderedCalls(of: "n") == 3 + 2 * quick, "sent again with the change that got through")
            #expect(backing.tombstone(of: "n") != nil, "the store, refused too often, went as a removal")
        }

        /// The retry timer's waits: the first delay, doubled after each failed resend, never
        /// over a minute; a nonsense first delay is taken as a millisecond or a minute.
        @Test func theRetryTimerBacksOffToAMinute() {
            let waits = (0..<8).map { SharedTierWrites.FailedChanges.retryDelay(after: $0, first: 1) }
            #expect(waits == [1, 2, 4, 8, 16, 32, 60, 60])
            #expect(SharedTierWrites.FailedChanges.retryDelay(after: 1_000_000, first: 0.5) == 60)
            #expect(SharedTierWrites.FailedChanges.retryDelay(after: 0, first: -3) == 0.001)
            #expect(SharedTierWrites.FailedChanges.retryDelay(after: 0, first: .nan) == 60)
        }

        @Test func failedWritesBeyondTheBoundAreSentAgainAsRemovals() async throws {
            let a = server(1)
            let keys = (0..<6).map { CacheKey<Data>("big\($0)", schemaVersion: 1) }
            let slots = keys.map { SharedSlot(name: $0.name, version: "schema-1") }
            for key in keys { try a.set(Data(count: 100), for: key) }
            await a.waitForSharedTierWork()
            backing.mode = .failing
            clockA.advance(by: 1)
            for key in keys { try a.set(Data(repeating: 1, count: 1 << 20), for: key) }
            await a.waitForSharedTierWork()
            backing.mode = .working
            backing.send(.all, to: 1)
            // Each key's old record is replaced by the new one or removed; the stores sent again
            // hold no more than the bound (4 MiB of payload, OnAServer.md).
            await eventually("every failed change sent again") {
                slots.allSatisfy { backing.record(in: $0).map { $0.writtenAt == clockA.now } ?? true }
            }
            let resent = slots.compactMap { backing.record(in: $0) }
            #expect(!resent.isEmpty)
            #expect(resent.count < keys.count)
            #expect(resent.map(\.bytes.count).reduce(0, +) <= (4 << 20) + 64 * 1024)
        }
    }
}
