import CashierSQLite
import Foundation

/// The baseline: a key-value table driven through SQLite's C functions directly, as
/// YYCache's manifest table and a documentation-tuned table are (WAL, `synchronous=NORMAL`,
/// prepared statements, one statement per call, an index on the last use for eviction).
/// No wrapper classes: each call is the C function through its pointer.
final class RawSQLite {
    let c: SQLiteLibrary
    let db: OpaquePointer
    private var statements: [String: OpaquePointer] = [:]

    init(path: String) {
        c = try! SQLiteLibrary.shared.get()
        var handle: OpaquePointer?
        let flags = SQLiteCode.openReadWrite | SQLiteCode.openCreate | SQLiteCode.openNoMutex
        precondition(c.openV2(path, &handle, flags, nil) == SQLiteCode.ok)
        db = handle!
        exec("PRAGMA journal_mode = WAL")
        exec("PRAGMA synchronous = NORMAL")
        exec(
            "CREATE TABLE IF NOT EXISTS kv(key TEXT PRIMARY KEY, value BLOB NOT NULL, size INTEGER NOT NULL, "
                + "last_use INTEGER NOT NULL)")
        exec("CREATE INDEX IF NOT EXISTS kv_last_use ON kv(last_use)")
    }

    deinit {
        for statement in statements.values { _ = c.finalize(statement) }
        _ = c.closeV2(db)
    }

    func exec(_ sql: String) {
        let statement = prepare(sql)
        while c.step(statement) == SQLiteCode.row {}
        _ = c.reset(statement)
    }

    func prepare(_ sql: String) -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        let code = c.prepareV3(db, sql, -1, SQLiteCode.preparePersistent, &statement, nil)
        precondition(code == SQLiteCode.ok, String(cString: c.errmsg(db)!))
        statements[sql] = statement!
        return statement!
    }

    private func bindKey(_ statement: OpaquePointer, _ index: Int32, _ key: String) {
        var key = key
        key.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) {
                _ = c.bindText(statement, index, $0.baseAddress, Int32($0.count), transient)
            }
        }
    }

    // The hot statements are held as a C program holds them: a pointer each, no lookup.
    private lazy var upsertStatement = prepare(
        "INSERT INTO kv(key, value, size, last_use) VALUES(?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
            + "value = excluded.value, size = excluded.size, last_use = excluded.last_use")
    private lazy var readStatement = prepare("SELECT value FROM kv WHERE key = ?")

    func upsert(_ key: String, _ value: [UInt8], lastUse: Int64) {
        let statement = upsertStatement
        bindKey(statement, 1, key)
        value.withUnsafeBytes { _ = c.bindBlob64(statement, 2, $0.baseAddress, UInt64($0.count), nil) }
        _ = c.bindInt64(statement, 3, Int64(value.count))
        _ = c.bindInt64(statement, 4, lastUse)
        precondition(c.step(statement) == SQLiteCode.done)
        _ = c.reset(statement)
    }

    func read(_ key: String) -> [UInt8]? {
        let statement = readStatement
        bindKey(statement, 1, key)
        defer { _ = c.reset(statement) }
        guard c.step(statement) == SQLiteCode.row else { return nil }
        let count = Int(c.columnBytes(statement, 0))
        return [UInt8](UnsafeRawBufferPointer(start: c.columnBlob(statement, 0), count: count))
    }

    func totalSize() -> Int64 {
        let statement = prepare("SELECT SUM(size) FROM kv")
        defer { _ = c.reset(statement) }
        precondition(c.step(statement) == SQLiteCode.row)
        return c.columnInt64(statement, 0)
    }

    func count() -> Int64 {
        let statement = prepare("SELECT count(*) FROM kv")
        defer { _ = c.reset(statement) }
        precondition(c.step(statement) == SQLiteCode.row)
        return c.columnInt64(statement, 0)
    }

    func keys() -> [String] {
        let statement = prepare("SELECT key FROM kv ORDER BY key")
        defer { _ = c.reset(statement) }
        var keys: [String] = []
        while c.step(statement) == SQLiteCode.row {
            let count = Int(c.columnBytes(statement, 0))
            keys.append(
                String(decoding: UnsafeBufferPointer(start: c.columnText(statement, 0), count: count), as: UTF8.self))
        }
        return keys
    }

    /// Deletes the `count` least recently used rows by the index, in one statement.
    func evict(_ count: Int) {
        let statement = prepare("DELETE FROM kv WHERE key IN (SELECT key FROM kv ORDER BY last_use LIMIT ?)")
        _ = c.bindInt64(statement, 1, Int64(count))
        precondition(c.step(statement) == SQLiteCode.done)
        _ = c.reset(statement)
    }
}

private let transient = unsafeBitCast(-1 as Int, to: SQLiteLibrary.Destructor.self)
