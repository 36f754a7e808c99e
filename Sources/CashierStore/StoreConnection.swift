import CashierSQLite

/// One connection of the store (the writer, or a pooled reader) with its hot statements held
/// directly, prepared on first use.
///
/// `SQLiteConnection.cached(_:)` finds a statement by hashing its text: for the upsert, about
/// 9,000 instructions a call, more than the raw C API spends on the whole bind (callgrind,
/// `CashierStoreBench ops`). Here a hot statement is an array slot.
///
/// Not `Sendable`: used by one call at a time (the writer under the store's write lock, a
/// reader while it is out of the pool).
final class StoreConnection {
    let sqlite: SQLiteConnection
    private var hot: [SQLiteStatement?] = Array(repeating: nil, count: HotStatement.allCases.count)

    init(_ sqlite: SQLiteConnection) { self.sqlite = sqlite }

    /// The prepared statement `which`, kept for the connection's life.
    func statement(_ which: HotStatement) throws(SQLiteError) -> SQLiteStatement {
        if let statement = hot[which.rawValue] { return statement }
        let statement = try sqlite.prepare(which.sql, persistent: true)
        hot[which.rawValue] = statement
        return statement
    }

    /// Runs the hot statement `which`, which returns one integer; nil when it returns no row.
    func integer(_ which: HotStatement) throws(SQLiteError) -> Int64? {
        let statement = try statement(which)
        defer { statement.reset() }
        return try statement.step() ? statement.int64(at: 0) : nil
    }

    func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement { try sqlite.prepare(sql) }
    func integer(_ sql: String) throws(SQLiteError) -> Int64? { try sqlite.integer(sql) }
    var changes: Int { sqlite.changes }
}

/// The statements of the hot paths: an array slot each in ``StoreConnection``.
enum HotStatement: Int, CaseIterable {
    case upsert, upsertOverRows, upsertOverUnlockedRows, record, entry, delete, begin, commit, rollback
    case touch, expired, evictionOrder, evict, setLocked, count, totalSize, fileBytes, dataVersion, keys, entries

    var sql: String {
        switch self {
        case .upsert: SQL.upsert
        case .upsertOverRows: SQL.upsertOverRows
        case .upsertOverUnlockedRows: SQL.upsertOverUnlockedRows
        case .record: SQL.record
        case .entry: SQL.entry
        case .delete: "DELETE FROM entry WHERE id = ?"
        case .begin: "BEGIN IMMEDIATE"
        case .commit: "COMMIT"
        case .rollback: "ROLLBACK"
        case .touch: SQL.touch
        case .expired: SQL.expired
        case .evictionOrder: SQL.evictionOrder
        case .evict:
            "DELETE FROM entry WHERE id IN "
                + "(SELECT id FROM entry WHERE locked = 0 ORDER BY last_use, size, id LIMIT ?)"
        case .setLocked: "UPDATE entry SET locked = ? WHERE key = ?"
        case .count: "SELECT count(*) FROM entry"
        case .totalSize: "SELECT total(size) FROM entry"
        case .fileBytes: "SELECT total(size) FROM entry WHERE location = 1"
        case .dataVersion: "PRAGMA data_version"
        case .keys: "SELECT key FROM entry ORDER BY key"
        case .entries: "SELECT \(SQL.columns) FROM entry"
        }
    }
}
