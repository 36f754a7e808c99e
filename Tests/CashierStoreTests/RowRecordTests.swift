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

    /// A header as `EntryHeader` writes one: magic, version 2, lengths, timestamps, a checksum;
    /// then the key, the type name, the app version and the payload.
    private func entryFile(
        _ key: String, payload: [UInt8], created: Double, validated: Double, seed: UInt64, type: String = "User",
        appVersion: String = ""
    ) -> [UInt8] {
        var header = [UInt8](repeating: 0, count: 80)
        func put<T: FixedWidthInteger>(_ value: T, at offset: Int) {
            withUnsafeBytes(of: value.littleEndian) { header.replaceSubrange(offset..<offset + $0.count, with: $0) }
        }
        header.replaceSubrange(0..<4, with: Array("CSHR".utf8))
        put(UInt16(2), at: 4)
        put(UInt32(80 + key.utf8.count + type.utf8.count + appVersion.utf8.count), at: 8)
        header[12] = 1
        put(created.bitPattern, at: 16)
        put(validated.bitPattern, at: 24)
        put(UInt64(payload.count), at: 48)
        put(UInt32(key.utf8.count), at: 56)
        put(UInt32(type.utf8.count), at: 60)
        put(UInt32(appVersion.utf8.count), at: 64)
        var generator = SplitMix64(seed: seed)
        put(UInt64.random(in: 0...UInt64.max, using: &generator), at: 72)
        return header + Array(key.utf8) + Array(type.utf8) + Array(appVersion.utf8) + payload
    }

    /// A type name too long for a shape (``RowShape/maximumNamesLength``): its rows stay compact.
    private let unshapedType = String(repeating: "T", count: RowShape.maximumNamesLength + 1)

    @Test(arguments: [(1_764_000_000.25, 1_764_000_000.25), (1_764_000_000.1234, 1_764_009_999.5), (0, -1)])
    func anEntryFilesHeaderIsStoredCompactAndReadsBackVerbatim(_ created: Double, _ validated: Double) throws {
        let payload = (0..<187).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        for (index, key) in ["user-1", "ключ/🙂", String(repeating: "k", count: 3000)].enumerated() {
            let record = entryFile(
                key, payload: payload, created: created, validated: validated, seed: UInt64(index), type: unshapedType)
            try write(key, record)
            #expect(try store.record(for: key)?.record == record)
            let (location, length) = try stored(key)
            #expect(location == 3)
            // The key and at least half the header are not stored.
            #expect(length <= Int64(record.count - key.utf8.count - 40))
        }
        #expect(try store.entries().allSatisfy { $0.location == .row })
    }

    /// Records of one type and app version share a shape: their rows keep neither the type name
    /// nor the app version, and their headers little more than the checksum and created-at.
    @Test(arguments: [(1_764_000_000.25, 1_764_000_000.25), (1_764_000_000.1234, 1_764_009_999.5), (0, -1)])
    func recordsOfOneTypeShareAShapeAndReadBackVerbatim(_ created: Double, _ validated: Double) throws {
        let payload = (0..<187).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let names = [("User", ""), ("User", "1.0"), ("Feed", "1.0"), ("", "")]
        var written: [String: [UInt8]] = [:]
        for (index, key) in ["user-1", "ключ/🙂", String(repeating: "k", count: 3000), "u"].enumerated() {
            for (type, appVersion) in names {
                let key = "\(key)/\(type)/\(appVersion)"
                let record = entryFile(
                    key, payload: payload, created: created + Double(index), validated: validated,
                    seed: UInt64(written.count), type: type, appVersion: appVersion)
                try write(key, record)
                written[key] = record
                let (location, length) = try stored(key)
                #expect(location == 4)
                // The key, the names and all but the id, map, checksum and times are not stored.
                #expect(length <= Int64(payload.count + 1 + 2 + 3 + 8 + 16))
            }
        }
        #expect(try shapes() == names.count)
        // Another connection, which has met no shape, reads them from the file.
        let other = try EntryStore(folder: folder.path)
        for (key, record) in written {
            #expect(try store.record(for: key)?.record == record)
            #expect(try other.record(for: key)?.record == record)
        }
        var passed = 0
        try other.forEachRecord { stored in
            #expect(stored.record == written[stored.entry.key])
            passed += 1
        }
        #expect(passed == written.count)
    }

    /// Rows of the `shape` table, read behind the store's back.
    private func shapes() throws -> Int64 {
        let raw = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadOnly)
        return try #require(try raw.integer("SELECT count(*) FROM shape"))
    }

    @Test func twoWritersOfOneTypeEachFindTheShapeTheOtherAdded() throws {
        let other = try EntryStore(folder: folder.path)
        let first = entryFile("a", payload: [1], created: 5, validated: 5, seed: 1)
        let second = entryFile("b", payload: [2], created: 6, validated: 6, seed: 2)
        try write("a", first)
        try other.upsert(StoreEntry(key: "b", location: .row, size: second.count, lastUse: 1), record: second)
        #expect(try shapes() == 1)
        #expect(try stored("b").location == 4)
        #expect(try store.record(for: "b")?.record == second)
        #expect(try other.record(for: "a")?.record == first)
    }

    @Test func aRowWhoseShapeIsMissingOrDamagedReadsAsDamageNeverATrap() throws {
        let record = entryFile("k", payload: [1, 2, 3], created: 5, validated: 5, seed: 1)
        try write("k", record)
        #expect(try stored("k").location == 4)
        let raw = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadWrite)
        for damage in [
            "UPDATE shape SET header = substr(header, 1, 79)", "UPDATE shape SET header = x'00'",
            "UPDATE shape SET names = zeroblob(2000)", "UPDATE shape SET id = 7", "DELETE FROM shape",
        ] {
            try raw.execute(damage)
            // A fresh connection, which has not met the shape before it was damaged.
            let fresh = try EntryStore(folder: folder.path)
            let read = try fresh.record(for: "k")
            #expect(read?.record != record, "\(damage)")
            #expect(read?.entry.location == .row)
        }
    }

    @Test func aCutShapedRowReadsAsDamageNeverATrap() throws {
        let record = entryFile("k", payload: [1, 2, 3], created: 5, validated: 5, seed: 1)
        try write("k", record)
        #expect(try stored("k").location == 4)
        let raw = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadWrite)
        for length in [0, 1, 2, 3, 4, 9, 12] {
            try raw.execute("UPDATE entry SET record = substr(record, 1, \(length)) WHERE key = 'k'")
            #expect(try store.record(for: "k")?.record != record)
        }
        // Ids that name no shape: zero, unterminated, beyond any id.
        for blob: [UInt8] in [[0x00], [0xFF, 0xFF, 0xFF], [0xFF, 0xFF, 0xFF, 0x7F, 0, 0], [0x80, 0x01]] {
            let hex = blob.map { String(format: "%02X", $0) }.joined()
            try raw.execute("UPDATE entry SET record = x'\(hex)' WHERE key = 'k'")
            #expect(try store.record(for: "k")?.record == blob)
        }
    }

    @Test func aStoreHoldingAllTheShapesItMayKeepsNewTypesCompact() throws {
        let raw = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadWrite)
        try raw.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(RowShape.maximumCount)) "
                + "INSERT INTO shape(names, header) SELECT CAST(i AS BLOB), zeroblob(80) FROM n")
        let record = entryFile("k", payload: [1, 2, 3], created: 5, validated: 5, seed: 1)
        try write("k", record)
        #expect(try stored("k").location == 3)
        #expect(try store.record(for: "k")?.record == record)
        #expect(try shapes() == Int64(RowShape.maximumCount))
    }

    @Test func aCutCompactRowReadsAsDamageNeverATrap() throws {
        let record = entryFile("k", payload: [1, 2, 3], created: 5, validated: 5, seed: 1, type: unshapedType)
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

    /// `keys(vouchedBy:)` sorts each entry out the same way whether it reads the key index alone
    /// (every shape vouched for) or every record's first bytes (a shape refused): shaped rows of
    /// accepted shapes vouched, other rows unread, large entries as files.
    @Test func keysSortEntriesOutByShapeWithOrWithoutReadingRecords() throws {
        for index in 0..<3 {
            try write("user-\(index)", entryFile("user-\(index)", payload: [1], created: 5, validated: 5, seed: 1))
            try write(
                "order-\(index)",
                entryFile("order-\(index)", payload: [2], created: 5, validated: 5, seed: 2, type: "Order"))
        }
        try write("compact", entryFile("compact", payload: [3], created: 5, validated: 5, seed: 3, type: unshapedType))
        try write("verbatim", [1, 2, 3])
        try write("large", [], location: .file)
        #expect(try stored("user-0").location == 4)
        #expect(try stored("compact").location == 3)
        let everyShape = try store.keys { _ in true }
        #expect(Set(everyShape.vouched) == ["user-0", "user-1", "user-2", "order-0", "order-1", "order-2"])
        #expect(Set(everyShape.unread) == ["compact", "verbatim"])
        #expect(everyShape.files == ["large"])
        var asked: [String] = []
        let noOrders = try store.keys { shape in
            let type = String(decoding: shape.names, as: UTF8.self)
            asked.append(type)
            return type != "Order"
        }
        #expect(Set(noOrders.vouched) == ["user-0", "user-1", "user-2"])
        #expect(Set(noOrders.unread) == ["order-0", "order-1", "order-2", "compact", "verbatim"])
        #expect(noOrders.files == ["large"])
        #expect(asked.count == Set(asked).count, "each shape is asked about once a listing")
    }

    @Test(arguments: [1, 3, 4])
    func anOlderStoreIsKeptAndMarkedTheCurrentVersion(_ version: Int) throws {
        let compact = entryFile("compact", payload: [1, 2, 3], created: 5, validated: 5, seed: 1, type: unshapedType)
        try write("old", [5])
        try write("compact", compact)
        try write("large", [], location: .file)
        let other = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadWrite)
        try other.execute("DROP INDEX entry_unshaped")
        try other.execute("CREATE INDEX entry_files ON entry(location, size) WHERE location = 1")
        if version < 4 { try other.execute("DROP TABLE shape") }
        if version < 3 { try other.execute("DROP TABLE ghost") }
        try other.execute("PRAGMA user_version = \(version)")
        // Read-only, as `cashier-tool` opens it: rows read, the file is unchanged.
        var readOnly = EntryStore.Options()
        readOnly.readOnly = true
        let reader = try EntryStore(folder: folder.path, options: readOnly)
        #expect(try reader.record(for: "compact")?.record == compact)
        // Without `entry_unshaped` the keys are listed all the same (SQLite scans the table).
        let listed = try reader.keys { _ in true }
        #expect(Set(listed.vouched + listed.unread) == ["old", "compact"])
        #expect(listed.files == ["large"])
        #expect(try reader.largeEntryKeys() == ["large"])
        #expect(try other.integer("PRAGMA user_version") == Int64(version))
        let reopened = try EntryStore(folder: folder.path)
        #expect(reopened.setAsideAtOpen == nil)
        #expect(try reopened.record(for: "old")?.record == [5])
        #expect(try reopened.record(for: "compact")?.record == compact)
        // Version 5 (`entry_unshaped`) is version 4's superset, 4 (the shape table) 3's, and 3
        // (the ghost table) 2's.
        #expect(try other.integer("PRAGMA user_version") == 5)
        #expect(try other.integer("SELECT count(*) FROM sqlite_schema WHERE name = 'entry_files'") == 0)
        #expect(try other.integer("SELECT count(*) FROM sqlite_schema WHERE name = 'entry_unshaped'") == 1)
        #expect(try reopened.largeEntryKeys() == ["large"])
        #expect(try reopened.keys { _ in true }.files == ["large"])
        let shaped = entryFile("new", payload: [4], created: 6, validated: 6, seed: 2)
        try reopened.upsert(StoreEntry(key: "new", location: .row, size: shaped.count, lastUse: 1), record: shaped)
        #expect(try reopened.record(for: "new")?.record == shaped)
        #expect(try stored("new").location == 4)
    }
}
