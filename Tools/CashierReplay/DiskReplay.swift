import CashierStore
import CashierStoreSupport
import Foundation

/// Replays a trace through a real `EntryStore` in a temporary folder, as the disk tier uses
/// it: each request reads the key's row; a hit records a use (`recordUses(_:at:)`) when the
/// row's `last_use` is `granularity` or more behind (the clock ticks once a request), a miss
/// writes a row of size 1; when the total size is over the trace's capacity, a sweep
/// (`evict(order:downTo:)`) removes entries in the store's order down to 95% of it.
enum DiskReplay {
    /// Where the sweep stops, as a share of the limit (the cache's `sweepTarget`).
    static let sweepTarget = 0.95

    static func hitRatio(_ trace: Trace, order: StoreEvictionOrder, granularity: Int64 = 1) -> Double {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("cashier-replay-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let store = try EntryStore(folder: folder.path)
            let target = Int((Double(trace.capacity) * sweepTarget).rounded(.down))
            var hits = 0
            for (index, id) in trace.requests.enumerated() {
                let now = Int64(index)
                let key = String(id)
                if let entry = try store.entry(for: key) {
                    hits += 1
                    if now - entry.lastUse >= granularity { try store.recordUses([key], at: now) }
                    continue
                }
                try store.upsert(StoreEntry(key: key, location: .row, size: 1, lastUse: now), record: [0])
                if try store.totalSize() > trace.capacity { try store.evict(order: order, downTo: target) }
            }
            return Double(hits) / Double(trace.requests.count)
        } catch {
            fatalError("the store replay failed: \(error)")
        }
    }
}
