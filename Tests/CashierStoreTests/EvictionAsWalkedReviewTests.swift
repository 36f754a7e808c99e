import CashierSQLite
import CashierStore
import CashierStoreSupport
import CashierTestSupport
import Foundation
import Testing

/// A hostile review of the removal by the walk's row ids (`EntryStore.walkEvictionOrder` and
/// `remove(unchanged:evictedIn:filePath:asWalked:)`): a snapshot equal to the walk's must mean
/// the rows the ids name are the rows the walk read.
@Suite struct EvictionAsWalkedReviewTests {
    let folder = TemporaryFolder()

    init() throws {
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
    }

    /// A store of ten rows `old0`…`old9`, the walk's first three victims; then its folder removed
    /// and made again, and a second store there of ten rows `new0`…`new9`.
    private func walkThenReplace() throws -> (
        first: EntryStore, second: EntryStore, victims: [StoreEntry], rowIDs: [Int64], walked: StoreSnapshot
    ) {
        let first = try EntryStore(folder: folder.path)
        try first.fillTen("old")
        let (victims, rowIDs, walked) = try first.walkOldest(3)
        try FileManager.default.removeItem(at: folder.url)
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        let second = try EntryStore(folder: folder.path)
        try second.fillTen("new")
        return (first, second, victims, rowIDs, walked)
    }

    /// A fresh connection's `data_version` and `total_changes()` start from the same values,
    /// so a walk of one store and a removal through another store opened later on the same
    /// path (the folder removed and made again, then written as the first was) agree on both:
    /// the snapshot also names its writer, and the removal finds none of the walked keys (they
    /// are not in the new store) instead of deleting the new store's rows by the old ids.
    @Test func aWalkOfAStoreSinceReplacedDeletesNoRowOfTheNewStoreByID() throws {
        let (_, second, victims, rowIDs, walked) = try walkThenReplace()
        let removed = try second.remove(unchanged: victims, evictedIn: .leastRecentlyUsed, asWalked: (rowIDs, walked))
        #expect(removed.removed.isEmpty, "reported the old store's keys removed from the new one")
        #expect(try second.keys().sorted() == (0..<10).map { "new\($0)" }, "the new store's rows were deleted by id")
    }

    /// The same store's removal, once another store has taken its path (`opensItsPath` fails),
    /// goes row by row in the file it has open and leaves the new store's rows.
    @Test func theSameStoresRemovalAfterItsPathWasTakenLeavesTheNewStoresRows() throws {
        let (first, second, victims, rowIDs, walked) = try walkThenReplace()
        _ = try? first.remove(unchanged: victims, evictedIn: .leastRecentlyUsed, asWalked: (rowIDs, walked))
        #expect(try second.keys().sorted() == (0..<10).map { "new\($0)" })
    }
}
