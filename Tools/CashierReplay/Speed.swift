import CashierEviction
import Foundation

/// What a policy adds to a hit and to a miss, beside the tier's own `Dictionary` lookup:
/// nanoseconds per operation, a full policy of 10,000 keys, Zipf 0.9 requests.
/// Printed, never checked (these machines are shared).
enum Speed {
    static func run() {
        let keys = 10_000
        let requests = Traces.zipf(objects: keys, alpha: 0.9, requests: 2_000_000, seed: 9)
        let misses = (0..<200_000).map { UInt64(keys + $0) }
        print("policy\thit ns\tmiss (evict + insert) ns")
        report("Dictionary lookup (baseline)", baseline(requests, keys: keys), nil)
        measure("LRU", LeastRecentlyUsed<UInt64>(), requests, misses, keys)
        measure("SIEVE", Sieve<UInt64>(), requests, misses, keys)
        measure("S3-FIFO", S3FIFO<UInt64>(), requests, misses, keys)
        measure("W-TinyLFU", WindowTinyLFU<UInt64>(), requests, misses, keys)
        measure("FrequencyAware", FrequencyAware<UInt64>(), requests, misses, keys)
    }

    private static func baseline(_ requests: [UInt64], keys: Int) -> Double {
        var table: [UInt64: Int] = [:]
        for key in 0..<UInt64(keys) { table[key] = Int(key) }
        var sum = 0
        let start = DispatchTime.now().uptimeNanoseconds
        for id in requests { sum &+= table[id] ?? 0 }
        let elapsed = DispatchTime.now().uptimeNanoseconds - start
        if sum == 42 { print("") }
        return Double(elapsed) / Double(requests.count)
    }

    private static func measure<P: ReplacementPolicy>(
        _ name: String, _ policy: P, _ requests: [UInt64], _ misses: [UInt64], _ keys: Int
    ) where P.Key == UInt64 {
        var policy = policy
        var handles = [Int](repeating: 0, count: keys)
        for key in 0..<keys { handles[key] = policy.insert(UInt64(key), weight: 1) }
        // Hits: the handle comes from the tier's record, so no lookup is timed.
        var start = DispatchTime.now().uptimeNanoseconds
        for id in requests { policy.recordHit(handles[Int(id)]) }
        let hit = Double(DispatchTime.now().uptimeNanoseconds - start) / Double(requests.count)
        start = DispatchTime.now().uptimeNanoseconds
        for id in misses {
            policy.recordMiss(id)
            _ = policy.evict()
            _ = policy.insert(id, weight: 1)
        }
        let miss = Double(DispatchTime.now().uptimeNanoseconds - start) / Double(misses.count)
        report(name, hit, miss)
    }

    private static func report(_ name: String, _ hit: Double, _ miss: Double?) {
        print("\(name)\t\(String(format: "%.1f", hit))\t\(miss.map { String(format: "%.1f", $0) } ?? "-")")
    }
}
