import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

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
    private struct Waiter {
        var matches: @Sendable (CacheEvent) -> Bool
        var continuation: CheckedContinuation<Bool, Never>
    }
    private let state = Locked<(events: [CacheEvent], waiters: [Int: Waiter], next: Int, timedOut: Set<Int>)>(
        ([], [:], 0, []))
    var all: [CacheEvent] { state.withLock { $0.events } }
    var handler: @Sendable (CacheEvent) -> Void {
        { event in
            let resumed = self.state.withLock { state in
                state.events.append(event)
                let matched = state.waiters.filter { $0.value.matches(event) }
                for id in matched.keys { state.waiters[id] = nil }
                return matched.values.map(\.continuation)
            }
            for continuation in resumed { continuation.resume(returning: true) }
        }
    }

    /// Returns once an event `matches` accepts has been logged (at once if one has): resumed
    /// by the event itself, no polling. Bounded: after `seconds` without one, records an issue
    /// saying that `what` never happened and returns false.
    @discardableResult
    func wait(
        for what: String, seconds: Double = 30, sourceLocation: SourceLocation = #_sourceLocation,
        until matches: @escaping @Sendable (CacheEvent) -> Bool
    ) async -> Bool {
        let id = state.withLock { state in
            state.next += 1
            return state.next
        }
        let timeout = Task {
            guard (try? await Task.sleep(for: .seconds(seconds))) != nil else { return }
            let waiter = state.withLock { state in
                state.timedOut.insert(id)
                return state.waiters.removeValue(forKey: id)
            }
            waiter?.continuation.resume(returning: false)
        }
        defer { timeout.cancel() }
        let happened = await withCheckedContinuation { continuation in
            let outcome = state.withLock { state -> Bool? in
                if state.events.contains(where: matches) { return true }
                if state.timedOut.contains(id) { return false }
                state.waiters[id] = Waiter(matches: matches, continuation: continuation)
                return nil
            }
            if let outcome { continuation.resume(returning: outcome) }
        }
        if !happened {
            Issue.record("\(what) did not happen within \(seconds) seconds", sourceLocation: sourceLocation)
        }
        return happened
    }

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
    func clear() { state.withLock { $0.events.removeAll() } }
}

/// Where a test's entries go on disk.
enum TestStorage {
    /// The default: small entries are rows of the folder's store.
    case store
    /// Every entry a file, indexed by the store: for tests that read or damage entry files.
    case files
    /// No store, as when SQLite is unavailable: for tests of the file design itself (access
    /// times as recency, the folder scan as index).
    case filesWithoutStore

    func apply(to configuration: inout Cache.Configuration) {
        switch self {
        case .store: break
        case .files: configuration.rowSizeLimit = 0
        case .filesWithoutStore: configuration.usesStore = false
        }
    }
}

/// A configuration on `folder` with a test clock and an event log.
func makeConfiguration(
    _ folder: TemporaryFolder, clock: TestClock = TestClock(), events: EventLog? = nil,
    appVersion: String? = "1.0", storage: TestStorage = .store
) -> Cache.Configuration {
    var configuration = Cache.Configuration(name: "test")
    storage.apply(to: &configuration)
    configuration.location = .directory(folder.url)
    configuration.now = clock.function
    configuration.appVersion = appVersion
    configuration.onEvent = events?.handler
    configuration.folderRecheckNanoseconds = 0
    return configuration
}

/// A cache on `folder` with a disk size limit and a memory count limit (the limit and recency suites).
func makeLimitedCache(
    _ folder: TemporaryFolder, clock: TestClock, diskLimit: Int?, memoryLimit: Int?, events: EventLog?,
    evictionPolicy: EvictionPolicy = .frequencyAware, storage: TestStorage = .store
) -> Cache {
    var configuration = makeConfiguration(folder, clock: clock, events: events, storage: storage)
    configuration.diskSizeLimit = diskLimit
    configuration.memoryCountLimit = memoryLimit
    configuration.evictionPolicy = evictionPolicy
    return Cache(configuration)
}

struct User: Codable, Sendable, Equatable {
    var name: String
    var age: Int
}
