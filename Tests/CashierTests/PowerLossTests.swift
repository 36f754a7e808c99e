import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Power loss, not process death: records short workloads through ``RecordingFileSystem``,
/// builds the folders a power loss may leave after every operation (``CrashStateBuilder``,
/// under a ``CrashModel``), opens each with a fresh cache and checks what it promises.
///
/// `CASHIER_POWERLOSS_STATES=200000` explores that many states per model instead of the CI budget.
@Suite("PowerLossTests")
struct PowerLossTests {
    /// States per model in CI (an eighth under a sanitizer, which slows each check several
    /// times over); the environment variable sets it.
    static var budget: Int {
        if let requested = ProcessInfo.processInfo.environment["CASHIER_POWERLOSS_STATES"].flatMap(Int.init) {
            return requested
        }
        return isSanitized ? 1_000 : 8_000
    }

    /// Whether ThreadSanitizer or AddressSanitizer is linked into this process.
    static let isSanitized: Bool = {
        let process = dlopen(nil, RTLD_NOW)
        let symbols: [String] = ["__tsan_init", "__asan_init"]
        return symbols.contains { dlsym(process, $0) != nil }
    }()

    @Test func everyConservativeCrashStateKeepsThePromises() throws {
        let report = try PowerLossExplorer(model: .conservative).explore(budget: Self.budget)
        print(report.summary)
        #expect(report.violations.isEmpty, "\(report.violations.prefix(5).joined(separator: "\n"))")
        #expect(report.states >= min(Self.budget, 1_000))
    }

    @Test func everyExt4CrashStateKeepsThePromises() throws {
        let report = try PowerLossExplorer(model: .ext4Ordered).explore(budget: Self.budget / 4)
        print(report.summary)
        #expect(report.violations.isEmpty, "\(report.violations.prefix(5).joined(separator: "\n"))")
    }

    /// The explorer itself: a write path that skips either sync of `.synchronized` must be caught.
    @Test(arguments: [RecordingFileSystem.Mutation.dropsFolderSyncs, .dropsFileSyncs])
    func explorerCatchesASynchronizedSetMissingASync(_ mutation: RecordingFileSystem.Mutation) throws {
        var explorer = PowerLossExplorer(model: .conservative)
        explorer.mutation = mutation
        explorer.durabilities = [.synchronized]
        let report = try explorer.explore(budget: 300)
        // The rename or the data is lost: the key reads a value from before the returned set, or nothing.
        #expect(report.violations.contains { $0.contains("must survive") || $0.contains("not one of") })
    }

    /// Found by the explorer: the first `.synchronized` set into a folder that did not exist
    /// returns before the folder's own entry in its parent is synced, so a power loss can
    /// take the folder, and the value, with it (conservative model; ext4's journal commits
    /// the `mkdir` with the file's sync).
    @Test
    func firstSynchronizedSetIntoANewFolderSurvivesPowerLoss() throws {
        var explorer = PowerLossExplorer(model: .conservative)
        explorer.durabilities = [.synchronized]
        explorer.startsWithoutFolder = true
        let report = try explorer.explore(budget: 500)
        print(report.summary)
        #expect(report.violations.isEmpty, "\(report.violations.prefix(5).joined(separator: "\n"))")
    }

    /// The recorder models Linux's rename over an existing file as what it is: an exchange, then an unlink.
    @Test func recorderLogsAReplacingRenameAsExchangeAndUnlink() throws {
        let scratch = TemporaryFolder()
        try FileManager.default.createDirectory(at: scratch.url, withIntermediateDirectories: true)
        let recorder = RecordingFileSystem(root: scratch.path)
        var configuration = Cache.Configuration(name: "recorded")
        configuration.location = .directory(scratch.url.appendingPathComponent("cache"))
        configuration.fileSystem = recorder
        configuration.durability = .synchronized
        let cache = Cache(configuration)
        try cache.set("one", for: CacheKey<String>("k"))
        try cache.set("two", for: CacheKey<String>("k"))
        let operations = recorder.events.compactMap { event -> String? in
            guard case .operation(let operation) = event else { return nil }
            switch operation {
            case .makeDirectory: return "mkdir"
            case .createFile(_, _, let synchronized): return synchronized ? "create+sync" : "create"
            case .rename: return "rename"
            case .exchange: return "exchange"
            case .unlink: return "unlink"
            case .synchronizeDirectory: return "fsync-dir"
            case .lock, .unlock: return "flock"
            }
        }
        #if os(Linux)
        #expect(
            operations == [
                "mkdir", "fsync-dir", "create+sync", "rename", "fsync-dir", "create+sync", "exchange", "unlink",
                "fsync-dir",
            ])
        #else
        #expect(
            operations == [
                "mkdir", "fsync-dir", "create+sync", "rename", "fsync-dir", "create+sync", "rename", "fsync-dir",
            ])
        #endif
    }
}

/// Runs seeded workloads, builds their crash states and checks each.
struct PowerLossExplorer {
    var model: CrashModel
    var durabilities: [Cache.Durability] = [.standard, .synchronized]
    /// Whether the workload starts on an empty volume (the cache folder is created in the trace)
    /// rather than on a folder that a checkpoint made durable.
    var startsWithoutFolder = false
    /// A broken write path to record instead of the library's, to prove the explorer notices.
    var mutation: RecordingFileSystem.Mutation?
    var samplesPerPoint = 12
    var seed: UInt64 = 0x5EED_0015

    struct Report {
        var model: CrashModel
        var traces = 0
        var points = 0
        var states = 0
        /// States in which a read found a damaged entry (and discarded it), or a temporary file lay.
        var damaged = 0
        var withTemporaries = 0
        var violations: [String] = []
        var summary: String {
            func number(_ value: Int) -> String {
                value.formatted(.number.grouping(.automatic).locale(Locale(identifier: "en_US")))
            }
            return
                "power-loss: \(number(states)) crash states checked (\(model.rawValue) model) at \(number(points)) crash points"
                + " of \(traces) traces (\(number(damaged)) with a damaged entry, \(number(withTemporaries)) with a temporary file),"
                + " \(violations.count) violations"
        }
    }

    func explore(budget: Int) throws -> Report {
        var report = Report(model: model)
        var generator = SplitMix64(seed: seed ^ UInt64(model == .conservative ? 0 : 1))
        var traceNumber = 0
        while report.states < budget, report.violations.count < 50 {
            let durability = durabilities[traceNumber % durabilities.count]
            let workload = Workload(
                seed: generator.next(), durability: durability, startsWithoutFolder: startsWithoutFolder)
            traceNumber += 1
            let events = try workload.record(mutation: mutation)
            let builder = CrashStateBuilder(events: events, model: model)
            let history = History(events: events)
            report.traces += 1
            for point in builder.checkpoint...builder.operations.count {
                report.points += 1
                for state in builder.states(at: point, samples: samplesPerPoint, using: &generator) {
                    report.states += 1
                    let order = CheckOrder.allCases[Int(generator.next() % 3)]
                    let outcome = try check(state, workload: workload, history: history, point: point, order: order)
                    if outcome.sawDamage { report.damaged += 1 }
                    if state.files.keys.contains(where: { $0.contains("/" + DiskTier.temporaryPrefix) }) {
                        report.withTemporaries += 1
                    }
                    for problem in outcome.problems {
                        report.violations.append(
                            "trace \(traceNumber) (\(durability), seed \(workload.seed)) point \(point)/\(builder.operations.count), "
                                + "\(order): \(problem); files: \(state.files.mapValues(\.count))")
                    }
                }
            }
        }
        return report
    }

    /// What a fresh cache does first on the crashed folder.
    enum CheckOrder: CaseIterable {
        case readsFirst, collectGarbageFirst, sweepFirst
    }

    /// Opens `state` with a fresh cache and returns every broken promise, and whether a damaged entry was discarded.
    func check(
        _ state: CrashState, workload: Workload, history: History, point: Int,
        order: CheckOrder
    ) throws -> (problems: [String], sawDamage: Bool) {
        let scratch = ScratchFolder()
        try withDeadWriters(state).materialize(into: scratch.path)
        let folder = scratch.url.appendingPathComponent(Workload.cacheFolderName)
        let failures = EventLog()
        var configuration = Cache.Configuration(name: "powerloss")
        configuration.location = .directory(folder)
        // The recorded writer ran on a file-system double, so without a store: its folder is
        // checked as such (rows' durability is SQLite's: WAL with `synchronous=FULL`).
        configuration.usesStore = false
        configuration.appVersion = Workload.appVersion
        configuration.memoryCountLimit = 0
        configuration.onEvent = failures.handler
        let probe = CacheKey<String>("probe")
        if order == .sweepFirst {
            let present = FileManager.default.fileSizes(in: folder.path).values.reduce(0, +)
            configuration.diskSizeLimit = present + 64 * 1024
        }
        let cache = Cache(configuration)
        var problems: [String] = []
        switch order {
        case .readsFirst: break
        case .collectGarbageFirst: cache.collectGarbage()
        case .sweepFirst:
            try cache.set("probe", for: probe)
            cache.waitForBackgroundWork()
        }

        // Every key reads a value it may hold.
        var read: [String: String] = [:]
        for key in workload.keys {
            let value = cache.value(for: CacheKey<String>(key))
            let expected = history.expectation(for: key, at: point, workload: workload)
            switch value {
            case nil where !expected.mayBeAbsent:
                problems.append(
                    "\(key) must survive (\(expected.allowed.map { String($0.prefix(8)) }.sorted())) but reads nothing")
            case let value? where !expected.allowed.contains(value):
                problems.append(
                    "\(key) reads \(value.prefix(12)), not one of \(expected.allowed.map { String($0.prefix(12)) }.sorted())"
                )
            default: break
            }
            read[key] = value
        }
        if order == .sweepFirst {
            if cache.value(for: probe) == nil { problems.append("the probe written before the sweep is gone") }
            read[probe.name] = "probe"
        }

        // The totals agree with the reads, and the scan removed every temporary file.
        let present = read.keys.sorted()
        if cache.count != present.count { problems.append("count \(cache.count), but \(present.count) keys read") }
        if cache.keys != present { problems.append("keys \(cache.keys), but \(present) read") }
        let sizes = FileManager.default.fileSizes(in: folder.path)
        let entryFiles = sizes.filter { DiskTier.isEntryFileName($0.key) }
        if Set(entryFiles.keys) != Set(present.map(DiskTier.fileName(for:))) {
            problems.append("entry files \(entryFiles.keys.sorted()) for keys read \(present)")
        }
        if cache.totalSize != entryFiles.values.reduce(0, +) {
            problems.append("totalSize \(cache.totalSize), files hold \(entryFiles.values.reduce(0, +))")
        }
        let temporaries = sizes.keys.filter { $0.hasPrefix(DiskTier.temporaryPrefix) }
        if !temporaries.isEmpty { problems.append("temporary files survive the scan: \(temporaries.sorted())") }

        // Garbage collection keeps whatever the reads returned.
        if order == .readsFirst {
            cache.collectGarbage()
            for key in workload.keys where cache.value(for: CacheKey<String>(key)) != read[key] {
                problems.append("collectGarbage() changed what \(key) reads")
            }
        }
        for failure in failures.failures { problems.append("failure event: \(failure)") }
        return (problems, failures.discards.contains { $0.1 == .corrupt })
    }

    /// The state with every temporary file renamed as a writer that no longer runs
    /// (the power loss ended it; this process, whose id the names hold, still does).
    private func withDeadWriters(_ state: CrashState) -> CrashState {
        var renamed = state
        renamed.files = [:]
        for (path, bytes) in state.files {
            let name = (path as NSString).lastPathComponent
            guard name.hasPrefix(DiskTier.temporaryPrefix) else {
                renamed.files[path] = bytes
                continue
            }
            let counter = name.split(separator: "-").last ?? "0"
            renamed.files[TraceOperation.parent(of: path) + "/\(DiskTier.temporaryPrefix)2147483000-\(counter)"] =
                bytes
        }
        return renamed
    }
}

/// A short, seeded sequence of calls on a few keys, and the setup before it.
struct Workload {
    static let cacheFolderName = "cache"
    static let appVersion = "1.0"

    enum Call {
        case set(key: String, value: String)
        case remove(key: String)
        case lock(key: String)
        case refresh(key: String)
        case collectGarbage
        case removeAll

        /// Whether the call changes `key`'s entry (every key, for `removeAll`).
        func touches(_ key: String) -> Bool {
            switch self {
            case .set(let name, _), .remove(let name), .lock(let name), .refresh(let name): name == key
            case .collectGarbage: false
            case .removeAll: true
            }
        }
    }

    let seed: UInt64
    let durability: Cache.Durability
    let keys = ["k0", "k1", "k2"]
    let initial: [String: String]
    let calls: [Call]

    init(seed: UInt64, durability: Cache.Durability, startsWithoutFolder: Bool) {
        self.seed = seed
        self.durability = durability
        var generator = SplitMix64(seed: seed)
        var serial = 0
        func value(for key: String) -> String {
            serial += 1
            // Sizes from a few bytes to past a page, so the cut points differ.
            let length = Int(generator.next() % 5_000)
            return "\(key)#\(serial)#"
                + String(repeating: Character(Unicode.Scalar(UInt8(97 + serial % 26))), count: length)
        }
        var initial: [String: String] = [:]
        if !startsWithoutFolder {
            for key in keys where generator.next() % 3 != 0 { initial[key] = value(for: key) }
            // At least one entry, so the folder exists at the checkpoint.
            if initial.isEmpty { initial[keys[0]] = value(for: keys[0]) }
        }
        self.initial = initial
        var calls: [Call] = []
        for _ in 0..<(3 + Int(generator.next() % 5)) {
            let key = keys[Int(generator.next() % UInt64(keys.count))]
            switch generator.next() % 20 {
            case 0..<10: calls.append(.set(key: key, value: value(for: key)))
            case 10..<13: calls.append(.remove(key: key))
            case 13..<15: calls.append(.lock(key: key))
            case 15..<17: calls.append(.refresh(key: key))
            case 17..<19: calls.append(.collectGarbage)
            default: calls.append(.removeAll)
            }
        }
        self.calls = calls
    }

    /// Runs the workload on a recording file system in a scratch folder and returns the trace.
    func record(mutation: RecordingFileSystem.Mutation? = nil) throws -> [TraceEvent] {
        let scratch = ScratchFolder()
        try FileManager.default.createDirectory(at: scratch.url, withIntermediateDirectories: true)
        let recorder = RecordingFileSystem(root: scratch.path, mutation: mutation)
        var configuration = Cache.Configuration(name: "powerloss")
        configuration.location = .directory(scratch.url.appendingPathComponent(Self.cacheFolderName))
        configuration.fileSystem = recorder
        configuration.durability = durability
        configuration.appVersion = Self.appVersion
        let cache = Cache(configuration)
        for key in keys {
            if let value = initial[key] { try cache.set(value, for: CacheKey<String>(key)) }
        }
        if !initial.isEmpty { recorder.mark(.checkpoint) }
        for (number, call) in calls.enumerated() {
            recorder.mark(.began(call: number))
            switch call {
            case .set(let key, let value): try cache.set(value, for: CacheKey<String>(key))
            case .remove(let key): cache.removeValue(for: CacheKey<String>(key))
            case .lock(let key): cache.lock(CacheKey<String>(key))
            case .refresh(let key): cache.refresh(CacheKey<String>(key))
            case .collectGarbage: cache.collectGarbage()
            case .removeAll: cache.removeAll()
            }
            recorder.mark(.returned(call: number))
        }
        return recorder.events
    }
}

/// When each call of a recorded workload began and returned, counted in operations.
struct History {
    private var began: [Int: Int] = [:]
    private var returned: [Int: Int] = [:]

    init(events: [TraceEvent]) {
        var operations = 0
        for event in events {
            switch event {
            case .operation: operations += 1
            case .began(let call): began[call] = operations
            case .returned(let call): returned[call] = operations
            case .checkpoint: break
            }
        }
    }

    /// What `key` may read after a power loss once `point` operations were issued.
    struct Expectation {
        var allowed: Set<String>
        var mayBeAbsent: Bool
    }

    /// The values `key` may read: its durable value (the checkpoint's, or with `.synchronized`
    /// the last `set` that returned) and any value written since; nothing, unless no value
    /// was durable or a later call (a removal, or any `.standard` rewrite) may have lost it.
    func expectation(for key: String, at point: Int, workload: Workload) -> Expectation {
        var current = workload.initial[key]
        var expectation = Expectation(allowed: Set([current].compactMap { $0 }), mayBeAbsent: current == nil)
        let synchronized = workload.durability == .synchronized
        for (number, call) in workload.calls.enumerated() where call.touches(key) {
            // A call that issued no operation before the crash did nothing.
            guard let start = began[number], start < point else { continue }
            let finished = (returned[number] ?? .max) <= point
            switch call {
            case .set(_, let value):
                if synchronized, finished {
                    expectation = Expectation(allowed: [value], mayBeAbsent: false)
                } else {
                    expectation.allowed.insert(value)
                    if !synchronized { expectation.mayBeAbsent = true }
                }
                current = value
            case .remove, .removeAll:
                expectation.mayBeAbsent = true
                current = nil
            case .lock, .refresh:
                // Rewrites the same value; unsynced, the rewrite may be lost or cut.
                if current != nil, !synchronized { expectation.mayBeAbsent = true }
            case .collectGarbage:
                break
            }
        }
        return expectation
    }
}

/// A folder for one recording or one crash state, in memory (`/dev/shm`) where there is one:
/// the states never need a disk, and syncs there cost nothing, so a CI run checks thousands.
final class ScratchFolder: Sendable {
    let url: URL
    var path: String { url.path }

    init() {
        // Below a symbolic link, as every TemporaryFolder is.
        let base = access("/dev/shm", W_OK) == 0 ? TemporaryFolder.linkedFolder(in: "/dev/shm") : TemporaryFolder.base
        url = base.appendingPathComponent(
            "cashier-powerloss-\(UUID().uuidString)", isDirectory: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}

extension FileManager {
    /// Every file's length in `folder`, by name; empty when the folder does not exist.
    func fileSizes(in folder: String) -> [String: Int] {
        var sizes: [String: Int] = [:]
        for name in (try? contentsOfDirectory(atPath: folder)) ?? [] {
            var st = stat()
            if lstat(folder + "/" + name, &st) == 0 { sizes[name] = Int(st.st_size) }
        }
        return sizes
    }
}
