import CashierEviction
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Pins the memory tier's order to `CashierEviction`'s least-recently-used policy, so a
/// tier rebuilt on `ReplacementPolicy` keeps today's order under `.leastRecentlyUsed`,
/// and the trace-replay benchmark's LRU row is Cashier's.
@Suite struct MemoryTierOrderTests {
    /// Skewed reads of 2,000 keys; each miss stores the value, as an app does after a fetch.
    static func trace() -> [Int] {
        var random = SplitMix64(seed: 26)
        return (0..<20_000).map { _ in
            let bound = Int(random.next() % 2_000) + 1
            return Int(random.next() % UInt64(bound))
        }
    }

    @Test func aMemoryOnlyCacheHitsExactlyWhereLeastRecentlyUsedDoes() throws {
        let limit = 100
        var configuration = Cache.Configuration(name: "memory-tier-order")
        configuration.location = .memoryOnly
        configuration.memoryCountLimit = limit
        configuration.evictionPolicy = .leastRecentlyUsed
        let cache = Cache(configuration)
        var policy = LeastRecentlyUsed<Int>()
        var handles: [Int: Int] = [:]
        var cacheHits = 0
        var policyHits = 0
        var firstDifference: Int?
        for (index, id) in Self.trace().enumerated() {
            let key = CacheKey<Int>("object-\(id)")
            let cacheHit = cache.value(for: key) != nil
            if cacheHit {
                cacheHits += 1
            } else {
                try cache.set(id, for: key)
            }
            let policyHit: Bool
            if let handle = handles[id] {
                policy.recordHit(handle)
                policyHit = true
                policyHits += 1
            } else {
                policy.recordMiss(id)
                while policy.count >= limit, let victim = policy.evict() { handles[victim] = nil }
                handles[id] = policy.insert(id, weight: 1)
                policyHit = false
            }
            if cacheHit != policyHit && firstDifference == nil { firstDifference = index }
        }
        #expect(firstDifference == nil)
        #expect(cacheHits == policyHits)
        #expect(cacheHits > 1_000) // the trace does reach the order: 1,908 hits
    }
}
