import CashierPlatform
import CashierSQLite
import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// From a hostile review of the free pages given back at rest (`settle(over:)`) and after a
/// housekeeping pass that removed nothing (`finish(_:)`, `reclaimFreePages(beyondABatch:)`):
/// another connection (locking as another process does) holds the write lock, or a write of
/// this process waits for it, while they run.
extension StoreFreePagesAtRestTests {
    func rowsLost(_ cache: Cache) -> [Int] {
        (0...200).filter { cache.value(for: CacheKey<Data>("k\($0)")) != Data(repeating: UInt8($0 % 251), count: 900) }
    }

    /// Runs `call` on a thread of its own; whether it returned before `bound` polls of 1 ms (not
    /// a timing assertion: the bound is far beyond any wait but an unbounded one, or the busy timeout).
    func returns(within polls: Int = 20_000, _ call: @escaping @Sendable () -> Void) -> Bool {
        let done = Locked(false)
        Thread.detachNewThread {
            call()
            done.withLock { $0 = true }
        }
        var waited = 0
        while !done.withLock({ $0 }), waited < polls {
            usleep(1_000)
            waited += 1
        }
        return done.withLock { $0 }
    }

    /// Another connection holds the write lock (`BEGIN IMMEDIATE`) while `waitForBackgroundWork()`
    /// settles a folder over its limit by free pages: it returns while the lock is still held
    /// (the busy timeout is longer than the bound), no row goes; once the lock is released, the
    /// next one brings the folder within its limit.
    @Test func anotherWriterHoldingTheLockWhileSettlingLosesNoRowAndDoesNotHang() throws {
        let (inUse, free) = try fillThenFreePagesAsAKilledProcessLeavesThem()
        let limit = inUse + 32_768 + free / 2
        var configuration = makeConfiguration(folder)
        configuration.diskSizeLimit = limit
        configuration.busyTimeout = 600 // ten minutes: a call that waits for the lock does not return
        let cache = Cache(configuration)
        try cache.set(Data(repeating: 7, count: 100), for: CacheKey<Data>("next-launch"))

        let other = try SQLiteConnection(path: storePath, flags: SQLiteCode.openReadWrite)
        try other.execute("PRAGMA busy_timeout = 60000")
        try other.execute("BEGIN IMMEDIATE")
        #expect(returns { cache.waitForBackgroundWork() }, "waitForBackgroundWork waited for another writer's lock")
        #expect(returns { cache.collectGarbage() }, "collectGarbage waited for another writer's lock")
        #expect(cache.count == 202, "a row within the limit was evicted while free pages could not go back")
        try other.execute("COMMIT")

        cache.waitForBackgroundWork()
        #expect(rowsLost(cache).isEmpty, "rows lost: \(rowsLost(cache).prefix(10))")
        #expect(cache.count == 202)
        #expect(try freePages() == 0)
        #expect(folder.bytesOnDisk <= limit, "the folder holds \(folder.bytesOnDisk) for \(limit)")
    }

    /// A write of this process waits for another connection's write lock, holding this process's
    /// writer, while the store holds more than a batch of free pages: a collection, a bulk removal
    /// and an expiry pass that remove nothing, and `waitForBackgroundWork()` settling a folder over
    /// its limit, return while the write still waits; no row goes.
    @Test(arguments: ["collectGarbage", "removeAllWhere", "removeExpired", "waitForBackgroundWork"])
    func housekeepingOverFreePagesReturnsWhileAWriteOfThisProcessWaits(_ call: String) throws {
        let (inUse, free) = try fillThenFreePagesAsAKilledProcessLeavesThem()
        #expect(free >= 100_000)
        var configuration = makeConfiguration(folder)
        configuration.diskSizeLimit = inUse + 32_768 + free / 2
        configuration.busyTimeout = 600
        let cache = Cache(configuration)
        #expect(cache.count == 201)
        let store = try #require(cache.disk?.openedStore)

        let (other, writeEnded, ended) = try blockAWrite(of: cache, store: store)
        let returned = returns {
            switch call {
            case "collectGarbage": cache.collectGarbage()
            case "removeAllWhere": cache.removeAll(where: { _ in false })
            case "removeExpired": cache.removeExpired()
            default: cache.waitForBackgroundWork()
            }
        }
        #expect(returned, "\(call) waited for the write stuck on another connection's lock")
        #expect(!writeEnded.withLock { $0 })
        try other.execute("COMMIT")
        ended.wait()
        cache.waitForBackgroundWork()
        #expect(rowsLost(cache).isEmpty, "rows lost: \(rowsLost(cache).prefix(10))")
        #expect(cache.value(for: CacheKey<Data>("blocked")) == Data(repeating: 2, count: 900))
    }
}
