import CCashierSQLite

// How the SQLite binding (CashierSQLite, above this layer) finds SQLite's C functions.
//
// Apple platforms: every SDK ships SQLite (`import SQLite3`, the SDK's <sqlite3.h>), linked
// as libsqlite3.dylib; each field below takes the SDK's function.
// Linux: every machine with a Swift toolchain has `libsqlite3.so.0` (the toolchain itself
// needs it), but maybe not its header or the unversioned `libsqlite3.so` a link line needs
// (the official `swift` images have no libsqlite3-dev). So nothing is linked: the library
// is opened with `dlopen` and each function taken with `dlsym` into the typed pointer below.
// The types are declared here from SQLite's documented C API; nothing is copied from its
// sources. `.ci/sqlite.sh` compiles these types against the real <sqlite3.h>, and the Apple
// branch below against it offered as module SQLite3.
#if canImport(Darwin)
import SQLite3
#endif

/// The SQLite C functions the binding calls, each a typed C function pointer.
///
/// Only what CashierSQLite's connection and statement call is declared (CashierSQLite names
/// this type `SQLiteLibrary`). A database is an `OpaquePointer` (`sqlite3 *`), a statement
/// too (`sqlite3_stmt *`). Loading knows nothing of the binding's errors: it fails with
/// ``Unavailable``, a reason, which the binding reports as its own error.
package struct SQLiteFunctions: Sendable {
    /// Why SQLite could not be loaded: no library, or a function missing from it.
    package struct Unavailable: Error, Sendable, Equatable {
        package let reason: String
    }

    package typealias Database = OpaquePointer
    package typealias Statement = OpaquePointer
    /// `void (*)(void *)`: how SQLite frees a bound value; nil is `SQLITE_STATIC`.
    package typealias Destructor = @convention(c) (UnsafeMutableRawPointer?) -> Void

    package let libversionNumber: @convention(c) () -> Int32
    package let openV2:
        @convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<OpaquePointer?>?, Int32, UnsafePointer<CChar>?) ->
            Int32
    package let closeV2: @convention(c) (OpaquePointer?) -> Int32
    package let errmsg: @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?
    package let errstr: @convention(c) (Int32) -> UnsafePointer<CChar>?
    package let extendedErrcode: @convention(c) (OpaquePointer?) -> Int32
    package let busyTimeout: @convention(c) (OpaquePointer?, Int32) -> Int32
    package let changes: @convention(c) (OpaquePointer?) -> Int32
    package let prepareV3:
        @convention(c) (
            OpaquePointer?, UnsafePointer<CChar>?, Int32, UInt32, UnsafeMutablePointer<OpaquePointer?>?,
            UnsafeMutablePointer<UnsafePointer<CChar>?>?
        ) -> Int32
    package let step: @convention(c) (OpaquePointer?) -> Int32
    package let reset: @convention(c) (OpaquePointer?) -> Int32
    package let clearBindings: @convention(c) (OpaquePointer?) -> Int32
    package let finalize: @convention(c) (OpaquePointer?) -> Int32
    package let bindInt64: @convention(c) (OpaquePointer?, Int32, Int64) -> Int32
    package let bindNull: @convention(c) (OpaquePointer?, Int32) -> Int32
    package let bindBlob64: @convention(c) (OpaquePointer?, Int32, UnsafeRawPointer?, UInt64, Destructor?) -> Int32
    package let bindText: @convention(c) (OpaquePointer?, Int32, UnsafePointer<CChar>?, Int32, Destructor?) -> Int32
    package let columnType: @convention(c) (OpaquePointer?, Int32) -> Int32
    package let columnInt64: @convention(c) (OpaquePointer?, Int32) -> Int64
    package let columnBlob: @convention(c) (OpaquePointer?, Int32) -> UnsafeRawPointer?
    package let columnText: @convention(c) (OpaquePointer?, Int32) -> UnsafePointer<UInt8>?
    package let columnBytes: @convention(c) (OpaquePointer?, Int32) -> Int32
    /// `sqlite3_db_config`, variadic: called only through `cashier_sqlite3_db_config_int`.
    let dbConfig: UInt

    /// `sqlite3_db_config(db, op, value, &result)` for the integer options (`SQLITE_DBCONFIG_DEFENSIVE`).
    package func dbConfig(_ database: OpaquePointer?, _ option: Int32, _ value: Int32) -> (code: Int32, now: Int32) {
        var now: Int32 = -1
        let code = cashier_sqlite3_db_config_int(
            UnsafeMutableRawPointer(bitPattern: dbConfig), UnsafeMutableRawPointer(database), option, value, &now)
        return (code, now)
    }
}

#if canImport(Darwin)
extension SQLiteFunctions {
    /// The SDK's functions; called once, by the binding (`SQLiteLibrary.shared`).
    package static func load() -> Result<SQLiteFunctions, Unavailable> {
        // <sqlite3.h> of the SDK: each sqlite3_ name below is the SDK's own declaration.
        // <dlfcn.h>: sqlite3_db_config is variadic, so Swift cannot name it; its address comes
        // from the library `import SQLite3` already linked (a no-op load of the shared cache's image).
        guard let handle = dlopen("/usr/lib/libsqlite3.dylib", RTLD_NOW),
            let dbConfig = dlsym(handle, "sqlite3_db_config")
        else { return .failure(Unavailable(reason: "sqlite3_db_config not found in libsqlite3.dylib")) }
        return .success(
            SQLiteFunctions(
                libversionNumber: sqlite3_libversion_number, openV2: sqlite3_open_v2, closeV2: sqlite3_close_v2,
                errmsg: sqlite3_errmsg, errstr: sqlite3_errstr, extendedErrcode: sqlite3_extended_errcode,
                busyTimeout: sqlite3_busy_timeout, changes: sqlite3_changes, prepareV3: sqlite3_prepare_v3,
                step: sqlite3_step, reset: sqlite3_reset, clearBindings: sqlite3_clear_bindings,
                finalize: sqlite3_finalize, bindInt64: sqlite3_bind_int64, bindNull: sqlite3_bind_null,
                bindBlob64: sqlite3_bind_blob64, bindText: sqlite3_bind_text, columnType: sqlite3_column_type,
                columnInt64: sqlite3_column_int64, columnBlob: sqlite3_column_blob,
                columnText: sqlite3_column_text, columnBytes: sqlite3_column_bytes, dbConfig: UInt(bitPattern: dbConfig)
            )
        )
    }
}
#else
extension SQLiteFunctions {
    /// The names `dlopen` tries: the versioned name every toolchain machine has, then the
    /// development symlink.
    package static let libraryNames = ["libsqlite3.so.0", "libsqlite3.so"]

    /// `libsqlite3.so.0`'s functions; called once, by the binding (`SQLiteLibrary.shared`).
    package static func load() -> Result<SQLiteFunctions, Unavailable> {
        guard let handle = libraryNames.lazy.compactMap({ dlopen($0, RTLD_NOW | RTLD_LOCAL) }).first else {
            let reason = dlerror().map { String(cString: $0) } ?? "not found"
            return .failure(Unavailable(reason: "dlopen(\(libraryNames.joined(separator: ", "))): \(reason)"))
        }
        var missing: [String] = []
        func symbol<Function>(_ name: String, as type: Function.Type = Function.self) -> Function {
            guard let address = dlsym(handle, name) else {
                missing.append(name)
                // Never called: `load` fails below when anything is missing.
                return unsafeBitCast(UnsafeMutableRawPointer(bitPattern: 1)!, to: Function.self)
            }
            return unsafeBitCast(address, to: Function.self)
        }
        let library = SQLiteFunctions(
            libversionNumber: symbol("sqlite3_libversion_number"), openV2: symbol("sqlite3_open_v2"),
            closeV2: symbol("sqlite3_close_v2"), errmsg: symbol("sqlite3_errmsg"), errstr: symbol("sqlite3_errstr"),
            extendedErrcode: symbol("sqlite3_extended_errcode"), busyTimeout: symbol("sqlite3_busy_timeout"),
            changes: symbol("sqlite3_changes"), prepareV3: symbol("sqlite3_prepare_v3"), step: symbol("sqlite3_step"),
            reset: symbol("sqlite3_reset"), clearBindings: symbol("sqlite3_clear_bindings"),
            finalize: symbol("sqlite3_finalize"), bindInt64: symbol("sqlite3_bind_int64"),
            bindNull: symbol("sqlite3_bind_null"), bindBlob64: symbol("sqlite3_bind_blob64"),
            bindText: symbol("sqlite3_bind_text"), columnType: symbol("sqlite3_column_type"),
            columnInt64: symbol("sqlite3_column_int64"), columnBlob: symbol("sqlite3_column_blob"),
            columnText: symbol("sqlite3_column_text"), columnBytes: symbol("sqlite3_column_bytes"),
            dbConfig: UInt(bitPattern: symbol("sqlite3_db_config", as: UnsafeMutableRawPointer.self))
        )
        guard missing.isEmpty else {
            return .failure(Unavailable(reason: "missing in libsqlite3: \(missing.joined(separator: ", "))"))
        }
        return .success(library)
    }
}
#endif
