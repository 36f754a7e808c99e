import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// What removals give back, and what the removal of one key no longer pays for. Removing one
/// small row frees room inside a page, not a page: the store's log is then left to SQLite's own
/// checkpoints (a checkpoint there cost every such removal a `fdatasync` and a `ftruncate`).
/// Removals that free pages give them back once they are a batch
/// (``EntryStore/removalFreePages(ofPages:)``), and `removeAll()` cuts the log back.
@Suite struct StoreReclaimTests {
    let folder = TemporaryFolder()
    let clock = TestClock()

    func bytes(of path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
    }

    var logBytes: Int { bytes(of: folder.storePath + "-wal") }

    @Test func removingOneSmallRowLeavesTheLogToSQLiteAndRemoveAllCutsItBack() throws {
        let cache = Cache(makeConfiguration(folder, clock: clock))
        for index in 0..<20 { try cache.set(Data(repeating: 7, count: 200), for: CacheKey<Data>("k\(index)")) }
        cache.waitForBackgroundWork()

        cache.removeValue(for: CacheKey<Data>("k3"))
        cache.waitForBackgroundWork()
        #expect(cache.value(for: CacheKey<Data>("k3")) == nil)
        #expect(Cache(makeConfiguration(folder, clock: clock)).value(for: CacheKey<Data>("k3")) == nil)
        // The removal's commit is still in the log: no checkpoint cut it back.
        #expect(logBytes > 0)

        cache.removeAll()
        cache.waitForBackgroundWork()
        #expect(logBytes == 0)
        #expect(cache.totalSize <= TemporaryFolder.emptyStoreBytes)
    }

    @Test func removingRowsOneByOneThatFreePagesGivesThemBack() throws {
        let cache = Cache(makeConfiguration(folder, clock: clock))
        let value = Data(repeating: 9, count: 3_000) // about one row a page
        for index in 0..<200 { try cache.set(value, for: CacheKey<Data>("k\(index)")) }
        cache.waitForBackgroundWork()
        let before = bytes(of: folder.storePath) + logBytes

        for index in 0..<150 { cache.removeValue(for: CacheKey<Data>("k\(index)")) }
        cache.waitForBackgroundWork()

        #expect(cache.count == 50)
        // 150 pages of 4 KiB freed: at least 100 of them are back with the file system.
        #expect(bytes(of: folder.storePath) + logBytes <= before - 100 * 4_096)
    }

    var freePages: Int { get throws { try storeFreePages(folder.storePath) } }

    /// Removes `indices`' keys (`k0`…) one at a time, each removal's background work waited for.
    func removeOneAtATime(_ cache: Cache, _ indices: some Sequence<Int>) {
        for index in indices {
            cache.removeValue(for: CacheKey<Data>("k\(index)"))
            cache.waitForBackgroundWork()
        }
    }

    /// A removal of one key that frees a page no longer gives it back at once (a checkpoint,
    /// with its syncs and truncations, for 4 KiB): the free pages stay in the store, where the
    /// next rows go, until the removals have freed a batch; then one reclaim gives them all back.
    @Test func removalsOfSingleKeysGiveFreePagesBackInBatches() throws {
        let cache = Cache(makeConfiguration(folder, clock: clock))
        let value = Data(repeating: 9, count: 3_000) // about one row a page
        for index in 0..<400 { try cache.set(value, for: CacheKey<Data>("k\(index)")) }
        cache.removeAll(where: { $0 == "k399" }) // folds the log in: the store file holds every page
        cache.waitForBackgroundWork()
        let pages = Int64(bytes(of: folder.storePath) / 4_096)
        let batch = Int(EntryStore.removalFreePages(ofPages: pages))
        #expect(batch > 10, "a store of \(pages) pages")

        removeOneAtATime(cache, 0..<10)
        #expect(try freePages >= 10, "the freed pages stay in the store, a batch being \(batch)")
        #expect(bytes(of: folder.storePath) == Int(pages) * 4_096)

        removeOneAtATime(cache, 10..<(batch + 20))
        #expect(try freePages < batch)
        #expect(bytes(of: folder.storePath) <= Int(pages - Int64(batch)) * 4_096)
        #expect(cache.count == 399 - batch - 20)
        #expect(Cache(makeConfiguration(folder, clock: clock)).value(for: CacheKey<Data>("k0")) == nil)
    }
}
