import CashierSQLite
import CashierStoreSupport
import CashierTestSupport
import Foundation
import Testing

@testable import CashierStore

/// What `EntryStore.mayGiveSpaceBack(volumeIsTight:)` answers after a removal of one key (free
/// pages go back in batches). From a hostile review of the batches.
@Suite struct BatchReclaimSecondReviewTests {
    let folder = TemporaryFolder()
    let store: EntryStore

    init() throws {
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        store = try EntryStore(folder: folder.path)
    }

    /// 400 rows of 3,000 bytes, about one a page, the log folded in: a batch is 25 pages.
    private func onePageRows() throws {
        let record = [UInt8](repeating: 9, count: 3_000)
        for index in 0..<400 {
            try store.upsert(
                StoreEntry(key: "k\(index)", location: .row, size: record.count, lastUse: Int64(index)),
                record: record)
        }
        #expect(try store.checkpoint())
    }

    private func removeOne(_ key: String) throws {
        let removed = try store.remove(
            key, filePath: folder.path + "/absent-\(key)", evictingFilesAt: { folder.path + "/absent-\($0)" },
            evicted: { _ in })
        #expect(removed != nil)
    }

    /// The answer is the store's free pages against a batch, whoever holds the writer: a server
    /// removes keys while its other threads write. Read under the writer's lock, the answer was
    /// "yes" whenever another call took the writer the moment the removal let go, and a reclaim
    /// gave back the one page freed, with a checkpoint (three `fdatasync`, two `ftruncate`): the
    /// cost the batches spare, paid whenever writes overlap. They are kept under a lock of their own.
    @Test func aRemovalLeavingLessThanABatchAsksForNoReclaimWhileAnotherThreadHoldsTheWriter() throws {
        try onePageRows()
        try removeOne("k0")
        let pages = Int64(store.storeFileBytes() / 4_096)
        #expect(EntryStore.removalFreePages(ofPages: pages) > 10)
        #expect(!store.mayGiveSpaceBack(volumeIsTight: { false }), "one free page, alone")

        // Another thread's call holds the writer (a write waiting for another process, say).
        let taken = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let holder = Thread { [store] in
            store.writeLock.lock()
            taken.signal()
            release.wait()
            store.writeLock.unlock()
            done.signal()
        }
        holder.start()
        taken.wait()
        let answer = store.mayGiveSpaceBack(volumeIsTight: { false })
        release.signal()
        done.wait()
        #expect(!answer, "one free page, while another thread holds the writer: a reclaim of that page")
    }
}
