import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Review of "A removal of one key no longer checkpoints the store" (46c85b9): what a removal of
/// one small key still owes the volume and the folder's size once it no longer always reclaims.
/// In `StoreReclaimTests`, whose folder, clock and file sizes it uses.
extension StoreReclaimTests {
    /// An unbounded folder (`.directory` and `.persistent` caches are, by default): removing some
    /// of its small entries, one key at a time, must not leave it occupying much more than before
    /// at rest (each removal's background work done), nor make `totalSize` climb: "removing
    /// entries frees space". Each removal's transaction appends three pages (12 KiB) to the log,
    /// and no reclaim cuts it back until a removal happens to free a whole page: until SQLite's
    /// own checkpoint at 1,000 pages the log grows with every removal, and then stays at about
    /// 4 MiB (a 6 MiB `journal_size_limit`). Allowed here: 1 MiB of log, what the store keeps
    /// on a tight volume (before 46c85b9 the folder never grew).
    @Test func removingEntriesGrowsTheFolderByNoMoreThanATightLog() throws {
        let cache = Cache(makeConfiguration(folder, clock: clock))
        let value = Data(repeating: 7, count: 200)
        for index in 0..<1_000 { try cache.set(value, for: CacheKey<Data>("k\(index)")) }
        cache.waitForBackgroundWork()
        // The folder as a bulk removal's reclaim leaves it (the log folded in).
        cache.removeAll(where: { $0 == "k999" })
        cache.waitForBackgroundWork()
        let before = cache.totalSize
        #expect(logBytes == 0)

        // Every fifth key: no page of the table empties at first.
        var most = (size: before, log: 0, removed: 0)
        for (removed, index) in stride(from: 0, to: 995, by: 5).enumerated() {
            cache.removeValue(for: CacheKey<Data>("k\(index)"))
            cache.waitForBackgroundWork()
            if cache.totalSize > most.size { most = (cache.totalSize, logBytes, removed + 1) }
        }

        #expect(cache.count == 800)
        #expect(
            most.size <= before + (1 << 20),
            "at rest after \(most.removed) removals the folder occupied \(most.size) bytes (log \(most.log)), \(before) before them"
        )
        let fresh = Cache(makeConfiguration(folder, clock: clock))
        #expect(
            fresh.totalSize <= before + (1 << 20),
            "a fresh instance reads \(fresh.totalSize) bytes, \(before) before the removals")
    }

    /// Removals of single keys from several threads at once, beside writes and bulk removals:
    /// each removal reads `tightVolume` under the writer (`mayGiveSpaceBack`), while reclaims set
    /// it (`adjustLog`) and test it (`keepsLogSmall`). For the thread sanitizer; at rest, what
    /// this instance reads is what a fresh one reads.
    @Test func concurrentRemovalsWritesAndReclaimsAgree() async throws {
        let cache = Cache(makeConfiguration(folder, clock: clock))
        let keys = (0..<120).map { CacheKey<Data>("k\($0)") }
        for key in keys { try cache.set(Data(repeating: 1, count: 300), for: key) }
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    for round in 0..<150 {
                        let key = keys[(round * 7 + worker * 31) % keys.count]
                        switch (round + worker) % 5 {
                        case 0: try? cache.set(Data(repeating: UInt8(worker), count: 3_000), for: key)
                        case 1: cache.removeAll(where: { $0 == key.name })
                        default: cache.removeValue(for: key)
                        }
                    }
                }
            }
        }
        cache.waitForBackgroundWork()
        let fresh = Cache(makeConfiguration(folder, clock: clock))
        for key in keys { #expect(cache.value(for: key) == fresh.value(for: key), "\(key.name)") }
        #expect(cache.count == fresh.count)
    }
}
