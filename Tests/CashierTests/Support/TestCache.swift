import CashierPlatform
import CashierTestSupport
import Foundation

@testable import Cashier

/// A clock tests move by hand instead of sleeping.
final class TestClock: Sendable {
    private let current: Locked<Date>
    init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { current = Locked(start) }
    var now: Date { current.withLock { $0 } }
    func advance(by seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
    var function: @Sendable () -> Date { { self.now } }
}

/// Collects every event a cache emits.
final class EventLog: Sendable {
    private let events = Locked<[CacheEvent]>([])
    var all: [CacheEvent] { events.withLock { $0 } }
    var handler: @Sendable (CacheEvent) -> Void { { event in self.events.withLock { $0.append(event) } } }

    var discards: [(String, DiscardReason)] {
        all.compactMap { if case .discarded(let key, let reason) = $0 { (key, reason) } else { nil } }
    }
    var failures: [CacheError] {
        all.compactMap { if case .failure(_, let error) = $0 { error } else { nil } }
    }
    var evictions: [String] {
        all.compactMap { if case .evicted(let key, _) = $0 { key } else { nil } }
    }
    var migrations: [(String, Int?, Int?)] {
        all.compactMap { if case .migrated(let key, let from, let to) = $0 { (key, from, to) } else { nil } }
    }
    func clear() { events.withLock { $0.removeAll() } }
}

/// A configuration on `folder` with a test clock and an event log.
func makeConfiguration(
    _ folder: TemporaryFolder, clock: TestClock = TestClock(), events: EventLog? = nil,
    appVersion: String? = "1.0"
) -> Cache.Configuration {
    var configuration = Cache.Configuration(name: "test")
    configuration.location = .directory(folder.url)
    configuration.now = clock.function
    configuration.appVersion = appVersion
    configuration.onEvent = events?.handler
    return configuration
}

/// A cache on `folder` with a disk size limit and a memory count limit (the limit and recency suites).
func makeLimitedCache(
    _ folder: TemporaryFolder, clock: TestClock, diskLimit: Int?, memoryLimit: Int?, events: EventLog?
) -> Cache {
    var configuration = makeConfiguration(folder, clock: clock, events: events)
    configuration.diskSizeLimit = diskLimit
    configuration.memoryCountLimit = memoryLimit
    return Cache(configuration)
}

struct User: Codable, Sendable, Equatable {
    var name: String
    var age: Int
}
