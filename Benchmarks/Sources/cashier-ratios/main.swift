import CashierWorkloads
import Foundation

// Runs every pair of CashierWorkloads in interleaved rounds (baseline, Cashier,
// baseline, Cashier, …) in this one process and prints, per goal, the median
// time per operation of each side and their ratio. Ratios, not times, are the
// result: both sides run on the same machine, under the same load.
//
//   swift run -c release --package-path Benchmarks cashier-ratios [--smoke] [--rounds N] [--only ID,ID…]
//
// --footprint prints issue 25's footprint report instead (100,000 entries, fresh child processes;
// about a minute, so not part of the default run; --entries N changes the count, --smoke makes it 1,000).
// --ops read|overwrite|write COUNT repeats one operation of the SQLite table, for callgrind: the
// baseline's side of `CashierStoreBench ops` (root package), which runs the store's.

let arguments = CommandLine.arguments.dropFirst()

func value(of option: String) -> String? {
    arguments.firstIndex(of: option).flatMap {
        arguments.index(after: $0) < arguments.endIndex ? arguments[arguments.index(after: $0)] : nil
    }
}

// A child of --footprint: measures itself and exits.
if let index = arguments.firstIndex(of: "--footprint-child") {
    let rest = Array(arguments[index...].dropFirst())
    Footprint.child(side: rest[0], folder: rest[1], entries: Int(rest[2])!)
    exit(0)
}

// The table's side of `CashierStoreBench ops`: 10,000 entries of 187 bytes written one by one,
// then `count` times the operation (run at two counts and subtract: the difference is per operation).
func tableOperations(_ operation: String, count: Int) {
    let folder = Scratch("ops") // removed when this returns, after the table has closed
    withExtendedLifetime(folder) {
        let table = SQLiteTable(path: folder.file("kv.sqlite").path)
        let value = Data((0..<187).map { UInt8(truncatingIfNeeded: $0 &* 151 &+ 17) })
        let keys = (0..<10_000).map { "user-\($0)" }
        for (index, key) in keys.enumerated() { table.upsert(key, value, lastUse: Int64(index)) }
        for index in 0..<count {
            switch operation {
            case "read": consume(table.value(for: keys[index % keys.count]))
            case "overwrite": table.upsert(keys[0], value, lastUse: Int64(index))
            default: table.upsert("new-\(index)", value, lastUse: Int64(index))
            }
        }
    }
}

if let index = arguments.firstIndex(of: "--ops") {
    let rest = Array(arguments[index...].dropFirst())
    guard rest.count == 2, let count = Int(rest[1]) else {
        print("usage: cashier-ratios --ops read|overwrite|write COUNT")
        exit(2)
    }
    tableOperations(rest[0], count: count)
    exit(0)
}

let smoke = arguments.contains("--smoke")
let rounds = value(of: "--rounds").flatMap { Int($0) } ?? (smoke ? 1 : 7)
let scale: Scale = smoke ? .smoke : .full

if arguments.contains("--footprint") {
    let executable = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
    let entries = value(of: "--entries").flatMap { Int($0) } ?? (smoke ? 1_000 : 100_000)
    Footprint.report(entries: entries, rounds: value(of: "--rounds") == nil ? 3 : rounds, executable: executable)
    exit(0)
}

func nanoseconds(_ body: () -> Void) -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    body()
    return Double(DispatchTime.now().uptimeNanoseconds - start)
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func format(_ nanoseconds: Double) -> String {
    switch nanoseconds {
    case ..<1_000: String(format: "%.0f ns", nanoseconds)
    case ..<1_000_000: String(format: "%.1f µs", nanoseconds / 1_000)
    case ..<1_000_000_000: String(format: "%.1f ms", nanoseconds / 1_000_000)
    default: String(format: "%.2f s", nanoseconds / 1_000_000_000)
    }
}

func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}

print(
    "Cashier ratios: \(rounds) interleaved round(s), medians per operation\(smoke ? " (smoke scale: sizes and counts are small, ratios mean little)" : "")"
)
print(pad("goal", 52) + pad("Cashier", 11) + pad("baseline", 11) + pad("ratio", 8) + pad("target", 10) + "baseline")
var met = 0
var referencesMet = 0
var references = 0
// --only ID,ID…: some pairs (memory, memory-10k, memory-folder, write, sync, sync-floor, read, read-10k, open, size, sweep, threads,
// read-64k, read-1m, write-64k, write-1m, sqlite-write, sqlite-overwrite, sqlite-read, sqlite-size, sqlite-evict,
// sqlite-evict-reclaim, default-read, default-sqlite-read, default-write, default-overwrite, fetch-hit, count-keys).
let only = value(of: "--only").map { Set($0.split(separator: ",").map(String.init)) }
if let only, let unknown = only.subtracting(Pairs.all.map(\.id)).first {
    print("cashier-ratios: no pair named \(unknown)")
    exit(2)
}
let selected = Pairs.all.filter { only?.contains($0.id) ?? true }
for (_, make) in selected {
    let pair = make(scale)
    var cashierTimes: [Double] = []
    var baselineTimes: [Double] = []
    // One untimed warm-up of each side, then the rounds.
    for round in 0...rounds {
        pair.baseline.prepare()
        let baseline = nanoseconds(pair.baseline.run) / Double(pair.baseline.operations)
        pair.cashier.prepare()
        let cashier = nanoseconds(pair.cashier.run) / Double(pair.cashier.operations)
        if round > 0 {
            baselineTimes.append(baseline)
            cashierTimes.append(cashier)
        }
    }
    let cashier = median(cashierTimes)
    let baseline = median(baselineTimes)
    let ratio: Double
    let target: String
    let ok: Bool
    switch pair.goal {
    case .atMost(let limit):
        ratio = cashier / baseline
        target = String(format: "≤ %gx", limit)
        ok = ratio <= limit
    case .atLeast(let limit):
        ratio = baseline / cashier
        target = String(format: "≥ %gx", limit)
        ok = ratio >= limit
    }
    if pair.isReference { references += 1 }
    if ok { if pair.isReference { referencesMet += 1 } else { met += 1 } }
    print(
        pad(pair.name, 52) + pad(format(cashier), 11) + pad(format(baseline), 11)
            + pad(String(format: "%.2fx", ratio), 8) + pad(target + (ok ? " ✓" : " ✗"), 10) + pair.baselineName)
}
print(
    "\(met) of \(selected.count - references) goals met"
        + (references > 0 ? "; \(referencesMet) of \(references) reference check\(references == 1 ? "" : "s") met" : "")
)
