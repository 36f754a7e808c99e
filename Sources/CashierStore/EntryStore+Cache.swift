import CashierSQLite
import Foundation

/// What the cache's disk tier asks of the store besides single reads and writes: passes over
/// every record (garbage collection, listing), removals that spare what changed since they were
/// planned, and coarse recency.
extension EntryStore {
    /// Calls `body` with every entry and its record (empty for a file entry), in no particular
    /// order, on one reader: one `SELECT`, so the pass costs one statement, not one per entry.
    /// A record whose compact form does not restore is handed over as it is stored: the
    /// caller's checksum finds it damaged.
    package func forEachRecord(_ body: (StoredRecord) -> Void) throws(StoreError) {
        try withReader { connection throws(SQLiteError) in
            let query = try connection.prepare("SELECT \(SQL.columns), record FROM entry")
            defer { query.finalize() }
            while try query.step() {
                let entry = Self.entry(query)
                body(StoredRecord(entry: entry, record: try Self.record(query, entry, connection)))
            }
        }
    }

    /// Removes every entry; returns the large entries' rows (their files are the caller's to remove).
    @discardableResult
    package func removeAll() throws(StoreError) -> [StoreEntry] {
        try withConnection { connection throws(SQLiteError) in
            try transaction(connection) { () throws(SQLiteError) in
                let files = try connection.prepare("SELECT \(SQL.columns) FROM entry WHERE location = 1")
                defer { files.finalize() }
                var removed: [StoreEntry] = []
                while try files.step() { removed.append(Self.entry(files)) }
                try connection.sqlite.execute("DELETE FROM entry")
                return removed
            }
        }
    }

    /// Removes each of `entries` whose row is still as planned (same location and size, last use
    /// no later), in one transaction; returns those it removed. A row written or used since the
    /// plan was made is spared: the next pass decides again. `evictedIn`: the removals are a
    /// sweep's evictions in that order, remembered as ``removeEvicted(_:order:)`` remembers them.
    @discardableResult
    package func remove(unchanged entries: [StoreEntry], evictedIn order: StoreEvictionOrder? = nil) throws(StoreError)
        -> [StoreEntry]
    {
        guard !entries.isEmpty else { return [] }
        return try withConnection { connection throws(SQLiteError) in
            try transaction(connection) { () throws(SQLiteError) in
                let delete = try connection.prepare(
                    "DELETE FROM entry WHERE key = ? AND (location = 1) = ? AND size = ? AND last_use <= ? AND locked = ?"
                )
                defer { delete.finalize() }
                var removed: [StoreEntry] = []
                for entry in entries {
                    defer { delete.reset() }
                    try delete.bind(entry.key, at: 1)
                    // A row's stored location may be a compact form of it (``RowRecord``): row or file is what counts.
                    try delete.bind(entry.location == .file ? 1 : 0, at: 2)
                    try delete.bind(Int64(entry.size), at: 3)
                    try delete.bind(entry.lastUse, at: 4)
                    try delete.bind(entry.isLocked ? 1 : 0, at: 5)
                    _ = try delete.step()
                    if connection.changes > 0 { removed.append(entry) }
                }
                if order == .frequencyAware { try rememberEvicted(removed, connection) }
                return removed
            }
        }
    }

    /// Records uses like ``recordUses(_:at:)``, but only of entries whose last use is
    /// `granularity` seconds or more before `time`: a use within the granularity changes no
    /// page, so an entry read all day costs one write a granularity. Each use has its own time.
    package func recordUses(_ uses: [(key: String, time: Int64)], granularity: Int64) throws(StoreError) {
        guard !uses.isEmpty else { return }
        try withConnection { connection throws(SQLiteError) in
            try transaction(connection) { () throws(SQLiteError) in
                let touch = try connection.prepare(
                    "UPDATE entry SET last_use = ?1, frequency = min(frequency + 1, \(Self.maximumFrequency)) "
                        + "WHERE key = ?2 AND last_use <= ?1 - ?3")
                defer { touch.finalize() }
                for use in uses {
                    defer { touch.reset() }
                    try touch.bind(use.time, at: 1)
                    try touch.bind(use.key, at: 2)
                    try touch.bind(granularity, at: 3)
                    _ = try touch.step()
                }
            }
        }
    }

    /// Writes `entry`'s row unless its key has one already (a large entry found on disk
    /// without a row: an older version's file, or a write cut between its file and its row).
    /// Returns whether it wrote.
    @discardableResult
    package func insertIfAbsent(_ entries: [StoreEntry]) throws(StoreError) -> Int {
        guard !entries.isEmpty else { return 0 }
        return try withConnection { connection throws(SQLiteError) in
            try transaction(connection) { () throws(SQLiteError) in
                let insert = try connection.prepare(
                    "INSERT INTO entry(\(SQL.columns), record) VALUES(?, 1, ?, ?, ?, ?, 0, NULL) "
                        + "ON CONFLICT(key) DO NOTHING")
                defer { insert.finalize() }
                var written = 0
                for entry in entries {
                    defer { insert.reset() }
                    try insert.bind(entry.key, at: 1)
                    try insert.bind(Int64(entry.size), at: 2)
                    try insert.bind(entry.lastUse, at: 3)
                    try insert.bind(entry.expiry, at: 4)
                    try insert.bind(entry.isLocked ? 1 : 0, at: 5)
                    _ = try insert.step()
                    written += connection.changes
                }
                return written
            }
        }
    }
}

extension EntryStore {
    /// Makes every later write durable against power loss (`synchronous=FULL`, and on Apple
    /// platforms `fullfsync` and `checkpoint_fullfsync`), or only against the process being
    /// killed (`NORMAL`): what ``Options/synchronized`` sets at opening, changed for the writer.
    package func setSynchronized(_ synchronized: Bool) throws(StoreError) {
        try withConnection { connection throws(SQLiteError) in
            let on = synchronized ? "ON" : "OFF"
            try connection.sqlite.execute("PRAGMA fullfsync = \(on)")
            try connection.sqlite.execute("PRAGMA checkpoint_fullfsync = \(on)")
            try connection.sqlite.execute("PRAGMA synchronous = \(synchronized ? "FULL" : "NORMAL")")
        }
    }
}

extension EntryStore {
    /// Reopens the store when its file is no longer the one open: another process set it aside,
    /// or someone deleted it (a fresh, empty store is created in its place). One `lstat`.
    /// Returns true when it reopened; throws when the file cannot be opened again (its folder is gone).
    @discardableResult
    package func reopenIfMoved() throws(StoreError) -> Bool {
        try withConnection { _ throws(SQLiteError) in try reopenIfReplaced() }
    }
}
