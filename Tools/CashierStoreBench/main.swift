import CashierStore
import CashierStoreSupport
import Foundation

// Measures the store (CashierStore's EntryStore) against today's entry files, for issue 25.
// Its comparisons with a SQLite table driven through the C API, and the footprint of 100,000
// entries, are the Benchmarks package's (`cashier-ratios --only sqlite-…`, `--footprint`):
// one baseline, Benchmarks/Sources/CashierWorkloads/SQLiteTable.swift. Release builds only:
//
//   swift run -c release CashierStoreBench threshold     # store row vs entry file, 256 B to 1 MiB
//   swift run -c release CashierStoreBench sweep         # a sweep of 10% of 100,000 entries, by order
//   swift run -c release CashierStoreBench coherence     # what a memory tier's coherence check costs
//   swift run -c release CashierStoreBench ops OPERATION COUNT   # for callgrind: read|overwrite|write
//
// Each table prints medians of interleaved rounds (ROUNDS=7 by default).

let arguments = CommandLine.arguments
let rounds = ProcessInfo.processInfo.environment["ROUNDS"].flatMap(Int.init) ?? 7

func microseconds(_ seconds: Double, per count: Int) -> Double { seconds * 1e6 / Double(count) }
func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }

func label(_ size: Int) -> String { size >= 1024 ? "\(size / 1024) KiB" : "\(size) B" }

// MARK: - threshold

func threshold() {
    // SIZES=8192,32768 measures other sizes.
    let sizes =
        ProcessInfo.processInfo.environment["SIZES"].map { $0.split(separator: ",").compactMap { Int($0) } }
        ?? [256, 1024, 4096, 16_384, 65_536, 262_144, 1_048_576]
    print(
        "| value size | store write µs | file write µs | store read µs | file read µs | store B/entry | file B/entry |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for size in sizes {
        let count = min(4000, max(100, (48 << 20) / size))
        let value = bytes(size, seed: size)
        var results: [String: [Double]] = [:]
        var allocated: (store: Int, files: Int) = (0, 0)
        for round in 0..<rounds {
            let storeFolder = Measure.freshFolder("threshold-store")
            let fileFolder = Measure.freshFolder("threshold-files")
            defer {
                Measure.remove(storeFolder)
                Measure.remove(fileFolder)
            }
            let store = try! EntryStore(folder: storeFolder)
            let keys = (0..<count).map { "key-\(round)-\($0)" }
            let names = (0..<count).map { String(format: "%032x.cache", $0) }
            // Alternate which goes first so neither always meets a warmer page cache.
            let storeFirst = round % 2 == 0
            func storeWrites() {
                results["sw", default: []].append(
                    microseconds(
                        Measure.seconds {
                            for (index, key) in keys.enumerated() {
                                try! store.upsert(
                                    StoreEntry(key: key, location: .row, size: size, lastUse: Int64(index)),
                                    record: value)
                            }
                        }, per: count))
            }
            func fileWrites() {
                results["fw", default: []].append(
                    microseconds(
                        Measure.seconds {
                            for (index, name) in names.enumerated() {
                                FileImitation.write(folder: fileFolder, name: name, value, counter: index)
                            }
                        }, per: count))
            }
            if storeFirst {
                storeWrites()
                fileWrites()
            } else {
                fileWrites()
                storeWrites()
            }
            let order = Array(0..<count).shuffled()
            func storeReads() {
                results["sr", default: []].append(
                    microseconds(
                        Measure.seconds {
                            for index in order {
                                precondition(try! store.record(for: keys[index])?.record.count == size)
                            }
                        }, per: count))
            }
            func fileReads() {
                results["fr", default: []].append(
                    microseconds(
                        Measure.seconds {
                            for index in order {
                                precondition(FileImitation.read(folder: fileFolder, name: names[index])?.count == size)
                            }
                        }, per: count))
            }
            if storeFirst {
                storeReads()
                fileReads()
            } else {
                fileReads()
                storeReads()
            }
            try! store.checkpoint()
            allocated = (
                Measure.allocatedBytes(folder: storeFolder).bytes / count,
                Measure.allocatedBytes(folder: fileFolder).bytes / count
            )
        }
        let columns = ["sw", "fw", "sr", "fr"].map { format(Measure.median(results[$0]!)) }
        print("| \(label(size)) | \(columns.joined(separator: " | ")) | \(allocated.store) | \(allocated.files) |")
    }
}

/// One operation of the store repeated `count` times after a setup of 10,000 entries of 187
/// bytes, for instruction counts (`valgrind --tool=callgrind`, run at two counts and subtract:
/// the difference is per operation). The SQLite table's side of the same loop:
/// `cashier-ratios --ops OPERATION COUNT` (Benchmarks).
func operations(operation: String, count: Int) {
    let folder = Measure.freshFolder("ops")
    defer { Measure.remove(folder) }
    let value = bytes(187, seed: 187)
    let keys = (0..<10_000).map { "user-\($0)" }
    let newKeys = (0..<max(count, 5000)).map { "new-\($0)" }
    let store = try! EntryStore(folder: folder)
    func write(_ key: String, _ index: Int) {
        try! store.upsert(StoreEntry(key: key, location: .row, size: value.count, lastUse: Int64(index)), record: value)
    }
    for (index, key) in keys.enumerated() { write(key, index) }
    for index in 0..<count {
        switch operation {
        case "read": _ = try! store.record(for: keys[index % keys.count])
        case "overwrite": write(keys[0], index)
        default: write(newKeys[index], index)
        }
    }
}

switch arguments.dropFirst().first {
case "threshold": threshold()
case "sweep": sweep()
case "coherence": coherence()
case "ops" where arguments.count > 3: operations(operation: arguments[2], count: Int(arguments[3])!)
default: print("usage: CashierStoreBench threshold | sweep | coherence | ops read|overwrite|write COUNT")
}
