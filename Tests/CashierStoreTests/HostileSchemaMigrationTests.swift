import CashierSQLite
import CashierStore
import CashierTestSupport
import Foundation
import Testing

/// A hostile review of schema 5's migration (`entry_unshaped` in place of `entry_files`, in one
/// `BEGIN IMMEDIATE` transaction) and of its exact schema check.
@Suite struct HostileSchemaMigrationTests {
    let folder = TemporaryFolder()

    init() throws { try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true) }

    static let rows = 300
    static let largeEntries = 3

    /// A store of `rows` small rows and `largeEntries` large entries, then turned into what a
    /// version 4 build left (`entry_files`, no `entry_unshaped`, user_version 4), every
    /// connection closed.
    private func makeVersionFourStore() throws {
        do {
            let store = try EntryStore(folder: folder.path)
            for index in 0..<Self.rows {
                let record = Array("row-\(index)".utf8)
                try store.upsert(
                    StoreEntry(key: "row-\(index)", location: .row, size: record.count, lastUse: 1), record: record)
            }
            for index in 0..<Self.largeEntries {
                try store.upsert(StoreEntry(key: "large-\(index)", location: .file, size: 1 << 20, lastUse: 1))
            }
        }
        let raw = try SQLiteConnection(path: folder.path + "/store.sqlite", flags: SQLiteCode.openReadWrite)
        try raw.execute("DROP INDEX entry_unshaped")
        try raw.execute("CREATE INDEX entry_files ON entry(location, size) WHERE location = 1")
        try raw.execute("PRAGMA user_version = 4")
    }

    private func schema() throws -> (version: Int64?, indexes: [String]) {
        let raw = try SQLiteConnection(path: folder.path + "/store.sqlite", flags: SQLiteCode.openReadOnly)
        let indexes = try raw.texts("SELECT name FROM sqlite_schema WHERE type = 'index' ORDER BY name")
        return (try raw.integer("PRAGMA user_version"), indexes)
    }

    /// Several openers at once on a version 4 store (each as a process opening the folder: a
    /// connection of its own), while `cashier-tool`'s read-only store, opened before, keeps
    /// listing: every opener migrates or finds the migration done, none sets the store aside,
    /// no row is lost, and the read-only store lists the same before and after.
    @Test func openersRacingOnAVersionFourStoreMigrateItOnceAndLoseNothing() throws {
        try makeVersionFourStore()
        var options = EntryStore.Options()
        options.readOnly = true
        let tool = try EntryStore(folder: folder.path, options: options)
        let before = try tool.keys { _ in true }
        #expect(before.files.count == Self.largeEntries)

        let openers = 6
        let outcomes = Outcomes()
        DispatchQueue.concurrentPerform(iterations: openers) { index in
            do {
                let store = try EntryStore(folder: folder.path)
                let record = Array("opener-\(index)".utf8)
                try store.upsert(
                    StoreEntry(key: "opener-\(index)", location: .row, size: record.count, lastUse: 2), record: record)
                let listed = try store.keys { _ in true }
                let all = listed.vouched.count + listed.unread.count + listed.files.count
                outcomes.add(store.setAsideAtOpen == nil && all >= Self.rows + Self.largeEntries ? "ok" : "lost \(all)")
            } catch {
                outcomes.add("\(error)")
            }
        }
        #expect(outcomes.all == Array(repeating: "ok", count: openers))
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/store.sqlite.damaged"))
        let (version, indexes) = try schema()
        #expect(version == 5)
        #expect(indexes.contains("entry_unshaped") && !indexes.contains("entry_files"), "\(indexes)")

        let after = try tool.keys { _ in true }
        #expect(Set(after.files) == Set(before.files))
        #expect(after.vouched.count + after.unread.count == Self.rows + openers)
        #expect(try tool.largeEntryKeys().count == Self.largeEntries)
        #expect(try EntryStore(folder: folder.path).count() == Self.rows + Self.largeEntries + openers)
    }

    /// An `entry_unshaped` whose SQL text is not this build's, however close: the store is not
    /// Cashier's as written, so it is set aside (a fresh store in its place, no crash), and a
    /// read-only open (the tool) refuses it without touching it.
    @Test(arguments: [
        "CREATE INDEX entry_unshaped ON entry(location, size) WHERE location != 5",
        "CREATE INDEX entry_unshaped ON entry(location, size) WHERE location = 1",
        "CREATE INDEX entry_unshaped ON entry(location, size) WHERE location <> 4",
        "CREATE INDEX entry_unshaped ON entry(location,size) WHERE location != 4",
        "CREATE INDEX entry_unshaped ON entry(key) WHERE location != 4",
        "CREATE UNIQUE INDEX entry_unshaped ON entry(id, location, size) WHERE location != 4",
    ])
    func aCraftedUnshapedIndexIsSetAside(_ sql: String) throws {
        for version in [4, 5] {
            try? FileManager.default.removeItem(atPath: folder.path + "/store.sqlite.damaged")
            do {
                let store = try EntryStore(folder: folder.path)
                let record = Array("value".utf8)
                try store.upsert(StoreEntry(key: "k", location: .row, size: record.count, lastUse: 1), record: record)
            }
            do {
                let raw = try SQLiteConnection(path: folder.path + "/store.sqlite", flags: SQLiteCode.openReadWrite)
                try raw.execute("DROP INDEX entry_unshaped")
                try raw.execute(sql)
                try raw.execute("PRAGMA user_version = \(version)")
            }
            var options = EntryStore.Options()
            options.readOnly = true
            #expect(throws: StoreError.self, "version \(version)") {
                try EntryStore(folder: folder.path, options: options)
            }
            let store = try EntryStore(folder: folder.path)
            #expect(store.setAsideAtOpen != nil, "version \(version)")
            #expect(try store.count() == 0)
            #expect(try schema().indexes.contains("entry_unshaped"))
        }
    }

    /// A store marked 4 that holds both indexes (what no build writes: a migration is one
    /// transaction) is not a store this build knows: set aside, never half-migrated.
    @Test func aVersionFourStoreWithBothIndexesIsSetAside() throws {
        do { _ = try EntryStore(folder: folder.path) }
        do {
            let raw = try SQLiteConnection(path: folder.path + "/store.sqlite", flags: SQLiteCode.openReadWrite)
            try raw.execute("CREATE INDEX entry_files ON entry(location, size) WHERE location = 1")
            try raw.execute("PRAGMA user_version = 4")
        }
        let store = try EntryStore(folder: folder.path)
        #expect(store.setAsideAtOpen != nil)
        #expect(try schema() == (5, ["entry_by_expiry", "entry_by_key", "entry_by_use", "entry_unshaped"]))
    }
}

/// What each opener of the race found. Invariant behind `@unchecked Sendable`: `lines` is read
/// and written only while `lock` is held.
private final class Outcomes: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []

    func add(_ line: String) { lock.withLock { lines.append(line) } }
    var all: [String] { lock.withLock { lines } }
}
