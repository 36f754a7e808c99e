import CashierPlatform
import CashierSQLite
import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// What a hostile review of the store's rules found: each test pins a defect it demonstrated.
@Suite(.serialized) struct HostileStoreTests {
    let folder = TemporaryFolder()

    static let large = Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })

    /// Rule 4, "nothing removed is ever read again, after a kill, in any process".
    ///
    /// A small write over a large entry commits its row, then removes the file in a second
    /// transaction (`EntryStore.upsert`, "best effort"). A kill between the two, or the second
    /// transaction finding the lock held past the write's wait, leaves the old file under the
    /// key's name, shadowed by the row: the state made here (the file is put back by hand after
    /// the write). A sweep of a live process then evicts the row: a row's removal never unlinks
    /// the key's file (`EntryStore.remove(unchanged:)` only for `location == .file`). The next
    /// process's import (`reconcile(files:indexing: true)`) finds a file with no row and indexes
    /// it: the replaced, then evicted, value is read again.
    ///
    /// `tinyRows`: rows written right after the key, so one sweep evicts them with it: past
    /// `DiskTier.unlinksWithoutListing` removals, a sweep unlinks only the files a listing of
    /// the folder (inside its transaction) holds, and the left-behind file must be among them.
    @Test(arguments: [0, 2 * DiskTier.unlinksWithoutListing])
    func aFileShadowedByAnEvictedRowIsNeverReadAgainInAFreshProcess(tinyRows: Int) throws {
        let clock = TestClock()
        let key = CacheKey<Data>("replaced")
        let fileName = DiskTier.fileName(for: key.name)
        let filePath = folder.path + "/" + fileName
        let side = folder.path + "/side-link"
        do {
            var configuration = makeConfiguration(folder, clock: clock)
            configuration.diskSizeLimit = 96 * 1024
            configuration.memoryCountLimit = 0
            // Least recently used first: the read below is the key's first use, which makes it
            // reused in the frequency-aware order, kept over the newer entries never read.
            configuration.evictionPolicy = .leastRecentlyUsed
            let live = Cache(configuration)
            try live.set(Self.large, for: key)
            live.waitForBackgroundWork()
            #expect(link(filePath, side) == 0)
            clock.advance(by: 1)
            try live.set(Data("small".utf8), for: key)
            live.waitForBackgroundWork()
            // What a kill between the row's commit and the file's removal leaves.
            #expect(rename(side, filePath) == 0)
            #expect(live.value(for: key) == Data("small".utf8))
            for index in 0..<tinyRows {
                clock.advance(by: 1)
                try live.set(Data([UInt8(truncatingIfNeeded: index)]), for: CacheKey<Data>("tiny-\(index)"))
            }
            // Newer entries push the folder over its limit: the sweep evicts the oldest row.
            for index in 0..<60 {
                clock.advance(by: 1)
                try live.set(Data(repeating: UInt8(index), count: 3_000), for: CacheKey<Data>("filler-\(index)"))
            }
            live.waitForBackgroundWork()
            #expect(try folder.row(for: key.name) == nil, "the sweep did not evict the row; the test proves nothing")
            if tinyRows > 0 {
                #expect(try folder.row(for: "tiny-\(tinyRows - 1)") == nil, "one sweep did not take the tiny rows too")
            }
            #expect(live.value(for: key) == nil)
        }
        // A fresh process (a DiskTier of its own: the previous instances are gone).
        var configuration = makeConfiguration(folder, clock: clock)
        configuration.memoryCountLimit = 0
        let fresh = Cache(configuration)
        let read = fresh.value(for: key)
        fresh.waitForBackgroundWork()
        let afterImport = fresh.value(for: key)
        print(
            "HOSTILE resurrection: read \(read?.count ?? 0) bytes, after import \(afterImport?.count ?? 0) bytes, row now \(String(describing: try folder.row(for: key.name)))"
        )
        #expect(read == nil, "an evicted key read back the value its row had replaced (\(read?.count ?? 0) bytes)")
        #expect(afterImport == nil, "the import gave the replaced file a row again (\(afterImport?.count ?? 0) bytes)")
    }

    /// Rule 3, "a write waits for another process's lock at most Configuration.busyTimeout in all".
    ///
    /// Store work with no deadline (the background recency write `recordUses`, the import's
    /// `reconcile`, garbage collection's `remove(unchanged:)`, `dataVersion` for a first disk
    /// read) holds the store's in-process write lock while SQLite waits the store's own busy
    /// timeout (5 s: `openStore` never passes the configuration's) for another process's lock. A
    /// `set` behind it waited for that lock first (`EntryStore.withWriter` took `writeLock`
    /// before it looked at its deadline): with `busyTimeout = 0.2` it took 2.98 s. Now it throws
    /// `.busy` within its own wait, while the other process still holds the lock.
    @Test func aWriteBehindBackgroundStoreWorkThrowsBusyWithinItsOwnWait() throws {
        var configuration = makeConfiguration(folder)
        configuration.busyTimeout = 0.2
        let cache = Cache(configuration)
        let keys = (0..<4).map { CacheKey<String>("used-\($0)") }
        for key in keys { try cache.set("value", for: key) }
        cache.waitForBackgroundWork()
        // Another connection (another process, as far as SQLite can tell) holds the store's
        // write lock until the writes below have returned.
        let path = folder.url.resolvingSymlinksInPath().path + "/" + DiskTier.storeFileName
        let holder = try SQLiteConnection(path: path, flags: SQLiteCode.openReadWrite)
        try holder.execute("BEGIN IMMEDIATE")

        // Background store work (the recency write `recordMemoryUsesLater` hands the sweep
        // queue) meets the lock and waits the store's own busy timeout, holding the writer.
        let store = cache.disk!.openedStore!
        cache.disk!.inBackground { _ = try? store.recordUses(keys.map { (key: $0.name, time: 1) }, granularity: 0) }
        for index in 0..<3 {
            do {
                try cache.set("new", for: CacheKey<String>("written-\(index)"))
                Issue.record("a set went through while another connection held the store's lock")
            } catch let error as CacheError {
                #expect(error.kind == .busy, "\(error)")
            }
        }
        try holder.execute("COMMIT")
        cache.waitForBackgroundWork()
        try cache.set("new", for: CacheKey<String>("written-after"))
        #expect(cache.value(for: CacheKey<String>("written-after")) == "new")
    }
}
