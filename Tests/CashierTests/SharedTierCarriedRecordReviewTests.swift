import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile review of carried records (``SharedChange/stored(_:_:)``, a read that uses one
/// keeps it locally as any value read from the tier) and of changes that failed to reach the
/// tier: what a caller asks of such a value must act on it as on any other, and a change this
/// instance made must end up in the tier once it is back. (The review found that keeping them
/// in memory only broke most of what follows; they are kept on disk too since.)
extension SharedTierTests {
    @Suite struct CarriedRecordReview: TwoServerSuite {
        let servers = TwoServers()
        /// Another key, whose writes reach the tier while `key`'s do not.
        static let other = CacheKey<Int>("x", schemaVersion: 1)

        init() { backing.announcesRecords = true }

        /// Server 1 (A) or 2 (B) on the shared tier, with `configure`'s changes.
        func server(
            _ server: Int, events: EventLog? = nil, _ configure: (inout Cache.Configuration) -> Void = { _ in }
        ) -> Cache {
            var configuration = servers.configuration(server, events: events)
            configure(&configuration)
            return Cache(configuration)
        }

        /// B (`b`, else a default server 2) wrote 1, A's newer 2 (of `lifespan`) was announced
        /// to B with its record, and B's next read used that record.
        func bHoldingACarriedRecord(_ b: Cache? = nil, lifespan: Lifespan? = nil) async throws -> (a: Cache, b: Cache) {
            let (a, b) = (server(1), b ?? server(2))
            try b.set(1, for: Self.key)
            await b.waitForSharedTierWork()
            clockA.advance(by: 1)
            try a.set(2, for: Self.key, lifespan: lifespan)
            await a.waitForSharedTierWork()
            await eventually("B dropping its copy") { b.value(for: Self.key) == nil }
            #expect(try await b.value(for: Self.key, fetch: Self.noFetch) == 2)
            #expect(backing.reads(in: Self.slot) == 0, "the carried record was used")
            #expect(b.entry(for: Self.key)?.origin == .memory)
            return (a, b)
        }

        // MARK: What a caller asks of a carried record

        /// `removeAll(where:)` dropped memory records early on the grounds that "the file is
        /// the truth", and shared with the tier only the removals the disk made: a record kept
        /// in memory only left B's memory silently (no observer told) and was never removed
        /// from the tier; B's next read brought 2 back from there, and A kept serving it. It
        /// now removes a memory record whose key the disk holds nothing of as
        /// `removeValue(for:)` does.
        @Test func removeAllWhereRemovesACarriedRecordFromTheTierAndTellsObservers() async throws {
            let (a, b) = try await bHoldingACarriedRecord()
            var updates = b.updates(for: Self.key).makeAsyncIterator()
            #expect(await updates.next() == .some(2))
            clockB.advance(by: 2) // B's removal is the newest change
            b.removeAll { $0 == Self.key.name }
            await b.waitForSharedTierWork()
            #expect(b.entry(for: Self.key) == nil)
            #expect(backing.record(in: Self.slot) == nil, "B removed the key: the tier holds nothing of it")
            #expect(try await b.value(for: Self.key) { 7 } == 7)
            // Without the removal told, the next value observers see is the read's (2 or 7).
            #expect(await updates.next() == .some(nil), "B's observers see the value go")
            await eventually("A dropping its copy", seconds: 5) { a.value(for: Self.key) == nil }
        }

        /// The same through the folder's other cache on the same tier, which never read the key:
        /// the carried record B used is on the folder's disk, so the other cache's removal finds
        /// it, and the tier hears of it. (While carried records were kept in memory only, this
        /// failed: the review that found it led to their going to disk again.)
        @Test func removeAllWhereThroughTheFoldersOtherCacheRemovesACarriedRecord() async throws {
            let (_, b) = try await bHoldingACarriedRecord()
            let otherB = server(2)
            clockB.advance(by: 2)
            otherB.removeAll { $0 == Self.key.name }
            await otherB.waitForSharedTierWork()
            #expect(b.entry(for: Self.key) == nil)
            #expect(backing.record(in: Self.slot) == nil, "the folder removed the key")
        }

        /// The same through `removeAllUnlocked()`, the same path.
        @Test func removeAllUnlockedRemovesACarriedRecordFromTheTier() async throws {
            let (_, b) = try await bHoldingACarriedRecord()
            clockB.advance(by: 2)
            b.removeAllUnlocked()
            await b.waitForSharedTierWork()
            #expect(backing.record(in: Self.slot) == nil, "B removed every unlocked entry")
            #expect(try await b.value(for: Self.key) { 7 } == 7)
        }

        /// `lock(_:)` rewrites the entry's header on disk: the carried record B used is there, so
        /// it is locked and kept (kept in memory only, it was dropped as stale).
        @Test func lockingACarriedRecordLocksItAndKeepsIt() async throws {
            let (_, b) = try await bHoldingACarriedRecord()
            b.lock(Self.key)
            let entry = b.entry(for: Self.key)
            #expect(entry?.value == 2)
            #expect(entry?.isLocked == true)
        }

        /// `refresh(_:)` the same: the value it revalidates stays.
        @Test func refreshingACarriedRecordKeepsIt() async throws {
            let (_, b) = try await bHoldingACarriedRecord()
            b.refresh(Self.key)
            #expect(b.entry(for: Self.key)?.value == 2)
        }

        /// A carried record evicted from B's memory (its count limit 1) is still B's: it is on
        /// disk, as every value a read takes from the tier, so observers of `updates(for:)` are
        /// right to see nothing go. (Kept in memory only, it was gone with no `nil` published.)
        @Test func aCarriedRecordEvictedFromMemoryIsStillReadFromDisk() async throws {
            let (_, b) = try await bHoldingACarriedRecord(
                server(2) {
                    $0.memoryCountLimit = 1
                    $0.evictionPolicy = .leastRecentlyUsed
                })
            var updates = b.updates(for: Self.key).makeAsyncIterator()
            #expect(await updates.next() == .some(2))
            try b.set(0, for: Self.other) // evicts the carried record from memory
            #expect(b.value(for: Self.key) == 2, "read from disk")
            try b.set(5, for: Self.key)
            #expect(await updates.next() == .some(5), "nothing went between 2 and 5")
        }

        /// `removeExpired()` removes and reports every expired entry, a carried record among them
        /// (it plans from the disk, where the record is; kept in memory only, it was missed).
        @Test func removeExpiredRemovesAnExpiredCarriedRecord() async throws {
            let events = EventLog()
            let (_, b) = try await bHoldingACarriedRecord(server(2, events: events), lifespan: .seconds(10))
            clockB.advance(by: 100)
            b.removeExpired()
            #expect(events.all.contains(.discarded(key: Self.key.name, reason: .expired)))
        }

        /// A record carried before the tier reconnected (``SharedChange/all``: what happened
        /// meanwhile is unknown, a removal of the key, say) is not served after it: the read
        /// asks the tier.
        @Test func aRecordCarriedBeforeAReconnectionIsNotServedAfterIt() async throws {
            let (a, b) = (server(1), server(2))
            try b.set(1, for: Self.key)
            await b.waitForSharedTierWork()
            clockA.advance(by: 1)
            try a.set(2, for: Self.key)
            await a.waitForSharedTierWork()
            await eventually("B dropping its copy") { b.value(for: Self.key) == nil }
            try b.set(0, for: Self.other)
            backing.send(.all, to: 2)
            await eventually("B applying the reconnection") { b.value(for: Self.other) == nil }
            #expect(try await b.value(for: Self.key, fetch: Self.noFetch) == 2)
            #expect(backing.reads(in: Self.slot) == 1, "read from the tier, not from the record")
        }

        // MARK: A change of this instance's that failed to reach the tier

        /// B's write of 2 failed to reach the tier, and so did its three quick resends, each made
        /// when a later change of B's got through. Such failures need not be for good: after
        /// PostgreSQL restarts, under load, calls fail at once for a second after any connection
        /// failure and time out at the cache's 0.25 s bound. The store is then kept as a removal
        /// of what is older than it (``SharedTierWrites/FailedChanges``), and that removal goes
        /// once the tier takes the key again: A's older 1 leaves the tier, A drops its copy and
        /// fetches the origin's 2. (Once, the write was given up: the tier kept 1 for good, and
        /// the fleet disagreed until the key expired.)
        @Test func aWriteWhoseResendsAllFailedReachesTheTierOnceItIsBack() async throws {
            let a = server(1)
            // Only the changes getting through send it again here, not the timer.
            let b = server(2) { $0.sharedTierRetryDelay = 3600 }
            try a.set(1, for: Self.key)
            await a.waitForSharedTierWork()
            clockB.advance(by: 1) // B's write is the newer
            backing.failCalls(of: Self.key.name)
            let calls = backing.orderedCalls(of: Self.key.name)
            try b.set(2, for: Self.key)
            await b.waitForSharedTierWork()
            #expect(backing.orderedCalls(of: Self.key.name) == calls + 1)
            for round in 1...SharedTierWrites.FailedChanges.maximumResends {
                try b.set(round, for: Self.other) // gets through: B's failed change goes again
                await eventually("resend \(round)") { backing.orderedCalls(of: Self.key.name) == calls + 1 + round }
            }
            await b.waitForSharedTierWork()
            // The tier takes the key again, and B writes another key, which gets through.
            backing.restoreCalls(of: Self.key.name)
            try b.set(10, for: Self.other)
            await eventually("B's removal reaching the tier") { backing.record(in: Self.slot) == nil }
            await eventually("A dropping its copy") { a.value(for: Self.key) == nil }
            #expect(try await a.value(for: Self.key) { 2 } == 2)
            #expect(b.entry(for: Self.key)?.value == 2)
        }

        /// A write that failed once, with the tier back at once and nothing else changing, goes
        /// again on the retry timer (``Cache/Configuration-swift.struct/sharedTierRetryDelay``,
        /// short here); it once waited for a later change that got through, or a reconnection,
        /// and every other instance answered the value before it meanwhile.
        @Test func aWriteThatFailedOnceReachesTheTierWithoutALaterChange() async throws {
            let a = server(1)
            let b = server(2) { $0.sharedTierRetryDelay = 0.01 }
            try a.set(1, for: Self.key)
            await a.waitForSharedTierWork()
            clockB.advance(by: 1)
            backing.failCalls(of: Self.key.name)
            try b.set(2, for: Self.key)
            await b.waitForSharedTierWork()
            backing.restoreCalls(of: Self.key.name)
            await eventually("B's write reaching the tier") { backing.value(Int.self, in: Self.slot) == 2 }
            await eventually("A dropping its copy") { a.value(for: Self.key) == nil }
        }
    }
}
