import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A change that carries the record another instance stored (``SharedChange/stored(_:_:)``):
/// the key's local copies go as for any change, and the next read of its slot uses the record
/// without asking the tier, unless a change of the key made here is on its way to the tier, or
/// was made no earlier than the record was written (the tier may keep that change instead).
extension SharedTierTests {
    @Suite struct Announcements: TwoServerSuite {
        let servers = TwoServers()

        init() { backing.announcesRecords = true }

        func server(_ server: Int) -> Cache { Cache(servers.configuration(server)) }

        @Test func aStoredChangeServesTheNextReadWithoutAskingTheTier() async throws {
            let (a, b) = (server(1), server(2))
            try b.set(1, for: Self.key)
            await b.waitForSharedTierWork()
            clockA.advance(by: 1) // A's write is the newer
            try a.set(2, for: Self.key)
            await a.waitForSharedTierWork()
            await eventually("B dropping its copy") { b.value(for: Self.key) == nil }
            let entry = try await b.entry(for: Self.key) { Fetched(try await Self.noFetch()) }
            #expect(entry.value == 2)
            #expect(entry.origin == .shared)
            #expect(backing.reads(in: Self.slot) == 0)
            // Kept locally as a read of the tier would have: the next read is B's memory.
            #expect(b.entry(for: Self.key)?.origin == .memory)
        }

        @Test func aRecordOfAnotherSlotIsNotUsed() async throws {
            let (a, b) = (server(1), server(2))
            try a.set(2, for: Self.key)
            await a.waitForSharedTierWork()
            let other = SharedSlot(name: "n", version: "schema-9")
            backing.send(.stored(other, try #require(backing.record(in: Self.slot))), to: 2)
            try await Task.sleep(nanoseconds: 50_000_000)
            #expect(try await b.value(for: Self.key, fetch: Self.noFetch) == 2)
            #expect(backing.reads(in: Self.slot) == 1)
        }

        @Test func aChangeOfTheKeyMadeHereSinceIsNotUndone() async throws {
            let (a, b) = (server(1), server(2))
            try a.set(1, for: Self.key)
            await a.waitForSharedTierWork()
            let older = try #require(backing.record(in: Self.slot))
            #expect(try await b.value(for: Self.key, fetch: Self.noFetch) == 1)
            // B removes the key after A's record was announced to it: the record is older.
            backing.send(.stored(Self.slot, older), to: 2)
            await eventually("B hearing of A's record") { b.value(for: Self.key) == nil }
            clockB.advance(by: 1)
            b.removeValue(for: Self.key)
            await b.waitForSharedTierWork()
            #expect(backing.record(in: Self.slot) == nil)
            #expect(try await b.value(for: Self.key) { 7 } == 7)
        }

        /// B removed every key after A wrote; A's store is announced to B only then (the
        /// tier's delivery may lag): the record is older than B's removal and is not served.
        @Test func aRecordWrittenBeforeThisInstancesRemovalOfEveryKeyIsNotUsed() async throws {
            let (a, b) = (server(1), server(2))
            try a.set(1, for: Self.key)
            await a.waitForSharedTierWork()
            let older = try #require(backing.record(in: Self.slot))
            clockB.advance(by: 1)
            b.removeAll()
            await b.waitForSharedTierWork()
            #expect(backing.record(in: Self.slot) == nil)
            backing.send(.stored(Self.slot, older), to: 2)
            try await Task.sleep(nanoseconds: 50_000_000)
            #expect(try await b.value(for: Self.key) { 7 } == 7)
        }

        /// The times of a folder's own changes stay bounded; a key whose time was forgotten
        /// counts as changed at the latest time forgotten, never earlier.
        @Test func theLastChangesKeptAreBoundedAndNeverUnderstated() {
            let ledger = SharedTierLedger()
            let start = Date(timeIntervalSince1970: 1_000)
            for index in 0...SharedTierLedger.lastChangesLimit {
                ledger.noteChange("k\(index)", at: start.addingTimeInterval(Double(index)))
            }
            for index in [0, 1, SharedTierLedger.lastChangesLimit] {
                #expect(ledger.lastChange(of: "k\(index)") >= start.addingTimeInterval(Double(index)))
            }
            let latest = start.addingTimeInterval(Double(SharedTierLedger.lastChangesLimit))
            #expect(ledger.lastChange(of: "never") <= latest)
            ledger.noteChange(nil, at: start.addingTimeInterval(1e6))
            #expect(ledger.lastChange(of: "never") == start.addingTimeInterval(1e6))
        }

        @Test func aRecordAnnouncedWhileAChangeOfTheKeyIsOnItsWayIsNotKept() async throws {
            let (a, b) = (server(1), server(2))
            try a.set(1, for: Self.key)
            await a.waitForSharedTierWork()
            let older = try #require(backing.record(in: Self.slot))
            // B's newer write waits at the gate while A's older record is announced to B.
            backing.closeGate(for: [2])
            clockB.advance(by: 1)
            try b.set(3, for: Self.key)
            await eventually("B's store at the gate") { backing.storesAtGate == 1 }
            backing.send(.stored(Self.slot, older), to: 2)
            await eventually("B hearing of A's record") { b.value(for: Self.key) == nil }
            backing.openGate()
            await b.waitForSharedTierWork()
            #expect(backing.value(Int.self, in: Self.slot) == 3)
            // The tier's record, B's own write, not the one announced before it landed.
            #expect(try await b.value(for: Self.key, fetch: Self.noFetch) == 3)
            #expect(backing.reads(in: Self.slot) == 1)
        }
    }
}
