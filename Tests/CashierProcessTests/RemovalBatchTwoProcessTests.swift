import CashierStore
import CashierStress
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Removals of single keys leave free pages in the store until it holds a batch
/// (`EntryStore.removalFreePages(ofPages:)`), then give them all back. Each process keeps its
/// own figures of its last removal, but the count it reads is the whole store's: two processes
/// removing keys in turn hold no more free pages between them than one batch.
@Suite struct RemovalBatchTwoProcessTests {
    let folder = TemporaryFolder()

    /// 600 rows of 3,500 bytes (about one a page) written by this process; then this process
    /// and another remove them in turn, one key at a time, each waiting for its removal's
    /// background work. A count of each process's own freed pages would let each keep almost a
    /// batch (together nearly twice one); the store's own count keeps the store below one.
    @Test func twoProcessesRemovingInTurnKeepFewerFreePagesThanABatch() throws {
        var configuration = Cache.Configuration(name: "stress")
        configuration.location = .directory(folder.url)
        configuration.appVersion = "stress"
        configuration.diskSizeLimit = nil
        configuration.memoryCountLimit = 0
        let cache = Cache(configuration)
        let bytes = 3_500
        for index in 0..<600 {
            try cache.set(Session.value(for: "k\(index)", bytes: bytes, seed: 1), for: CacheKey<Data>("k\(index)"))
        }
        cache.removeAll(where: { $0 == "k599" }) // folds the log in: the store file holds every page
        cache.waitForBackgroundWork()
        let pages = Int64(storeBytes / 4_096)
        let batch = Int(EntryStore.removalFreePages(ofPages: pages))
        #expect(batch >= 30, "a store of \(pages) pages")

        let other = try StressSession(folderPath: folder.path)
        defer { other.close() }
        var most = 0
        for index in 0..<300 {
            if index.isMultiple(of: 2) {
                cache.removeValue(for: CacheKey<Data>("k\(index)"))
                cache.waitForBackgroundWork()
            } else {
                #expect(other.ask("remove k\(index)") == "ok")
                #expect(other.ask("wait") == "ok")
            }
            most = max(most, try storeFreePages(storePath))
        }
        #expect(most < batch, "the store held \(most) free pages, a batch being \(batch)")
        #expect(most > batch / 2, "the removals gave pages back before the store held a batch")
        #expect(cache.count == 299)
        #expect(other.ask("check k300 \(bytes) 1") == "whole")
        #expect(other.ask("check k299 \(bytes) 1") == "nil")
    }

    var storePath: String { folder.path + "/" + DiskTier.storeFileName }

    var storeBytes: Int {
        ((try? FileManager.default.attributesOfItem(atPath: storePath))?[.size] as? NSNumber)?.intValue ?? 0
    }
}
