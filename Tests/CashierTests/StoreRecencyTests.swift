import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Recency and sliding lifespans when entries are rows of the folder's store: a use is kept in
/// the row (its `last_use` and `frequency`), which the next launch and other processes read.
@Suite struct StoreRecencyTests {
    let folder = TemporaryFolder()
    let clock = TestClock()
    let start = TestClock().now.timeIntervalSince1970
    static let session = CacheKey<String>("session", lifespan: .sinceLastUse(100))
    static let idle = CacheKey<String>("idle", lifespan: .sinceLastUse(100))

    func at(_ seconds: Double) {
        clock.advance(by: start + seconds - clock.now.timeIntervalSince1970)
    }

    /// A cache on the folder; `relaunched`: with a disk tier of its own, as the next launch's.
    func cache(relaunched: Bool = false, events: EventLog? = nil, diskLimit: Int? = nil) -> Cache {
        var configuration = makeConfiguration(folder, clock: clock, events: events)
        if relaunched { configuration.fileSystem = POSIXFileSystem() }
        configuration.diskSizeLimit = diskLimit
        return Cache(configuration)
    }

    @Test func removeExpiredKeepsASlidingEntryReadFromMemoryWithinTheGranularity() throws {
        let events = EventLog()
        let cache = cache(events: events)
        try cache.set("token", for: Self.session)
        try cache.set("idle", for: Self.idle)
        #expect(folder.entryFiles.isEmpty) // both are rows
        at(50) // a memory hit, less than a granularity after the write
        #expect(cache.value(for: Self.session) == "token")
        at(140)
        cache.removeExpired()
        #expect(events.discards.map(\.0) == ["idle"])
        #expect(cache.value(for: Self.session) == "token")
        #expect(self.cache(relaunched: true).keys == [Self.session.name])
    }

    @Test func theNextLaunchJudgesASlidingLifespanByTheLastUseItsRowKeeps() throws {
        do {
            let cache = cache()
            try cache.set("token", for: Self.session)
            try cache.set("idle", for: Self.idle)
            at(90)
            #expect(cache.value(for: Self.session) == "token")
            cache.waitForBackgroundWork()
        }
        at(150)
        let events = EventLog()
        let next = cache(relaunched: true, events: events)
        next.collectGarbage()
        #expect(events.discards.map(\.0) == ["idle"])
        #expect(next.value(for: Self.session) == "token")
    }

    @Test func readsOfOneLaunchKeepAnEntryFromTheNextLaunchsEviction() throws {
        // Large entries (files with rows), so a limit in whole entries is easy to state.
        let size = 512 * 1024
        do {
            let cache = cache()
            for index in 0..<5 {
                try cache.set(Data(repeating: UInt8(index), count: size), for: CacheKey<Data>("k\(index)"))
                at(Double(index + 1))
            }
            at(600)
            // Read from disk by an instance that keeps nothing in memory: the use goes to k0's row,
            // off the caller's thread, within a uses window (the launch lives that long).
            var configuration = makeConfiguration(folder, clock: clock)
            configuration.memoryCountLimit = 0
            let reader = Cache(configuration)
            #expect(reader.value(for: CacheKey<Data>("k0")) != nil)
            reader.waitForBackgroundWork()
        }
        let events = EventLog()
        let next = cache(relaunched: true, events: events, diskLimit: folder.occupiedBytes - size * 3 / 2)
        next.collectGarbage()
        #expect(events.evictions.count == 2)
        #expect(!events.evictions.contains("k0"))
        #expect(next.value(for: CacheKey<Data>("k0")) != nil)
    }

    /// The row's last use as the store keeps it: whole seconds of the cache's clock.
    func seconds(_ offset: Double) -> Int64 { Int64((start + offset).rounded(.down)) }

    /// At a server's pace most entries are read again within a minute of their write, or never:
    /// the first use tells them apart in the frequency-aware order (new entries go first), so it
    /// reaches the row whatever the granularity, from memory or from disk. A second use within
    /// the granularity writes nothing.
    @Test(arguments: [0, 100])
    func anEntrysFirstUseReachesItsRowWithinAMinuteOfItsWrite(memoryLimit: Int) throws {
        let cache = makeLimitedCache(folder, clock: clock, diskLimit: nil, memoryLimit: memoryLimit, events: nil)
        let feed = CacheKey<String>("feed")
        try cache.set("items", for: feed)
        cache.waitForBackgroundWork()
        #expect(try folder.row(for: feed.name)?.frequency == 0)
        at(5)
        #expect(cache.value(for: feed) == "items")
        cache.waitForBackgroundWork()
        let used = try #require(try folder.row(for: feed.name))
        #expect(used.frequency == 1)
        #expect(used.lastUse == seconds(5))
        at(10)
        #expect(cache.value(for: feed) == "items")
        cache.waitForBackgroundWork()
        #expect(try folder.row(for: feed.name) == used)
    }

    /// Once sweeps evict entries seconds after their last use (a server's pace), uses a minute
    /// apart would leave the eviction order blind: the granularity becomes an eighth of that age.
    @Test func sweepsThatEvictWithinSecondsOfALastUseRecordUsesSecondsApart() throws {
        // Large entries (a file and a row each), so the limit is easy to state: about 40 entries.
        let size = 16 * 1024
        let cache = makeLimitedCache(folder, clock: clock, diskLimit: 40 * (size + 200), memoryLimit: 0, events: nil)
        // One entry a second, each read once as it is written: every one evicted was used about
        // 40 seconds before, so uses 5 seconds apart are told apart.
        for index in 0..<120 {
            at(Double(index))
            let key = CacheKey<Data>("item-\(index)")
            try cache.set(Data(repeating: UInt8(index), count: size), for: key)
            #expect(cache.value(for: key) != nil)
            cache.waitForBackgroundWork()
        }
        #expect(try folder.row(for: "item-0") == nil)
        let hot = CacheKey<Data>("item-119")
        #expect(try folder.row(for: hot.name)?.lastUse == seconds(119))
        at(129)
        #expect(cache.value(for: hot) != nil)
        cache.waitForBackgroundWork()
        #expect(try folder.row(for: hot.name)?.lastUse == seconds(129))
    }
}
