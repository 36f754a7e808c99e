import CSQLite3
import Foundation

/// The baseline of issue 25: a key-value table driven through SQLite's C API directly, tuned
/// as SQLite's documentation recommends and as YYCache's manifest table is laid out.
///
/// `kv(key TEXT PRIMARY KEY, value BLOB, size INTEGER, last_use INTEGER)` (a rowid table with
/// the key's unique index, as YYCache's and URLCache's tables are), an index on `last_use` for
/// eviction, `journal_mode=WAL`, `synchronous=NORMAL` (a commit is not synced; the WAL is at
/// checkpoints), statements prepared once per connection and reused, one statement per call
/// (autocommit), bound without copies (`SQLITE_STATIC`). No wrapper library between the caller and C.
public final class SQLiteTable {
    public let path: String
    private let db: OpaquePointer
    private var prepared: [OpaquePointer] = []

    /// Opens (creating if needed) the table in the database file at `path`: what an app does on launch.
    /// `reclaimable`: a new file is made with `auto_vacuum = INCREMENTAL`, as Cashier's store is,
    /// so ``reclaim()`` can give freed pages back to the file system.
    public init(path: String, reclaimable: Bool = false) {
        self.path = path
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &handle, flags, nil)
        precondition(code == SQLITE_OK && handle != nil, "sqlite3_open_v2(\(path)): \(code)")
        db = handle!
        // Chosen before the first table; a no-op on a file that has one.
        if reclaimable { exec("PRAGMA auto_vacuum = INCREMENTAL") }
        exec("PRAGMA journal_mode = WAL")
        exec("PRAGMA synchronous = NORMAL")
        exec(
            "CREATE TABLE IF NOT EXISTS kv(key TEXT PRIMARY KEY, value BLOB NOT NULL, size INTEGER NOT NULL, "
                + "last_use INTEGER NOT NULL)")
        exec("CREATE INDEX IF NOT EXISTS kv_last_use ON kv(last_use)")
    }

    deinit {
        for statement in prepared { sqlite3_finalize(statement) }
        sqlite3_close_v2(db)
    }

    // The statements, each prepared the first time it is used, then held as a C program holds them.
    private lazy var upsertStatement = prepare(
        "INSERT INTO kv(key, value, size, last_use) VALUES(?1, ?2, ?3, ?4) ON CONFLICT(key) DO UPDATE SET "
            + "value = excluded.value, size = excluded.size, last_use = excluded.last_use")
    private lazy var readStatement = prepare("SELECT value FROM kv WHERE key = ?1")
    private lazy var sumStatement = prepare("SELECT SUM(size) FROM kv")
    private lazy var countStatement = prepare("SELECT count(*) FROM kv")
    private lazy var keysStatement = prepare("SELECT key FROM kv ORDER BY key")
    private lazy var deleteStatement = prepare("DELETE FROM kv WHERE key = ?1")
    private lazy var evictStatement = prepare(
        "DELETE FROM kv WHERE key IN (SELECT key FROM kv ORDER BY last_use LIMIT ?1)")

    /// Inserts or replaces the row of `key`: one statement, its own transaction.
    public func upsert(_ key: String, _ value: Data, lastUse: Int64) {
        let statement = upsertStatement
        var key = key
        key.withUTF8 { key in
            value.withUnsafeBytes { value in
                _ = key.withMemoryRebound(to: CChar.self) {
                    sqlite3_bind_text(statement, 1, $0.baseAddress, Int32($0.count), nil)
                }
                sqlite3_bind_blob(statement, 2, value.baseAddress, Int32(value.count), nil)
                sqlite3_bind_int64(statement, 3, Int64(value.count))
                sqlite3_bind_int64(statement, 4, lastUse)
                let code = sqlite3_step(statement)
                sqlite3_reset(statement)
                precondition(code == SQLITE_DONE, "upsert: \(message)")
            }
        }
    }

    /// The value of `key`, copied out of SQLite's page, or nil.
    public func value(for key: String) -> Data? {
        let statement = readStatement
        var key = key
        return key.withUTF8 { key -> Data? in
            _ = key.withMemoryRebound(to: CChar.self) {
                sqlite3_bind_text(statement, 1, $0.baseAddress, Int32($0.count), nil)
            }
            defer { sqlite3_reset(statement) }
            guard sqlite3_step(statement) == SQLITE_ROW else { return nil }
            let count = Int(sqlite3_column_bytes(statement, 0))
            guard let bytes = sqlite3_column_blob(statement, 0) else { return Data() }
            return Data(bytes: bytes, count: count)
        }
    }

    /// `SELECT SUM(size)`: the bytes the table's values hold.
    public func totalSize() -> Int {
        integer(sumStatement)
    }

    /// `SELECT count(*)`.
    public func count() -> Int {
        integer(countStatement)
    }

    /// Every key, sorted (as `Cache.keys` is).
    public func keys() -> [String] {
        let statement = keysStatement
        defer { sqlite3_reset(statement) }
        var keys: [String] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            let count = Int(sqlite3_column_bytes(statement, 0))
            keys.append(
                String(
                    decoding: UnsafeRawBufferPointer(start: sqlite3_column_text(statement, 0), count: count),
                    as: UTF8.self))
        }
        return keys
    }

    /// Deletes the row of `key`: one statement, its own transaction.
    public func delete(_ key: String) {
        let statement = deleteStatement
        var key = key
        let code = key.withUTF8 { key in
            _ = key.withMemoryRebound(to: CChar.self) {
                sqlite3_bind_text(statement, 1, $0.baseAddress, Int32($0.count), nil)
            }
            return sqlite3_step(statement)
        }
        sqlite3_reset(statement)
        precondition(code == SQLITE_DONE, "delete: \(message)")
    }

    /// Deletes the `count` least recently used rows, in the index's order, in one statement.
    public func evictOldest(_ count: Int) {
        let statement = evictStatement
        sqlite3_bind_int64(statement, 1, Int64(count))
        let code = sqlite3_step(statement)
        sqlite3_reset(statement)
        precondition(code == SQLITE_DONE, "evict: \(message)")
    }

    /// Gives the free pages back to the file system and checkpoints the WAL into the file,
    /// truncating it: what Cashier's sweep does after it evicts, so the folder shrinks.
    public func reclaim() {
        exec("PRAGMA incremental_vacuum")
        exec("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    /// Rows `keyPrefix0`… with `value`, `last_use` their index, in one transaction (a fixture, not timed).
    public func fill(count: Int, value: Data, keyPrefix: String = "user-") {
        exec("BEGIN")
        for index in 0..<count { upsert("\(keyPrefix)\(index)", value, lastUse: Int64(index)) }
        exec("COMMIT")
    }

    /// Runs `sql` to its end, ignoring rows (pragmas, schema, transactions).
    public func exec(_ sql: String) {
        var error: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(db, sql, nil, nil, &error)
        defer { sqlite3_free(error) }
        precondition(code == SQLITE_OK, "\(sql): \(error.map { String(cString: $0) } ?? "\(code)")")
    }

    private var message: String { String(cString: sqlite3_errmsg(db)) }

    private func prepare(_ sql: String) -> OpaquePointer {
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        precondition(code == SQLITE_OK && statement != nil, "\(sql): \(message)")
        prepared.append(statement!)
        return statement!
    }

    private func integer(_ statement: OpaquePointer) -> Int {
        defer { sqlite3_reset(statement) }
        precondition(sqlite3_step(statement) == SQLITE_ROW, message)
        return Int(sqlite3_column_int64(statement, 0))
    }
}
