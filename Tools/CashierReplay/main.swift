import CashierEviction
import Foundation

// The trace replay of issue 26 (no product: the library's dependents never build it).
//
//   CashierReplay generate DIR
//       Writes every trace to DIR/NAME.oracleGeneral (libCacheSim's binary format),
//       for Benchmarks/Eviction/reference.py.
//   CashierReplay speed
//       Prints what each policy adds to a hit and to a miss, in nanoseconds.
//   CashierReplay disk-cache [--object-bytes N] [--seconds-per-request S] [--no-wait] [NAME]
//       Replays the disk-tier traces through a real Cache's disk tier (CacheReplay.swift),
//       both policies, printing what each run held and evicted beside its hit ratio.
//   CashierReplay [--smoke] [--reference FILE] [--only NAME] [--no-cache | --object-bytes N ...]
//       Replays every trace (--smoke: the disk-tier ones, seconds in a debug build)
//       through each policy and through a real memory-only Cache (its memory tier,
//       the "Cashier" column), the disk-tier ones also through a real EntryStore (Store)
//       and a real Cache with no memory tier (Cache disk; --no-cache skips it), and prints
//       hit ratios beside libCacheSim's (FILE, by default Benchmarks/Eviction/reference.tsv),
//       the fraction of Belady reached, and the goal: each checked row within 0.02 of the
//       best classical policy and never below LRU. Exits 1 if a checked cell fails.
//
// Each miss inserts the object (an app stores what it fetched), weight 1, and the
// policy evicts while it holds more than the trace's capacity.

var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "generate", arguments.count == 2 {
    let folder = URL(fileURLWithPath: arguments[1], isDirectory: true)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    for trace in Traces.all() {
        try Traces.writeOracleGeneral(trace, to: folder.appendingPathComponent("\(trace.name).oracleGeneral"))
        print("\(trace.name)\t\(trace.capacity)\t\(trace.requests.count)")
    }
    exit(0)
}

if arguments.first == "disk-candidates" {
    DiskCandidates.run(only: arguments.count > 1 ? arguments[1] : nil)
    exit(0)
}

if arguments.first == "disk-cache" {
    exit(CacheReplay.runDetails(Array(arguments.dropFirst())) ? 0 : 2)
}

if arguments == ["speed"] {
    Speed.run()
    exit(0)
}

var options = Replay.Options()
while let argument = arguments.first {
    arguments.removeFirst()
    switch argument {
    case "--smoke": options.smoke = true
    case "--reference": options.referencePath = arguments.removeFirst()
    case "--only": options.only = arguments.removeFirst()
    case "--granularity": options.granularity = Int64(arguments.removeFirst()) ?? 1
    case "--no-cache": options.cache = nil
    case "--object-bytes": options.cache?.objectBytes = Int(arguments.removeFirst()) ?? 16_384
    case "--seconds-per-request": options.cache?.secondsPerRequest = Double(arguments.removeFirst()) ?? 60
    case "--no-wait": options.cache?.waits = false
    default:
        FileHandle.standardError.write(
            Data(
                "usage: CashierReplay generate DIR | speed | disk-candidates [NAME] | [--smoke] [--reference FILE] [--only NAME] [--granularity N] [--no-cache | --object-bytes N --seconds-per-request S --no-wait]\n"
                    .utf8))
        exit(2)
    }
}
exit(Replay.run(options) ? 0 : 1)
