import CashierEntryFormat
import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile review of c3107a5: a large overrun (over a tenth of what the folder occupies) is
/// scaled by `min(1, entries / occupied)`, the ratio of the whole folder, and then paid in the
/// sizes of the entries the eviction order reaches first. When those entries occupy what their
/// sizes say (large entries' files) and the rest of the folder occupies far more than its sizes
/// (small values under long keys: the key is in the row, in the record and in the key index),
/// the sweep frees a fraction of the overrun and leaves the folder over its limit.
/// `largeSweepTarget` (90%) is documented to leave the folder under the limit after one sweep.
@Suite struct SweepScaledOverrunReviewTests {
    let folder = TemporaryFolder()
    let clock = TestClock()

    static let options = DiskTier.WriteOptions(
        filePermissions: 0o644, folderPermissions: 0o755, synchronize: false, completeProtection: false)

    /// `key`'s entry of `bytes` bytes of payload, last used at `usedAt` (seconds since 1970).
    static func write(_ key: String, _ disk: DiskTier, bytes: Int, usedAt: Double) throws {
        let payload = Data((0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ key.count) })
        let header = EntryHeader(
            key: key, typeName: "Foundation.Data", format: .raw, createdAt: 0, validatedAt: 0, lifespan: .never,
            schemaVersion: nil, appVersion: nil, isLocked: false, payloadLength: payload.count)
        var options = Self.options
        options.usedAt = usedAt
        _ = try disk.write(DiskTier.fileName(for: key), header: header, payload: payload, options: options)
    }

    /// A key of about 300 characters: a URL, say.
    static func longKey(_ index: Int) -> String {
        "https://example.com/" + String(repeating: "segment/", count: 34) + String(format: "%06d", index)
    }

    /// 80 large entries of 50 kB written first (the least recently used), then 8,000 rows of 60
    /// bytes under 300-character keys. A sweep to half of what the folder occupies must leave it
    /// within the limit.
    ///
    /// Passes at ca80c93; fails at c3107a5: the rows occupy about three times their sizes, so the folder's ratio is
    /// well under 1; the scaled overrun is paid in the large entries' files, which free only
    /// their sizes, and the folder is left 15% over its limit (5.91 MB under 5.12 MB). Before (unscaled), the
    /// sweep evicted the overrun in entries' sizes and left the folder within it. Scaling by
    /// what the victims themselves occupy (a file: its size; rows: the walk's running share of
    /// their pages), or only rows' share by rows' ratio, would hold the limit.
    @Test func aLargeSweepOfLargeFilesAmongPoorlyPackedRowsLeavesTheFolderWithinItsLimit() throws {
        let disk = DiskTier(folder: folder.path, recheckInterval: 0)
        for index in 0..<80 { try Self.write("large-\(index)", disk, bytes: 50_000, usedAt: 1_000) }
        for index in 0..<8_000 { try Self.write(Self.longKey(index), disk, bytes: 60, usedAt: 2_000) }
        let store = try EntryStore(folder: folder.path)
        _ = try store.checkpoint()
        let before = try store.occupiedBytes(includingLog: false, includingFreePages: false)
        let entries = try store.totalSize()
        #expect(Double(entries) / Double(before) < 0.8, "entries \(entries) of \(before) occupied")

        let limit = before / 2
        var limits = DiskTier.Limits(size: limit, minimumFreeSpace: nil)
        limits.evictionOrder = .leastRecentlyUsed
        let plan = disk.planSweep(limits: limits, at: 100)
        let removed = disk.apply(plan)
        disk.finish(plan)
        _ = try store.checkpoint()
        let after = try store.occupiedBytes(includingLog: false, includingFreePages: false)
        #expect(
            after <= limit,
            "a sweep to \(limit) of a folder of \(before) evicted \(removed.count) entries and left \(after)")
    }

    /// The same folder, written through an unlimited cache and opened again with a limit of half
    /// what it occupies: at rest (`waitForBackgroundWork`, which sweeps once more when the folder
    /// is still over) the store and large files must be within the limit and one entry.
    ///
    /// Holds at c3107a5 (a guard): the first sweep leaves the folder over its limit (as in the
    /// test above), and the one more sweep `waitForBackgroundWork` runs, whose victims are rows
    /// of the folder's own ratio, makes it up.
    @Test func aCacheOpenedWithALowerLimitIsWithinItAtRest() throws {
        do {
            let unlimited = makeLimitedCache(
                folder, clock: clock, diskLimit: nil, memoryLimit: nil, events: nil,
                evictionPolicy: .leastRecentlyUsed)
            for index in 0..<80 {
                try unlimited.set(Data(repeating: UInt8(index), count: 50_000), for: CacheKey<Data>("large-\(index)"))
            }
            clock.advance(by: 120)
            for index in 0..<8_000 {
                try unlimited.set(Data(repeating: UInt8(truncatingIfNeeded: index), count: 60),
                    for: CacheKey<Data>(Self.longKey(index)))
            }
            unlimited.waitForBackgroundWork()
        }
        let before = folder.occupiedBytes
        let limit = before / 2
        clock.advance(by: 120)
        let cache = makeLimitedCache(
            folder, clock: clock, diskLimit: limit, memoryLimit: nil, events: nil, evictionPolicy: .leastRecentlyUsed)
        try cache.set(Data(count: 60), for: CacheKey<Data>("last"))
        cache.waitForBackgroundWork()
        let wal = fileSize(DiskTier.storeFileName + "-wal")
        let after = folder.occupiedBytes - wal
        #expect(after <= limit + 50_000, "limit \(limit), folder \(before) before, \(after) after (log \(wal) aside)")
    }

    /// A limit of 256 KiB, of which the store's fixed part (its `-shm`, its schema's pages:
    /// `TemporaryFolder.emptyStoreBytes`, 72 KiB) is a good share; 1,500 rows of 1,000 bytes
    /// written without a limit, then a cache opened with it. At rest, the folder must be within
    /// the limit and one entry.
    ///
    /// Passes at ca80c93; fails at c3107a5 (143,360 bytes, 51 entries): the scale `entries / occupied` counts the fixed part as if it shrank with
    /// the entries, so each large sweep leaves about `fixed + 0.9 × limit × share` (over the
    /// limit when the fixed part is over a tenth of it), and the sweep after it is large again.
    /// Scaling only what the entries occupy (occupied less the `-shm` and an empty store's pages)
    /// would hold it.
    @Test func aSmallLimitIsHeldAtRestAfterALargeOverrun() throws {
        do {
            let unlimited = makeLimitedCache(folder, clock: clock, diskLimit: nil, memoryLimit: nil, events: nil)
            for index in 0..<1_500 {
                try unlimited.set(Data(repeating: UInt8(truncatingIfNeeded: index), count: 1_000),
                    for: CacheKey<Data>("row-\(index)"))
                clock.advance(by: 1)
            }
            unlimited.waitForBackgroundWork()
        }
        let limit = 128 << 10
        let cache = makeLimitedCache(folder, clock: clock, diskLimit: limit, memoryLimit: nil, events: nil)
        try cache.set(Data(count: 1_000), for: CacheKey<Data>("last"))
        cache.waitForBackgroundWork()
        let wal = fileSize(DiskTier.storeFileName + "-wal")
        let after = folder.occupiedBytes - wal
        #expect(after <= limit + 1_100, "limit \(limit): \(after) occupied at rest (log \(wal) aside), \(cache.count) entries")
    }

    func fileSize(_ name: String) -> Int {
        var info = stat()
        return stat(folder.path + "/" + name, &info) == 0 ? Int(info.st_size) : 0
    }
}
