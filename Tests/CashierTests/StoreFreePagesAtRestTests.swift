import CashierSQLite
import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Free pages a store holds count in what the folder occupies on the volume, not in what a
/// sweep measures (they are where the next rows go, and a sweep that evicts for them gives back
/// nothing a write would not reuse). A process killed between a removal's commit and its
/// reclaim leaves them, more than a batch of single-key removals ever does: at rest the folder
/// then stayed over its limit, as no sweep chose anything (CI of 326e54a, `StoreAtRestTests`:
/// 451,073 bytes for a bound of 449,664, unchanged by a write, a collection and another
/// process's collection).
@Suite struct StoreFreePagesAtRestTests {
    let folder = TemporaryFolder()
    var storePath: String { folder.path + "/" + DiskTier.storeFileName }

    /// 600 rows of 900 bytes through a cache without limit, then, as a killed process leaves
    /// them, the newer two thirds deleted with no reclaim after: whole pages on the free list.
    /// Returns the bytes the rows' pages occupy and those the free pages do.
    func fillThenFreePagesAsAKilledProcessLeavesThem() throws -> (inUse: Int, free: Int) {
        do {
            let cache = Cache(makeConfiguration(folder))
            for index in 0..<600 {
                try cache.set(Data(repeating: UInt8(index % 251), count: 900), for: CacheKey<Data>("k\(index)"))
            }
            cache.waitForBackgroundWork()
        }
        let connection = try SQLiteConnection(path: storePath, flags: SQLiteCode.openReadWrite)
        try connection.execute("PRAGMA busy_timeout = 10000")
        try connection.execute("DELETE FROM entry WHERE id > (SELECT min(id) + 200 FROM entry)")
        _ = try connection.integer("PRAGMA wal_checkpoint(TRUNCATE)")
        let pageSize = Int(try connection.integer("PRAGMA page_size") ?? 0)
        let pages = Int(try connection.integer("PRAGMA page_count") ?? 0)
        let free = Int(try connection.integer("PRAGMA freelist_count") ?? 0)
        return ((pages - free) * pageSize, free * pageSize)
    }

    func freePages() throws -> Int64 {
        let connection = try SQLiteConnection(path: storePath, flags: SQLiteCode.openReadOnly)
        return try connection.integer("PRAGMA freelist_count") ?? -1
    }

    /// A limit above what the rows occupy, below what the folder holds with its free pages: at
    /// rest (a write, then `waitForBackgroundWork()`) the folder is within it, its free pages
    /// given back, and every row that was within the limit is still there.
    @Test func freePagesThatKeepTheFolderOverItsLimitGoBackAtRest() throws {
        let (inUse, free) = try fillThenFreePagesAsAKilledProcessLeavesThem()
        #expect(free >= 100_000, "only \(free) bytes of free pages: the test proves nothing")
        let limit = inUse + 32_768 + free / 2 // the rows, the `-shm`, half the free pages
        #expect(folder.bytesOnDisk > limit, "the folder holds \(folder.bytesOnDisk) bytes: the test proves nothing")

        var configuration = makeConfiguration(folder)
        configuration.diskSizeLimit = limit
        let cache = Cache(configuration)
        try cache.set(Data(repeating: 7, count: 100), for: CacheKey<Data>("next-launch"))
        cache.waitForBackgroundWork()
        #expect(folder.bytesOnDisk <= limit, "at rest the folder holds \(folder.bytesOnDisk) bytes for \(limit)")
        #expect(try freePages() == 0)
        #expect(cache.count == 202, "a row within the limit was evicted for pages no row held")
    }

    /// A collection gives the store's free pages back whatever it chose, with no limit set.
    @Test func aCollectionThatChoosesNothingGivesTheFreePagesBack() throws {
        let (_, free) = try fillThenFreePagesAsAKilledProcessLeavesThem()
        #expect(free >= 100_000, "only \(free) bytes of free pages: the test proves nothing")
        let cache = Cache(makeConfiguration(folder))
        cache.collectGarbage()
        cache.waitForBackgroundWork()
        #expect(try freePages() == 0)
        #expect(cache.count == 201)
    }
}
