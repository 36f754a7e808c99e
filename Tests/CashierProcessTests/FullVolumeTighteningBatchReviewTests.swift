import CashierSQLite
import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Free pages that removals of single keys leave in the store (in batches,
/// `EntryStore.removalFreePages`), where room matters: when the volume fills, and for garbage
/// collection's floor, beside a reader too. On the roomy 80 MiB volume of
/// `FullVolumeTighteningReviewTests` (`.ci/tightening-volume.sh`), in its serialized suite (each
/// case fills the volume or measures its free space). From two hostile reviews of the batches.
extension FullVolumeTighteningReviewTests {
    static func size(_ path: String) -> Int {
        var info = stat()
        return lstat(path, &info) == 0 ? Int(info.st_size) : 0
    }

    /// What the volume gives the file: its blocks.
    static func blocks(_ path: String) -> Int {
        var info = stat()
        return lstat(path, &info) == 0 ? Int(info.st_blocks) * 512 : 0
    }

    /// What the store and its log take of the volume.
    static func storeBlocks(_ store: String) -> Int { blocks(store) + blocks(store + "-wal") }

    /// A folder of its own on the tightening volume (removed when the test ends, `defer`), its
    /// store's path and a cache on it.
    static func batchCase(_ volume: String, _ label: String) -> (folder: URL, store: String, cache: Cache) {
        let folder = URL(fileURLWithPath: volume).appendingPathComponent("\(label)-\(UUID().uuidString)")
        return (folder, folder.path + "/store.sqlite", Cache(FullVolumeTests.configuration(folder)))
    }

    /// Removes `keys` one at a time, each removal's background work waited for, as a server
    /// removes the keys other instances changed.
    static func removeOneAtATime(_ cache: Cache, _ keys: some Sequence<String>) {
        for key in keys {
            cache.removeValue(for: CacheKey<Data>(key))
            cache.waitForBackgroundWork()
        }
    }

    /// A store of 1,200 rows of about a page each (3,000 bytes), the log folded in (a bulk
    /// removal's reclaim): the store file holds every page, none free, and a batch is 64 pages.
    static func onePageRows(_ cache: Cache, store: String) throws {
        let value = Data(repeating: 9, count: 3_000)
        for index in 0..<1_200 { try cache.set(value, for: CacheKey<Data>("k\(index)")) }
        cache.removeAll(where: { $0 == "k1199" })
        cache.waitForBackgroundWork()
        #expect(EntryStore.removalFreePages(ofPages: Int64(size(store) / 4_096)) == 64)
        #expect(size(store + "-wal") == 0)
    }

    /// The store learns that its volume became tight at a reclaim, every MiB this process
    /// writes, or when SQLite reports it full; a removal that freed a page used to schedule a
    /// reclaim, where a volume another app filled got noticed. With batches, such a removal asks
    /// the volume instead (a `statfs` a page freed): on a volume another app left 8 MiB free,
    /// 20 removals each freeing a page give their pages back, and the folder occupies less than
    /// before (without the check: none back, and 740 KiB more of log).
    @Test("Removing entries one key at a time on a volume another app filled gives their pages back")
    func removalsOnAVolumeThatBecameTightGiveTheirPagesBack() throws {
        let volume = try #require(TighteningVolume.folder)
        let (folder, store, cache) = Self.batchCase(volume, "batch-tight")
        defer { try? FileManager.default.removeItem(at: folder) }
        try Self.onePageRows(cache, store: store)
        let before = Self.storeBlocks(store)

        // Another app fills the volume: 8 MiB left, under DiskTier.tightVolumeBytes (64 MiB).
        let filler = TighteningVolume.fill(volume, leaving: 8 << 20)
        defer { unlink(filler) }
        Self.removeOneAtATime(cache, (0..<20).map { "k\($0)" })

        #expect(cache.count == 1_199 - 20)
        let free = try storeFreePages(store)
        let after = Self.storeBlocks(store)
        #expect(free == 0, "the 20 pages the removals freed stay in the store: \(free) free pages")
        #expect(
            after < before,
            "removing 20 entries on a tight volume: the store and its log occupied \(before) bytes before, \(after) after"
        )
    }

    /// `minimumFreeDiskSpace` is judged by the volume's free space, and the store's free pages
    /// (up to a batch that removals of single keys leave) are not free there until a reclaim
    /// gives them back: garbage collection gives them back before it chooses entries to evict.
    /// Here 24 pages (96 KiB) are free in the store and the volume is 64 KiB short of the floor:
    /// nothing is evicted (without the reclaim first: 22 entries).
    @Test("Garbage collection evicts no entry for room the store holds free")
    func garbageCollectionEvictsNoEntryForRoomTheStoreHoldsFree() throws {
        let volume = try #require(TighteningVolume.folder)
        let (folder, store, cache) = Self.batchCase(volume, "batch-floor")
        defer { try? FileManager.default.removeItem(at: folder) }
        try Self.onePageRows(cache, store: store)
        // 24 pages (96 KiB) freed one key at a time: fewer than a batch, and the log they append
        // (some 37 KiB each) stays under 1 MiB, past which a removal reclaims.
        Self.removeOneAtATime(cache, (0..<24).map { "k\($0)" })
        let free = try storeFreePages(store)
        #expect(free >= 20, "the removals left \(free) free pages")

        // The floor: 64 KiB more than the volume will have once the collection's checkpoint has
        // cut the log back (the log's blocks), a volume still roomy (over 64 MiB free).
        var configuration = FullVolumeTests.configuration(folder)
        configuration.minimumFreeDiskSpace = FullVolume.freeBytes(volume) + Self.blocks(store + "-wal") + (64 << 10)
        let collecting = Cache(configuration)
        let count = collecting.count
        collecting.collectGarbage()
        collecting.waitForBackgroundWork()

        #expect(
            collecting.count == count,
            "garbage collection evicted \(count - collecting.count) entries, for 64 KiB, with \(free) pages free in the store"
        )
    }

    /// A server instance removes the keys other instances changed, one at a time, and writes
    /// nothing (so its writes never measure the volume). Removals on a roomy volume left 16 free
    /// pages in the store, fewer than a batch. Then another app fills the volume. Most removals
    /// of small rows free no page (room inside a page): each one asks the volume while the store
    /// holds a free page, so the 16 pages, and the log the earlier removals appended (some
    /// 37 KiB each), go back. (Asked only when a removal freed a page, they stayed.)
    @Test("Removals that free no page, on a volume another app filled, give back the pages earlier removals left")
    func removalsFreeingNoPageOnAVolumeThatBecameTightGiveBackEarlierFreePages() throws {
        let volume = try #require(TighteningVolume.folder)
        let (folder, store, cache) = Self.batchCase(volume, "batch2-tight")
        defer { try? FileManager.default.removeItem(at: folder) }
        // Small rows first (a few pages of them), then rows of a page each, the log folded in.
        for index in 0..<60 { try cache.set(Data(repeating: 3, count: 20), for: CacheKey<Data>("s\(index)")) }
        try Self.onePageRows(cache, store: store)
        Self.removeOneAtATime(cache, (0..<16).map { "k\($0)" })
        let left = try storeFreePages(store)
        #expect(left >= 16, "the removals on a roomy volume left \(left) free pages (fewer than a batch)")

        // Another app fills the volume: 8 MiB left, under DiskTier.tightVolumeBytes (64 MiB).
        let filler = TighteningVolume.fill(volume, leaving: 8 << 20)
        defer { unlink(filler) }
        let before = Self.storeBlocks(store)
        Self.removeOneAtATime(cache, (0..<10).map { "s\($0 * 5)" })

        #expect(cache.count == 60 + 1_199 - 16 - 10)
        let free = try storeFreePages(store)
        let after = Self.storeBlocks(store)
        #expect(free == 0, "on a tight volume the store still holds \(free) free pages")
        #expect(
            after < before,
            "10 removals on a tight volume: the store and its log occupied \(before) bytes before, \(after) after")
    }

    /// Garbage collection gives the store's free pages back before it evicts for
    /// `minimumFreeDiskSpace`. While another process reads the store (a read transaction open: a
    /// `count`, a listing, a memory hit's check), the checkpoint after the incremental vacuum
    /// cannot cut the store file back: the pages stay taken, and the vacuum's own writes lengthen
    /// the log. The room measured before the reclaim then stands, and the collection evicts no
    /// more entries than it would have without giving pages back (it evicted 60, against 22).
    @Test("Garbage collection evicts no more entries for room while another process reads the store")
    func garbageCollectionEvictsNoMoreEntriesWhileAnotherProcessReads() throws {
        let volume = try #require(TighteningVolume.folder)
        let (folder, store, cache) = Self.batchCase(volume, "batch2-reader")
        defer { try? FileManager.default.removeItem(at: folder) }
        try Self.onePageRows(cache, store: store)
        Self.removeOneAtATime(cache, (0..<24).map { "k\($0)" })
        // A collection without a floor folds the log in and cuts it back, and leaves the free pages.
        cache.collectGarbage()
        #expect(Self.size(store + "-wal") == 0)
        let free = try storeFreePages(store)
        #expect(free >= 20, "the removals left \(free) free pages")

        // Another process reads: a read transaction open on the store.
        let reader = try SQLiteConnection(path: store, flags: SQLiteCode.openReadOnly)
        try reader.execute("BEGIN")
        _ = try reader.integer("SELECT count(*) FROM entry")
        defer { try? reader.execute("COMMIT") }

        // The floor: 64 KiB more than the volume has.
        var configuration = FullVolumeTests.configuration(folder)
        configuration.minimumFreeDiskSpace = FullVolume.freeBytes(volume) + (64 << 10)
        let collecting = Cache(configuration)
        let count = collecting.count
        let logBefore = Self.blocks(store + "-wal")
        collecting.collectGarbage()
        let logAfter = Self.blocks(store + "-wal")
        let evicted = count - collecting.count
        // 64 KiB are about 22 entries of 3,000 bytes (what the collection evicted before e9b7ec5).
        #expect(
            evicted <= 22,
            "garbage collection evicted \(evicted) entries for 64 KiB; the log went from \(logBefore) to \(logAfter) bytes"
        )
    }
}
