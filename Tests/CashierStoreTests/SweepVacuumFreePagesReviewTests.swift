import CashierSQLite
import CashierStore
import CashierStoreSupport
import CashierTestSupport
import Foundation
import Testing

/// A hostile review of 2808c42 with the pages other removals leave: single-key removals keep
/// their free pages for a batch (`EntryStore.removalFreePages`), a sweep of more than
/// `movesPerSweep` rows vacuums inside its transaction, and a sweep that removes 256 rows or
/// fewer of more chosen both vacuums and compacts (`compact(afterRemoving:)`).
@Suite struct SweepVacuumFreePagesReviewTests {
    let folder = TemporaryFolder()
    let store: EntryStore

    init() throws {
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        store = try EntryStore(folder: folder.path)
        for index in 0..<2_000 {
            try store.upsert(
                StoreEntry(key: "r\(index)", location: .row, size: 800, lastUse: Int64(index)),
                record: bytes(800, seed: index))
        }
    }

    func freePages() throws -> Int64? {
        try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadOnly).integer("PRAGMA freelist_count")
    }

    /// Single-key removals of a whole run of rows leave free pages; the large sweep after them
    /// gives those back too, in its own commit: no free page is left, what the store occupies
    /// with and without free pages is the same, and a reclaim after it finds nothing to do.
    @Test func aLargeSweepGivesBackThePagesSingleRemovalsLeft() throws {
        for index in 1_000..<1_060 { _ = try store.remove("r\(index)") }
        #expect(try freePages() ?? 0 > 0, "the single removals left no free page to give back")
        let removed = try store.evict(order: .leastRecentlyUsed, downTo: 600 * 800)
        #expect(removed.count > 256)
        #expect(try freePages() == 0)
        #expect(
            try store.occupiedBytes(includingLog: false, includingFreePages: true)
                == store.occupiedBytes(includingLog: false, includingFreePages: false))
        #expect(try store.reclaimSpace(foldingLog: false) >= 0)
        #expect(try store.count() == 2_000 - 60 - removed.count)
    }

    /// 300 rows chosen, 100 of them used since the walk (each then checked, and spared): 200
    /// go, so the vacuum ran in the transaction and the compaction moves rows after it. Every
    /// row left reads whole, the spared ones with their new use, and a reclaim leaves no free page.
    @Test func aSweepOfManyChosenAndFewRemovedBothVacuumsAndCompactsKeepingEveryRowWhole() throws {
        var (victims, rowIDs): ([StoreEntry], [Int64]) = ([], [])
        let walked = try store.walkEvictionOrder(.leastRecentlyUsed) { entry, rowID in
            victims.append(entry)
            rowIDs.append(rowID)
            return victims.count < 300
        }
        try store.recordUses((0..<300).filter { $0 % 3 == 0 }.map { "r\($0)" }, at: 5_000)
        let removed = try store.remove(
            unchanged: victims, evictedIn: .leastRecentlyUsed, asWalked: walked.map { (rowIDs, $0) }
        ).removed
        #expect(removed.count == 200)
        try store.compact(afterRemoving: removed.count)
        _ = try store.reclaimSpace()
        #expect(try freePages() == 0)
        let keys = Set(try store.keys())
        #expect(keys == Set((0..<2_000).map { "r\($0)" }).subtracting(removed.map(\.key)))
        for key in keys {
            let index = Int(key.dropFirst())!
            let record = try #require(try store.record(for: key))
            #expect(record.record == bytes(800, seed: index), "\(key) moved or kept otherwise than written")
            if index < 300 { #expect(record.entry.lastUse == 5_000) }
        }
        #expect(try store.structuralProblems().isEmpty)
    }
}
