import Testing

@testable import CashierEviction

/// Every policy, for the behaviour all of them must share.
enum PolicyKind: String, CaseIterable, CustomTestStringConvertible {
    case leastRecentlyUsed, sieve, s3fifo, windowTinyLFU, frequencyAware

    func make() -> any ReplacementPolicy<String> {
        switch self {
        case .leastRecentlyUsed: LeastRecentlyUsed<String>()
        case .sieve: Sieve<String>()
        case .s3fifo: S3FIFO<String>()
        case .windowTinyLFU: WindowTinyLFU<String>()
        case .frequencyAware: FrequencyAware<String>()
        }
    }

    var testDescription: String { rawValue }
}

/// A tier in miniature: a table of handles and a weight limit, making room before each insert.
struct Tier {
    var policy: any ReplacementPolicy<String>
    var handles: [String: Int] = [:]
    var weights: [String: Int] = [:]
    let limit: Int
    var isEvictable: (String) -> Bool = { _ in true }
    var evicted: [String] = []

    init(_ kind: PolicyKind, limit: Int) {
        policy = kind.make()
        self.limit = limit
    }

    /// A read: a hit, or a miss that stores the key with `weight`. Returns whether it hit.
    @discardableResult
    mutating func read(_ key: String, weight: Int = 1) -> Bool {
        if let handle = handles[key] {
            policy.recordHit(handle)
            return true
        }
        policy.recordMiss(key)
        while policy.totalWeight + weight > limit, let victim = policy.evict(where: isEvictable) {
            #expect(handles.removeValue(forKey: victim) != nil, "evicted \(victim), which is not held")
            weights[victim] = nil
            evicted.append(victim)
        }
        handles[key] = policy.insert(key, weight: weight)
        weights[key] = weight
        return false
    }

    mutating func remove(_ key: String) {
        guard let handle = handles.removeValue(forKey: key) else { return }
        policy.remove(handle)
        weights[key] = nil
    }
}

/// SplitMix64, so each test's workload is the same on every run.
struct Random {
    var state: UInt64
    mutating func next(_ bound: Int) -> Int {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return Int((z ^ (z >> 31)) % UInt64(bound))
    }

    /// A skewed key: low numbers far more often.
    mutating func skewedKey(_ objects: Int) -> String {
        "k\(next(next(objects) + 1))"
    }
}

@Suite struct ReplacementPolicyTests {
    /// A day of reads with an avatar among them, then a scroll past 2,000 images read
    /// once, during which the avatar is read every 150 images: more than the cache
    /// holds, so least-recently-used evicts it between two reads.
    static func scrollPastTheFeed(_ kind: PolicyKind) -> Tier {
        var tier = Tier(kind, limit: 100)
        var random = Random(state: 5)
        for i in 0..<3_000 {
            tier.read(random.skewedKey(150))
            if i % 30 == 0 { tier.read("avatar") }
        }
        tier.evicted = []
        for i in 0..<2_000 {
            tier.read("scrolled-past-\(i)")
            if i % 150 == 149 { tier.read("avatar") }
        }
        return tier
    }

    @Test(arguments: [PolicyKind.sieve, .s3fifo, .windowTinyLFU, .frequencyAware])
    func aOneTimeScanDoesNotEvictAFrequentlyReadKey(_ kind: PolicyKind) {
        var tier = Self.scrollPastTheFeed(kind)
        let avatarWasEvicted = tier.evicted.contains("avatar")
        #expect(!avatarWasEvicted, "scrolling past the feed pushed out the avatar")
        let avatarHits = tier.read("avatar")
        #expect(avatarHits)
    }

    @Test func leastRecentlyUsedDoesEvictTheKeyAScanPassesOver() {
        // The contrast that makes the test above mean something.
        let tier = Self.scrollPastTheFeed(.leastRecentlyUsed)
        let avatarWasEvicted = tier.evicted.contains("avatar")
        #expect(avatarWasEvicted)
    }

    @Test(arguments: PolicyKind.allCases)
    func aKeyThePredicateRefusesIsNeverEvicted(_ kind: PolicyKind) {
        var tier = Tier(kind, limit: 64)
        let locked: Set = ["k0", "k3", "k7", "k40", "k150"]
        tier.isEvictable = { !locked.contains($0) }
        var random = Random(state: 7)
        for _ in 0..<20_000 { tier.read(random.skewedKey(400)) }
        let evictedLocked = tier.evicted.filter { locked.contains($0) }
        #expect(evictedLocked.isEmpty)
        for key in locked { #expect(tier.handles[key] != nil, "\(key) was read, so it is held") }
    }

    @Test(arguments: PolicyKind.allCases)
    func evictReturnsNilWhenEveryKeyIsRefused(_ kind: PolicyKind) {
        var policy = kind.make()
        for i in 0..<10 { _ = policy.insert("k\(i)", weight: 1) }
        #expect(policy.evict(where: { _ in false }) == nil)
        #expect(policy.count == 10)
    }

    @Test(arguments: PolicyKind.allCases)
    func weightsAreSummedAndKeepTheTierWithinItsLimit(_ kind: PolicyKind) {
        var tier = Tier(kind, limit: 1_000)
        var random = Random(state: 11)
        for step in 0..<20_000 {
            let key = random.skewedKey(500)
            if step % 17 == 0 {
                tier.remove(key)
            } else {
                tier.read(key, weight: 1 + random.next(60))
            }
            #expect(tier.policy.totalWeight == tier.weights.values.reduce(0, +))
            #expect(tier.policy.totalWeight <= 1_000)
            #expect(tier.policy.count == tier.handles.count)
        }
    }

    @Test(arguments: PolicyKind.allCases)
    func aHeavyKeyMakesRoomForItsWholeWeight(_ kind: PolicyKind) {
        var tier = Tier(kind, limit: 100)
        for i in 0..<100 { tier.read("small\(i)") }
        tier.read("large", weight: 60)
        #expect(tier.policy.totalWeight <= 100)
        #expect(tier.evicted.count >= 60)
    }

    @Test(arguments: PolicyKind.allCases)
    func removeAllForgetsEveryKey(_ kind: PolicyKind) {
        var policy = kind.make()
        for i in 0..<50 { _ = policy.insert("k\(i)", weight: 2) }
        policy.removeAll()
        #expect(policy.count == 0)
        #expect(policy.totalWeight == 0)
        #expect(policy.evict() == nil)
    }

    @Test func frequencyAwareSwitchesAndKeepsEveryHandle() {
        // A loop (W-TinyLFU's ground), then working sets that move (S3-FIFO's): the
        // policy switches at least once each way and its table stays consistent.
        var tier = Tier(.frequencyAware, limit: 200)
        var random = Random(state: 3)
        for _ in 0..<30 {
            for i in 0..<300 {
                tier.read("loop\(i)")
                if random.next(3) == 0 { tier.read(random.skewedKey(2_000)) }
            }
        }
        for phase in 0..<20 {
            for _ in 0..<3_000 { tier.read("phase\(phase)-" + random.skewedKey(600)) }
        }
        let policy = tier.policy as! FrequencyAware<String>
        #expect(policy.switches >= 2)
        #expect(policy.count == tier.handles.count)
        // Every handle the tier holds still names a live node: hits and removals work.
        for (key, handle) in tier.handles {
            tier.policy.recordHit(handle)
            tier.remove(key)
        }
        #expect(tier.policy.count == 0)
        #expect(tier.policy.totalWeight == 0)
    }
}
