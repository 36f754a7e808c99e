import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// What one process read orders the evictions another makes later: recency is on disk.
@Suite("Recency across processes")
struct RecencyProcessTests {
    @Test("Entries another process read are evicted after those nobody read")
    func readsOfAnotherProcessCountForEviction() throws {
        let folder = TemporaryFolder()
        // Written a day ago, a second apart, by this process's clock.
        let start = Date().addingTimeInterval(-86_400)
        let writes = Locked(0)
        var configuration = folder.configuration()
        configuration.now = { start.addingTimeInterval(Double(writes.withLock { $0 })) }
        let writer = Cache(configuration)
        // Large entries (files, with their rows in the store), so each one's share of the
        // folder is known by `stat`.
        for index in 0..<5 {
            try writer.set(Data(repeating: UInt8(index), count: 512 * 1024), for: CacheKey<Data>("k\(index)"))
            writes.withLock { $0 += 1 }
        }
        let entrySize = folder.entryBytes / 5

        // Another launch reads k0 and k3 (with the real clock), then exits.
        let child = try Child(["touch", folder.path, "k0", "k3"])
        #expect(child.readLine() == "touched 2")
        #expect(child.wait() == 0)

        // Room for the store's own file (its log counted in: a checkpoint folds it in) and three
        // and a half entries: two must go.
        var limited = folder.configuration(sizeLimit: folder.storeBytes + 3 * entrySize + entrySize / 2)
        let evicted = Locked<[String]>([])
        limited.onEvent = { event in
            if case .evicted(let key, _) = event { evicted.withLock { $0.append(key) } }
        }
        Cache(limited).collectGarbage()
        #expect(evicted.withLock { $0 } == ["k1", "k2"])
    }
}
