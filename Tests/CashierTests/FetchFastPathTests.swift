import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// `value(for:fetch:)` answers from memory as `value(for:)` does: the same events and counters
/// as `entry(for:fetch:)` (the path it took before), on a hit, an expired record and a miss.
@Suite struct FetchFastPathTests {
    let folder = TemporaryFolder()
    let clock = TestClock()

    /// What a call reported: its events (by kind and key) and the counters it moved.
    struct Outcome: Equatable {
        var events: [String]
        var statistics: CacheStatistics
        var fetches: Int
        var value: Int
    }

    enum Path { case fastPath, entry }

    static func describe(_ event: CacheEvent) -> String {
        switch event {
        case .hit(let key): "hit \(key)"
        case .miss(let key): "miss \(key)"
        case .write(let key, _): "write \(key)"
        case .discarded(let key, let reason): "discarded \(key) \(reason)"
        case .evicted(let key, _): "evicted \(key)"
        case .failure(let key, _): "failure \(key ?? "-")"
        case .migrated(let key, _, _): "migrated \(key)"
        }
    }

    /// Stores 1 under `key`, moves the clock by `advance`, then reads through `path` with a
    /// fetch answering 2.
    func outcome(
        _ path: Path, key: CacheKey<Int>, advance: Double, memoryOnly: Bool, returnsExpired: Bool = false,
        storeFirst: Bool = true
    ) async throws -> Outcome {
        let events = EventLog()
        var configuration = makeConfiguration(TemporaryFolder(), clock: clock, events: events)
        if memoryOnly { configuration.location = .memoryOnly }
        configuration.returnsExpiredValues = returnsExpired
        let cache = Cache(configuration)
        if storeFirst { try cache.set(1, for: key) }
        clock.advance(by: advance)
        events.clear()
        let before = cache.statistics
        let fetches = Locked(0)
        let value: Int
        switch path {
        case .fastPath:
            value = try await cache.value(for: key) {
                fetches.withLock { $0 += 1 }
                return 2
            }
        case .entry:
            value = try await cache.entry(for: key) {
                fetches.withLock { $0 += 1 }
                return Fetched(2)
            }.value
        }
        var moved = cache.statistics
        moved.hits -= before.hits
        moved.misses -= before.misses
        moved.writes -= before.writes
        return Outcome(
            events: events.all.map(Self.describe), statistics: moved, fetches: fetches.withLock { $0 }, value: value)
    }

    @Test(arguments: [true, false], [false, true])
    func theFastPathReportsWhatTheEntryPathDoes(memoryOnly: Bool, returnsExpired: Bool) async throws {
        let cases: [(CacheKey<Int>, Double)] = [
            (CacheKey<Int>("fresh", lifespan: .seconds(100)), 10), // a hit
            (CacheKey<Int>("old", lifespan: .seconds(100)), 200), // expired
            (CacheKey<Int>("idle", lifespan: .sinceLastUse(100)), 50), // a sliding hit
            (CacheKey<Int>("gone", lifespan: .sinceLastUse(100)), 200), // a sliding one expired
            (CacheKey<Int>("locked", lifespan: .never), 1),
        ]
        for (key, advance) in cases {
            let fast = try await outcome(
                .fastPath, key: key, advance: advance, memoryOnly: memoryOnly, returnsExpired: returnsExpired)
            let entry = try await outcome(
                .entry, key: key, advance: advance, memoryOnly: memoryOnly, returnsExpired: returnsExpired)
            #expect(fast == entry, "\(key.name)")
        }
        let missFast = try await outcome(
            .fastPath, key: CacheKey<Int>("none"), advance: 0, memoryOnly: memoryOnly, storeFirst: false)
        let missEntry = try await outcome(
            .entry, key: CacheKey<Int>("none"), advance: 0, memoryOnly: memoryOnly, storeFirst: false)
        #expect(missFast == missEntry)
        #expect(missFast.events == ["miss none", "write none"])
    }

    @Test func aRecordOfAnotherTypeUnderTheNameIsAMissThatFetches() async throws {
        var configuration = makeConfiguration(folder, clock: clock)
        configuration.location = .memoryOnly
        let cache = Cache(configuration)
        try cache.set("text", for: CacheKey<String>("shared"))
        let value = try await cache.value(for: CacheKey<Int>("shared")) { 7 }
        #expect(value == 7)
        #expect(cache.value(for: CacheKey<Int>("shared")) == 7)
    }
}
