import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Recency and sliding lifespans when entries are rows of the folder's store: a use is kept in
/// the row (its `last_use` and `frequency`), which the next launch and other processes read.
@Suite struct StoreRecencyTests {
    let folder = TemporaryFolder()
    let clock = TestClock()
    let start = TestClock().now.timeIntervalSince1970
    static let session = CacheKey<String>("session", lifespan: .sinceLastUse(100))
    static let idle = CacheKey<String>("idle", lifespan: .sinceLastUse(100))

    func at(_ seconds: Double) {
        clock.advance(by: start + seconds - clock.now.timeIntervalSince1970)
    }

    /// A cache on the folder; `relaunched`: with a disk tier of its own, as the next launch's.
    func cache(relaunched: Bool = false, events: EventLog? = nil, diskLimit: Int? = nil) -> Cache {
        var configuration = makeConfiguration(folder, clock: clock, events: events)
        if relaunched { configuration.fileSystem = POSIXFileSystem() }
        configuration.diskSizeLimit = diskLimit
        return Cache(configuration)
    }

    @Test func removeExpiredKeepsASlidingEntryReadFromMemoryWithinTheGranularity() throws {
        let events = EventLog()
        let cache = cache(events: events)
        try cache.set("token", for: Self.session)
        try cache.set("idle", for: Self.idle)
        #expect(folder.entryFiles.isEmpty) // both are rows
        at(50) // a memory hit, less than a granularity after the write
        #expect(cache.value(for: Self.session) == "token")
        at(140)
        cache.removeExpired()
        #expect(events.discards.map(\.0) == ["idle"])
        #expect(cache.value(for: Self.session) == "token")
        #expect(self.cache(relaunched: true).keys == [Self.session.name])
    }

    @Test func theNextLaunchJudgesASlidingLifespanByTheLastUseItsRowKeeps() throws {
        do {
            let cache = cache()
            try cache.set("token", for: Self.session)
            try cache.set("idle", for: Self.idle)
            at(90)
            #expect(cache.value(for: Self.session) == "token")
            cache.waitForBackgroundWork()
        }
        at(150)
        let events = EventLog()
        let next = cache(relaunched: true, events: events)
        next.collectGarbage()
        #expect(events.discards.map(\.0) == ["idle"])
        #expect(next.value(for: Self.session) == "token")
    }

    @Test func readsOfOneLaunchKeepAnEntryFromTheNextLaunchsEviction() throws {
        // Large entries (files with rows), so a limit in whole entries is easy to state.
        let size = 512 * 1024
        do {
            let cache = cache()
            for index in 0..<5 {
                try cache.set(Data(repeating: UInt8(index), count: size), for: CacheKey<Data>("k\(index)"))
                at(Double(index + 1))
            }
            at(600)
            // Read from disk by an instance that keeps nothing in memory: the use goes to k0's row,
            // off the caller's thread, within a uses window (the launch lives that long).
            var configuration = makeConfiguration(folder, clock: clock)
            configuration.memoryCountLimit = 0
            let reader = Cache(configuration)
            #expect(reader.value(for: CacheKey<Data>("k0")) != nil)
            reader.waitForBackgroundWork()
        }
        let events = EventLog()
        let next = cache(relaunched: true, events: events, diskLimit: folder.occupiedBytes - size * 3 / 2)
        next.collectGarbage()
        #expect(events.evictions.count == 2)
        #expect(!events.evictions.contains("k0"))
        #expect(next.value(for: CacheKey<Data>("k0")) != nil)
    }
}
