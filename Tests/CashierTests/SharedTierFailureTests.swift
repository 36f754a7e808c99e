import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Failure is local: a shared tier that throws, hangs, or whose change stream ends never
/// makes a caller wait past the timeout or see an error; events say what happened.
extension SharedTierTests {
    @Suite struct Failures {
        let backing = SharedBacking()
        let folder = TemporaryFolder()
        let clock = TestClock()
        let events = EventLog()
        static let key = CacheKey<Int>("n", schemaVersion: 1)

        func cache(timeout: TimeInterval = 0.05) -> Cache {
            var configuration = makeConfiguration(folder, clock: clock, events: events)
            configuration.sharedTier = backing.tier(1)
            configuration.sharedTierTimeout = timeout
            return Cache(configuration)
        }

        func sharedTierFailures() -> [CacheError] {
            events.failures.filter { $0.kind == .sharedTierUnavailable }
        }

        @Test(arguments: [SharedBacking.Mode.failing, .hanging])
        func aReadOfAnUnavailableTierIsAMissThenAFetch(mode: SharedBacking.Mode) async throws {
            let cache = cache()
            backing.mode = mode
            let value = try await cache.value(for: Self.key) { 7 }
            #expect(value == 7)
            #expect(cache.value(for: Self.key) == 7)
            await events.wait(for: "a failure of the shared tier") {
                if case .failure(_, let error) = $0 { error.kind == .sharedTierUnavailable } else { false }
            }
            #expect(sharedTierFailures().first?.key == "n")
            await cache.waitForSharedTierWork()
        }

        @Test(arguments: [SharedBacking.Mode.failing, .hanging])
        func aWriteToAnUnavailableTierLandsLocallyAndIsReported(mode: SharedBacking.Mode) async throws {
            let cache = cache()
            backing.mode = mode
            try cache.set(1, for: Self.key)
            cache.removeValue(for: Self.key)
            try cache.set(2, for: Self.key)
            await cache.waitForSharedTierWork()
            #expect(cache.value(for: Self.key) == 2)
            #expect(!sharedTierFailures().isEmpty)
            #expect(sharedTierFailures().allSatisfy { $0.key == "n" })
        }

        /// The folder's queue of changes keeps the changes that failed, and with each its
        /// destination: once the caches are gone, nothing of theirs may keep the queue alive
        /// (a strong capture of it in the destination made a cycle that leaked it).
        @Test func theQueueOfFailedChangesGoesWithTheLastCache() async throws {
            weak var queue: SharedTierWrites?
            do {
                let cache = cache()
                backing.mode = .failing
                try cache.set(1, for: Self.key)
                await cache.waitForSharedTierWork()
                #expect(!sharedTierFailures().isEmpty, "no change failed; the test proves nothing")
                queue = cache.folderState.sharedTierWrites
            }
            #expect(queue == nil)
        }

        @Test func aKeyWhoseWriteFailedIsNotReadFromTheTierAgain() async throws {
            let cache = cache()
            let other = backing.tier(2)
            let slot = SharedSlot(name: "n", version: "schema-1")
            try cache.set(1, for: Self.key)
            await cache.waitForSharedTierWork()
            let first = try #require(backing.record(in: slot))
            // The removal fails: the tier keeps the old record, which must not come back here.
            backing.mode = .failing
            cache.removeValue(for: Self.key)
            await cache.waitForSharedTierWork()
            backing.mode = .working
            #expect(try await other.record(in: slot) == first)
            let value = try await cache.value(for: Self.key) { 9 }
            #expect(value == 9)
            // The fetch's write reached the tier: the key is read from it again.
            await cache.waitForSharedTierWork()
            #expect(backing.value(Int.self, in: slot) == 9)
        }

        @Test func aStreamThatEndsIsAskedForAgainAndEverythingCountsAsChanged() async throws {
            let cache = cache(timeout: 0.01)
            try cache.set(1, for: Self.key)
            #expect(backing.subscriptions(of: 1) == 1)
            backing.endStreams(of: 1)
            await eventually("a new stream") { backing.subscriptions(of: 1) == 2 }
            // The files go, then the memory tier, in one step of the cache's that `count` does not
            // wait for: wait for both.
            await eventually("the local entries dropped") { cache.count == 0 && cache.value(for: Self.key) == nil }
            // The new stream works.
            try cache.set(2, for: Self.key)
            backing.send(.key("n"), to: 1)
            await eventually("the key dropped by the new stream") { cache.value(for: Self.key) == nil }
            await cache.waitForSharedTierWork()
        }

        @Test func theChangeStreamDoesNotKeepTheCacheAlive() async throws {
            weak var weakCache: Cache?
            do {
                let cache = cache()
                try cache.set(1, for: Self.key)
                await cache.waitForSharedTierWork()
                weakCache = cache
            }
            #expect(weakCache == nil)
            await eventually("the stream ended with the cache") { backing.endedStreams == 1 }
        }
    }
}
