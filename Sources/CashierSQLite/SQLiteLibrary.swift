import CashierPlatform

/// The SQLite C functions the binding calls, each a typed C function pointer.
///
/// Found by the platform layer (`SQLiteFunctions`, Sources/CashierPlatform): the SDK's own
/// functions on Apple platforms, `libsqlite3.so.0` through `dlopen` on Linux.
package typealias SQLiteLibrary = SQLiteFunctions

extension SQLiteFunctions {
    /// The library of this process, loaded once; a failure says what was missing.
    package static let shared: Result<SQLiteLibrary, SQLiteError> = load().mapError {
        SQLiteError(unavailable: $0.reason)
    }
}
