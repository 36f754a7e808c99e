import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile review of the shared tier (issue 37): orders of writes and removals a slow tier
/// lets race, records that are not what their slot says, several caches on one folder.
extension SharedTierTests {
    @Suite struct Review {
        let backing = SharedBacking()
        let folder = TemporaryFolder()
        let otherFolder = TemporaryFolder()
        let clock = TestClock()
        let events = EventLog()
        static let key = CacheKey<Int>("n", schemaVersion: 1)
        static let slot = SharedSlot(name: "n", version: "schema-1")

        /// A cache on `folder` (or `otherFolder` for server 2), reaching the backing as `server`.
        func cache(server: Int = 1, onOtherFolder: Bool = false) -> Cache {
            var configuration = makeConfiguration(onOtherFolder ? otherFolder : folder, clock: clock, events: events)
            configuration.sharedTier = backing.tier(server)
            configuration.sharedTierTimeout = 30
            return Cache(configuration)
        }

        /// Waits up to `seconds` for `condition`, recording nothing when it does not come.
        func briefly(_ seconds: Double = 1, _ condition: () -> Bool) async {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline, !condition() { try? await Task.sleep(nanoseconds: 2_000_000) }
        }

        /// Two caches of one process on one folder, one tier: a write of the first still on its
        /// way to the tier when the second removes the key. Locally the removal is the last
        /// change; the tier must end so too, or every instance (this one included, once the
        /// ledger trusts the key again) reads the removed value back.
        @Test func aRemovalByAnotherCacheOnTheFolderIsNotUndoneByAWriteStillOnItsWay() async throws {
            let (one, two) = (cache(), cache())
            backing.closeGate()
            try one.set(1, for: Self.key)
            await eventually("the write waits at the gate") { backing.storesAtGate == 1 }
            two.removeValue(for: Self.key)
            #expect(one.value(for: Self.key) == nil)
            // Give a removal sent on its own queue the time to overtake the write.
            await briefly { !backing.removals.isEmpty }
            backing.openGate()
            await one.waitForSharedTierWork()
            await two.waitForSharedTierWork()
            #expect(backing.value(Int.self, in: Self.slot) == nil, "the tier resurrected a removed value")
            let server2 = cache(server: 2, onOtherFolder: true)
            #expect(try await server2.value(for: Self.key) { 9 } == 9)
            // Server 2's value (if its write reached the tier yet) or a fetch: never the removed 1.
            let got = try await one.value(for: Self.key) { 8 }
            #expect(got == 8 || got == 9, "the removed value came back: \(got)")
        }

        /// set, remove, set, remove, set while the first write hangs at the tier: the tier ends
        /// with the last value, whatever was superseded.
        @Test func aBurstOfChangesEndsWithTheLast() async throws {
            let one = cache()
            backing.closeGate()
            try one.set(1, for: Self.key)
            await eventually("the write waits at the gate") { backing.storesAtGate == 1 }
            one.removeValue(for: Self.key)
            try one.set(2, for: Self.key)
            one.removeValue(for: Self.key)
            try one.set(3, for: Self.key)
            backing.openGate()
            await one.waitForSharedTierWork()
            #expect(backing.value(Int.self, in: Self.slot) == 3)
            let server2 = cache(server: 2, onOtherFolder: true)
            #expect(try await server2.value(for: Self.key) { 9 } == 3)
        }

        /// A record stored in one key's slot whose bytes are another key's record: a miss, the
        /// fetch's value, never the other key's value.
        @Test func aRecordOfAnotherKeyInTheSlotIsAMiss() async throws {
            let one = cache()
            let other = CacheKey<Int>("other", schemaVersion: 1)
            try one.set(666, for: other)
            await one.waitForSharedTierWork()
            let foreign = try #require(backing.record(in: SharedSlot(name: "other", version: "schema-1")))
            try await backing.tier(7).store(foreign, in: Self.slot)
            let server2 = cache(server: 2, onOtherFolder: true)
            #expect(try await server2.value(for: Self.key) { 9 } == 9)
        }

        /// A tier answering a record whose entry expired (the tier's own `expiresAt` says it
        /// has not): a miss, then the fetch.
        @Test func anExpiredRecordTheTierStillAnswersIsAMiss() async throws {
            let one = cache()
            try one.set(1, for: Self.key, lifespan: .seconds(10))
            await one.waitForSharedTierWork()
            var record = try #require(backing.record(in: Self.slot))
            record.expiresAt = nil
            try await backing.tier(7).store(record, in: Self.slot)
            clock.advance(by: 60)
            let server2 = cache(server: 2, onOtherFolder: true)
            #expect(try await server2.value(for: Self.key) { 9 } == 9)
        }
    }
}
