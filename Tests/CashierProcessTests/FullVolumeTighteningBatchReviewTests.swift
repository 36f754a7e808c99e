import CashierSQLite
import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Free pages that removals of single keys leave in the store (in batches,
/// `EntryStore.removalFreePages`), where room matters: on the roomy 80 MiB volume of
/// `FullVolumeTighteningReviewTests` (`.ci/tightening-volume.sh`), in its serialized suite (each
/// case fills the volume or measures its free space). From a hostile review of the batches.
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

    static func freePages(_ store: String) throws -> Int {
        let reader = try SQLiteConnection(path: store, flags: SQLiteCode.openReadOnly)
        return Int(try reader.integer("PRAGMA freelist_count") ?? 0)
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
        let folder = URL(fileURLWithPath: volume).appendingPathComponent("batch-tight-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = folder.path + "/store.sqlite"
        let cache = Cache(FullVolumeTests.configuration(folder))
        try Self.onePageRows(cache, store: store)
        let before = Self.blocks(store) + Self.blocks(store + "-wal")

        // Another app fills the volume: 8 MiB left, under DiskTier.tightVolumeBytes (64 MiB).
        let filler = TighteningVolume.fill(volume, leaving: 8 << 20)
        defer { unlink(filler) }
        for index in 0..<20 {
            cache.removeValue(for: CacheKey<Data>("k\(index)"))
            cache.waitForBackgroundWork()
        }

        #expect(cache.count == 1_199 - 20)
        let free = try Self.freePages(store)
        let after = Self.blocks(store) + Self.blocks(store + "-wal")
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
        let folder = URL(fileURLWithPath: volume).appendingPathComponent("batch-floor-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = folder.path + "/store.sqlite"
        let cache = Cache(FullVolumeTests.configuration(folder))
        try Self.onePageRows(cache, store: store)
        // 24 pages (96 KiB) freed one key at a time: fewer than a batch, and the log they append
        // (some 37 KiB each) stays under 1 MiB, past which a removal reclaims.
        for index in 0..<24 {
            cache.removeValue(for: CacheKey<Data>("k\(index)"))
            cache.waitForBackgroundWork()
        }
        let free = try Self.freePages(store)
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
}
