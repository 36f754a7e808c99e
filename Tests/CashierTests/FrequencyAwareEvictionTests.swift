import Foundation
import Testing

@testable import Cashier

/// The memory tier under ``EvictionPolicy/frequencyAware``, the default: what is read often
/// outlives a scan of values read once, and locked entries outlive everything unlocked.
@Suite struct FrequencyAwareEvictionTests {
    func memoryCache(limit: Int, evictionPolicy: EvictionPolicy = .frequencyAware) -> Cache {
        var configuration = Cache.Configuration(name: "frequency-aware")
        configuration.location = .memoryOnly
        configuration.memoryCountLimit = limit
        configuration.evictionPolicy = evictionPolicy
        return Cache(configuration)
    }

    /// Reads each of `count` fresh keys once, storing it on the miss (a scroll past a feed).
    func scan(_ cache: Cache, count: Int, prefix: String = "scroll") throws {
        for index in 0..<count {
            let key = CacheKey<Int>("\(prefix)-\(index)")
            if cache.value(for: key) == nil { try cache.set(index, for: key) }
        }
    }

    @Test func theDefaultPolicyIsFrequencyAware() {
        #expect(Cache.Configuration(name: "default").evictionPolicy == .frequencyAware)
    }

    @Test func aOneTimeScanDoesNotEvictAFrequentlyReadValue() throws {
        let cache = memoryCache(limit: 100)
        let avatar = CacheKey<String>("avatar")
        try cache.set("face", for: avatar)
        for _ in 0..<5 { #expect(cache.value(for: avatar) == "face") }
        try scan(cache, count: 1_000)
        #expect(cache.memory.count == 100)
        #expect(cache.value(for: avatar) == "face")
    }

    @Test func theSameScanEvictsItUnderLeastRecentlyUsed() throws {
        // What the test above guards against: strict recency lets a scan push the value out.
        let cache = memoryCache(limit: 100, evictionPolicy: .leastRecentlyUsed)
        let avatar = CacheKey<String>("avatar")
        try cache.set("face", for: avatar)
        for _ in 0..<5 { #expect(cache.value(for: avatar) == "face") }
        try scan(cache, count: 1_000)
        #expect(cache.value(for: avatar) == nil)
    }

    @Test func aLockedValueIsNeverEvictedWhileAnUnlockedOneCanGo() throws {
        let cache = memoryCache(limit: 10)
        let pinned = CacheKey<Int>("pinned")
        try cache.set(7, for: pinned)
        cache.lock(pinned)
        // Never read again: by frequency and by recency it would be the first to go.
        try scan(cache, count: 500)
        #expect(cache.memory.count == 10)
        #expect(cache.memory.peek("pinned")?.metadata.isLocked == true)
        #expect(cache.value(for: pinned) == 7)
    }

    @Test func lockedValuesGoOnlyWhenEverythingIsLocked() throws {
        let cache = memoryCache(limit: 3)
        let keys = (0..<3).map { CacheKey<Int>("locked-\($0)") }
        for (index, key) in keys.enumerated() {
            try cache.set(index, for: key)
            cache.lock(key)
        }
        // Only locked values besides it: the unlocked newcomer is what leaves.
        try cache.set(99, for: CacheKey<Int>("unlocked"))
        #expect(cache.memory.count == 3)
        for key in keys { #expect(cache.memory.peek(key.name)?.metadata.isLocked == true) }
        // Nothing unlocked is left: memory pressure still sheds locked values.
        cache.relieveMemoryPressure(.warning)
        #expect(cache.memory.count < 3)
    }

    @Test func removedAndReplacedValuesLeaveNoTrace() throws {
        let cache = memoryCache(limit: 4)
        for index in 0..<4 { try cache.set(index, for: CacheKey<Int>("k\(index)")) }
        try cache.set(10, for: CacheKey<Int>("k0"))
        cache.removeValue(for: CacheKey<Int>("k1"))
        try scan(cache, count: 50)
        #expect(cache.memory.count == 4)
        #expect(cache.value(for: CacheKey<Int>("k1")) == nil)
        cache.purgeMemory()
        #expect(cache.memory.count == 0)
        try scan(cache, count: 10)
        #expect(cache.memory.count == 4)
    }
}
