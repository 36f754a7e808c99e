import CashierEviction
import Foundation

// The trace replay of issue 26 (no product: the library's dependents never build it).
//
//   CashierReplay generate DIR
//       Writes every trace to DIR/NAME.oracleGeneral (libCacheSim's binary format),
//       for Benchmarks/Eviction/reference.py.
//   CashierReplay speed
//       Prints what each policy adds to a hit and to a miss, in nanoseconds.
//   CashierReplay [--smoke] [--reference FILE] [--only NAME]
//       Replays every trace (--smoke: the disk-tier ones, seconds in a debug build)
//       through each policy and through a real memory-only Cache (its memory tier,
//       the "Cashier" column), and prints hit ratios beside libCacheSim's (FILE, by
//       default Benchmarks/Eviction/reference.tsv), the fraction of Belady reached,
//       and the goal: Cashier's row within 0.02 of the best classical policy and
//       never below LRU. Exits 1 if a checked cell fails.
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
    default:
        FileHandle.standardError.write(
            Data(
                "usage: CashierReplay generate DIR | speed | disk-candidates [NAME] | [--smoke] [--reference FILE] [--only NAME] [--granularity N]\n"
                    .utf8))
        exit(2)
    }
}
exit(Replay.run(options) ? 0 : 1)
