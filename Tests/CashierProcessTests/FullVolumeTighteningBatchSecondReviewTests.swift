import CashierSQLite
import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Free pages left in the store (batches) when the volume fills, and garbage collection's reclaim
/// beside a reader: on the roomy 80 MiB volume of `FullVolumeTighteningReviewTests`
/// (`.ci/tightening-volume.sh`), in its serialized suite. From a hostile review of the batches.
extension FullVolumeTighteningReviewTests {
    /// A server instance removes the keys other instances changed, one at a time, and writes
    /// nothing (so its writes never measure the volume). Removals on a roomy volume left 16 free
    /// pages in the store, fewer than a batch. Then another app fills the volume. Most removals
    /// of small rows free no page (room inside a page): each one asks the volume while the store
    /// holds a free page, so the 16 pages, and the log the earlier removals appended (some
    /// 37 KiB each), go back. (Asked only when a removal freed a page, they stayed.)
    @Test("Removals that free no page, on a volume another app filled, give back the pages earlier removals left")
    func removalsFreeingNoPageOnAVolumeThatBecameTightGiveBackEarlierFreePages() throws {
        let volume = try #require(TighteningVolume.folder)
        let folder = URL(fileURLWithPath: volume).appendingPathComponent("batch2-tight-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = folder.path + "/store.sqlite"
        let cache = Cache(FullVolumeTests.configuration(folder))
        // Small rows first (a few pages of them), then rows of a page each, the log folded in.
        for index in 0..<60 { try cache.set(Data(repeating: 3, count: 20), for: CacheKey<Data>("s\(index)")) }
        try Self.onePageRows(cache, store: store)
        for index in 0..<16 {
            cache.removeValue(for: CacheKey<Data>("k\(index)"))
            cache.waitForBackgroundWork()
        }
        let left = try Self.freePages(store)
        #expect(left >= 16, "the removals on a roomy volume left \(left) free pages (fewer than a batch)")

        // Another app fills the volume: 8 MiB left, under DiskTier.tightVolumeBytes (64 MiB).
        let filler = TighteningVolume.fill(volume, leaving: 8 << 20)
        defer { unlink(filler) }
        let before = Self.blocks(store) + Self.blocks(store + "-wal")
        for index in 0..<10 {
            cache.removeValue(for: CacheKey<Data>("s\(index * 5)"))
            cache.waitForBackgroundWork()
        }

        #expect(cache.count == 60 + 1_199 - 16 - 10)
        let free = try Self.freePages(store)
        let after = Self.blocks(store) + Self.blocks(store + "-wal")
        #expect(free == 0, "on a tight volume the store still holds \(free) free pages")
        #expect(
            after < before,
            "10 removals on a tight volume: the store and its log occupied \(before) bytes before, \(after) after")
    }
}

extension FullVolumeTighteningReviewTests {
    /// Garbage collection gives the store's free pages back before it evicts for
    /// `minimumFreeDiskSpace`. While another process reads the store (a read transaction open: a
    /// `count`, a listing, a memory hit's check), the checkpoint after the incremental vacuum
    /// cannot cut the store file back: the pages stay taken, and the vacuum's own writes lengthen
    /// the log. The room measured before the reclaim then stands, and the collection evicts no
    /// more entries than it would have without giving pages back (it evicted 60, against 22).
    @Test("Garbage collection evicts no more entries for room while another process reads the store")
    func garbageCollectionEvictsNoMoreEntriesWhileAnotherProcessReads() throws {
        let volume = try #require(TighteningVolume.folder)
        let folder = URL(fileURLWithPath: volume).appendingPathComponent("batch2-reader-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = folder.path + "/store.sqlite"
        let cache = Cache(FullVolumeTests.configuration(folder))
        try Self.onePageRows(cache, store: store)
        for index in 0..<24 {
            cache.removeValue(for: CacheKey<Data>("k\(index)"))
            cache.waitForBackgroundWork()
        }
        // A collection without a floor folds the log in and cuts it back, and leaves the free pages.
        cache.collectGarbage()
        #expect(Self.size(store + "-wal") == 0)
        let free = try Self.freePages(store)
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
