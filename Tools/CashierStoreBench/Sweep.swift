import CashierStore
import CashierStoreSupport
import Foundation

/// `CashierStoreBench sweep`: what a size sweep costs in each eviction order. A store of
/// `COUNT` entries (100,000 by default) of a 187-byte record, written in order, 85% of them
/// used again since (a use each, at a later time), and the first 5,000 evicted once so the
/// frequency-aware ghost holds keys; then one sweep of 10% of the total size, and the first
/// 10,000 candidates alone (what a sweep plans from). Medians of `ROUNDS` fresh stores.
func sweep() {
    let count = ProcessInfo.processInfo.environment["COUNT"].flatMap(Int.init) ?? 100_000
    let value = bytes(187, seed: 187)
    print("| order | candidates (10,000) ms | sweep of 10% ms | entries evicted |")
    print("|---|---:|---:|---:|")
    for order in StoreEvictionOrder.allCases {
        var candidates: [Double] = []
        var sweeps: [Double] = []
        var evicted = 0
        for _ in 0..<max(1, rounds / 2) {
            let folder = Measure.freshFolder("sweep")
            defer { Measure.remove(folder) }
            let store = try! EntryStore(folder: folder)
            for index in 0..<count {
                try! store.upsert(
                    StoreEntry(key: "user-\(index)", location: .row, size: value.count, lastUse: Int64(index)),
                    record: value)
            }
            let used = (0..<count).filter { $0 % 20 >= 3 }.map { "user-\($0)" }
            for start in stride(from: 0, to: used.count, by: 1000) {
                try! store.recordUses(Array(used[start..<min(start + 1000, used.count)]), at: Int64(count + start))
            }
            let total = try! store.totalSize()
            try! store.evict(order: order, downTo: total - 5000 * value.count)
            candidates.append(Measure.seconds { _ = try! store.evictionCandidates(order: order, limit: 10_000) } * 1e3)
            let left = try! store.totalSize()
            sweeps.append(
                Measure.seconds { evicted = try! store.evict(order: order, downTo: left - left / 10).count } * 1e3)
        }
        print("| \(order) | \(format(Measure.median(candidates))) | \(format(Measure.median(sweeps))) | \(evicted) |")
    }
}
