import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// `diskSizeLimit` with the store: what bounds is the folder (store file, its `-wal`, large
/// entries' files), not only the entries' bytes; locked entries outlive unlocked ones.
@Suite struct StoreLimitsTests {
    let folder = TemporaryFolder()
    let clock = TestClock()

    static let limit = 512 * 1024
    /// The largest entry the tests write (a large value's file, header included).
    static let largestEntry = 24 * 1024

    /// What the folder may hold beyond the limit once the sweeps are done, and why:
    /// - one entry: a sweep is scheduled by the write that takes the folder past the limit,
    ///   and the writes it races with may land after it measured (DiskTier+Sweeps.swift);
    /// - one checkpoint's log: the sweep ends with `reclaimSpace()` (incremental vacuum, then
    ///   `wal_checkpoint(TRUNCATE)`), but a write after it grows `-wal` again, up to SQLite's
    ///   automatic checkpoint (1,000 pages) and never past `journal_size_limit` after one
    ///   (StoreSchema.walLimit, 6 MiB): the folder is bounded within one checkpoint of the log.
    /// The store file itself shrinks by whole pages, which the sweep's per-byte scaling accounts for.
    static let walSlack = 6 << 20

    func cache(limit: Int = Self.limit, events: EventLog? = nil) -> Cache {
        makeLimitedCache(folder, clock: clock, diskLimit: limit, memoryLimit: nil, events: events)
    }

    static func small(_ index: Int) -> Data { Data(repeating: UInt8(truncatingIfNeeded: index), count: 1_500) }
    static func large(_ index: Int) -> Data { Data(repeating: UInt8(truncatingIfNeeded: index), count: 20_000) }

    @Test
    func writesPastTheLimitLeaveTheFolderWithinItPlusOneEntryAndOneCheckpoint() throws {
        let events = EventLog()
        let cache = cache(events: events)
        var written = 0
        for index in 0..<2_000 {
            let value = index % 25 == 24 ? Self.large(index) : Self.small(index)
            try cache.set(value, for: CacheKey<Data>("key-\(index)"))
            written += value.count
            clock.advance(by: 1)
        }
        cache.waitForBackgroundWork()
        #expect(written > 4 * Self.limit)
        #expect(!events.evictions.isEmpty)
        let occupied = folder.occupiedBytes
        #expect(occupied <= Self.limit + Self.largestEntry + Self.walSlack, "the folder occupies \(occupied) bytes")
        // What the log leaves aside: the store file and the large entries' files alone are within
        // the limit and one entry.
        let withoutLog = occupied - fileSize(DiskTier.storeFileName + "-wal")
        #expect(withoutLog <= Self.limit + Self.largestEntry, "store and files occupy \(withoutLog) bytes")
        #expect(cache.totalSize <= Self.limit + Self.largestEntry)
        print(
            "store limits: limit \(Self.limit), occupied \(occupied), without the log \(withoutLog), entries \(cache.count)"
        )
    }

    @Test
    func aSweepFromAFreshInstanceBringsAFolderOverTheLimitDown() throws {
        do {
            let unlimited = Cache(makeConfiguration(folder, clock: clock))
            for index in 0..<800 { try unlimited.set(Self.small(index), for: CacheKey<Data>("key-\(index)")) }
            unlimited.waitForBackgroundWork()
        }
        let before = folder.occupiedBytes
        #expect(before > 2 * Self.limit)
        let cache = cache()
        cache.collectGarbage()
        let after = folder.occupiedBytes
        #expect(after <= Self.limit + Self.largestEntry + Self.walSlack)
        #expect(after - fileSize(DiskTier.storeFileName + "-wal") <= Self.limit + Self.largestEntry)
        #expect(after < before)
    }

    /// A sweep trims to 95% of the limit (``DiskTier/Limits/sweepTarget``), not much further:
    /// what it evicts past that is hit ratio lost for nothing.
    @Test
    func aSweepLeavesTheFolderNearItsTargetNotEmpty() throws {
        let cache = cache()
        for index in 0..<2_000 {
            try cache.set(Self.small(index), for: CacheKey<Data>("key-\(index)"))
            clock.advance(by: 1)
        }
        cache.waitForBackgroundWork()
        #expect(cache.totalSize >= Self.limit / 2, "\(cache.count) entries, \(cache.totalSize) bytes left")
    }

    @Test
    func lockedEntriesSurviveSweepsWhileUnlockedOnesGo() throws {
        let events = EventLog()
        let cache = cache(events: events)
        let locked = (0..<20).map { CacheKey<Data>("locked-\($0)") }
        for key in locked {
            try cache.set(Self.small(7), for: key)
            cache.lock(key)
            clock.advance(by: 1)
        }
        for index in 0..<1_500 {
            try cache.set(Self.small(index), for: CacheKey<Data>("unlocked-\(index)"))
            clock.advance(by: 1)
        }
        cache.waitForBackgroundWork()
        cache.purgeMemory()
        for key in locked { #expect(cache.value(for: key) == Self.small(7), "\(key.name) was evicted") }
        #expect(!events.evictions.isEmpty)
        #expect(events.evictions.allSatisfy { $0.hasPrefix("unlocked-") })
        #expect(cache.count < 1_520)
    }

    func fileSize(_ name: String) -> Int {
        var info = stat()
        return stat(folder.path + "/" + name, &info) == 0 ? Int(info.st_size) : 0
    }
}
