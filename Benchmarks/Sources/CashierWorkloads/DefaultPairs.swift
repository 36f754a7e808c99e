import Cashier
import Foundation

/// The goals of issue 35: Cashier as users configure it, a folder-backed cache with its memory
/// tier on (``Scratch/configuration(memoryCountLimit:durability:diskSizeLimit:)`` with no
/// argument), against the same baselines as the rows with the memory tier off.
extension Pairs {
    /// Entries a fresh instance reads once each in the cold-read rows.
    static let coldEntries = 2_000

    /// A fresh default instance (opened untimed before each round) reads each of 2,000 entries
    /// once: every read misses memory, reads the store, decodes and fills memory. The baseline
    /// reads 2,000 JSON files.
    public static func defaultColdRead(_ scale: Scale) -> Pair {
        let entries = min(coldEntries, scale.storeEntries)
        let baselineFolder = Scratch("default-read-baseline")
        let folder = Scratch("default-read")
        let files = (0..<entries).map { baselineFolder.file("user-\($0).json") }
        for file in files { try? payload.write(to: file) }
        fill(folder, count: entries)
        let keys = (0..<entries).map { userKey($0 &* 7_919 % entries) }
        let order = (0..<entries).map { files[$0 &* 7_919 % entries] }
        var cache: Cache?
        return Pair(
            name: "default config: cold read, \(entries) entries once", baselineName: "Data(contentsOf:) + JSONDecoder",
            goal: .atMost(0.9),
            baseline: Workload(operations: entries) {
                let decoder = JSONDecoder()
                for file in order { consume(try? decoder.decode(User.self, from: Data(contentsOf: file))) }
            },
            cashier: Workload(operations: entries, prepare: { cache = freshDefaultCache(folder) }) {
                for key in keys { consume(cache!.value(for: key)) }
            },
            fixtures: [baselineFolder, folder])
    }

    /// The same cold reads against a SQLite table read through the C API (a point `SELECT`, then
    /// `JSONDecoder`), its connection opened untimed as the instance is.
    public static func defaultSQLiteColdRead(_ scale: Scale) -> Pair {
        let entries = min(coldEntries, scale.storeEntries)
        let tableFolder = Scratch("default-sqlite-read-baseline")
        let folder = Scratch("default-sqlite-read")
        SQLiteTable(path: tableFolder.file("kv.sqlite").path).fill(count: entries, value: payload)
        fill(folder, count: entries)
        let keys = (0..<entries).map { userKey($0 &* 7_919 % entries) }
        let names = (0..<entries).map { "user-\($0 &* 7_919 % entries)" }
        var cache: Cache?
        var table: SQLiteTable?
        return Pair(
            name: "default config: cold read, against SQLite",
            baselineName: "SQLite point SELECT (C API) + JSONDecoder",
            goal: .atMost(1.0),
            baseline: Workload(
                operations: entries, prepare: { table = SQLiteTable(path: tableFolder.file("kv.sqlite").path) }
            ) {
                let decoder = JSONDecoder()
                for name in names {
                    consume(table!.value(for: name).flatMap { try? decoder.decode(User.self, from: $0) })
                }
            },
            cashier: Workload(operations: entries, prepare: { cache = freshDefaultCache(folder) }) {
                for key in keys { consume(cache!.value(for: key)) }
            },
            fixtures: [tableFolder, folder])
    }

    /// `await value(for:fetch:)` on a memory hit against `value(for:)` on the same hits, both
    /// from one task (the task's start and end are timed on both sides).
    public static func fetchHit(_ scale: Scale) -> Pair {
        let keyCount = 100
        let operations = scale.times(100_000)
        let folder = Scratch("fetch-hit")
        let keys = (0..<keyCount).map(userKey)
        let cache = Cache(folder.configuration())
        for key in keys { try? cache.set(.sample, for: key) }
        cache.waitForBackgroundWork()
        return Pair(
            name: "default config: value(for:fetch:) on a memory hit", baselineName: "value(for:) on the same hits",
            goal: .atMost(2.0),
            baseline: Workload(operations: operations) {
                runInTask {
                    for index in 0..<operations { consume(cache.value(for: keys[index % keyCount])) }
                }
            },
            cashier: Workload(operations: operations) {
                runInTask {
                    for index in 0..<operations {
                        consume(try? await cache.value(for: keys[index % keyCount]) { User.sample })
                    }
                }
            },
            fixtures: [folder, cache])
    }

    /// `count` and `keys` of a fresh instance at `entries` entries (100,000 at full scale),
    /// against the table's own count and key listing through a fresh connection.
    public static func countAndKeys(_ scale: Scale) -> Pair {
        let entries = scale.storeEntries * 10
        let folder = Scratch("count-keys")
        let tableFolder = Scratch("count-keys-baseline")
        fill(folder, count: entries)
        let path = tableFolder.file("kv.sqlite").path
        SQLiteTable(path: path).fill(count: entries, value: payload)
        let operations = max(1, scale.times(5))
        return Pair(
            name: "default config: count + keys, fresh, \(entries) entries",
            baselineName: "SQLite count(*) + SELECT key (C API), fresh", goal: .atMost(2.0),
            baseline: Workload(operations: operations) {
                for _ in 0..<operations {
                    let table = SQLiteTable(path: path)
                    precondition(table.count() == entries && table.keys().count == entries)
                }
            },
            cashier: Workload(operations: operations) {
                for _ in 0..<operations {
                    let cache = Cache(folder.configuration())
                    precondition(cache.count == entries && cache.keys.count == entries)
                }
            },
            fixtures: [folder, tableFolder])
    }

    /// Removals of single keys from a folder of `storeEntries` entries, one after the other, then
    /// the background work they scheduled (`waitForBackgroundWork()`: reclaims of the store's
    /// space, one at a time), against the table's `DELETE` by key. `waitingEach`: each removal's
    /// background work is waited for before the next removal, as on a server where removals
    /// come one at a time (a shared tier's changes from elsewhere) and none shares a reclaim. The removed keys are written back, untimed,
    /// before each round. Not a goal of issue 35: the row that shows what a removal costs once
    /// its reclaim no longer checkpoints when it freed no page (goal as for writes, 1.2x).
    public static func defaultRemove(_ scale: Scale, waitingEach: Bool = false) -> Pair {
        let entries = scale.storeEntries
        let operations = min(entries, scale.times(waitingEach ? 250 : 1_000))
        let folder = Scratch("default-remove")
        let tableFolder = Scratch("default-remove-baseline")
        fill(folder, count: entries)
        let table = SQLiteTable(path: tableFolder.file("kv.sqlite").path)
        table.fill(count: entries, value: payload)
        let cache = Cache(folder.configuration())
        let keys = (0..<operations).map { userKey($0 &* 7_919 % entries) }
        let names = (0..<operations).map { "user-\($0 &* 7_919 % entries)" }
        return Pair(
            name: waitingEach
                ? "default config: remove one key, wait for its background work"
                : "default config: remove single keys, background work too",
            baselineName: "SQLite DELETE by key (C API)", goal: .atMost(1.2),
            baseline: Workload(
                operations: operations,
                prepare: { for name in names { table.upsert(name, payload, lastUse: 0) } }
            ) {
                for name in names { table.delete(name) }
            },
            cashier: Workload(
                operations: operations,
                prepare: {
                    for key in keys { try? cache.set(.sample, for: key) }
                    cache.waitForBackgroundWork()
                }
            ) {
                for key in keys {
                    cache.removeValue(for: key)
                    if waitingEach { cache.waitForBackgroundWork() }
                }
                cache.waitForBackgroundWork()
            },
            fixtures: [folder, tableFolder, table, cache])
    }

    /// A default instance on `folder`, its store opened before the timed reads begin.
    static func freshDefaultCache(_ folder: Scratch) -> Cache {
        let cache = Cache(folder.configuration())
        _ = cache.value(for: CacheKey<User>("absent-\(UUID().uuidString)", schemaVersion: 1))
        return cache
    }
}

/// Runs `body` in a task and waits for it: the one way a synchronous workload times async calls.
func runInTask(_ body: @escaping @Sendable () async -> Void) {
    let done = DispatchSemaphore(value: 0)
    Task {
        await body()
        done.signal()
    }
    done.wait()
}
