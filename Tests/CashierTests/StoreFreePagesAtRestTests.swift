import CashierPlatform
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
    /// them, all but the oldest `kept` deleted with no reclaim after: whole pages on the free
    /// list. Returns the bytes the rows' pages occupy and those the free pages do.
    func fillThenFreePagesAsAKilledProcessLeavesThem(keeping kept: Int = 201) throws -> (inUse: Int, free: Int) {
        do {
            let cache = Cache(makeConfiguration(folder))
            for index in 0..<600 {
                try cache.set(Data(repeating: UInt8(index % 251), count: 900), for: CacheKey<Data>("k\(index)"))
            }
            cache.waitForBackgroundWork()
        }
        return try CashierTestSupport.freePagesAsAKilledProcessLeavesThem(store: storePath, keeping: kept)
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

    /// A collection gives the store's free pages back whatever it chose, with no limit set,
    /// when they are more than the batch removals of single keys leave.
    @Test func aCollectionThatChoosesNothingGivesTheFreePagesBack() throws {
        let (_, free) = try fillThenFreePagesAsAKilledProcessLeavesThem()
        #expect(free >= 100_000, "only \(free) bytes of free pages: the test proves nothing")
        let cache = Cache(makeConfiguration(folder))
        cache.collectGarbage()
        cache.waitForBackgroundWork()
        #expect(try freePages() == 0)
        #expect(cache.count == 201)
    }

    /// Fewer free pages than the batch removals of single keys leave (where the next rows go)
    /// stay after a collection that removed nothing: it does not vacuum and checkpoint for
    /// them, as `removeAll(where:)` and `removeExpired()` would on the caller's thread.
    @Test func fewerFreePagesThanABatchStayAfterACollectionThatRemovedNothing() throws {
        _ = try fillThenFreePagesAsAKilledProcessLeavesThem(keeping: 588)
        let free = try freePages()
        let pages = try SQLiteConnection(path: storePath, flags: SQLiteCode.openReadOnly).integer("PRAGMA page_count")
        #expect(free > 0 && free < EntryStore.removalFreePages(ofPages: pages ?? 0), "\(free) free pages")
        let cache = Cache(makeConfiguration(folder))
        cache.collectGarbage()
        cache.removeAll(where: { _ in false })
        cache.removeExpired()
        #expect(try freePages() == free)
        #expect(cache.count == 588)
    }

    /// Another connection takes the store's write lock, then a write of `cache` (the key
    /// "blocked") starts on a thread of its own and waits for it, holding this process's writer.
    /// Returns once it holds it: the other connection (`COMMIT` lets the write go), whether the
    /// write has ended, and what it signals when it does.
    func blockAWrite(of cache: Cache, store: EntryStore) throws -> (
        other: SQLiteConnection, writeEnded: Locked<Bool>, ended: DispatchSemaphore
    ) {
        let other = try SQLiteConnection(path: storePath, flags: SQLiteCode.openReadWrite)
        try other.execute("BEGIN IMMEDIATE")
        let writeEnded = Locked(false)
        let ended = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            _ = try? cache.set(Data(repeating: 2, count: 900), for: CacheKey<Data>("blocked"))
            writeEnded.withLock { $0 = true }
            ended.signal()
        }
        // Not a delay: until the write holds this process's writer (`keepsLogSmall` answers true
        // without waiting while a call holds it), waiting for the other connection's lock.
        var polls = 0
        while !store.keepsLogSmall, polls < 30_000 {
            usleep(1_000)
            polls += 1
        }
        #expect(store.keepsLogSmall, "the write never took the writer")
        return (other, writeEnded, ended)
    }

    /// A write of this process waits for another connection's write lock (as another process
    /// holds it), holding this process's writer; meanwhile a collection, a bulk removal and an
    /// expiry pass that remove nothing are called. They must return while the write still
    /// waits: the first version of this change set the log's bounds first, which waits for the
    /// writer, and each took the busy timeout (a hostile review; the timer's collection holds
    /// the folder lock meanwhile, so every other process's collection waited too).
    @Test(arguments: ["collectGarbage", "removeAllWhere", "removeExpired"])
    func housekeepingThatRemovesNothingReturnsWhileAWriteOfThisProcessWaits(_ call: String) throws {
        var configuration = makeConfiguration(folder)
        configuration.busyTimeout = 30 // a call that waited for the write returns after it ended
        let cache = Cache(configuration)
        for index in 0..<50 { try cache.set(Data(repeating: 1, count: 900), for: CacheKey<Data>("k\(index)")) }
        cache.waitForBackgroundWork()
        let store = try #require(cache.disk?.openedStore)
        #expect(!store.keepsLogSmall, "the writer is busy or the log kept small: the test proves nothing")

        let (other, writeEnded, ended) = try blockAWrite(of: cache, store: store)
        switch call {
        case "collectGarbage": cache.collectGarbage()
        case "removeAllWhere": cache.removeAll(where: { _ in false })
        default: cache.removeExpired()
        }
        #expect(!writeEnded.withLock { $0 }, "\(call) that removed nothing returned only once the write had ended")
        try other.execute("COMMIT")
        ended.wait()
        #expect(cache.value(for: CacheKey<Data>("blocked")) == Data(repeating: 2, count: 900))
        #expect(cache.count == 51)
    }

    /// A reader (another connection, as of another process) holds a snapshot from before the
    /// folder is settled: `waitForBackgroundWork()` returns, no row goes, the reader still reads
    /// its snapshot; once it ends, the next one brings the folder within its limit (from a
    /// hostile review).
    @Test func aReaderHoldingASnapshotDelaysTheFreePagesAndLosesNoRow() throws {
        let (inUse, free) = try fillThenFreePagesAsAKilledProcessLeavesThem()
        let limit = inUse + 32_768 + free / 2
        let reader = try SQLiteConnection(path: storePath, flags: SQLiteCode.openReadOnly)
        try reader.execute("BEGIN")
        #expect(try reader.integer("SELECT count(*) FROM entry") == 201)

        var configuration = makeConfiguration(folder)
        configuration.diskSizeLimit = limit
        let cache = Cache(configuration)
        try cache.set(Data(repeating: 7, count: 100), for: CacheKey<Data>("next-launch"))
        cache.waitForBackgroundWork()
        #expect(cache.count == 202, "a row within the limit was evicted for pages no row held")
        #expect(try reader.integer("SELECT count(*) FROM entry") == 201, "the reader's snapshot")
        try reader.execute("COMMIT")

        cache.waitForBackgroundWork()
        #expect(
            folder.bytesOnDisk <= limit, "after the reader ended the folder holds \(folder.bytesOnDisk) for \(limit)")
        #expect(try freePages() == 0)
        let lost = (0...200).filter {
            cache.value(for: CacheKey<Data>("k\($0)")) != Data(repeating: UInt8($0 % 251), count: 900)
        }
        #expect(lost.isEmpty, "rows lost: \(lost.prefix(10))")
    }
}
