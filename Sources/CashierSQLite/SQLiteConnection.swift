/// One open SQLite database: statements, pragmas and errors, for one thread at a time.
///
/// Not `Sendable`: SQLite is opened with `SQLITE_OPEN_NOMUTEX` (multi-thread mode), so a
/// connection and its statements must be used by one thread at a time; the owner (the
/// store) keeps it behind its lock. The store keeps the statements it runs again (prepared
/// with `persistent: true`); ``run(_:_:)`` is for those run once.
package final class SQLiteConnection {
    package let library: SQLiteLibrary
    package let handle: OpaquePointer
    package let path: String

    /// Opens (and with `SQLiteCode.openCreate` creates) the database at `path`.
    ///
    /// Throws the library's failure when SQLite cannot be loaded, or SQLite's error.
    package init(path: String, flags: Int32, library given: SQLiteLibrary? = nil) throws(SQLiteError) {
        let library: SQLiteLibrary
        switch given.map({ Result<SQLiteLibrary, SQLiteError>.success($0) }) ?? SQLiteLibrary.shared {
        case .success(let loaded): library = loaded
        case .failure(let error): throw error
        }
        var database: OpaquePointer?
        let code = library.openV2(path, &database, flags, nil)
        guard code == SQLiteCode.ok, let database else {
            let error = SQLiteError(
                code: database.map { library.extendedErrcode($0) } ?? code,
                message: database.flatMap { library.errmsg($0) }.map { String(cString: $0) }
                    ?? library.errstr(code).map { String(cString: $0) } ?? "",
                operation: "open \(path)"
            )
            _ = library.closeV2(database)
            throw error
        }
        self.library = library
        self.handle = database
        self.path = path
    }

    deinit {
        // close_v2: a statement still alive elsewhere keeps the handle until it is finalized.
        _ = library.closeV2(handle)
    }

    /// The error SQLite holds for this connection after `code` came back from `operation`.
    package func error(_ code: Int32, _ operation: String) -> SQLiteError {
        SQLiteError(code, on: handle, library: library, operation: operation)
    }

    /// A new statement for `sql` (one statement; anything after the first is an error).
    package func prepare(_ sql: String, persistent: Bool = false) throws(SQLiteError) -> SQLiteStatement {
        var statement: OpaquePointer?
        var tail: UnsafePointer<CChar>?
        let code = sql.withCString { text in
            library.prepareV3(
                handle, text, -1, persistent ? SQLiteCode.preparePersistent : 0, &statement, &tail)
        }
        guard code == SQLiteCode.ok, let statement else { throw error(code, "prepare \(sql)") }
        return SQLiteStatement(statement, connection: handle, library: library, sql: sql)
    }

    /// Prepares `sql`, runs `body` with it (``SQLiteStatement/run(_:)``) and frees it: a
    /// statement run once.
    package func run<R>(_ sql: String, _ body: (SQLiteStatement) throws(SQLiteError) -> R) throws(SQLiteError) -> R {
        let statement = try prepare(sql)
        defer { statement.finalize() }
        return try statement.run(body)
    }

    /// Runs one statement to its end, ignoring any rows.
    package func execute(_ sql: String) throws(SQLiteError) {
        try run(sql) { statement throws(SQLiteError) in while try statement.step() {} }
    }

    /// Runs a statement that returns one integer (`PRAGMA page_count`), nil when it returns no row.
    package func integer(_ sql: String) throws(SQLiteError) -> Int64? {
        try run(sql) { statement throws(SQLiteError) in try statement.step() ? statement.int64(at: 0) : nil }
    }

    /// Runs a statement that returns one text (`PRAGMA journal_mode`), nil when it returns no row.
    package func text(_ sql: String) throws(SQLiteError) -> String? {
        try run(sql) { statement throws(SQLiteError) in try statement.step() ? statement.text(at: 0) : nil }
    }

    /// Runs a statement that returns texts, the first column of each row, in order.
    package func texts(_ sql: String) throws(SQLiteError) -> [String] {
        try run(sql) { statement throws(SQLiteError) in
            var texts: [String] = []
            while try statement.step() { texts.append(statement.text(at: 0)) }
            return texts
        }
    }

    /// How long a statement waits for another connection's lock before failing with `SQLITE_BUSY`.
    package func setBusyTimeout(milliseconds: Int32) throws(SQLiteError) {
        let code = library.busyTimeout(handle, milliseconds)
        guard code == SQLiteCode.ok else { throw error(code, "busy_timeout") }
    }

    /// Turns defensive mode on: no writes to the schema or to shadow tables by SQL, whatever a file says.
    package func enableDefensiveMode() throws(SQLiteError) {
        let (code, now) = library.dbConfig(handle, SQLiteCode.dbConfigDefensive, 1)
        guard code == SQLiteCode.ok, now == 1 else {
            throw code == SQLiteCode.ok
                ? SQLiteError(unavailable: "SQLITE_DBCONFIG_DEFENSIVE not supported") : error(code, "db_config")
        }
    }

    /// Keeps the last connection's close from checkpointing the log and deleting it
    /// (`SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`, SQLite 3.16): the files are as they were just before
    /// the close, which the caller may have noted. Throws where SQLite does not know the option.
    package func disableCheckpointOnClose() throws(SQLiteError) {
        let (code, now) = library.dbConfig(handle, SQLiteCode.dbConfigNoCheckpointOnClose, 1)
        guard code == SQLiteCode.ok, now == 1 else {
            throw code == SQLiteCode.ok
                ? SQLiteError(unavailable: "SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE not supported") : error(code, "db_config")
        }
    }

    /// Rows the last INSERT, UPDATE or DELETE changed.
    package var changes: Int { Int(library.changes(handle)) }

    /// The library's version number, 3_045_001 for 3.45.1.
    package var libraryVersion: Int32 { library.libversionNumber() }
}
