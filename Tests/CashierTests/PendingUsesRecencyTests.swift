import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Uses gathered for a window before their write (`DiskTier.usesWindow`): whatever orders
/// entries by recency, or judges a sliding lifespan, right after a use must see it.
@Suite struct PendingUsesRecencyTests {
    let folder = TemporaryFolder()
    let clock = TestClock()
    let events = EventLog()
    /// Large entries (files, each with its row), so a limit in whole entries is easy to state.
    static let entryBytes = 16 * 1024
    static let value = Data(repeating: 7, count: entryBytes)

    static func key(_ index: Int) -> CacheKey<Data> { CacheKey<Data>("k\(index)") }

    /// Ten entries written a second apart (k0 the oldest) by an instance without a limit;
    /// answers a cache on the folder whose limit is passed by the next entry written.
    func filledCache(memoryLimit: Int?) throws -> (writer: Cache, limited: Cache) {
        // A limit far off, so that waiting settles the store's log: what is left is what entries take.
        let writer = makeLimitedCache(
            folder, clock: clock, diskLimit: 1 << 30, memoryLimit: 0, events: nil, evictionPolicy: .leastRecentlyUsed)
        for index in 0..<10 {
            try writer.set(Self.value, for: Self.key(index))
            clock.advance(by: 1)
        }
        writer.waitForBackgroundWork()
        let limited = makeLimitedCache(
            folder, clock: clock, diskLimit: writer.totalSize + Self.entryBytes / 2, memoryLimit: memoryLimit,
            events: events, evictionPolicy: .leastRecentlyUsed)
        return (writer, limited)
    }

    @Test func aSizeSweepRightAfterADiskReadKeepsTheEntryRead() throws {
        let (writer, cache) = try filledCache(memoryLimit: 0)
        defer { _ = writer }
        clock.advance(by: 600)
        // A read from disk ten minutes after k0's last use: k0 is now the most recently used.
        #expect(cache.value(for: Self.key(0)) == Self.value)
        // The next write passes the limit; its sweep runs at once on the sweep queue.
        try cache.set(Self.value, for: Self.key(10))
        cache.disk?.drainSweepQueue()
        cache.waitForBackgroundWork()
        #expect(!events.evictions.isEmpty)
        #expect(!events.evictions.contains("k0"), "evicted \(events.evictions)")
        #expect(cache.value(for: Self.key(0)) == Self.value)
    }

    @Test func aSizeSweepRightAfterAMemoryHitKeepsTheEntryHit() throws {
        let (writer, cache) = try filledCache(memoryLimit: nil)
        defer { _ = writer }
        // Into memory within a granularity of its write (no use for its row yet) …
        #expect(cache.value(for: Self.key(0)) == Self.value)
        cache.waitForBackgroundWork()
        clock.advance(by: 600)
        // … then a memory hit ten minutes later: a use the write below hands to the disk tier.
        #expect(cache.value(for: Self.key(0)) == Self.value)
        try cache.set(Self.value, for: Self.key(10))
        cache.disk?.drainSweepQueue()
        cache.waitForBackgroundWork()
        #expect(!events.evictions.isEmpty)
        #expect(!events.evictions.contains("k0"), "evicted \(events.evictions)")
    }
}

extension PendingUsesRecencyTests {
    @Test(arguments: [false, true])
    func aReadOfAnInstanceJustGoneKeepsItsEntryFromTheNextInstancesCollection(ownDiskTier: Bool) throws {
        do {
            let (writer, _) = try filledCache(memoryLimit: 0)
            clock.advance(by: 600)
            // The last instance on the folder reads k0 from disk and goes: no wait for its work.
            var configuration = makeConfiguration(folder, clock: clock)
            configuration.memoryCountLimit = 0
            let reader = Cache(configuration)
            #expect(reader.value(for: Self.key(0)) == Self.value)
            _ = writer
        }
        // The next instance in this process (a new disk tier: the last one went with its caches),
        // or the next launch's, collects at once: k0 is the most recently used.
        var configuration = makeConfiguration(folder, clock: clock, events: events)
        if ownDiskTier { configuration.fileSystem = POSIXFileSystem() }
        configuration.memoryCountLimit = 0
        configuration.evictionPolicy = .leastRecentlyUsed
        configuration.diskSizeLimit = folder.occupiedBytes - Self.entryBytes * 3 / 2
        let next = Cache(configuration)
        next.collectGarbage()
        #expect(!events.evictions.isEmpty)
        #expect(!events.evictions.contains("k0"), "evicted \(events.evictions)")
    }
}

extension PendingUsesRecencyTests {
    @Test func theUsesOfWritesAreDatedWhenTheyWereMadeNotWhenWritten() throws {
        do {
            // Memory tier on: each write's use is handed to the disk tier, to go with the next flush.
            let cache = makeLimitedCache(
                folder, clock: clock, diskLimit: 1 << 30, memoryLimit: nil, events: nil,
                evictionPolicy: .leastRecentlyUsed)
            for index in 0..<10 {
                try cache.set(Self.value, for: Self.key(index))
                clock.advance(by: 1)
            }
            // Ten minutes later (by the cache's clock, within the uses window by the real one),
            // another instance reads k0 from disk, and both write what they gathered.
            clock.advance(by: 600)
            var configuration = makeConfiguration(folder, clock: clock)
            configuration.memoryCountLimit = 0
            let reader = Cache(configuration)
            #expect(reader.value(for: Self.key(0)) == Self.value)
            reader.waitForBackgroundWork()
            clock.advance(by: 60)
            cache.waitForBackgroundWork()
        }
        // The writes were uses at 0…9 s, not ten minutes later: k0, read since, is the most recent.
        var configuration = makeConfiguration(folder, clock: clock, events: events)
        configuration.fileSystem = POSIXFileSystem()
        configuration.memoryCountLimit = 0
        configuration.evictionPolicy = .leastRecentlyUsed
        configuration.diskSizeLimit = folder.occupiedBytes - Self.entryBytes * 3 / 2
        let next = Cache(configuration)
        next.collectGarbage()
        #expect(!events.evictions.isEmpty)
        #expect(!events.evictions.contains("k0"), "evicted \(events.evictions)")
    }
}

extension PendingUsesRecencyTests {
    static let session = CacheKey<String>("session", lifespan: .sinceLastUse(300))

    @Test func anInstanceWithoutMemoryKnowsTheSlidingUseItJustMade() throws {
        var configuration = makeConfiguration(folder, clock: clock, events: events)
        configuration.memoryCountLimit = 0
        let cache = Cache(configuration)
        try cache.set("token", for: Self.session)
        clock.advance(by: 290)
        #expect(cache.value(for: Self.session) == "token")
        // 210 s after its last use: valid for 90 s more. Its row still says it was last used at
        // its write (the use waits for its window): judged by it, 200 s over, and discarded.
        clock.advance(by: 210)
        #expect(cache.value(for: Self.session) == "token")
        #expect(events.discards.isEmpty)
    }

    @Test func aUseOfARemovedEntryIsNotCountedForTheEntryWrittenAfterIt() throws {
        var configuration = makeConfiguration(folder, clock: clock)
        configuration.memoryCountLimit = 0
        let cache = Cache(configuration)
        try cache.set("old", for: Self.session)
        clock.advance(by: 100)
        #expect(cache.value(for: Self.session) == "old") // a use of the old entry, pending
        cache.removeValue(for: Self.session)
        try cache.set("new", for: Self.session) // in the same second
        cache.waitForBackgroundWork()
        let row = try folder.row(for: Self.session.name)
        #expect(row?.frequency == 0, "the new entry was never read")
    }
}
