import CashierSQLite

/// Pages the store file at `path` holds free (`PRAGMA freelist_count`), read by a read-only
/// connection of the caller's own: what removals left in the store and no reclaim gave back.
public func storeFreePages(_ path: String) throws -> Int {
    let reader = try SQLiteConnection(path: path, flags: SQLiteCode.openReadOnly)
    return Int(try reader.integer("PRAGMA freelist_count") ?? 0)
}

/// Deletes every row of the store file at `path` but the oldest `kept`, by a connection of the
/// caller's own, and folds the log in with no reclaim after: whole pages on the free list, as a
/// process killed between a removal's commit and its reclaim leaves them. Returns the bytes of
/// the pages rows still use and those of the free pages.
public func freePagesAsAKilledProcessLeavesThem(store path: String, keeping kept: Int) throws -> (
    inUse: Int, free: Int
) {
    let connection = try SQLiteConnection(path: path, flags: SQLiteCode.openReadWrite)
    try connection.execute("PRAGMA busy_timeout = 10000")
    try connection.execute("DELETE FROM entry WHERE id > (SELECT min(id) + \(kept - 1) FROM entry)")
    _ = try connection.integer("PRAGMA wal_checkpoint(TRUNCATE)")
    let pageSize = Int(try connection.integer("PRAGMA page_size") ?? 0)
    let pages = Int(try connection.integer("PRAGMA page_count") ?? 0)
    let free = Int(try connection.integer("PRAGMA freelist_count") ?? 0)
    return ((pages - free) * pageSize, free * pageSize)
}
