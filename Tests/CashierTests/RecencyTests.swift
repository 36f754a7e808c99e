import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

#if canImport(Glibc)
import Glibc
#endif

/// Least-recently-used order: every read counts, memory hits included, by the cache's clock, across relaunches.
///
/// The file design's recency (access times, the folder scan), as a folder without a store keeps it.
@Suite struct RecencyTests {
    let folder = TemporaryFolder()
    let clock = TestClock()

    func cache(
        diskLimit: Int? = nil, memoryLimit: Int? = nil, events: EventLog? = nil,
        evictionPolicy: EvictionPolicy = .frequencyAware
    ) -> Cache {
        makeLimitedCache(
            folder, clock: clock, diskLimit: diskLimit, memoryLimit: memoryLimit, events: events,
            evictionPolicy: evictionPolicy, storage: .filesWithoutStore)
    }

    static func key(_ index: Int) -> CacheKey<Data> { CacheKey("k\(index)") }

    /// Writes k0…k(count-1), 1 KiB each, a second apart by the test clock.
    func fill(_ cache: Cache, count: Int) throws {
        for index in 0..<count {
            try cache.set(Data(repeating: UInt8(index), count: 1024), for: Self.key(index))
            clock.advance(by: 1)
        }
    }

    /// The size of k0's file, to set limits in whole entries (by `stat`: a read would count as a use).
    var entrySize: Int {
        var st = stat()
        guard stat(folder.path + "/" + DiskTier.fileName(for: "k0"), &st) == 0 else { return 0 }
        return Int(st.st_size)
    }

    func accessTime(of key: String) -> Double? {
        var st = stat()
        guard stat(folder.path + "/" + DiskTier.fileName(for: key), &st) == 0 else { return nil }
        return Double(st.st_atim.tv_sec) + Double(st.st_atim.tv_nsec) / 1e9
    }

    @Test func anEntryReadFromMemoryIsNotTheFirstEvictedFromDisk() throws {
        let events = EventLog()
        try fill(cache(), count: 1)
        let cache = cache(diskLimit: 5 * entrySize + entrySize / 2, events: events)
        try fill(cache, count: 5)
        clock.advance(by: 600)
        #expect(cache.value(for: Self.key(0)) != nil) // a memory hit: no file is read
        try cache.set(Data(count: 1024), for: Self.key(5))
        cache.waitForBackgroundWork()
        #expect(events.evictions.first == "k1")
        #expect(!events.evictions.contains("k0"))
        #expect(cache.value(for: Self.key(0)) != nil)
    }

    @Test func readsOfOneLaunchOrderTheEvictionsOfTheNext() throws {
        do {
            let first = cache()
            try fill(first, count: 5)
            clock.advance(by: 600)
            _ = first.value(for: Self.key(0)) // from memory
            clock.advance(by: 600)
            // From disk, through an instance that keeps nothing in memory.
            _ = cache(memoryLimit: 0).value(for: Self.key(1))
        } // the first launch ends: its instances go
        let events = EventLog()
        let next = cache(diskLimit: 3 * entrySize + entrySize / 2, events: events)
        next.collectGarbage()
        #expect(events.evictions == ["k2", "k3"])
        #expect(next.value(for: Self.key(0)) != nil)
        #expect(next.value(for: Self.key(1)) != nil)
    }

    @Test func memoryHitsAreWrittenDownByWaitForBackgroundWork() throws {
        let cache = cache()
        try fill(cache, count: 2)
        let written = try #require(accessTime(of: "k0"))
        #expect(written == clock.now.timeIntervalSince1970 - 2)
        clock.advance(by: 3600)
        _ = cache.value(for: Self.key(0))
        // A memory hit does no I/O: nothing is written until the cache next touches the disk.
        #expect(accessTime(of: "k0") == written)
        cache.waitForBackgroundWork()
        #expect(accessTime(of: "k0") == clock.now.timeIntervalSince1970)
    }

    @Test func usesCloserThanTheGranularityAreNotWrittenAgain() throws {
        let cache = cache(memoryLimit: 0)
        try fill(cache, count: 1)
        let written = try #require(accessTime(of: "k0"))
        clock.advance(by: DiskTier.recencyGranularity / 2)
        _ = cache.value(for: Self.key(0))
        #expect(accessTime(of: "k0") == written)
        clock.advance(by: DiskTier.recencyGranularity)
        _ = cache.value(for: Self.key(0))
        #expect(accessTime(of: "k0") == clock.now.timeIntervalSince1970)
    }

    @Test func readsThroughEntryForCountInMemoryAndOnDisk() throws {
        let cache = cache(memoryLimit: 2, evictionPolicy: .leastRecentlyUsed)
        try fill(cache, count: 2)
        clock.advance(by: 600)
        #expect(cache.entry(for: Self.key(0)) != nil) // from memory
        try cache.set(Data(count: 1024), for: Self.key(2))
        #expect(cache.memory.peek("k0") != nil)
        #expect(cache.memory.peek("k1") == nil)
        #expect(accessTime(of: "k0") == clock.now.timeIntervalSince1970)
    }

    @Test func theInjectedClockOrdersUsesNotTheRealOne() throws {
        let cache = cache()
        // Written first in real time but later by the cache's clock: k0 is the more recent.
        clock.advance(by: 1000)
        try cache.set(Data(count: 1024), for: Self.key(0))
        clock.advance(by: -500)
        try cache.set(Data(count: 1024), for: Self.key(1))
        #expect(accessTime(of: "k0") == accessTime(of: "k1").map { $0 + 500 })
        let events = EventLog()
        let next = Cache(
            {
                var configuration = makeConfiguration(folder, clock: clock, events: events)
                configuration.diskSizeLimit = entrySize + entrySize / 2
                return configuration
            }())
        next.collectGarbage()
        #expect(events.evictions == ["k1"])
    }

    @Test func aFailureToSetTheAccessTimeNeverFailsAReadOrAWrite() throws {
        let faults = FaultyFileSystem()
        faults.set(.fail(EPERM), for: .setAccessTime)
        var configuration = makeConfiguration(folder, clock: clock)
        configuration.fileSystem = faults
        configuration.memoryCountLimit = 0
        let cache = Cache(configuration)
        try cache.set(Data(count: 8), for: Self.key(0))
        clock.advance(by: 3600)
        #expect(cache.value(for: Self.key(0)) == Data(count: 8))
        #expect(faults.calls.contains { $0.operation == .setAccessTime })
    }

    @Test func aRunningWritersTemporaryIsKeptWhateverTheCachesClockSays() throws {
        let cache = cache()
        try fill(cache, count: 1)
        // Two months ahead of the real clock, as a test clock may be: the age of a temporary
        // is still measured on the real one, so this process's fresh temporary stays.
        clock.advance(by: 60 * 86_400)
        let temporary = folder.path + "/" + DiskTier.temporaryPrefix + "\(getpid())-999999"
        #expect(FileManager.default.createFile(atPath: temporary, contents: Data(count: 4)))
        cache.collectGarbage()
        #expect(FileManager.default.fileExists(atPath: temporary))
    }
}
