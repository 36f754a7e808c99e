import Foundation

/// A failed SQLite call: its result code, SQLite's message and the operation that failed.
///
/// `code` is the extended result code (`SQLITE_CORRUPT_INDEX`, 779, not only `SQLITE_CORRUPT`,
/// 11); ``primaryCode`` is its low byte. A library that cannot be loaded is ``isUnavailable``.
package struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The extended result code; 0 when the library itself is unavailable.
    package let code: Int32
    /// SQLite's message (`sqlite3_errmsg`), or why the library could not be loaded.
    package let message: String
    /// What was being done: `open`, `prepare`, `step`, a statement's SQL.
    package let operation: String
    /// True when SQLite itself could not be loaded (no library, a missing function, too old).
    package let isUnavailable: Bool
    /// The `errno` of a file operation the store made itself inside a transaction (a large
    /// entry's rename or unlink), reported as `SQLITE_IOERR`; nil for SQLite's own errors.
    package let systemCode: Int32?

    package init(code: Int32, message: String, operation: String) {
        self.code = code
        self.message = message
        self.operation = operation
        isUnavailable = false
        systemCode = nil
    }

    /// The error SQLite holds for `connection` after `code` came back from `operation`.
    init(_ code: Int32, on connection: OpaquePointer, library: SQLiteLibrary, operation: String) {
        let extended = library.extendedErrcode(connection)
        // The connection's code can be stale when `code` came from elsewhere: prefer a matching one.
        self.init(
            code: extended & 0xff == code & 0xff ? extended : code,
            message: library.errmsg(connection).map { String(cString: $0) } ?? "", operation: operation)
    }

    /// A file operation of the store's own that failed with `errno` `systemCode`.
    package init(systemCode: Int32, operation: String) {
        code = SQLiteCode.ioError
        message = String(cString: strerror(systemCode))
        self.operation = operation
        isUnavailable = false
        self.systemCode = systemCode
    }

    package init(unavailable reason: String) {
        code = 0
        message = reason
        operation = "load SQLite"
        isUnavailable = true
        systemCode = nil
    }

    /// The primary result code, the low 8 bits of ``code``.
    package var primaryCode: Int32 { code & 0xff }

    /// The file is damaged or is not a database: what sets a store aside.
    package var isCorruption: Bool {
        primaryCode == SQLiteCode.corrupt || primaryCode == SQLiteCode.notADatabase
    }

    /// Another connection held a lock past the busy timeout.
    package var isBusy: Bool { primaryCode == SQLiteCode.busy || primaryCode == SQLiteCode.locked }

    package var description: String {
        isUnavailable ? "SQLite unavailable: \(message)" : "SQLite error \(code) in \(operation): \(message)"
    }
}

/// The SQLite result codes and constants the binding uses, as documented at sqlite.org/rescode.html.
package enum SQLiteCode {
    package static let ok: Int32 = 0
    package static let error: Int32 = 1
    package static let busy: Int32 = 5
    package static let locked: Int32 = 6
    package static let noMemory: Int32 = 7
    package static let readOnly: Int32 = 8
    package static let ioError: Int32 = 10
    package static let corrupt: Int32 = 11
    package static let full: Int32 = 13
    package static let cantOpen: Int32 = 14
    package static let schema: Int32 = 17
    package static let mismatch: Int32 = 20
    package static let auth: Int32 = 23
    package static let format: Int32 = 24
    package static let permission: Int32 = 3
    package static let notADatabase: Int32 = 26
    package static let row: Int32 = 100
    package static let done: Int32 = 101
    /// SQLITE_IOERR_SHMSIZE: the `-shm` file (the WAL's shared-memory index) could not be sized,
    /// as on a full volume.
    package static let ioErrorShmSize: Int32 = 4874

    package static let openReadOnly: Int32 = 0x0000_0001
    package static let openReadWrite: Int32 = 0x0000_0002
    package static let openCreate: Int32 = 0x0000_0004
    package static let openNoMutex: Int32 = 0x0000_8000
    package static let openNoFollow: Int32 = 0x0100_0000

    package static let preparePersistent: UInt32 = 0x01

    package static let dbConfigDefensive: Int32 = 1010
    package static let dbConfigNoCheckpointOnClose: Int32 = 1006

    package static let typeNull: Int32 = 5
}
