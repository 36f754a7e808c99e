import CashierSQLite

/// Pages the store file at `path` holds free (`PRAGMA freelist_count`), read by a read-only
/// connection of the caller's own: what removals left in the store and no reclaim gave back.
public func storeFreePages(_ path: String) throws -> Int {
    let reader = try SQLiteConnection(path: path, flags: SQLiteCode.openReadOnly)
    return Int(try reader.integer("PRAGMA freelist_count") ?? 0)
}
