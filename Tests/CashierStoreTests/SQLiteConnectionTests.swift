import CashierSQLite
import CashierTestSupport
import Foundation
import Testing

@Suite struct SQLiteConnectionTests {
    let folder = TemporaryFolder()

    init() throws { try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true) }

    @Test func libraryLoadsWithoutHeaders() throws {
        let library = try SQLiteLibrary.shared.get()
        #expect(library.libversionNumber() >= 3_031_000)
    }

    @Test func roundTripsIntegersTextAndBlobs() throws {
        let connection = try SQLiteConnection(
            path: folder.path + "/t.sqlite", flags: SQLiteCode.openReadWrite | SQLiteCode.openCreate)
        try connection.execute("CREATE TABLE t(i INTEGER, s TEXT, b BLOB)")
        let insert = try connection.prepare("INSERT INTO t VALUES(?, ?, ?)", persistent: true)
        let bytes: [UInt8] = [0, 1, 2, 255]
        for row in 0..<2 {
            try bytes.withUnsafeBytes { raw in
                try insert.run { insert throws(SQLiteError) in
                    try insert.bind(Int64(-42 - row), at: 1)
                    try insert.bind("ké\u{0}y", at: 2)
                    try insert.bind(blob: raw, at: 3)
                    #expect(try insert.step() == false)
                }
            }
        }
        let rows = try connection.run("SELECT i, s, b FROM t ORDER BY i DESC") { select throws(SQLiteError) in
            var rows: [(Int64, String, [UInt8])] = []
            while try select.step() { rows.append((select.int64(at: 0), select.text(at: 1), select.blob(at: 2))) }
            return rows
        }
        #expect(rows.map(\.0) == [-42, -43])
        #expect(rows.allSatisfy { $0.1 == "ké\u{0}y" && $0.2 == bytes })
    }

    /// A statement is reset when ``SQLiteStatement/run(_:)`` returns, even when its body throws
    /// mid-way: its read transaction ends, so a checkpoint can copy the whole log.
    @Test func runResetsAStatementLeftMidway() throws {
        let connection = try SQLiteConnection(
            path: folder.path + "/t.sqlite", flags: SQLiteCode.openReadWrite | SQLiteCode.openCreate)
        try connection.execute("PRAGMA journal_mode=WAL")
        try connection.execute("CREATE TABLE t(i INTEGER)")
        try connection.execute("INSERT INTO t VALUES(1), (2), (3)")
        let select = try connection.prepare("SELECT i FROM t", persistent: true)
        #expect(throws: SQLiteError.self) {
            try select.run { select throws(SQLiteError) in
                #expect(try select.step())
                throw SQLiteError(code: SQLiteCode.error, message: "stop", operation: "test")
            }
        }
        // Another connection writes; a statement still mid-way would pin the old snapshot.
        let other = try SQLiteConnection(path: folder.path + "/t.sqlite", flags: SQLiteCode.openReadWrite)
        try other.execute("INSERT INTO t VALUES(4)")
        #expect(try connection.integer("SELECT count(*) FROM t") == 4)
        // And the statement runs again from its first row.
        let first = try select.run { select throws(SQLiteError) in try select.step() ? select.int64(at: 0) : nil }
        #expect(first == 1)
    }

    @Test func errorsCarryCodeAndMessage() throws {
        let connection = try SQLiteConnection(
            path: folder.path + "/t.sqlite", flags: SQLiteCode.openReadWrite | SQLiteCode.openCreate)
        let error = #expect(throws: SQLiteError.self) { try connection.execute("SELECT * FROM missing") }
        #expect(error?.primaryCode == SQLiteCode.error)
        #expect(error?.message.contains("missing") == true)
    }

    @Test func defensiveModeTurnsOn() throws {
        let connection = try SQLiteConnection(
            path: folder.path + "/t.sqlite", flags: SQLiteCode.openReadWrite | SQLiteCode.openCreate)
        try connection.enableDefensiveMode()
        try connection.execute("CREATE TABLE t(i)")
        try connection.execute("PRAGMA writable_schema = ON")
        // Defensive mode refuses schema writes by SQL even with writable_schema.
        #expect(throws: SQLiteError.self) {
            try connection.execute("UPDATE sqlite_schema SET sql = 'x' WHERE name = 't'")
        }
    }
}
