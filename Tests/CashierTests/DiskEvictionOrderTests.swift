import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// The disk tier alone (no memory tier) under a size limit: its sweeps evict in the store's
/// order. Under ``EvictionPolicy/frequencyAware`` an entry read often outlives a scan of
/// entries read once; locked entries outlive every unlocked one under either policy.
@Suite struct DiskEvictionOrderTests {
    let folder = TemporaryFolder()
    let clock = TestClock()
    let events = EventLog()
    /// Large entries (files, each with its row), so the limit is easy to state in entries.
    static let entryBytes = 16 * 1024
    static let value = Data(repeating: 3, count: entryBytes)

    /// A cache with no memory tier and room for about ten entries (and the store's file).
    func diskCache(_ policy: EvictionPolicy) -> Cache {
        makeLimitedCache(
            folder, clock: clock, diskLimit: 12 * (Self.entryBytes + 200), memoryLimit: 0, events: events,
            evictionPolicy: policy)
    }

    /// Reads `count` fresh keys once each, a second apart, writing each on its miss (a scroll
    /// past a feed); each write's sweep finishes before the next read, as fetches leave time for.
    func scan(_ cache: Cache, count: Int) throws {
        for index in 0..<count {
            clock.advance(by: 1)
            let key = CacheKey<Data>("scroll-\(index)")
            if cache.value(for: key) == nil { try cache.set(Self.value, for: key) }
            cache.waitForBackgroundWork()
        }
    }

    /// Writes `avatar` and reads it five times, two minutes apart: five uses the index records
    /// (more than a granularity apart).
    func readOften(_ cache: Cache, _ avatar: CacheKey<Data>) throws {
        try cache.set(Self.value, for: avatar)
        for _ in 0..<5 {
            clock.advance(by: 120)
            #expect(cache.value(for: avatar) == Self.value)
        }
    }

    @Test func aOneTimeScanDoesNotEvictAnEntryReadOften() throws {
        let cache = diskCache(.frequencyAware)
        let avatar = CacheKey<Data>("avatar")
        try readOften(cache, avatar)
        try scan(cache, count: 100)
        #expect(events.evictions.count >= 80)
        #expect(!events.evictions.contains("avatar"))
        #expect(cache.count <= 12)
        #expect(cache.value(for: avatar) == Self.value)
    }

    @Test func theSameScanEvictsItUnderLeastRecentlyUsed() throws {
        // What the test above guards against: by recency alone the scan pushes it out.
        let cache = diskCache(.leastRecentlyUsed)
        let avatar = CacheKey<Data>("avatar")
        try readOften(cache, avatar)
        try scan(cache, count: 100)
        #expect(events.evictions.contains("avatar"))
        #expect(cache.value(for: avatar) == nil)
    }

    @Test(arguments: [EvictionPolicy.frequencyAware, .leastRecentlyUsed])
    func aLockedEntryIsNeverEvictedWhileUnlockedOnesCanGo(_ policy: EvictionPolicy) throws {
        let cache = diskCache(policy)
        let pinned = CacheKey<Data>("pinned")
        try cache.set(Self.value, for: pinned)
        cache.lock(pinned)
        // Never read again: by recency, and as an entry never used since written, the first to go.
        try scan(cache, count: 100)
        #expect(events.evictions.count >= 80)
        #expect(!events.evictions.contains("pinned"))
        #expect(cache.count <= 12)
        #expect(cache.value(for: pinned) == Self.value)
    }
}
