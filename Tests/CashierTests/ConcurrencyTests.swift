import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

@Suite struct ConcurrencyTests {
    let folder = TemporaryFolder()

    /// An instance subscribes to the folder's changes before its `init` returns; another
    /// instance publishing meanwhile must find everything the new one's handler reads already
    /// set (run under TSan: `swift test --sanitize=thread --filter instancesMadeWhileAnother`).
    @Test func instancesMadeWhileAnotherPublishesReadNothingTheirInitStillWrites() throws {
        var timed = makeConfiguration(folder)
        // A timer to make in `init` after subscribing: the window the old identity was written in.
        timed.garbageCollectionInterval = 3600
        let configuration = timed
        let writer = Cache(configuration)
        let done = Locked(false)
        // A thread of its own, publishing until the instances are made (not a task: it spins).
        let publishing = DispatchGroup()
        DispatchQueue.global().async(group: publishing) {
            while !done.withLock({ $0 }) { writer.publish("other", nil) }
        }
        for _ in 0..<400 {
            let cache = Cache(configuration)
            cache.publish("own", nil)
        }
        done.withLock { $0 = true }
        publishing.wait()
        let key = CacheKey<Int>("n")
        try writer.set(1, for: key)
        #expect(Cache(configuration).value(for: key) == 1)
    }

    @Test func manyTasksHammeringOneCacheSeeOnlyWholeValues() async throws {
        var configuration = makeConfiguration(folder)
        configuration.memoryCountLimit = 8
        configuration.diskSizeLimit = 256 * 1024
        let cache = Cache(configuration)
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for i in 0..<150 {
                        let key = CacheKey<[String]>("key\((task + i) % 12)")
                        switch i % 5 {
                        case 0, 1: try? cache.set(Array(repeating: key.name, count: i % 7 + 1), for: key)
                        case 2: cache.removeValue(for: key)
                        case 3: _ = cache.entry(for: key)
                        default: _ = cache.totalSize
                        }
                        if let value = cache.value(for: key) {
                            #expect(value.allSatisfy { $0 == key.name })
                        }
                    }
                }
            }
        }
        cache.waitForBackgroundWork()
        cache.collectGarbage()
        let fresh = Cache(makeConfiguration(folder))
        for name in fresh.keys {
            let value = fresh.value(for: CacheKey<[String]>(name))
            #expect(value?.allSatisfy { $0 == name } == true)
        }
        #expect(fresh.totalSize <= 256 * 1024)
        #expect(fresh.statistics.discards == 0)
    }

    @Test func twoInstancesOnOneFolderStayCoherent() throws {
        let a = Cache(makeConfiguration(folder))
        let b = Cache(makeConfiguration(folder))
        let key = CacheKey<Int>("n")
        try a.set(1, for: key)
        #expect(b.value(for: key) == 1)
        try a.set(2, for: key)
        #expect(b.value(for: key) == 2)
        a.removeValue(for: key)
        #expect(b.value(for: key) == nil)
        try b.set(3, for: key)
        a.removeAll()
        #expect(b.value(for: key) == nil)
    }

    @Test func parallelWritersOfOneKeyLeaveMemoryAndDiskAgreeing() async throws {
        let cache = Cache(makeConfiguration(folder))
        let key = CacheKey<Int>("n")
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<64 { group.addTask { try? cache.set(i, for: key) } }
        }
        #expect(cache.value(for: key) == Cache(makeConfiguration(folder)).value(for: key))
        var memoryless = makeConfiguration(folder)
        memoryless.memoryCountLimit = 0
        #expect(cache.value(for: key) == Cache(memoryless).value(for: key))
    }
}

@Suite struct FetchTests {
    let folder = TemporaryFolder()

    @Test func missFetchesStoresAndReturns() async throws {
        let cache = Cache(makeConfiguration(folder))
        let key = CacheKey<String>("s")
        let value = try await cache.value(for: key) { "fetched" }
        #expect(value == "fetched")
        #expect(Cache(makeConfiguration(folder)).value(for: key) == "fetched")
        let again = try await cache.value(for: key) { "other" }
        #expect(again == "fetched")
    }

    @Test func concurrentMissesShareOneFetch() async throws {
        let cache = Cache(makeConfiguration(folder))
        let key = CacheKey<Int>("n")
        let calls = Locked(0)
        let gate = Gate()
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    try await cache.value(for: key) {
                        calls.withLock { $0 += 1 }
                        await gate.wait()
                        return 42
                    }
                }
            }
            // Let every other caller queue up behind the first fetch, then release it.
            while cache.folderState.fetches.withLock({ $0["n"]?.waiterCount ?? 0 }) < 19 { await Task.yield() }
            await gate.open()
            for try await value in group { #expect(value == 42) }
        }
        #expect(calls.withLock { $0 } == 1)
    }

    @Test func failedFetchStoresNothingAndRethrowsToEveryCaller() async throws {
        struct Offline: Error {}
        let cache = Cache(makeConfiguration(folder))
        let key = CacheKey<Int>("n")
        await #expect(throws: Offline.self) {
            try await cache.value(for: key) { throw Offline() }
        }
        #expect(!cache.contains(key))
        #expect(folder.entryFiles.isEmpty)
        #expect(try await cache.value(for: key) { 7 } == 7)
    }

    @Test func staleWhileRevalidateReturnsStaleAndRefreshesOnce() async throws {
        let clock = TestClock()
        let events = EventLog()
        let cache = Cache(makeConfiguration(folder, clock: clock, events: events))
        let key = CacheKey<Int>("n", lifespan: .seconds(10))
        try cache.set(1, for: key)
        clock.advance(by: 20)
        events.clear()
        let calls = Locked(0)
        let gate = Gate()
        for _ in 0..<5 {
            let value = try await cache.value(for: key, policy: .staleWhileRevalidate) {
                calls.withLock { $0 += 1 }
                await gate.wait()
                return 2
            }
            #expect(value == 1)
        }
        await gate.open()
        // Resumed by the refresh's own write.
        await events.wait(for: "the background refresh's write") { event in
            if case .write(key: "n", _) = event { true } else { false }
        }
        #expect(cache.value(for: key) == 2)
        #expect(calls.withLock { $0 } == 1)
    }

    @Test func staleWhileRevalidateKeepsStaleEntryWhenRefreshFails() async throws {
        struct Offline: Error {}
        let clock = TestClock()
        let events = EventLog()
        let cache = Cache(makeConfiguration(folder, clock: clock, events: events))
        let key = CacheKey<Int>("n", lifespan: .seconds(10))
        try cache.set(1, for: key)
        clock.advance(by: 20)
        #expect(try await cache.value(for: key, policy: .staleWhileRevalidate) { throw Offline() } == 1)
        await events.wait(for: "the failed refresh's failure event") { event in
            if case .failure = event { true } else { false }
        }
        #expect(events.failures.first?.kind == .fetchFailed)
        #expect(cache.entry(for: key)?.value == 1)
    }

    @Test func refreshPolicyAlwaysFetchesAndFallsBackToAnyEntry() async throws {
        struct Offline: Error {}
        let clock = TestClock()
        let cache = Cache(makeConfiguration(folder, clock: clock))
        let key = CacheKey<Int>("n", lifespan: .seconds(10))
        try cache.set(1, for: key)
        #expect(try await cache.value(for: key, policy: .refresh) { 2 } == 2)
        clock.advance(by: 20)
        #expect(try await cache.value(for: key, policy: .refresh) { throw Offline() } == 2)
        cache.removeValue(for: key)
        await #expect(throws: Offline.self) {
            try await cache.value(for: key, policy: .refresh) { throw Offline() }
        }
    }

    @Test func cacheFirstPolicyMatchesThePlainFetch() async throws {
        let cache = Cache(makeConfiguration(folder))
        let key = CacheKey<Int>("n")
        try cache.set(1, for: key)
        #expect(try await cache.value(for: key, policy: .cacheFirst) { 2 } == 1)
    }
}

/// Suspends callers until opened.
actor Gate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }
    func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}

@Suite struct ObservationTests {
    let folder = TemporaryFolder()

    @Test func updatesYieldTheCurrentValueThenEveryChange() async throws {
        let cache = Cache(makeConfiguration(folder))
        let other = Cache(makeConfiguration(folder))
        let key = CacheKey<Int>("n")
        try cache.set(1, for: key)
        var iterator = cache.updates(for: key).makeAsyncIterator()
        #expect(await iterator.next() == .some(1))
        try cache.set(2, for: key)
        #expect(await iterator.next() == .some(2))
        try other.set(3, for: key)
        #expect(await iterator.next() == .some(3))
        other.removeValue(for: key)
        #expect(await iterator.next() == .some(nil))
        try cache.set(4, for: key)
        #expect(await iterator.next() == .some(4))
    }

    @Test func updatesReportDiscardsAndExpiry() async throws {
        let clock = TestClock()
        let cache = Cache(makeConfiguration(folder, clock: clock))
        let key = CacheKey<Int>("n", lifespan: .seconds(5))
        try cache.set(1, for: key)
        var iterator = cache.updates(for: key).makeAsyncIterator()
        #expect(await iterator.next() == .some(1))
        clock.advance(by: 10)
        #expect(cache.value(for: key) == nil)
        #expect(await iterator.next() == .some(nil))
        try cache.set(2, for: key)
        #expect(await iterator.next() == .some(2))
        let memoryless = Cache(
            {
                var c = makeConfiguration(folder, clock: clock)
                c.memoryCountLimit = 0
                return c
            }())
        #expect(memoryless.value(for: CacheKey<Int>("n", schemaVersion: 9)) == nil) // discards the entry
        #expect(await iterator.next() == .some(nil))
    }

    @Test func streamsReleaseTheirSubscriptionWhenTheConsumerStops() async throws {
        let cache = Cache(makeConfiguration(folder))
        let baseline = cache.observerCount
        let key = CacheKey<Int>("n")
        let consumer = Task {
            for await value in cache.updates(for: key) where value == 3 { break }
        }
        while cache.observerCount == baseline { await Task.yield() }
        try cache.set(1, for: key)
        try cache.set(3, for: key)
        await consumer.value
        #expect(cache.observerCount == baseline)

        var stream: AsyncStream<Int?>? = cache.updates(for: key)
        #expect(cache.observerCount == baseline + 1)
        _ = stream
        stream = nil
        #expect(cache.observerCount == baseline)

        let cancelled = Task { for await _ in cache.updates(for: key) {} }
        while cache.observerCount == baseline { await Task.yield() }
        cancelled.cancel()
        await cancelled.value
        #expect(cache.observerCount == baseline)
    }

    @Test func cachedWrapperReadsWritesRemovesAndExposesTheEntry() throws {
        let clock = TestClock()
        let cache = Cache(makeConfiguration(folder, clock: clock))
        let key = CacheKey<User>("profile", lifespan: .seconds(10))
        @Cached(key, in: cache) var profile: User?
        #expect(profile == nil)
        #expect($profile == nil)
        profile = User(name: "A", age: 1)
        #expect(cache.value(for: key) == User(name: "A", age: 1))
        #expect($profile?.isExpired == false)
        clock.advance(by: 20)
        #expect(profile == nil)
        #expect($profile?.isExpired == true)
        profile = nil
        #expect(!cache.contains(key))
    }
}

@Suite struct KeyListingTests {
    let folder = TemporaryFolder()

    @Test func keysComeFromHeadersSorted() throws {
        let cache = Cache(makeConfiguration(folder))
        for name in ["b", "a", "user42.feed", "user42.profile", "user7.feed"] {
            try cache.set(name, for: CacheKey<String>(name))
        }
        #expect(Cache(makeConfiguration(folder)).keys == ["a", "b", "user42.feed", "user42.profile", "user7.feed"])
    }

    @Test func removeAllWhereRemovesOnlyMatchingKeysFromDiskAndMemory() throws {
        let cache = Cache(makeConfiguration(folder))
        for name in ["user42.feed", "user42.profile", "user7.feed"] {
            try cache.set(name, for: CacheKey<String>(name))
        }
        cache.removeAll { $0.hasPrefix("user42.") }
        #expect(cache.keys == ["user7.feed"])
        #expect(cache.value(for: CacheKey<String>("user42.feed")) == nil)
        #expect(cache.value(for: CacheKey<String>("user7.feed")) == "user7.feed")
        #expect(cache.count == 1)
    }
}
