import Cashier
import CashierStore
import Foundation

/// Replays a disk-tier trace through a real `Cache` whose memory tier is off
/// (`memoryCountLimit = 0`), in a temporary folder, as an app drives its disk tier: each
/// request reads the key (`value(for:)`; a hit is a value returned), a miss writes the object
/// (`set`, as an app does after fetching it), and the cache sweeps by itself, off the caller's
/// thread, once the folder occupies more than its `diskSizeLimit`.
///
/// - The limit is the trace's capacity in bytes the folder occupies: `capacity` times what
///   one object occupies, measured by writing `capacity` objects into a fresh folder with no
///   limit and reading what the folder occupies, its log checkpointed (``calibrate(capacity:settings:)``).
/// - The cache's clock (`Configuration.now`) moves `secondsPerRequest` a request: at 60 (the
///   default) every hit is a use the index records, as ``DiskReplay`` records every hit at its
///   default granularity of one request; at 2 a use is recorded at most once per 30 requests
///   (its `--granularity 30`).
/// - After each miss's write the replay waits for the sweep it may have scheduled
///   (`waitForBackgroundWork()`): in an app the next request comes a fetch or a user's
///   gesture later, tens of milliseconds at least, and a sweep of a few hundred rows takes
///   about a millisecond, so it has finished by then. `waits = false` never waits (sweeps
///   then race the replay, and the numbers vary from run to run).
enum CacheReplay {
    struct Settings: Sendable {
        /// Bytes of each object's value (a `Data`, stored raw). 16 KiB by default, a thumbnail:
        /// an entry file with its row, so the folder occupies what the objects weigh and the
        /// limit is the trace's size. Values of a record of 8 KiB or less are rows of the store,
        /// which holds fewer of them in the same bytes as its pages fragment
        /// (Benchmarks/Eviction/README.md).
        var objectBytes = 16 * 1024
        /// How far the cache's clock moves per request, in seconds.
        var secondsPerRequest = 60.0
        /// Whether the replay waits for the cache's sweep after each write.
        var waits = true
    }

    /// What a replay measured.
    struct Outcome: Sendable {
        var hitRatio: Double
        /// The size limit given to the cache, and what one object occupied at calibration.
        var limit: Int
        var bytesPerObject: Double
        /// Entries held after each request, averaged (`Cache.count`), and the largest count seen.
        var meanHeld: Double
        var maximumHeld: Int
        var evictions: Int
    }

    /// The key of object `id`: fixed width, as an app's keys (URLs of one host, say) are
    /// about one length, so every object occupies the same bytes whatever its id.
    static func key(_ id: UInt64) -> CacheKey<Data> {
        CacheKey<Data>(
            "object-" + String(repeating: "0", count: max(0, 16 - String(id, radix: 16).count)) + String(id, radix: 16))
    }

    static func value(_ id: UInt64, bytes: Int) -> Data {
        var data = Data(count: bytes)
        data.withUnsafeMutableBytes { buffer in
            for index in buffer.indices { buffer[index] = UInt8(truncatingIfNeeded: id &+ UInt64(index)) }
        }
        return data
    }

    static func configuration(_ folder: URL, limit: Int?, policy: EvictionPolicy, clock: ReplayClock)
        -> Cache.Configuration
    {
        var configuration = Cache.Configuration(name: "replay")
        configuration.location = .directory(folder)
        configuration.appVersion = "replay"
        configuration.memoryCountLimit = 0
        configuration.memoryCostLimit = nil
        configuration.diskSizeLimit = limit
        configuration.garbageCollectionInterval = nil
        configuration.evictionPolicy = policy
        configuration.now = { clock.now }
        return configuration
    }

    /// What the folder occupies per object when it holds `capacity` objects and nothing
    /// else (the store and its log, checkpointed, and any large entries' files), in bytes.
    static func calibrate(capacity: Int, settings: Settings) -> Double {
        withTemporaryFolder { folder in
            let clock = ReplayClock()
            do {
                let cache = Cache(configuration(folder, limit: nil, policy: .frequencyAware, clock: clock))
                for id in 0..<UInt64(capacity) {
                    clock.advance(by: settings.secondsPerRequest)
                    try cache.set(value(id, bytes: settings.objectBytes), for: key(id))
                }
                cache.waitForBackgroundWork()
            } catch {
                fatalError("the calibration's write failed: \(error)")
            }
            let occupied = occupiedBytes(folder)
            return Double(occupied) / Double(capacity)
        }
    }

    /// Bytes the folder occupies as a sweep measures them, its log checkpointed first.
    static func occupiedBytes(_ folder: URL) -> Int {
        do {
            let store = try EntryStore(folder: folder.path)
            try store.checkpoint()
            return try store.occupiedBytes()
        } catch {
            fatalError("the replay's store could not be read: \(error)")
        }
    }

    static func replay(_ trace: Trace, policy: EvictionPolicy, settings: Settings = Settings()) -> Outcome {
        let bytesPerObject = calibrate(capacity: trace.capacity, settings: settings)
        let limit = Int((bytesPerObject * Double(trace.capacity)).rounded())
        return withTemporaryFolder { folder in
            let clock = ReplayClock()
            let evictions = Counter()
            var configuration = configuration(folder, limit: limit, policy: policy, clock: clock)
            configuration.onEvent = { event in
                if case .evicted = event { evictions.add() }
            }
            let cache = Cache(configuration)
            var hits = 0
            var held = 0
            var maximumHeld = 0
            for id in trace.requests {
                clock.advance(by: settings.secondsPerRequest)
                let key = key(id)
                if cache.value(for: key) != nil {
                    hits += 1
                } else {
                    do { try cache.set(value(id, bytes: settings.objectBytes), for: key) } catch {
                        fatalError("the cache failed a write: \(error)")
                    }
                    if settings.waits { cache.waitForBackgroundWork() }
                }
                let count = cache.count
                held += count
                maximumHeld = max(maximumHeld, count)
            }
            cache.waitForBackgroundWork()
            return Outcome(
                hitRatio: Double(hits) / Double(trace.requests.count), limit: limit, bytesPerObject: bytesPerObject,
                meanHeld: Double(held) / Double(trace.requests.count), maximumHeld: maximumHeld,
                evictions: evictions.value)
        }
    }

    static func withTemporaryFolder<R>(_ body: (URL) -> R) -> R {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent(
                "cashier-cache-replay-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        return body(folder)
    }
}

/// The replay's clock: moved by hand, read by the cache (from its sweep queue too).
final class ReplayClock: @unchecked Sendable {
    private let lock = NSLock()
    private var seconds = 1_700_000_000.0 // guarded by lock

    var now: Date { lock.withLock { Date(timeIntervalSince1970: seconds) } }

    func advance(by interval: Double) { lock.withLock { seconds += interval } }
}

/// A count events add to from any thread.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0 // guarded by lock

    var value: Int { lock.withLock { count } }

    func add() { lock.withLock { count += 1 } }
}

extension CacheReplay {
    /// `disk-cache [--object-bytes N] [--seconds-per-request S] [--no-wait] [NAME]`: the disk
    /// traces through a real `Cache`, both orders, with what each run held and evicted.
    static func runDetails(_ arguments: [String]) -> Bool {
        var settings = Settings()
        var only: String?
        var arguments = arguments
        while let argument = arguments.first {
            arguments.removeFirst()
            switch argument {
            case "--object-bytes": settings.objectBytes = Int(arguments.removeFirst()) ?? settings.objectBytes
            case "--seconds-per-request":
                settings.secondsPerRequest = Double(arguments.removeFirst()) ?? settings.secondsPerRequest
            case "--no-wait": settings.waits = false
            default: only = argument
            }
        }
        print("trace\tpolicy\thit ratio\tlimit\tbytes/object\tmean held\tmost held\tevictions\tseconds")
        for trace in Traces.all(tiers: ["disk"]) where only.map({ trace.name.contains($0) }) ?? true {
            for policy in [EvictionPolicy.leastRecentlyUsed, .frequencyAware] {
                let start = Date()
                let outcome = replay(trace, policy: policy, settings: settings)
                print(
                    [
                        trace.name, "\(policy)", Replay.format(outcome.hitRatio), "\(outcome.limit)",
                        String(format: "%.1f", outcome.bytesPerObject), String(format: "%.1f", outcome.meanHeld),
                        "\(outcome.maximumHeld)", "\(outcome.evictions)",
                        String(format: "%.1f", Date().timeIntervalSince(start)),
                    ].joined(separator: "\t"))
            }
        }
        return true
    }
}
