import Foundation

/// A synthetic request trace: object ids in request order, and the cache size to replay it at.
struct Trace {
    let name: String
    let tier: String
    let description: String
    let capacity: Int
    let requests: [UInt64]
}

/// The traces of issue 26, generated from fixed seeds so Swift and libCacheSim replay the
/// same requests. Ids of different populations never overlap (one-time ids, loops and
/// phases get ranges of their own), and rank 0 of a Zipf population is its most popular id.
enum Traces {
    /// Every trace of the table for the tiers named, in its order (only those are generated).
    static func all(tiers: Set<String> = ["memory", "disk"]) -> [Trace] {
        var zipf08: [UInt64]?
        func sharedZipf08() -> [UInt64] {
            if zipf08 == nil { zipf08 = zipf(objects: 100_000, alpha: 0.8, requests: 1_000_000, seed: 1) }
            return zipf08!
        }
        func trace(
            name: String, tier: String, description: String, capacity: Int, requests: () -> [UInt64]
        ) -> Trace? {
            guard tiers.contains(tier) else { return nil }
            return Trace(name: name, tier: tier, description: description, capacity: capacity, requests: requests())
        }
        return [
            trace(
                name: "zipf08-1%", tier: "memory", description: "Zipf 0.8 (100k objects, 1M requests)",
                capacity: 1_000, requests: sharedZipf08),
            trace(
                name: "zipf08-10%", tier: "memory", description: "Zipf 0.8 (100k objects, 1M requests)",
                capacity: 10_000, requests: sharedZipf08),
            trace(
                name: "feed-1%", tier: "memory", description: "feed: Zipf 0.9 (100k) + one-time bursts of 500",
                capacity: 1_000,
                requests: { feed(objects: 100_000, requests: 1_000_000, burstLength: 500, seed: 2) }),
            trace(
                name: "loop-10%", tier: "memory", description: "Zipf 0.9 (100k) + loops over 20k objects",
                capacity: 10_000,
                requests: { loops(objects: 100_000, loopObjects: 20_000, requests: 1_000_000, seed: 3) }
            ),
            trace(
                name: "moving-5%", tier: "memory", description: "10 phases of Zipf 0.9 over 20k fresh objects",
                capacity: 1_000, requests: { moving(phases: 10, objects: 20_000, requestsPerPhase: 100_000, seed: 4) }),
            trace(
                name: "disk-zipf-3%", tier: "disk", description: "Zipf 0.9 (10k objects, 60k requests)",
                capacity: 300, requests: { zipf(objects: 10_000, alpha: 0.9, requests: 60_000, seed: 5) }),
            trace(
                name: "disk-feed-3%", tier: "disk", description: "feed: Zipf 0.9 (10k) + one-time bursts of 100",
                capacity: 300, requests: { feed(objects: 10_000, requests: 60_000, burstLength: 100, seed: 6) }),
            trace(
                name: "disk-moving-10%", tier: "disk", description: "10 phases of Zipf 0.9 over 2k fresh objects",
                capacity: 200, requests: { moving(phases: 10, objects: 2_000, requestsPerPhase: 6_000, seed: 7) }),
        ].compactMap { $0 }
    }

    /// `requests` draws from Zipf(`alpha`) over `objects` ids starting at `base`.
    static func zipf(objects: Int, alpha: Double, requests: Int, seed: UInt64, base: UInt64 = 0) -> [UInt64] {
        var random = SplitMix64(seed: seed)
        let sampler = ZipfSampler(objects: objects, alpha: alpha)
        return (0..<requests).map { _ in base + UInt64(sampler.sample(&random)) }
    }

    /// A feed: Zipf 0.9 reads, and about a quarter of all requests in bursts of
    /// `burstLength` ids read once and never again (a user scrolling past images).
    static func feed(objects: Int, requests: Int, burstLength: Int, seed: UInt64) -> [UInt64] {
        var random = SplitMix64(seed: seed)
        let sampler = ZipfSampler(objects: objects, alpha: 0.9)
        var nextFresh = UInt64(1) << 40
        var trace: [UInt64] = []
        trace.reserveCapacity(requests)
        // A burst starts after a Zipf read with probability p, so bursts take
        // p * burstLength / (1 + p * burstLength) of the requests: a quarter for p = 1 / (3 * burstLength).
        let burstOdds = UInt64(3 * burstLength)
        while trace.count < requests {
            trace.append(UInt64(sampler.sample(&random)))
            if random.next() % burstOdds == 0 {
                for _ in 0..<min(burstLength, requests - trace.count) {
                    trace.append(nextFresh)
                    nextFresh += 1
                }
            }
        }
        return trace
    }

    /// Zipf 0.9 reads over `objects`, interleaved with passes over a loop of `loopObjects`
    /// other ids in order: each request is the loop's next id with probability 0.6.
    static func loops(objects: Int, loopObjects: Int, requests: Int, seed: UInt64) -> [UInt64] {
        var random = SplitMix64(seed: seed)
        let sampler = ZipfSampler(objects: objects, alpha: 0.9)
        let loopBase = UInt64(1) << 41
        var position = 0
        return (0..<requests).map { _ in
            if random.next() % 10 < 6 {
                defer { position = (position + 1) % loopObjects }
                return loopBase + UInt64(position)
            }
            return UInt64(sampler.sample(&random))
        }
    }

    /// A working set that moves: `phases` phases of Zipf 0.9, each over `objects` ids never seen before.
    static func moving(phases: Int, objects: Int, requestsPerPhase: Int, seed: UInt64) -> [UInt64] {
        var random = SplitMix64(seed: seed)
        let sampler = ZipfSampler(objects: objects, alpha: 0.9)
        let base = UInt64(1) << 42
        return (0..<phases).flatMap { phase in
            let phaseBase = base + UInt64(phase * objects)
            return (0..<requestsPerPhase).map { _ in phaseBase + UInt64(sampler.sample(&random)) }
        }
    }

    /// Writes `trace` in libCacheSim's oracleGeneral format: per request a little-endian
    /// UInt32 time, UInt64 id, UInt32 size (1) and Int64 index of the id's next request (-1: none).
    static func writeOracleGeneral(_ trace: Trace, to url: URL) throws {
        var nextUse = [Int64](repeating: -1, count: trace.requests.count)
        var seen: [UInt64: Int64] = [:]
        for index in trace.requests.indices.reversed() {
            nextUse[index] = seen[trace.requests[index]] ?? -1
            seen[trace.requests[index]] = Int64(index)
        }
        var data = Data(capacity: trace.requests.count * 24)
        func append<T: FixedWidthInteger>(_ value: T) {
            withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) }
        }
        for (index, id) in trace.requests.enumerated() {
            append(UInt32(truncatingIfNeeded: index))
            append(id)
            append(UInt32(1))
            append(nextUse[index])
        }
        try data.write(to: url)
    }
}

/// Zipf(`alpha`) ranks by inverse transform over the cumulative weights.
struct ZipfSampler {
    private let cumulative: [Double]

    init(objects: Int, alpha: Double) {
        var total = 0.0
        var cumulative = [Double](repeating: 0, count: objects)
        for rank in 0..<objects {
            total += 1 / pow(Double(rank + 1), alpha)
            cumulative[rank] = total
        }
        self.cumulative = cumulative.map { $0 / total }
    }

    func sample(_ random: inout SplitMix64) -> Int {
        let u = Double(random.next() >> 11) / Double(1 << 53)
        var low = 0
        var high = cumulative.count - 1
        while low < high {
            let middle = (low + high) / 2
            if cumulative[middle] < u { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

/// Steele, Lea and Flood's SplitMix64, as in CashierTestSupport (copied: that target links Cashier).
struct SplitMix64 {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
