import CashierSQLite
import CashierStore
import CashierStoreSupport
import CashierTestSupport
import Foundation
import Testing

/// A hostile review of ec0561a's walk (`EntryStore.walkEvictionOrder`): the removal by ids
/// counts on each row being read once. Random stores with ties everywhere (last uses, sizes,
/// frequencies, ghost keys, locked rows): each order's walk lists every unlocked row exactly
/// once, with its own id.
@Suite struct SweepWalkUniquenessReviewTests {
    @Test(arguments: 0..<20)
    func eachOrdersWalkListsEveryUnlockedRowOnceWithItsOwnID(seed: Int) throws {
        let folder = TemporaryFolder()
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        let store = try EntryStore(folder: folder.path)
        var random = SplitMix64(seed: UInt64(seed))
        var unlocked: Set<String> = []
        for round in 0..<3 {
            for index in 0..<Int.random(in: 50...400, using: &random) {
                let key = "k\(index)"
                let locked = Int.random(in: 0..<10, using: &random) == 0
                try store.upsert(
                    StoreEntry(
                        key: key, location: .row, size: Int.random(in: 1...4, using: &random),
                        lastUse: Int64(round * 3 + Int.random(in: 0...2, using: &random)), isLocked: locked),
                    record: [1])
                if locked { unlocked.remove(key) } else { unlocked.insert(key) }
            }
            try store.recordUses(unlocked.filter { _ in Int.random(in: 0..<4, using: &random) == 0 }, at: 20)
            // A partial sweep fills the ghost with keys evicted new, some written again next round.
            try store.evict(order: .frequencyAware, downTo: try store.totalSize() * 2 / 3)
            unlocked = unlocked.intersection(try store.keys())
        }
        for order in StoreEvictionOrder.allCases {
            var (keys, ids): ([String], [Int64]) = ([], [])
            _ = try store.walkEvictionOrder(order) { entry, id in
                keys.append(entry.key)
                ids.append(id)
                return true
            }
            #expect(keys.count == Set(keys).count, "\(order): a row listed twice")
            #expect(Set(ids).count == ids.count, "\(order): an id listed twice")
            #expect(Set(keys) == unlocked, "\(order): the walk missed rows, or listed locked ones")
            let connection = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadOnly)
            for (key, id) in zip(keys, ids).prefix(40) {
                #expect(try connection.texts("SELECT key FROM entry WHERE id = \(id)") == [key])
            }
        }
    }
}
