import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// `entry(for:policy:fetch:)`: the fetch decides the lifespan, the entry says where the value came from.
@Suite struct FetchedTests {
    let folder = TemporaryFolder()
    let clock = TestClock()

    func cache(_ change: (inout Cache.Configuration) -> Void = { _ in }) -> Cache {
        var configuration = makeConfiguration(folder, clock: clock)
        change(&configuration)
        return Cache(configuration)
    }

    func seconds(_ seconds: TimeInterval) -> Date { clock.now.addingTimeInterval(seconds) }

    // MARK: The lifespan

    @Test func lifespanComesFromTheFetch() async throws {
        let cache = cache()
        let key = CacheKey<Int>("n", lifespan: .hours(1))
        let entry = try await cache.entry(for: key) { Fetched(1, lifespan: .seconds(30)) }
        #expect(entry.expiresAt == seconds(30))
        #expect(self.cache().entry(for: key)?.expiresAt == seconds(30))
        clock.advance(by: 31)
        #expect(cache.value(for: key) == nil)
        #expect(self.cache().entry(for: key)?.isExpired == true)
    }

    @Test func nilLifespanMeansTheKeys() async throws {
        let cache = cache { $0.defaultLifespan = .seconds(90) }
        let key = CacheKey<Int>("n", lifespan: .seconds(60))
        let entry = try await cache.entry(for: key) { Fetched(1) }
        #expect(entry.expiresAt == seconds(60))
        #expect(self.cache().entry(for: key)?.expiresAt == seconds(60))
    }

    @Test func nilLifespanWithoutAKeyLifespanMeansTheDefault() async throws {
        let cache = cache { $0.defaultLifespan = .seconds(90) }
        let key = CacheKey<Int>("n")
        let entry = try await cache.entry(for: key) { Fetched(1, lifespan: nil) }
        #expect(entry.expiresAt == seconds(90))
        #expect(self.cache().entry(for: key)?.expiresAt == seconds(90))
    }

    @Test func zeroLifespanAnswersTheValueExpiredAndIsNotReused() async throws {
        let cache = cache()
        let key = CacheKey<Int>("n", lifespan: .hours(1))
        let calls = Locked(0)
        let first = try await cache.entry(for: key) {
            calls.withLock { $0 += 1 }
            return Fetched(1, lifespan: .seconds(0))
        }
        #expect(first.value == 1)
        #expect(first.origin == .fetch)
        #expect(first.isExpired)
        #expect(cache.value(for: key) == nil)
        let second = try await cache.entry(for: key, policy: .cacheFirst) {
            calls.withLock { $0 += 1 }
            return Fetched(2)
        }
        #expect(second.value == 2)
        #expect(second.origin == .fetch)
        #expect(calls.withLock { $0 } == 2)
    }

    // MARK: The entry

    @Test func fetchedEntryCarriesTheMetadataStored() async throws {
        let cache = cache { $0.appVersion = "2.0" }
        let key = CacheKey<String>("s", schemaVersion: 3)
        let fetched = try await cache.entry(for: key) { Fetched("fetched", lifespan: .seconds(30)) }
        let stored = try #require(self.cache { $0.appVersion = "2.0" }.entry(for: key))
        #expect(fetched.value == stored.value)
        #expect(fetched.createdAt == stored.createdAt)
        #expect(fetched.validatedAt == stored.validatedAt)
        #expect(fetched.expiresAt == stored.expiresAt)
        #expect(fetched.isExpired == stored.isExpired)
        #expect(fetched.isLocked == stored.isLocked)
        #expect(fetched.schemaVersion == 3)
        #expect(fetched.appVersion == "2.0")
        #expect(fetched.size == stored.size)
        #expect(fetched.size > 0)
        #expect(fetched.createdAt == clock.now)
    }

    @Test func valueTheDiskRefusedIsReturnedWithWhatWouldHaveBeenStoredAndSizeZero() async throws {
        let faults = FaultyFileSystem()
        let events = EventLog()
        var configuration = makeConfiguration(folder, clock: clock, events: events)
        configuration.fileSystem = faults
        let cache = Cache(configuration)
        let key = CacheKey<Int>("n", schemaVersion: 1)
        faults.set(.fail(ENOSPC), for: .writeNewFile)
        let entry = try await cache.entry(for: key) { Fetched(7, lifespan: .seconds(30)) }
        #expect(entry.value == 7)
        #expect(entry.origin == .fetch)
        #expect(entry.size == 0)
        #expect(entry.createdAt == clock.now)
        #expect(entry.validatedAt == clock.now)
        #expect(entry.expiresAt == seconds(30))
        #expect(!entry.isExpired)
        #expect(entry.schemaVersion == 1)
        #expect(entry.appVersion == "1.0")
        #expect(events.failures.first?.kind == .noSpace)
        #expect(!cache.contains(key))
    }

    // MARK: The origin

    @Test func originTellsMemoryDiskAndFetchApart() async throws {
        let cache = cache()
        let key = CacheKey<Int>("n")
        #expect(try await cache.entry(for: key) { Fetched(1) }.origin == .fetch)
        #expect(cache.entry(for: key)?.origin == .memory)
        #expect(try await cache.entry(for: key) { Fetched(2) }.origin == .memory)

        let fresh = self.cache()
        #expect(try await fresh.entry(for: key) { Fetched(2) }.origin == .disk)
        #expect(fresh.entry(for: key)?.origin == .memory)

        let memoryless = self.cache { $0.memoryCountLimit = 0 }
        #expect(memoryless.entry(for: key)?.origin == .disk)
        #expect(memoryless.entry(for: key)?.origin == .disk)
        #expect(try await memoryless.entry(for: key) { Fetched(2) }.origin == .disk)
    }

    @Test func memoryOnlyCacheAnswersMemoryOrFetch() async throws {
        var configuration = Cache.Configuration(name: "memory")
        configuration.location = .memoryOnly
        let cache = Cache(configuration)
        let key = CacheKey<Int>("n")
        #expect(try await cache.entry(for: key) { Fetched(1) }.origin == .fetch)
        #expect(cache.entry(for: key)?.origin == .memory)
    }

    // MARK: Shared fetches

    @Test func concurrentCallersShareOneFetchAndAllGetTheFetchedEntry() async throws {
        let cache = cache()
        let other = self.cache()
        let key = CacheKey<Int>("n")
        let calls = Locked(0)
        let gate = Gate()
        let fetch: @Sendable () async throws -> Fetched<Int> = {
            calls.withLock { $0 += 1 }
            await gate.wait()
            return Fetched(42, lifespan: .seconds(30))
        }
        try await withThrowingTaskGroup(of: CacheEntry<Int>.self) { group in
            for i in 0..<20 {
                // Half of the callers go through another instance on the same folder.
                group.addTask { try await (i.isMultiple(of: 2) ? cache : other).entry(for: key, fetch: fetch) }
            }
            // Let every other caller queue up behind the first fetch, then release it.
            while cache.folderState.fetches.withLock({ $0["n"]?.waiterCount ?? 0 }) < 19 { await Task.yield() }
            await gate.open()
            for try await entry in group {
                #expect(entry.value == 42)
                #expect(entry.origin == .fetch)
                #expect(entry.expiresAt == seconds(30))
            }
        }
        #expect(calls.withLock { $0 } == 1)
    }

    @Test func failedFetchStoresNothingAndRethrows() async throws {
        struct Offline: Error {}
        let cache = cache()
        let key = CacheKey<Int>("n")
        await #expect(throws: Offline.self) {
            try await cache.entry(for: key) { throw Offline() }
        }
        #expect(!cache.contains(key))
        #expect(folder.entryFiles.isEmpty)
        #expect(try await cache.entry(for: key) { Fetched(7) }.value == 7)
    }

    // MARK: The policies

    @Test func cacheFirstReturnsAValidEntryAndFetchesAnExpiredOne() async throws {
        let cache = cache { $0.returnsExpiredValues = true }
        let key = CacheKey<Int>("n", lifespan: .seconds(10))
        try cache.set(1, for: key)
        let cached = try await cache.entry(for: key, policy: .cacheFirst) { Fetched(2) }
        #expect(cached.value == 1)
        #expect(cached.origin == .memory)
        clock.advance(by: 20)
        let fetched = try await cache.entry(for: key, policy: .cacheFirst) { Fetched(2, lifespan: .seconds(5)) }
        #expect(fetched.value == 2)
        #expect(fetched.origin == .fetch)
        #expect(fetched.expiresAt == seconds(5))
    }

    @Test(.timeLimit(.minutes(1)))
    func staleWhileRevalidateAnswersTheStaleEntryAndStoresTheFetchedLifespan() async throws {
        let cache = cache()
        let key = CacheKey<Int>("n", lifespan: .seconds(10))
        try cache.set(1, for: key)
        clock.advance(by: 20)
        let updates = cache.updates(for: key)
        let stale = try await self.cache().entry(for: key, policy: .staleWhileRevalidate) {
            Fetched(2, lifespan: .seconds(500))
        }
        #expect(stale.value == 1)
        #expect(stale.isExpired)
        #expect(stale.origin == .disk)
        // The refresh publishes the value it stores: wait for it instead of sleeping.
        for await value in updates where value == 2 { break }
        let refreshed = try #require(cache.entry(for: key))
        #expect(refreshed.value == 2)
        #expect(!refreshed.isExpired)
        #expect(refreshed.expiresAt == seconds(500))
        clock.advance(by: 400)
        let valid = try await cache.entry(for: key, policy: .staleWhileRevalidate) { Fetched(3) }
        #expect(valid.value == 2)
        #expect(!valid.isExpired)
    }

    @Test func staleWhileRevalidateFetchesOnAMiss() async throws {
        let cache = cache()
        let key = CacheKey<Int>("n")
        let entry = try await cache.entry(for: key, policy: .staleWhileRevalidate) {
            Fetched(1, lifespan: .seconds(30))
        }
        #expect(entry.value == 1)
        #expect(entry.origin == .fetch)
        #expect(cache.entry(for: key)?.expiresAt == seconds(30))
    }

    @Test func refreshAlwaysFetchesAndFallsBackToTheStoredEntry() async throws {
        struct Offline: Error {}
        let cache = cache()
        let key = CacheKey<Int>("n", lifespan: .seconds(10))
        try cache.set(1, for: key)
        let fetched = try await cache.entry(for: key, policy: .refresh) { Fetched(2, lifespan: .seconds(60)) }
        #expect(fetched.value == 2)
        #expect(fetched.origin == .fetch)
        #expect(fetched.expiresAt == seconds(60))
        clock.advance(by: 100)
        let fallback = try await self.cache().entry(for: key, policy: .refresh) { throw Offline() }
        #expect(fallback.value == 2)
        #expect(fallback.isExpired)
        #expect(fallback.origin == .disk)
        cache.removeValue(for: key)
        await #expect(throws: Offline.self) {
            try await cache.entry(for: key, policy: .refresh) { throw Offline() }
        }
    }
}
