import CashierSQLite
import CashierStore
import CashierTestSupport
import Foundation
import Testing

/// A record laid out as an entry file (80-byte header, then the key) is kept without the key,
/// which its row holds already; every read gives back the bytes written.
@Suite struct RowRecordTests {
    let folder = TemporaryFolder()
    let store: EntryStore

    init() throws {
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        store = try EntryStore(folder: folder.path)
    }

    private func fileLayout(_ key: String, payload: [UInt8] = Array(repeating: 9, count: 187)) -> [UInt8] {
        (0..<80).map { UInt8($0) } + Array(key.utf8) + Array("User".utf8) + payload
    }

    private func write(_ key: String, _ record: [UInt8], location: StoreLocation = .row) throws {
        try store.upsert(StoreEntry(key: key, location: location, size: record.count, lastUse: 1), record: record)
    }

    /// `location` and the stored blob's length, read behind the store's back.
    private func stored(_ key: String) throws -> (location: Int64, length: Int64) {
        let raw = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadOnly)
        let escaped = key.replacingOccurrences(of: "'", with: "''")
        let location = try #require(try raw.integer("SELECT location FROM entry WHERE key = '\(escaped)'"))
        let length = try #require(try raw.integer("SELECT length(record) FROM entry WHERE key = '\(escaped)'"))
        return (location, length)
    }

    @Test(arguments: ["user-1", "ключ/🙂", String(repeating: "k", count: 5000)])
    func aRecordLaidOutAsAFileIsStoredWithoutItsKeyAndReadsBackVerbatim(_ key: String) throws {
        let record = fileLayout(key)
        try write(key, record)
        #expect(try store.record(for: key)?.record == record)
        #expect(try store.record(for: key)?.entry.location == .row)
        #expect(try stored(key) == (2, Int64(record.count - key.utf8.count)))
        #expect(try store.entries().first?.location == .row)
    }

    @Test func otherRecordsAreStoredVerbatim() throws {
        let short = [UInt8](repeating: 1, count: 79)
        let otherKey = fileLayout("someone-else")
        let emptyKey = fileLayout("")
        try write("short", short)
        try write("mine", otherKey)
        try write("", emptyKey)
        for (key, record) in [("short", short), ("mine", otherKey), ("", emptyKey)] {
            #expect(try store.record(for: key)?.record == record)
            #expect(try stored(key) == (0, Int64(record.count)))
        }
    }

    @Test func overwritesMoveBetweenVerbatimKeyElidedAndFileEntries() throws {
        try write("k", fileLayout("k"))
        #expect(try store.upsert(StoreEntry(key: "k", location: .row, size: 3, lastUse: 2), record: [1, 2, 3]) == nil)
        #expect(try store.record(for: "k")?.record == [1, 2, 3])
        try write("k", fileLayout("k", payload: [7]))
        // A key-elided row is a row: replacing it by a large entry leaves no file to remove.
        #expect(try store.upsert(StoreEntry(key: "k", location: .file, size: 1 << 20, lastUse: 3)) == nil)
        #expect(try store.record(for: "k")?.record == [])
        let replaced = try store.upsert(
            StoreEntry(key: "k", location: .row, size: 90, lastUse: 4), record: fileLayout("k"))
        #expect(replaced?.location == .file)
        #expect(try store.record(for: "k")?.record == fileLayout("k"))
        #expect(try store.count() == 1)
    }

    @Test func aDamagedMarkerGivesADifferentRecordNeverATrap() throws {
        let record = fileLayout("k")
        try write("k", record)
        try write("cut", [1, 2, 3])
        let raw = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadWrite)
        try raw.execute("UPDATE entry SET location = 0 WHERE key = 'k'")
        try raw.execute("UPDATE entry SET location = 2 WHERE key = 'cut'")
        // The caller's checksum sees the difference: a `.corrupt` miss.
        #expect(try store.record(for: "k")?.record != record)
        #expect(try store.record(for: "cut")?.record == [1, 2, 3])
    }

    @Test func aVersionOneStoreIsKeptAndMarkedVersionTwo() throws {
        try write("old", [5])
        let other = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadWrite)
        try other.execute("PRAGMA user_version = 1")
        let reopened = try EntryStore(folder: folder.path)
        #expect(reopened.setAsideAtOpen == nil)
        #expect(try reopened.record(for: "old")?.record == [5])
        #expect(try other.integer("PRAGMA user_version") == 2)
        try reopened.upsert(StoreEntry(key: "new", location: .row, size: 90, lastUse: 1), record: fileLayout("new"))
        #expect(try reopened.record(for: "new")?.record == fileLayout("new"))
    }
}
