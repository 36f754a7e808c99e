import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// `memoryCostLimit`, `purgeMemory()` and the trimming a memory-pressure event causes.
@Suite struct MemoryBudgetTests {
    let folder = TemporaryFolder()
    let clock = TestClock()

    func cache(
        costLimit: Int?, location: Cache.Location? = nil, events: EventLog? = nil,
        evictionPolicy: EvictionPolicy = .frequencyAware
    ) -> Cache {
        var configuration = makeConfiguration(folder, clock: clock, events: events)
        configuration.memoryCostLimit = costLimit
        configuration.evictionPolicy = evictionPolicy
        if let location { configuration.location = location }
        return Cache(configuration)
    }

    /// Raw `Data` payloads: a value's cost is exactly its byte count.
    func key(_ name: String) -> CacheKey<Data> { CacheKey<Data>(name) }
    func kilobyte(_ fill: UInt8) -> Data { Data(repeating: fill, count: 1000) }

    func held(_ cache: Cache) -> Set<String> { Set(cache.memory.allRecords.map(\.name)) }

    @Test func memoryIsBoundedByDefault() {
        let configuration = Cache.Configuration(name: "default")
        let physical = ProcessInfo.processInfo.physicalMemory
        #expect(configuration.memoryCostLimit == Cache.Configuration.memoryCostLimit(physicalMemory: physical))
        #expect(configuration.memoryCostLimit.map { $0 > 0 && $0 <= 128 << 20 } == true)
        #expect(Cache(configuration).memory.costLimit == configuration.memoryCostLimit)
    }

    @Test(arguments: [
        (UInt64(1) << 30, 32 << 20), // a 1 GB Apple Watch
        (UInt64(3) << 30, 96 << 20),
        (UInt64(4) << 30, 128 << 20), // the cap from 4 GB up
        (UInt64(64) << 30, 128 << 20),
        (UInt64.max, 128 << 20), // no overflow where Int is 32 bits
    ])
    func defaultBudgetIsAThirtySecondOfPhysicalMemoryAtMost128MiB(physical: UInt64, expected: Int) {
        #expect(Cache.Configuration.memoryCostLimit(physicalMemory: physical) == expected)
        #expect(Int32(exactly: expected) != nil)
    }

    @Test func aValueCostsItsEncodedSizeWrittenAndReadBack() throws {
        let cache = cache(costLimit: nil)
        let user = User(name: "Ada", age: 36)
        try cache.set(user, for: CacheKey<User>("u"))
        let encoded = try JSONEncoder().encode(user).count
        #expect(cache.memory.totalCost == encoded)
        cache.purgeMemory()
        #expect(cache.memory.totalCost == 0)
        #expect(cache.value(for: CacheKey<User>("u")) == user)
        #expect(cache.memory.totalCost == encoded)
    }

    @Test func valuesAreEvictedLeastRecentlyUsedFirstDownToTheByteBudget() throws {
        let cache = cache(costLimit: 3000, evictionPolicy: .leastRecentlyUsed)
        for (index, name) in ["a", "b", "c"].enumerated() { try cache.set(kilobyte(UInt8(index)), for: key(name)) }
        #expect(cache.memory.totalCost == 3000)
        _ = cache.value(for: key("a"))
        try cache.set(kilobyte(3), for: key("d"))
        #expect(held(cache) == ["a", "c", "d"])
        #expect(cache.memory.totalCost == 3000)
        // Evicted from memory only: the disk still serves it.
        #expect(cache.value(for: key("b")) == kilobyte(1))
        #expect(cache.memory.totalCost <= 3000)
    }

    @Test func lockedValuesAreEvictedLast() throws {
        let cache = cache(costLimit: 2000)
        try cache.set(kilobyte(0), for: key("a"))
        try cache.set(kilobyte(1), for: key("b"))
        cache.lock(key("a"))
        _ = cache.value(for: key("b"))
        // `a` is now the least recently used, but locked: `b` goes first.
        #expect(cache.memory.totalCost == 2000)
        try cache.set(kilobyte(2), for: key("c"))
        #expect(held(cache) == ["a", "c"])
        #expect(cache.memory.totalCost == 2000)
    }

    @Test func aValueOverTheWholeBudgetIsNotKeptInMemory() throws {
        let cache = cache(costLimit: 500)
        try cache.set(kilobyte(0), for: key("big"))
        #expect(cache.memory.count == 0)
        #expect(cache.value(for: key("big")) == kilobyte(0))
        #expect(cache.memory.count == 0)
    }

    @Test func noByteBoundKeepsEveryValue() throws {
        let cache = cache(costLimit: nil)
        for index in 0..<50 { try cache.set(kilobyte(UInt8(index)), for: key("k\(index)")) }
        #expect(cache.memory.count == 50)
        #expect(cache.memory.totalCost == 50_000)
    }

    @Test func purgeEmptiesMemoryAndTheDiskStillServesEveryValue() throws {
        let events = EventLog()
        let cache = cache(costLimit: nil, events: events)
        for index in 0..<10 { try cache.set(kilobyte(UInt8(index)), for: key("k\(index)")) }
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).sorted()
        cache.purgeMemory()
        #expect(cache.memory.count == 0)
        #expect(cache.memory.totalCost == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path).sorted() == files)
        #expect(events.evictions.isEmpty)
        for index in 0..<10 { #expect(cache.value(for: key("k\(index)")) == kilobyte(UInt8(index))) }
        #expect(cache.memory.count == 10)
    }

    @Test func purgeOfAMemoryOnlyCacheReportsItsValuesEvicted() throws {
        let events = EventLog()
        let cache = cache(costLimit: nil, location: .memoryOnly, events: events)
        try cache.set(kilobyte(0), for: key("a"))
        cache.purgeMemory()
        #expect(cache.value(for: key("a")) == nil)
        #expect(events.evictions == ["a"])
    }

    @Test func simulatedWarningDropsLeastRecentlyUsedDownToHalfTheCost() throws {
        let cache = cache(costLimit: nil, evictionPolicy: .leastRecentlyUsed)
        for name in ["a", "b", "c", "d"] { try cache.set(kilobyte(0), for: key(name)) }
        _ = cache.value(for: key("a"))
        cache.relieveMemoryPressure(.warning)
        #expect(cache.memory.totalCost == 2000)
        #expect(held(cache) == ["a", "d"])
        #expect(cache.value(for: key("b")) == kilobyte(0))
    }

    @Test func simulatedCriticalEventEmptiesMemoryButNotTheDisk() throws {
        let cache = cache(costLimit: nil)
        for name in ["a", "b", "c"] { try cache.set(kilobyte(0), for: key(name)) }
        cache.lock(key("a"))
        cache.relieveMemoryPressure(.critical)
        #expect(cache.memory.count == 0)
        #expect(cache.memory.totalCost == 0)
        #expect(cache.count == 3)
        #expect(cache.value(for: key("a")) == kilobyte(0))
    }
}
