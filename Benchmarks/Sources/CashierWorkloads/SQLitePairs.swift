import Cashier
import Foundation

/// The goals of issue 25: Cashier against a SQLite key-value table (``SQLiteTable``, the raw
/// C API) doing the same operation at `scale.storeEntries` entries (10,000) of `User.sample`,
/// the same JSON bytes on both sides (`JSONEncoder`'s: 197 bytes with swift-corelibs-foundation).
/// Cashier runs with the memory tier off, so every call reaches its disk tier.
extension Pairs {
    /// The JSON both sides store: what `JSONEncoder` makes of `User.sample`.
    static let payload = try! JSONEncoder().encode(User.sample)

    /// A Cashier folder and a SQLite table, both holding `user-0`… `user-(entries - 1)`.
    private static func filledPair(_ label: String, entries: Int) -> (
        folder: Scratch, tableFolder: Scratch, SQLiteTable
    ) {
        let folder = Scratch("sqlite-\(label)")
        let tableFolder = Scratch("sqlite-\(label)-baseline")
        fill(folder, count: entries)
        let table = SQLiteTable(path: tableFolder.file("kv.sqlite").path)
        table.fill(count: entries, value: payload)
        return (folder, tableFolder, table)
    }

    /// Writes of keys neither side has seen into a folder of `storeEntries` entries (it grows by
    /// the writes of every round). The baseline encodes with `JSONEncoder`, then upserts.
    /// `asConfigured`: the default configuration's row (memory tier on, issue 35's goal).
    public static func sqliteWrite(_ scale: Scale, asConfigured: Bool = false) -> Pair {
        let entries = scale.storeEntries
        let operations = scale.times(asConfigured ? 2_000 : 1_000)
        let (folder, tableFolder, table) = filledPair(asConfigured ? "default-write" : "write", entries: entries)
        let cache = Cache(folder.configuration(memoryCountLimit: asConfigured ? nil : 0))
        let encoder = JSONEncoder()
        var next = (baseline: entries, cashier: entries)
        return Pair(
            name: asConfigured ? "default config: write, distinct keys" : "write, distinct keys, \(entries) entries",
            baselineName: "JSONEncoder + SQLite upsert (C API)", goal: .atMost(asConfigured ? 1.2 : 1.0),
            baseline: Workload(operations: operations) {
                for _ in 0..<operations {
                    table.upsert(
                        "user-\(next.baseline)", try! encoder.encode(User.sample), lastUse: Int64(next.baseline))
                    next.baseline += 1
                }
            },
            cashier: Workload(operations: operations) {
                for _ in 0..<operations {
                    try? cache.set(.sample, for: userKey(next.cashier))
                    next.cashier += 1
                }
            },
            fixtures: [folder, tableFolder, table, cache])
    }

    /// Writes of one key, again and again, in a folder of `storeEntries` entries.
    /// `asConfigured`: the default configuration's row (memory tier on, issue 35's goal).
    public static func sqliteOverwrite(_ scale: Scale, asConfigured: Bool = false) -> Pair {
        let entries = scale.storeEntries
        let operations = scale.times(asConfigured ? 2_000 : 1_000)
        let (folder, tableFolder, table) = filledPair(
            asConfigured ? "default-overwrite" : "overwrite", entries: entries)
        let cache = Cache(folder.configuration(memoryCountLimit: asConfigured ? nil : 0))
        let encoder = JSONEncoder()
        let key = userKey(entries / 2)
        let name = "user-\(entries / 2)"
        var use = Int64(entries)
        return Pair(
            name: asConfigured ? "default config: overwrite one key" : "overwrite one key, \(entries) entries",
            baselineName: "JSONEncoder + SQLite upsert (C API)", goal: .atMost(asConfigured ? 1.15 : 1.0),
            baseline: Workload(operations: operations) {
                for _ in 0..<operations {
                    table.upsert(name, try! encoder.encode(User.sample), lastUse: use)
                    use += 1
                }
            },
            cashier: Workload(operations: operations) {
                for _ in 0..<operations { try? cache.set(.sample, for: key) }
            },
            fixtures: [folder, tableFolder, table, cache])
    }

    /// Reads from disk, decoded, spread over the `storeEntries` keys (the same keys in the same
    /// order on both sides). The baseline: a point `SELECT`, then `JSONDecoder`.
    public static func sqliteColdRead(_ scale: Scale) -> Pair {
        let entries = scale.storeEntries
        let operations = scale.times(4_000)
        let (folder, tableFolder, table) = filledPair("read", entries: entries)
        let cache = Cache(folder.configuration(memoryCountLimit: 0))
        let decoder = JSONDecoder()
        // A stride coprime with the count: every key in turn, neighbours far apart.
        let order = (0..<entries).map { $0 &* 7_919 % entries }
        let keys = order.map(userKey)
        let names = order.map { "user-\($0)" }
        return Pair(
            name: "cold read, decoded, \(entries) entries", baselineName: "SQLite point SELECT (C API) + JSONDecoder",
            goal: .atMost(0.6),
            baseline: Workload(operations: operations) {
                for index in 0..<operations {
                    consume(
                        table.value(for: names[index % entries]).flatMap { try? decoder.decode(User.self, from: $0) })
                }
            },
            cashier: Workload(operations: operations) {
                for index in 0..<operations { consume(cache.value(for: keys[index % entries])) }
            },
            fixtures: [folder, tableFolder, table, cache])
    }

    /// `totalSize` of a fresh instance on a folder of `storeEntries` entries, against a fresh
    /// connection (open, the same pragmas and schema statements, `SELECT SUM(size)`, close).
    /// No other connection stays open, as no other Cashier instance does: each open sets up
    /// the WAL and each close takes it down, as in a process that starts.
    public static func sqliteTotalSize(_ scale: Scale) -> Pair {
        let entries = scale.storeEntries
        let operations = scale.times(10)
        let (folder, tableFolder, path) = { () -> (Scratch, Scratch, String) in
            let (folder, tableFolder, table) = filledPair("size", entries: entries)
            return (folder, tableFolder, table.path)
        }()
        let expected = entries * payload.count
        return Pair(
            name: "totalSize, fresh instance, \(entries) entries",
            baselineName: "fresh SQLite connection + SELECT SUM(size)", goal: .atMost(1.0),
            baseline: Workload(operations: operations) {
                for _ in 0..<operations {
                    let total = SQLiteTable(path: path).totalSize()
                    precondition(total == expected, "SUM(size) \(total), not \(expected)")
                }
            },
            cashier: Workload(operations: operations) {
                for _ in 0..<operations { precondition(Cache(folder.configuration()).totalSize > 0) }
            },
            fixtures: [folder, tableFolder])
    }

    /// Half of `storeEntries` entries evicted by the size limit. Each round starts from a full
    /// folder (refilled untimed, the instance opened and its totals loaded), then one write
    /// past the limit and the sweep it starts, waited for. The baseline: the same write, then
    /// one `DELETE` of the oldest half by the `last_use` index. Times are for the whole eviction.
    ///
    /// `reclaiming` (a reference row, not a goal): the baseline also does the rest of what
    /// Cashier's sweep does and issue 25 asks of it, giving the freed pages back to the file
    /// system and checkpointing (`incremental_vacuum`, `wal_checkpoint(TRUNCATE)`, on a table
    /// made with `auto_vacuum = INCREMENTAL`); without it the table's file keeps its size.
    public static func sqliteEvictHalf(_ scale: Scale, reclaiming: Bool = false) -> Pair {
        let entries = scale.storeEntries
        let victims = entries / 2
        let folder = Scratch("sqlite-evict")
        let tableFolder = Scratch("sqlite-evict-baseline")
        let table = SQLiteTable(path: tableFolder.file("kv.sqlite").path, reclaimable: reclaiming)
        let encoder = JSONEncoder()
        var cache: Cache?
        var limit: Int?
        let reclaim = reclaiming ? " + vacuum + checkpoint" : ""
        var pair = Pair(
            name: "evict half of \(entries) entries (whole)\(reclaiming ? ", pages back" : "")",
            baselineName: "SQLite DELETE of the oldest half by index\(reclaim) (C API)", goal: .atMost(1.0),
            baseline: Workload(
                operations: 1,
                prepare: {
                    table.exec("DELETE FROM kv")
                    table.fill(count: entries - 1, value: payload)
                }
            ) {
                table.upsert("user-\(entries)", try! encoder.encode(User.sample), lastUse: Int64(entries))
                table.evictOldest(victims)
                if reclaiming { table.reclaim() }
            },
            cashier: Workload(
                operations: 1,
                prepare: {
                    cache = nil
                    try? FileManager.default.removeItem(at: folder.url)
                    fill(folder, count: entries - 1)
                    // A sweep over its limit by more than a tenth trims to 90% of it: this limit
                    // leaves half the entries.
                    let limitBytes = limit ?? Int(Double(Cache(folder.configuration()).totalSize) / 2 / 0.9)
                    limit = limitBytes
                    cache = Cache(folder.configuration(memoryCountLimit: 0, diskSizeLimit: limitBytes))
                    precondition(cache!.totalSize > limitBytes)
                }
            ) {
                try? cache!.set(.sample, for: userKey(entries)) // schedules the sweep, off this thread
                cache!.waitForBackgroundWork()
                precondition(cache!.count <= entries * 6 / 10, "the sweep did not trim the folder by half")
            },
            fixtures: [folder, tableFolder, table])
        pair.isReference = reclaiming
        return pair
    }
}
