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
        let insert = try connection.cached("INSERT INTO t VALUES(?, ?, ?)")
        let bytes: [UInt8] = [0, 1, 2, 255]
        try bytes.withUnsafeBytes { raw in
            try insert.bind(-42, at: 1)
            try insert.bind("ké\u{0}y", at: 2)
            try insert.bind(blob: raw, at: 3)
            #expect(try insert.step() == false)
            insert.reset()
        }
        let select = try connection.cached("SELECT i, s, b FROM t")
        defer { select.reset() }
        #expect(try select.step())
        #expect(select.int64(at: 0) == -42)
        #expect(select.text(at: 1) == "ké\u{0}y")
        #expect(select.blob(at: 2) == bytes)
        #expect(try select.step() == false)
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
