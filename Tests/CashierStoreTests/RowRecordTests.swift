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

    /// A header as `EntryHeader` writes one: magic, version 2, lengths, timestamps, a checksum.
    private func entryFile(_ key: String, payload: [UInt8], created: Double, validated: Double, seed: UInt64)
        -> [UInt8]
    {
        var header = [UInt8](repeating: 0, count: 80)
        func put<T: FixedWidthInteger>(_ value: T, at offset: Int) {
            withUnsafeBytes(of: value.littleEndian) { header.replaceSubrange(offset..<offset + $0.count, with: $0) }
        }
        header.replaceSubrange(0..<4, with: Array("CSHR".utf8))
        put(UInt16(2), at: 4)
        put(UInt32(80 + key.utf8.count + 4), at: 8)
        header[12] = 1
        put(created.bitPattern, at: 16)
        put(validated.bitPattern, at: 24)
        put(UInt64(payload.count), at: 48)
        put(UInt32(key.utf8.count), at: 56)
        put(UInt32(4), at: 60)
        var generator = SplitMix64(seed: seed)
        put(UInt64.random(in: 0...UInt64.max, using: &generator), at: 72)
        return header + Array(key.utf8) + Array("User".utf8) + payload
    }

    @Test(arguments: [(1_764_000_000.25, 1_764_000_000.25), (1_764_000_000.1234, 1_764_009_999.5), (0, -1)])
    func anEntryFilesHeaderIsStoredCompactAndReadsBackVerbatim(_ created: Double, _ validated: Double) throws {
        let payload = (0..<187).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        for (index, key) in ["user-1", "ключ/🙂", String(repeating: "k", count: 3000)].enumerated() {
            let record = entryFile(key, payload: payload, created: created, validated: validated, seed: UInt64(index))
            try write(key, record)
            #expect(try store.record(for: key)?.record == record)
            let (location, length) = try stored(key)
            #expect(location == 3)
            // The key and at least half the header are not stored.
            #expect(length <= Int64(record.count - key.utf8.count - 40))
        }
        #expect(try store.entries().allSatisfy { $0.location == .row })
    }

    @Test func aCutCompactRowReadsAsDamageNeverATrap() throws {
        let record = entryFile("k", payload: [1, 2, 3], created: 5, validated: 5, seed: 1)
        try write("k", record)
        #expect(try stored("k").location == 3)
        let raw = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadWrite)
        for length in [0, 1, 9, 10, 11, 20] {
            try raw.execute("UPDATE entry SET record = substr(record, 1, \(length)) WHERE key = 'k'")
            #expect(try store.record(for: "k")?.record != record)
        }
        try raw.execute("UPDATE entry SET record = x'FFFFFFFFFFFFFFFFFFFF' WHERE key = 'k'")
        #expect(try store.record(for: "k")?.record.count == 10)
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

    @Test func aVersionOneStoreIsKeptAndMarkedVersionThree() throws {
        try write("old", [5])
        let other = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadWrite)
        try other.execute("PRAGMA user_version = 1")
        let reopened = try EntryStore(folder: folder.path)
        #expect(reopened.setAsideAtOpen == nil)
        #expect(try reopened.record(for: "old")?.record == [5])
        // Version 3 (the ghost table of the frequency-aware eviction) is version 2's superset.
        #expect(try other.integer("PRAGMA user_version") == 3)
        try reopened.upsert(StoreEntry(key: "new", location: .row, size: 90, lastUse: 1), record: fileLayout("new"))
        #expect(try reopened.record(for: "new")?.record == fileLayout("new"))
    }
}
