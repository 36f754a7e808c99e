import CashierPlatform
import CashierSQLite
import CashierStore
import CashierStoreSupport
import CashierTestSupport
import Foundation
import Testing

/// A hostile reviewer's tests of the sweep's ghost update (`EntryStore.rememberEvicted`, commit
/// 2088311, and its fix for ids that are not integers, 0c4248a): it puts in only the newest `count / 2` of the evicted new keys and skips the
/// edge query when every old ghost key goes, claiming to leave exactly what the algorithm before
/// it left (every new key in, numbered in key order after the ghost's max id, then the oldest
/// trimmed). Each test runs two identical stores side by side: one sweeps as the store does, the
/// other removes the same rows without remembering them and applies the old algorithm,
/// copied below, through a raw connection. Ghost rows (ids and their types) and entry rows
/// (frequencies, ids) must match after every sweep.
@Suite struct HostileGhostTests {
    let folders = (TemporaryFolder(), TemporaryFolder())
    let stores: (swept: EntryStore, reference: EntryStore)
    let raws: (swept: SQLiteConnection, reference: SQLiteConnection)

    init() throws {
        for folder in [folders.0, folders.1] {
            try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        }
        stores = (try EntryStore(folder: folders.0.path), try EntryStore(folder: folders.1.path))
        raws = (
            try SQLiteConnection(path: stores.swept.path, flags: SQLiteCode.openReadWrite),
            try SQLiteConnection(path: stores.reference.path, flags: SQLiteCode.openReadWrite)
        )
    }

    /// `rememberEvicted` as it was before commit 2088311
    /// (`git show 2088311^:Sources/CashierStore/EntryStore+Eviction.swift`), on a raw connection, in a transaction of its own (after the rows went, as in the store's).
    static func rememberAsBefore(_ evicted: [StoreEntry], _ raw: SQLiteConnection) throws {
        try raw.execute("BEGIN IMMEDIATE")
        var (ghosts, newest) = try raw.run("SELECT count(*), ifnull(max(id), 0) FROM ghost") {
            census throws(SQLiteError) in
            try census.step() ? (census.int64(at: 0), census.int64(at: 1)) : (0, 0)
        }
        if newest < 0 || newest > Int64.max - Int64(evicted.count) - 1 {
            try raw.run("DELETE FROM ghost WHERE id <= ?") { forget throws(SQLiteError) in
                try forget.bind(Int64.max, at: 1)
                _ = try forget.step()
            }
            (ghosts, newest) = (0, 0)
        }
        var next = newest + 1
        for entry in evicted.filter({ $0.frequency == 0 }).sorted(by: { $0.key < $1.key }) {
            try raw.run("INSERT OR IGNORE INTO ghost(key, id) VALUES(?, ?)") { remember throws(SQLiteError) in
                try remember.bind(entry.key, at: 1)
                try remember.bind(next, at: 2)
                _ = try remember.step()
            }
            ghosts += Int64(raw.changes)
            next += 1
        }
        let entries = try raw.integer("SELECT count(*) FROM entry") ?? 0
        let excess = ghosts - entries / 2
        if excess > 0 {
            let edge = try raw.run("SELECT id FROM ghost ORDER BY id LIMIT 1 OFFSET ?") { edge throws(SQLiteError) in
                try edge.bind(excess - 1, at: 1)
                return try edge.step() ? edge.int64(at: 0) : nil
            }
            if let edge {
                for sql in [
                    "UPDATE entry SET frequency = 1 WHERE frequency = 0 AND key IN (SELECT key FROM ghost WHERE id <= ?)",
                    "DELETE FROM ghost WHERE id <= ?",
                ] {
                    try raw.run(sql) { statement throws(SQLiteError) in
                        try statement.bind(edge, at: 1)
                        _ = try statement.step()
                    }
                }
            }
        }
        try raw.execute("COMMIT")
    }

    static func ghost(_ raw: SQLiteConnection) throws -> [String] {
        try raw.texts("SELECT key || ' ' || quote(id) FROM ghost ORDER BY key")
    }

    static func entries(_ raw: SQLiteConnection) throws -> [String] {
        try raw.texts("SELECT key || ' f' || frequency || ' #' || id FROM entry ORDER BY key")
    }

    /// Runs `sql` with `key` and `id` bound on both stores' raw connections (damage written by hand).
    func damage(_ sql: String, key: String, id: Int64) throws {
        for raw in [raws.swept, raws.reference] {
            try raw.run(sql) { statement throws(SQLiteError) in
                try statement.bind(key, at: 1)
                try statement.bind(id, at: 2)
                _ = try statement.step()
            }
        }
    }

    func onBoth(_ body: (EntryStore) throws -> Void) throws {
        try body(stores.swept)
        try body(stores.reference)
    }

    /// One sweep down to `bytes` on each store: the store's own (new algorithm) on one, the same
    /// rows removed unremembered then the old algorithm on the other; both then compacted as a sweep
    /// is. Returns what each removed.
    @discardableResult
    func sweepBoth(downTo bytes: Int) throws -> (swept: [StoreEntry], reference: [StoreEntry]) {
        let swept = try stores.swept.evict(order: .frequencyAware, downTo: bytes)
        var left = try stores.reference.totalSize()
        var chosen: [StoreEntry] = []
        if left > bytes {
            try stores.reference.forEachEvictionCandidate(order: .frequencyAware) { entry in
                chosen.append(entry)
                left -= entry.size
                return left > bytes
            }
        }
        let removed = try stores.reference.remove(unchanged: chosen).removed
        if !removed.isEmpty { try Self.rememberAsBefore(removed, raws.reference) }
        try? stores.reference.compact(afterRemoving: removed.count)
        return (swept, removed)
    }

    /// What both stores hold, for comparison.
    func expectSame(_ note: @autoclosure () -> String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Bool
    {
        let ghosts = (try Self.ghost(raws.swept), try Self.ghost(raws.reference))
        let entries = (try Self.entries(raws.swept), try Self.entries(raws.reference))
        #expect(ghosts.0 == ghosts.1, "ghost differs \(note())", sourceLocation: sourceLocation)
        #expect(entries.0 == entries.1, "entries differ \(note())", sourceLocation: sourceLocation)
        return ghosts.0 == ghosts.1 && entries.0 == entries.1
    }

    static let keyPool: [String] =
        (0..<90).map { "k\($0)" } + ["é", "e\u{301}", "Z", "a", "", " ", "k1\u{0}x", "ß", "ss", "🙂"]

    /// Random stores through many sweeps: random keys (some canonically equal, some written again
    /// while in the ghost), sizes, ties in last use, locked and used entries, and (with `damaged`)
    /// ghost rows written by hand with duplicate, negative, zero or huge ids, or keys of live
    /// entries. The new update must leave what the old one left, sweep after sweep.
    @Test(arguments: 0..<60)
    func theGhostHoldsWhatTheOldAlgorithmLeftAfterEverySweep(seed: Int) throws {
        var random = SplitMix64(seed: UInt64(seed) &* 7919 &+ 11)
        let damaged = seed % 2 == 1
        for round in 0..<14 {
            let base = Int64(round * 10)
            let writes = Int.random(in: 1...(seed % 3 == 0 ? 120 : 40), using: &random)
            for _ in 0..<writes {
                let entry = StoreEntry(
                    key: Self.keyPool.randomElement(using: &random)!, location: .row,
                    size: Int.random(in: 1...(seed % 5 == 0 ? 300 : 20), using: &random),
                    lastUse: base + Int64.random(in: 0...2, using: &random),
                    isLocked: Int.random(in: 0..<12, using: &random) == 0)
                try onBoth { try $0.upsert(entry, record: [1]) }
            }
            let used = (0..<Int.random(in: 0...6, using: &random)).map { _ in
                Self.keyPool.randomElement(using: &random)!
            }
            try onBoth { try $0.recordUses(used, at: base + 5) }
            if damaged, Int.random(in: 0..<3, using: &random) == 0 {
                let newest = try raws.swept.integer("SELECT ifnull(max(id), 0) FROM ghost") ?? 0
                let existing = try raws.swept.texts("SELECT id FROM ghost").compactMap { Int64($0) }
                for _ in 0..<Int.random(in: 1...6, using: &random) {
                    let key =
                        Bool.random(using: &random)
                        ? Self.keyPool.randomElement(using: &random)! : "g\(Int.random(in: 0..<40, using: &random))"
                    let id: Int64 =
                        switch Int.random(in: 0..<7, using: &random) {
                        case 0: existing.randomElement(using: &random) ?? 1 // a duplicate id
                        case 1: -Int64.random(in: 1...1000, using: &random)
                        case 2: 0
                        case 3: newest + Int64.random(in: 1...5, using: &random)
                        case 4: Int64.max - Int64.random(in: 0...300, using: &random) // near the top: forgotten whole
                        case 5: Int64.min + Int64.random(in: 0...3, using: &random)
                        default: Int64.random(in: 1...max(1, newest), using: &random)
                        }
                    try damage("INSERT OR REPLACE INTO ghost(key, id) VALUES(?, ?)", key: key, id: id)
                }
            }
            let total = try stores.swept.totalSize()
            let target = Int(Double(total) * Double.random(in: 0...1, using: &random))
            let (swept, reference) = try sweepBoth(downTo: Int.random(in: 0..<8, using: &random) == 0 ? 0 : target)
            #expect(swept == reference, "round \(round): the sweeps chose differently")
            guard try expectSame("at seed \(seed), round \(round)") else { return }
        }
    }

    // MARK: Ghost ids that are not integers (a damaged or foreign file: `id INTEGER` has integer
    // affinity, so a REAL such as 2.5 or a TEXT such as 'x' is stored as it is).

    /// Writes `count` new entries of 10 bytes, keys `prefix`000…, at `time`.
    func writeNew(_ prefix: String, count: Int, at time: Int64) throws {
        for index in 0..<count {
            let entry = StoreEntry(key: String(format: "\(prefix)%03d", index), location: .row, size: 10, lastUse: time)
            try onBoth { try $0.upsert(entry, record: [1]) }
        }
    }

    /// A ghost id of 2.5: read as an integer, `max(id)` was 2, the shortcut took `id <= 2` for
    /// "every old key" and left 2.5 in the ghost, which the old algorithm's edge query (an id of
    /// the new keys) trimmed: the ghost ended over its share. The census now reads a newest id
    /// that is not an integer as -1, and the ghost is forgotten whole before the new keys go in.
    @Test func aFractionalGhostIdIsTrimmedAsTheOldAlgorithmTrimmedIt() throws {
        try damage("INSERT INTO ghost(key, id) VALUES(?, ?)", key: "g", id: 0)
        for raw in [raws.swept, raws.reference] { try raw.execute("UPDATE ghost SET id = 2.5 WHERE key = 'g'") }
        try writeNew("n", count: 20, at: 1)
        // 12 evicted (all new), 8 left: share 4; 12 new keys, the last 4 go in, and 'g' (the only
        // old key) goes.
        let (swept, reference) = try sweepBoth(downTo: 80)
        #expect(swept.count == 12 && swept == reference)
        // The old algorithm left the last 4 keys (numbered 11 to 14 after `max(id)` read as 2).
        #expect(try Self.ghost(raws.reference) == ["n008 11", "n009 12", "n010 13", "n011 14"])
        let keys = try raws.swept.texts("SELECT key FROM ghost ORDER BY key")
        let ghost = try Self.ghost(raws.swept)
        #expect(keys == ["n008", "n009", "n010", "n011"], "the ghost holds \(ghost)")
    }

    /// A ghost row whose id is TEXT: `max(id)` is that text, which read as 0, so every sweep
    /// numbered its keys from 1 and the shortcut's `id <= 0` forgot nothing: each sweep that
    /// evicted as many new keys as the share added them and trimmed none, and the ghost grew
    /// without bound (the old algorithm's edge query found an integer id and trimmed to the share
    /// or below). Now the ghost is forgotten whole, as the first test's.
    @Test func aTextGhostIdDoesNotLetTheGhostGrowPastItsShare() throws {
        try damage("INSERT INTO ghost(key, id) VALUES(?, ?)", key: "g", id: 0)
        for raw in [raws.swept, raws.reference] { try raw.execute("UPDATE ghost SET id = 'x' WHERE key = 'g'") }
        var counts: [Int64] = []
        for round in 0..<6 {
            try writeNew("r\(round)-", count: 40, at: Int64(10 * round + 1))
            try sweepBoth(downTo: 200) // 20 entries of 10 bytes left: share 10
            counts.append(try raws.swept.integer("SELECT count(*) FROM ghost") ?? -1)
        }
        // At most the share and the damaged row (the old algorithm, its ids colliding, kept fewer).
        #expect(counts.allSatisfy { $0 <= 11 }, "ghost sizes after each sweep: \(counts)")
    }

    // MARK: Several processes sweeping one store at once.

    /// Children sweep the store (`CashierStoreChild eviction FOLDER evict BYTES`, each a fresh
    /// process planning outside its transaction, so their victims overlap) while this process
    /// writes new entries and a few written again; at rest the ghost holds at most half as many
    /// keys as entries (each sweep trims to its own share; writes only add entries), each id once.
    @Test func sweepsOfSeveralProcessesKeepTheGhostWithinItsShare() throws {
        let store = stores.swept
        let path = folders.0.path
        let done = Locked(false)
        let sweeps = Locked(0)
        let group = DispatchGroup()
        for sweeper in 0..<2 {
            DispatchQueue.global().async(group: group) {
                var round = 0
                while !done.withLock({ $0 }) {
                    _ = try? EntryStoreEvictionTests.child(
                        path, "evict", String(4_000 + 1_000 * ((sweeper + round) % 3)))
                    sweeps.withLock { $0 += 1 }
                    round += 1
                }
            }
        }
        var index = 0
        while index < 2_500 || sweeps.withLock({ $0 }) < 12 {
            let key = index % 7 == 0 ? "k\(index / 3)" : "k\(index)"
            try store.upsert(
                StoreEntry(key: key, location: .row, size: 1 + index % 9, lastUse: Int64(index / 10)), record: [1])
            if index % 97 == 0 { try store.recordUses(["k\(index / 2)"], at: Int64(index / 10)) }
            index += 1
        }
        done.withLock { $0 = true }
        group.wait()
        let ghosts = try raws.swept.integer("SELECT count(*) FROM ghost") ?? -1
        let distinct = try raws.swept.integer("SELECT count(DISTINCT id) FROM ghost") ?? -1
        let entries = try store.count()
        #expect(ghosts > 0, "no sweep remembered anything: the test proves nothing")
        #expect(ghosts == distinct, "ghost ids repeat: \(ghosts) keys, \(distinct) ids")
        #expect(ghosts <= Int64(entries / 2), "ghost \(ghosts) keys for \(entries) entries")
    }
}
