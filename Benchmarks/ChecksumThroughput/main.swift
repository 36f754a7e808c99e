// Throughput of the two entry checksums, XXH64 (format version 1) and XXH3-64 (version 2),
// over payload-sized buffers in the page cache's place: warm, in memory. Interleaved rounds,
// median GB/s per size, and the median of the ratios of adjacent pairs. Links the CashierEntryFormat
// target (the hashes are `package`), built by run.sh:
//
//   bash Benchmarks/ChecksumThroughput/run.sh [rounds]
import CashierEntryFormat
import Foundation

let rounds = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 9 : 9
let sizes = [4 << 10, 64 << 10, 1 << 20]
let bytesPerSample = 256 << 20

func seconds(_ body: () -> Void) -> Double {
    let start = ContinuousClock.now
    body()
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
}

var sink: UInt64 = 0
var results: [String: [Double]] = [:]
var ratios: [Int: [Double]] = [:]
for size in sizes {
    let buffer = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
    let iterations = max(1, bytesPerSample / size)
    buffer.withUnsafeBytes { bytes in
        for _ in 0..<rounds {
            // Alternate which runs first so neither always gets the warmer cache or CPU clock.
            for order in [0, 1] {
                var rates: [String: Double] = [:]
                for algorithm in (order == 0 ? ["xxh64", "xxh3"] : ["xxh3", "xxh64"]) {
                    let time = seconds {
                        for i in 0..<iterations {
                            sink &+=
                                algorithm == "xxh64"
                                ? XXHash64.hash(bytes, seed: UInt64(i)) : XXH3.hash(bytes, seed: UInt64(i))
                        }
                    }
                    rates[algorithm] = Double(size * iterations) / time / 1e9
                    results["\(algorithm) \(size)", default: []].append(rates[algorithm]!)
                }
                ratios[size, default: []].append(rates["xxh3"]! / rates["xxh64"]!)
            }
        }
    }
}
func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
print("size      XXH64 GB/s  XXH3 GB/s  XXH3/XXH64")
for size in sizes {
    let a = median(results["xxh64 \(size)"]!)
    let b = median(results["xxh3 \(size)"]!)
    let r = median(ratios[size]!)
    print(
        String(
            format: "%-8@  %10.2f  %9.2f  %9.2fx", size >= 1 << 20 ? "\(size >> 20) MiB" : "\(size >> 10) KiB", a, b, r)
    )
}
if sink == 42 { print("") }
