import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile reviewer's tests of commit f905f99 (first uses, an adaptive granularity, compaction
/// after sweeps) and of merge 20fac85 (the file-only fallback behind `EntryIndex`).
@Suite struct HostileReviewTests {
    let folder = TemporaryFolder()
    let clock = TestClock()
    let start = TestClock().now.timeIntervalSince1970

    func at(_ seconds: Double) {
        clock.advance(by: start + seconds - clock.now.timeIntervalSince1970)
    }

    // MARK: The adaptive granularity

    /// A sweep that evicts entries whose last use is after the cache's clock (the clock jumped
    /// back, NTP; or another process's clock ahead) knows nothing of their age: it leaves the
    /// granularity as it is (it once set it to 1 s, `max(1, negative / 8)`, so every use a second
    /// apart was written until a later sweep happened to evict a reused entry again).
    @Test func aSweepOfEntriesUsedInTheFutureLeavesTheGranularityAlone() throws {
        let cache = makeLimitedCache(folder, clock: clock, diskLimit: nil, memoryLimit: 0, events: nil)
        try cache.set("v", for: CacheKey<String>("k"))
        let disk = try #require(cache.disk)
        #expect(disk.useGranularity == 60)
        let now = clock.now.timeIntervalSince1970
        let future = StoreEntry(key: "x", location: .row, size: 10, lastUse: Int64(now) + 3600, frequency: 3)
        disk.adaptUseGranularity(toVictims: [future], at: now)
        #expect(disk.useGranularity == 60)
    }

    /// The same through a cache: a process whose clock is an hour ahead wrote and read 40 entries
    /// (another process, or this one before the clock was set back); the sweep that this cache's
    /// write causes evicts them (reused entries go before the newest new ones).
    @Test func aSweepAfterTheClockWentBackLeavesTheGranularityAlone() throws {
        let size = 16 * 1024
        let ahead = TestClock()
        ahead.advance(by: 3600)
        do {
            let writer = makeLimitedCache(folder, clock: ahead, diskLimit: nil, memoryLimit: 0, events: nil)
            for index in 0..<40 {
                let key = CacheKey<Data>("item-\(index)")
                try writer.set(Data(repeating: UInt8(index), count: size), for: key)
                ahead.advance(by: 1) // a first use counts from the second after the write
                #expect(writer.value(for: key) != nil)
            }
            writer.waitForBackgroundWork()
        }
        #expect(try folder.row(for: "item-0")?.frequency == 1)
        var configuration = makeConfiguration(folder, clock: clock)
        configuration.fileSystem = POSIXFileSystem() // a disk tier of its own: another process
        configuration.diskSizeLimit = 20 * (size + 200)
        configuration.memoryCountLimit = 0
        let cache = Cache(configuration)
        try cache.set(Data(count: 10), for: CacheKey<Data>("new"))
        cache.waitForBackgroundWork()
        #expect(try folder.row(for: "item-0") == nil, "the sweep evicted the entries used 'in the future'")
        #expect(cache.disk?.useGranularity == 60)
    }

    /// Granularity never reaches 0 or below, whatever the victims' ages (0 would write every use).
    @Test func theGranularityStaysBetweenOneSecondAndAMinute() throws {
        let cache = makeLimitedCache(folder, clock: clock, diskLimit: nil, memoryLimit: 0, events: nil)
        try cache.set("v", for: CacheKey<String>("k"))
        let disk = try #require(cache.disk)
        let now = clock.now.timeIntervalSince1970
        for age in [-1e9, -1, 0, 0.5, 7, 8, 9, 100, 479, 480, 481, 1e9] as [Double] {
            let victim = StoreEntry(
                key: "x", location: .row, size: 10, lastUse: Int64((now - age).rounded(.down)), frequency: 1)
            disk.adaptUseGranularity(toVictims: [victim], at: now)
            #expect((1...60).contains(disk.useGranularity), "age \(age): \(disk.useGranularity)")
        }
    }

    // MARK: Compaction through a cache

    /// Sweeps that evict all over the table (every third entry read again), with compaction after
    /// each: the folder ends within its limit, every entry left reads back whole, and none is lost
    /// or doubled by the moves.
    @Test func sweepsWithCompactionKeepTheFolderWithinItsLimitAndEveryEntryWhole() throws {
        let limit = 300 * 1024
        let cache = makeLimitedCache(folder, clock: clock, diskLimit: limit, memoryLimit: 0, events: nil)
        var written: [String: UInt8] = [:]
        for index in 0..<1500 {
            at(Double(index) / 10)
            let key = CacheKey<Data>("k\(index)")
            try cache.set(Data(repeating: UInt8(index % 251), count: 1000), for: key)
            written[key.name] = UInt8(index % 251)
            if index % 3 == 0 { _ = cache.value(for: key) }
            if index % 50 == 49 { cache.waitForBackgroundWork() }
        }
        cache.waitForBackgroundWork()
        cache.collectGarbage()
        #expect(cache.totalSize <= limit)
        let keys = cache.keys
        #expect(Set(keys).count == keys.count)
        #expect(keys.count == cache.count)
        // How many are held depends on how the sweeps race the writes (about 160 at rest, 140
        // under load): the rows a limit holds are pinned by the store's own test of compaction,
        // EntryStoreEvictionTests.sweepsThatEvictAllOverTheTableLeaveItsPagesFull.
        #expect(!keys.isEmpty)
        for name in keys {
            let value = cache.value(for: CacheKey<Data>(name))
            #expect(value == Data(repeating: written[name]!, count: 1000), "\(name)")
        }
    }

    // MARK: First uses

    /// A read gathers a first use of `k` (its row never used since written), to be written a
    /// quarter of a second later. Meanwhile another process removes `k` and writes it anew, in the
    /// same second. The use is the old entry's: the new row was never read, and must stay new
    /// (frequency 0) in the frequency-aware order: a first use counts only for a row written in an
    /// earlier second (`frequency = 0 AND last_use < use`; with `<=` it landed on the new row).
    /// Within one process `removeValue` forgets the gathered uses; across processes nothing does.
    @Test func aFirstUseGatheredBeforeAnotherProcessRewritesTheKeyStaysWithTheOldEntry() throws {
        let cache = makeLimitedCache(folder, clock: clock, diskLimit: nil, memoryLimit: 0, events: nil)
        let key = CacheKey<String>("feed")
        try cache.set("old", for: key)
        cache.waitForBackgroundWork()
        at(5)
        let second = Int64(clock.now.timeIntervalSince1970.rounded(.down))
        #expect(cache.value(for: key) == "old") // gathers the first use, written a window later
        // Another process, within that window: the key removed and written anew.
        let other = try EntryStore(folder: folder.path)
        let storeKey = DiskTier.storeKey(key.name)
        #expect(try other.remove(storeKey) != nil)
        try other.upsert(StoreEntry(key: storeKey, location: .row, size: 10, lastUse: second), record: [1])
        cache.waitForBackgroundWork()
        #expect(try folder.row(for: key.name)?.frequency == 0)
    }

    // MARK: The file-only fallback (no SQLite) behind EntryIndex

    func filesOnly(limit: Int? = nil, events: EventLog? = nil, ownTier: Bool = false, memory: Int? = nil) -> Cache {
        var configuration = makeConfiguration(folder, clock: clock, events: events, storage: .filesWithoutStore)
        configuration.diskSizeLimit = limit
        configuration.memoryCountLimit = memory
        if ownTier { configuration.fileSystem = POSIXFileSystem() }
        return Cache(configuration)
    }

    /// Two instances sharing this process's disk tier: every operation is coherent at once.
    @Test func everyOperationWorksWithoutAStore() throws {
        let a = filesOnly()
        let b = filesOnly()
        for index in 0..<5 { try a.set("v\(index)", for: CacheKey<String>("k\(index)")) }
        a.waitForBackgroundWork()
        #expect(!folder.hasStore)
        #expect(b.value(for: CacheKey<String>("k1")) == "v1")
        #expect(b.count == 5)
        #expect(Set(b.keys) == Set((0..<5).map { "k\($0)" }))
        b.removeValue(for: CacheKey<String>("k1"))
        #expect(a.value(for: CacheKey<String>("k1")) == nil)
        #expect(a.count == 4)
        try b.set("w2", for: CacheKey<String>("k2"))
        #expect(a.value(for: CacheKey<String>("k2")) == "w2")
        // Expiry and garbage collection.
        try a.set("short", for: CacheKey<String>("short"), lifespan: .seconds(10))
        at(20)
        a.collectGarbage()
        a.waitForBackgroundWork()
        #expect(b.value(for: CacheKey<String>("short")) == nil)
        #expect(!b.keys.contains("short"))
        // removeAll in one instance empties the other's view.
        b.removeAll()
        b.waitForBackgroundWork()
        #expect(a.count == 0)
        #expect(a.keys.isEmpty)
        #expect(a.value(for: CacheKey<String>("k0")) == nil)
        #expect(!folder.hasStore)
    }

    /// Two disk tiers (as two processes) without memory tiers: reads go to the folder; counts
    /// follow the other's writes from the next rescan (documented: Concurrency.md,
    /// StorageAndLimits.md), which garbage collection does.
    @Test func twoTiersWithoutAStoreSeeEachOthersWrites() throws {
        let a = filesOnly(memory: 0)
        let b = filesOnly(ownTier: true, memory: 0)
        for index in 0..<5 { try a.set("v\(index)", for: CacheKey<String>("k\(index)")) }
        a.waitForBackgroundWork()
        #expect(b.value(for: CacheKey<String>("k1")) == "v1")
        #expect(b.count == 5)
        b.removeValue(for: CacheKey<String>("k1"))
        #expect(a.value(for: CacheKey<String>("k1")) == nil)
        try b.set("w2", for: CacheKey<String>("k2"))
        #expect(a.value(for: CacheKey<String>("k2")) == "w2")
        b.removeAll()
        b.waitForBackgroundWork()
        #expect(a.value(for: CacheKey<String>("k0")) == nil)
        a.collectGarbage()
        #expect(a.count == 0)
        #expect(a.keys.isEmpty)
        #expect(!folder.hasStore)
    }

    @Test func sweepsKeepAFolderWithoutAStoreUnderItsLimit() throws {
        let events = EventLog()
        let cache = filesOnly(limit: 20_000, events: events)
        for index in 0..<40 {
            at(Double(index))
            try cache.set(Data(repeating: UInt8(index), count: 1000), for: CacheKey<Data>("k\(index)"))
            cache.waitForBackgroundWork()
        }
        #expect(cache.totalSize <= 20_000)
        #expect(!events.evictions.isEmpty)
        #expect(!folder.hasStore)
        // Least recently used first: the newest entry stays.
        #expect(cache.value(for: CacheKey<Data>("k39")) != nil)
        #expect(self.filesOnly(ownTier: true).totalSize <= 20_000)
    }
}
