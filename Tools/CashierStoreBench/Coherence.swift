import CashierPlatform
import CashierStore
import CashierStoreSupport
import Foundation

// MARK: - coherence
//
// What the memory tier's coherence check costs (Sources/Cashier/Cache+Coherence.swift):
// the clocks a hit could read to space checks out, and the check's parts, `EntryStore.dataVersion()`
// (the writer's lock, an `lstat`, `PRAGMA data_version`) and an `lstat` of the store file.
//
//   swift run -c release CashierStoreBench coherence

func coherence() {
    let folder = NSTemporaryDirectory() + "cashier-coherence-\(UUID().uuidString)"
    try! FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let store = try! EntryStore(folder: folder)
    for index in 0..<1000 {
        try! store.upsert(
            StoreEntry(key: "k\(index)", location: .row, size: 100, lastUse: 1), record: bytes(100, seed: index))
    }
    let other = try! EntryStore(folder: folder)

    func nanoseconds(_ count: Int, _ body: () -> Void) -> Double {
        var samples: [Double] = []
        for _ in 0..<rounds {
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<count { body() }
            samples.append(Double(DispatchTime.now().uptimeNanoseconds - start) / Double(count))
        }
        return samples.sorted()[samples.count / 2]
    }
    var sink: UInt64 = 0
    let coarse = nanoseconds(1_000_000) { sink &+= Platform.coarseMonotonicNanoseconds() }
    let precise = nanoseconds(1_000_000) { sink &+= Platform.preciseMonotonicNanoseconds() }
    let version = nanoseconds(20_000) { sink &+= UInt64(bitPattern: (try? store.dataVersion()) ?? 0) }
    var info = stat()
    let lstatCost = nanoseconds(20_000) { sink &+= UInt64(lstat(store.path, &info)) }
    // A version that changed: another connection committed between two reads.
    var changed = 0
    let afterWrite = nanoseconds(2_000) {
        try! other.recordUses(["k1"], at: Int64(changed))
        changed += 1
        sink &+= UInt64(bitPattern: (try? store.dataVersion()) ?? 0)
    }
    let writeOnly = nanoseconds(2_000) {
        try! other.recordUses(["k1"], at: Int64(changed))
        changed += 1
    }
    print("| coherence part | ns |")
    print("|---|---|")
    print("| coarse monotonic clock read | \(format(coarse)) |")
    print("| precise monotonic clock read | \(format(precise)) |")
    print("| `dataVersion()`, unchanged | \(format(version, 0)) |")
    print("| `dataVersion()` after another connection's commit | \(format(afterWrite - writeOnly, 0)) |")
    print("| `lstat` of the store file | \(format(lstatCost, 0)) |")
    if sink == 42 { print("") }
}
