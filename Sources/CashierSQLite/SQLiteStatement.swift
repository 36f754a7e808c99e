/// A prepared statement: bind, step, read columns, reset.
///
/// Indexes are SQLite's: parameters from 1, columns from 0. ``bind(blob:at:)`` binds without
/// copying (`SQLITE_STATIC`): the bytes must stay valid until the statement is reset. A
/// statement is used inside ``run(_:)``, which resets it (bindings cleared) however its body
/// ends: a statement left mid-way would keep its read transaction (and the WAL snapshot) open.
package final class SQLiteStatement {
    private var handle: OpaquePointer?
    private let connection: OpaquePointer
    private let library: SQLiteLibrary
    package let sql: String

    init(_ handle: OpaquePointer, connection: OpaquePointer, library: SQLiteLibrary, sql: String) {
        self.handle = handle
        self.connection = connection
        self.library = library
        self.sql = sql
    }

    deinit { finalize() }

    /// Frees the statement; using it afterwards is a programming error.
    package func finalize() {
        guard let handle else { return }
        _ = library.finalize(handle)
        self.handle = nil
    }

    private func check(_ code: Int32, _ what: String) throws(SQLiteError) {
        guard code == SQLiteCode.ok else { throw failure(code, what) }
    }

    private func failure(_ code: Int32, _ what: String) -> SQLiteError {
        SQLiteError(code, on: connection, library: library, operation: "\(what): \(sql)")
    }

    /// Runs `body`, which binds and steps the statement, then resets it and clears its bindings,
    /// however `body` ends: the one way a statement is stepped, so none is left mid-way.
    package func run<R>(_ body: (SQLiteStatement) throws(SQLiteError) -> R) throws(SQLiteError) -> R {
        defer { reset() }
        return try body(self)
    }

    package func bind(_ value: Int64, at index: Int32) throws(SQLiteError) {
        try check(library.bindInt64(handle, index, value), "bind")
    }

    package func bind(_ value: Int64?, at index: Int32) throws(SQLiteError) {
        if let value { try bind(value, at: index) } else { try check(library.bindNull(handle, index), "bind") }
    }

    /// Binds bytes without copying them: keep them alive until ``run(_:)`` returns. An empty buffer binds an empty blob.
    package func bind(blob: UnsafeRawBufferPointer, at index: Int32) throws(SQLiteError) {
        // A nil pointer would bind NULL; an empty blob needs some valid address.
        let base = blob.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!
        try check(library.bindBlob64(handle, index, base, UInt64(blob.count), nil), "bind")
    }

    /// Binds a text, copied by SQLite (`SQLITE_TRANSIENT`).
    package func bind(_ text: String, at index: Int32) throws(SQLiteError) {
        var text = text
        let code = text.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                library.bindText(
                    handle, index, chars.baseAddress ?? UnsafePointer(bitPattern: 1)!, Int32(chars.count),
                    SQLiteStatement.transient)
            }
        }
        try check(code, "bind")
    }

    /// `SQLITE_TRANSIENT`, the destructor value -1: SQLite copies the value before returning.
    private static let transient = unsafeBitCast(-1 as Int, to: SQLiteLibrary.Destructor.self)

    /// Runs the statement one step: true when a row is ready, false when it finished.
    package func step() throws(SQLiteError) -> Bool {
        let code = library.step(handle)
        if code == SQLiteCode.row { return true }
        if code == SQLiteCode.done { return false }
        let error = failure(code, "step")
        _ = library.reset(handle)
        throw error
    }

    /// Makes the statement ready to run again and clears its bindings.
    private func reset() {
        _ = library.reset(handle)
        _ = library.clearBindings(handle)
    }

    package func int64(at column: Int32) -> Int64 { library.columnInt64(handle, column) }

    package func isNull(at column: Int32) -> Bool { library.columnType(handle, column) == SQLiteCode.typeNull }

    /// The column's bytes, copied (valid whatever happens to the statement next).
    package func blob(at column: Int32) -> [UInt8] {
        let pointer = library.columnBlob(handle, column)
        let count = Int(library.columnBytes(handle, column))
        guard let pointer, count > 0 else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// The column's bytes, valid only inside `body` (no copy).
    package func withBlob<R>(at column: Int32, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let pointer = library.columnBlob(handle, column)
        let count = Int(library.columnBytes(handle, column))
        return try body(UnsafeRawBufferPointer(start: count > 0 ? pointer : nil, count: pointer == nil ? 0 : count))
    }

    /// The column as text; bytes that are not UTF-8 are repaired (U+FFFD), never trusted.
    package func text(at column: Int32) -> String {
        let pointer = library.columnText(handle, column)
        let count = Int(library.columnBytes(handle, column))
        guard let pointer, count > 0 else { return "" }
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }
}
