import CashierSQLite
import CashierStore
import CashierStoreSupport
import CashierTestSupport
import Foundation
import Testing

/// A hostile reviewer's tests of the compaction a sweep ends with (`EntryStore.compact(afterRemoving:)`,
/// commit f905f99): it moves the rows with the lowest ids to the end of the table
/// (`UPDATE entry SET id = ?1 WHERE id = ?2`).
@Suite struct HostileCompactionTests {
    let folder = TemporaryFolder()
    let store: EntryStore

    init() throws {
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        store = try EntryStore(folder: folder.path)
    }

    private func write(_ key: String, size: Int = 10, at time: Int64, frequency: Int = 0) throws {
        try store.upsert(
            StoreEntry(key: key, location: .row, size: size, lastUse: time, frequency: frequency), record: [1])
    }

    private func ids() throws -> [String: Int64] {
        let raw = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadOnly)
        return try raw.run("SELECT key, id FROM entry") { query throws(SQLiteError) in
            var found: [String: Int64] = [:]
            while try query.step() { found[query.text(at: 0)] = query.int64(at: 1) }
            return found
        }
    }

    /// Compaction moves rows, never loses or duplicates one, whatever the span: every key keeps
    /// its row, its record and its metadata, and the ids stay unique.
    @Test func compactionNeitherLosesNorDuplicatesARow() throws {
        var expected: [String: StoreEntry] = [:]
        for index in 0..<600 {
            let entry = StoreEntry(
                key: "k\(index)", location: .row, size: 10 + index % 7, lastUse: Int64(index / 3),
                expiry: index % 5 == 0 ? 10_000 : nil, frequency: index % 4)
            try store.upsert(entry, record: [UInt8(index % 256), 2, 3])
            expected[entry.key] = entry
        }
        for round in 0..<5 {
            let gone = expected.keys.sorted().enumerated().filter { ($0.offset + round) % 3 == 0 }.map(\.element)
            #expect(try store.remove(gone).count == gone.count)
            for key in gone { expected[key] = nil }
            try store.compact(afterRemoving: gone.count)
            #expect(try store.count() == expected.count)
            for (key, entry) in expected {
                let found = try #require(try store.record(for: key))
                #expect(found.entry == entry)
            }
            #expect(Set(try ids().values).count == expected.count)
        }
    }

    /// A damaged or hostile store file (one flipped bit in a rowid's varint is enough; SQLite's
    /// `cell_size_check` and defensive mode accept any rowid) with a row whose id is near the
    /// top of Int64: compaction leaves it alone (it computed `highest + 1` and trapped, killing the
    /// app at its next sweep). The store's contract: a hostile file does no more than fail a call.
    @Test(arguments: [Int64.max, Int64.max - 3])
    func compactionOfAStoreWhoseIDsReachTheTopDoesNotTrap(top: Int64) throws {
        for index in 0..<20 { try write("k\(index)", at: Int64(index)) }
        let raw = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadWrite)
        try raw.execute("UPDATE entry SET id = \(top) WHERE key = 'k19'")
        #expect(try store.remove(["k3", "k4"]).count == 2)
        // Throwing is fine; trapping is not.
        _ = try? store.compact(afterRemoving: 2)
        #expect(try store.count() == 18)
    }

    /// The same with a negative id (SQLite allows any 64-bit rowid), where `highest - lowest + 1`
    /// overflowed.
    @Test func compactionOfAStoreWithANegativeIDDoesNotTrap() throws {
        for index in 0..<20 { try write("k\(index)", at: Int64(index)) }
        let raw = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadWrite)
        try raw.execute("UPDATE entry SET id = -9223372036854775808 WHERE key = 'k0'")
        try raw.execute("UPDATE entry SET id = 9223372036854775000 WHERE key = 'k19'")
        #expect(try store.remove(["k3", "k4"]).count == 2)
        _ = try? store.compact(afterRemoving: 2)
        #expect(try store.count() == 18)
    }

    /// Another process holding the store's write lock: compaction waits for nothing (deadline 0)
    /// and moves nothing; the store stays as it was.
    @Test func compactionGivesWayToAnotherProcesssWriter() throws {
        for index in 0..<20 { try write("k\(index)", at: Int64(index)) }
        #expect(try store.remove(["k3", "k4"]).count == 2)
        let before = try ids()
        let other = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadWrite)
        try other.execute("BEGIN IMMEDIATE")
        let started = Date()
        #expect(throws: StoreError.self) { try store.compact(afterRemoving: 2) }
        #expect(Date().timeIntervalSince(started) < 1)
        try other.execute("ROLLBACK")
        #expect(try ids() == before)
    }
}

/// The ghost's counter at the top of its ids.
@Suite struct HostileCompactionCostTests {
    let folder = TemporaryFolder()
    let store: EntryStore

    init() throws {
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        store = try EntryStore(folder: folder.path)
    }

    /// A ghost row whose id is Int64.max (a hostile or damaged file): the next frequency-aware
    /// eviction of a new entry forgets the ghost instead of computing `max(id) + 1`, which trapped.
    @Test func aGhostAtTheTopOfItsIDsDoesNotTrapAnEviction() throws {
        for index in 0..<10 {
            try store.upsert(StoreEntry(key: "k\(index)", location: .row, size: 10, lastUse: Int64(index)), record: [1])
        }
        let raw = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadWrite)
        try raw.execute("INSERT INTO ghost(key, id) VALUES('gone', 9223372036854775807)")
        _ = try? store.remove(
            unchanged: [StoreEntry(key: "k0", location: .row, size: 10, lastUse: 0)], evictedIn: .frequencyAware)
        #expect(try store.count() == 9)
    }
}
