import CashierPlatform
import CashierSQLite
import Foundation

/// Reads and writes of entries: each one statement, or one `BEGIN IMMEDIATE` transaction.
extension EntryStore {

    /// Writes an entry: its record in the row (`record`, for ``StoreLocation/row``), or its row
    /// alone (``StoreLocation/file``, `record` ignored). Replaces the row of the same key.
    ///
    /// Returns what the write replaced when that was a large entry, nil for a new key or a row
    /// replacing a row. `file`: the path of the key's large-entry file; a row replacing a large
    /// entry removes that file inside its transaction (see ``upsert(_:record:keepingLock:file:removingFile:until:)``).
    @discardableResult
    package func upsert(
        _ entry: StoreEntry, record: [UInt8] = [], file: String? = nil, until deadline: MonotonicDeadline? = nil
    )
        throws(StoreError) -> StoreEntry?
    {
        switch try upsert(
            entry, record: record, keepingLock: false, file: file.map { file in { file } }, until: deadline)
        {
        case .written(let replaced): replaced
        case .locked: nil
        }
    }

    /// What ``upsert(_:record:keepingLock:file:removingFile:until:)`` did.
    package enum KeepingLockOutcome: Sendable, Equatable {
        /// The entry is written; `replacedFile` is the large entry it replaced (whose file, when
        /// the call named it, is gone with it).
        case written(replacedFile: StoreEntry?)
        /// Nothing is written: the key's entry is locked, and the caller writes its record again
        /// marked locked (the record's header says so too).
        case locked
    }

    /// Writes an entry as ``upsert(_:record:file:until:)`` does; with `keepingLock`, an unlocked
    /// entry is not written over a locked one (``KeepingLockOutcome/locked``): a write keeps a
    /// lock, and this finds it in the same statement. A read before each write cost a third of an
    /// overwrite (callgrind).
    ///
    /// One statement when the key's row is not a large entry's and the record's shape is known;
    /// otherwise one `BEGIN IMMEDIATE` transaction, in which a new shape is added. When the row
    /// replaces a large entry (or always, with `removingFile`: a file older than the store may
    /// be there without a row), the file at `file` goes once the row is committed, in a second
    /// transaction and only if it is still the file the first one saw: another process may have
    /// written the key as a file in between, and that file stays. Its name is never missing
    /// while a committed row names it, except once that row is replaced: a reader that found
    /// the old row and then no file finds the new row when it reads again.
    package func upsert(
        _ entry: StoreEntry, record: [UInt8], keepingLock: Bool, file: (() -> String)? = nil,
        removingFile: Bool = false, until deadline: MonotonicDeadline? = nil
    ) throws(StoreError) -> KeepingLockOutcome {
        let overLocked = !keepingLock || entry.isLocked
        return try withWriter(until: deadline) { connection throws(SQLiteError) in
            if !removingFile, let row = Self.row(entry, record, connection, inTransaction: false),
                try self.write(entry, row, overFiles: false, overLocked: overLocked, connection)
            {
                return .written(replacedFile: nil)
            }
            var replaced: (path: String, version: FileVersion?)?
            let outcome = try transaction(connection) { () throws(SQLiteError) -> KeepingLockOutcome in
                let previous = try existing(entry.key, connection)
                if !overLocked, previous?.isLocked == true { return .locked }
                let row = Self.row(entry, record, connection, inTransaction: true) ?? (entry.location.rawValue, nil)
                _ = try self.write(entry, row, overFiles: true, connection)
                if let file, entry.location == .row, removingFile || previous?.location == .file {
                    let path = file()
                    replaced = (path, FileVersion(path: path))
                }
                return .written(replacedFile: previous?.location == .file ? previous : nil)
            }
            if let (file, version) = replaced, version != nil {
                // Best effort: a file left (the lock held elsewhere past the wait) is shadowed by the
                // row, and the next import or garbage collection removes it.
                _ = try? transaction(connection) { () throws(SQLiteError) in
                    // The same file, not merely its inode number: another write's file may have
                    // been given the number of one removed since.
                    if FileVersion(path: file) == version { try Self.removeFile(file) }
                }
            }
            return outcome
        }
    }

    /// What the row of `entry` stores: its `location` and its blob (nil for a file entry). A
    /// record laid out as an entry file repeats the key after its header, its header is mostly
    /// zero bytes and its type name and app version are its shape's: the row keeps less
    /// (``RowRecord``). Outside a transaction only a shape the connection knows is used: nil
    /// when the record needs one it does not know, which the caller then finds or adds inside
    /// its transaction (the shape commits with the row that names it).
    private static func row(_ entry: StoreEntry, _ record: [UInt8], _ connection: StoreConnection, inTransaction: Bool)
        -> (location: Int64, bytes: [UInt8]?)?
    {
        guard entry.location == .row else { return (entry.location.rawValue, nil) }
        var unknown = false
        let smaller = RowRecord.stored(record, key: entry.key) { names, header in
            if let known = connection.knownShape(names: names) { return known }
            guard inTransaction else {
                unknown = true
                return nil
            }
            return connection.shapeInTransaction(names: names, header: header)
        }
        if unknown { return nil }
        return smaller ?? (StoreLocation.row.rawValue, record)
    }

    /// Inserts or updates the row of `entry.key`; `overFiles: false` leaves a file entry's row
    /// alone, and `overLocked: false` a locked one. Returns whether a row changed.
    func write(
        _ entry: StoreEntry, _ row: (location: Int64, bytes: [UInt8]?), overFiles: Bool, overLocked: Bool = true,
        _ connection: StoreConnection
    ) throws(SQLiteError) -> Bool {
        try connection.run(overFiles ? .upsert : overLocked ? .upsertOverRows : .upsertOverUnlockedRows) {
            write throws(SQLiteError) in
            try write.bind(entry.key, at: 1)
            try write.bind(row.location, at: 2)
            try write.bind(Int64(entry.size), at: 3)
            try write.bind(entry.lastUse, at: 4)
            try write.bind(entry.expiry, at: 5)
            try write.bind(entry.isLocked ? 1 : 0, at: 6)
            try write.bind(Int64(min(entry.frequency, Self.maximumFrequency)), at: 7)
            guard let bytes = row.bytes else {
                try write.bind(nil, at: 8)
                _ = try write.step()
                return
            }
            // The record is bound without a copy, so the step runs while its bytes are pinned.
            try StoreConnection.stepping(write, blobs: bytes, from: 8) { () throws(SQLiteError) in
                _ = try write.step()
            }
        }
        return connection.changes > 0
    }

    /// The entry of `key` with its record (empty for a file entry), or nil. Changes nothing, not even recency.
    package func record(for key: String) throws(StoreError) -> StoredRecord? {
        try withReader { connection throws(SQLiteError) in
            let found = try connection.run(.record) { read throws(SQLiteError) -> (StoreEntry, [UInt8])? in
                try read.bind(key, at: 1)
                guard try read.step() else { return nil }
                let entry = try Self.entry(read, foundFor: key)
                return (entry, try Self.record(read, entry, connection))
            }
            guard let (entry, record) = found else { return nil }
            if connection.metMissingShape {
                connection.metMissingShape = false
                forgetShapes()
            }
            return StoredRecord(entry: entry, record: record)
        }
    }

    /// The entry of `key` without its record, or nil.
    package func entry(for key: String) throws(StoreError) -> StoreEntry? {
        try withReader { connection throws(SQLiteError) in try existing(key, connection) }
    }

    /// Removes the entry of `key`; returns it, or nil.
    @discardableResult
    package func remove(_ key: String) throws(StoreError) -> StoreEntry? {
        try remove([key]).first
    }

    /// Removes the entries of `keys` in one transaction; returns those that were there.
    /// `filePath`: where each key's large-entry file is; it is removed inside the transaction
    /// whether the key has a row or not (a file older than the store may be there), before the
    /// row goes: a kill in between leaves a row whose file is gone, which reads as absent.
    @discardableResult
    package func remove(
        _ keys: [String], filePath: ((String) -> String)? = nil, until deadline: MonotonicDeadline? = nil
    ) throws(StoreError) -> [StoreEntry] {
        try withWriter(until: deadline, room: keys.count == 1 ? .reserve : .log) { connection throws(SQLiteError) in
            try transaction(connection) { () throws(SQLiteError) in
                if let filePath { for key in keys { try Self.removeFile(filePath(key)) } }
                return try delete(keys, connection)
            }
        }
    }

    /// Deletes the rows of `keys` inside the caller's transaction; returns those that were there.
    func delete(_ keys: [String], _ connection: StoreConnection) throws(SQLiteError) -> [StoreEntry] {
        var removed: [StoreEntry] = []
        for key in keys {
            guard let (id, entry) = try existingWithID(key, connection) else { continue }
            try delete(id: id, connection)
            removed.append(entry)
        }
        return removed
    }

    // MARK: - Helpers (called with the lock held)

    /// Runs `body` inside `BEGIN IMMEDIATE` … `COMMIT`, rolling back when it throws.
    /// Shapes added inside it are remembered by the connection once it commits.
    func transaction<R>(_ connection: StoreConnection, _ body: () throws(SQLiteError) -> R) throws(SQLiteError) -> R {
        try connection.waitUntilDeadline()
        try connection.step(.begin)
        do {
            let result = try body()
            try connection.step(.commit)
            connection.settleShapes(committed: true)
            return result
        } catch {
            _ = try? connection.step(.rollback)
            connection.settleShapes(committed: false)
            throw error
        }
    }

    /// The record of the current row of `row` (`SQL.columns`, then `record`): empty for a file
    /// entry, restored for a row stored smaller (``RowRecord``). A record that does not restore
    /// (its shape is missing, its blob is cut) comes back as it is stored: the caller's
    /// checksum finds it damaged.
    static func record(_ row: SQLiteStatement, _ entry: StoreEntry, _ connection: StoreConnection) throws(SQLiteError)
        -> [UInt8]
    {
        guard entry.location == .row else { return [] }
        let location = row.int64(at: 1)
        guard RowRecord.isRestored(location) else { return row.blob(at: 7) }
        let shape =
            location == RowRecord.shaped
            ? try row.withBlob(at: 7) { RowRecord.shapeID($0)?.id }.map { id throws(SQLiteError) in
                try connection.shape(id: id)
            } ?? nil : nil
        // A shape gone from the file (damage, or a hand's edit): the row reads as damaged, and
        // the writer must not go on naming that shape in new rows.
        if location == RowRecord.shaped, shape == nil { connection.metMissingShape = true }
        return row.withBlob(at: 7) { RowRecord.restoring($0, location: location, key: entry.key, shape: shape) }
    }

    func existing(_ key: String, _ connection: StoreConnection) throws(SQLiteError) -> StoreEntry? {
        try existingWithID(key, connection)?.1
    }

    func existingWithID(_ key: String, _ connection: StoreConnection) throws(SQLiteError) -> (
        Int64, StoreEntry
    )? {
        try connection.run(.entry) { read throws(SQLiteError) in
            try read.bind(key, at: 1)
            guard try read.step() else { return nil }
            return (read.int64(at: 7), try Self.entry(read, foundFor: key))
        }
    }

    func delete(id: Int64, _ connection: StoreConnection) throws(SQLiteError) {
        try connection.run(.delete) { delete throws(SQLiteError) in
            try delete.bind(id, at: 1)
            _ = try delete.step()
        }
    }

    /// The entry of the current row, found by the key index for `key`. Throws `SQLITE_CORRUPT`
    /// when the row holds another key: SQLite trusts an index it searched, so only this
    /// comparison sees that the index is damaged. Compares the bytes in place (no `String` is
    /// built for the row's key: a read's one allocation is its record).
    static func entry(_ row: SQLiteStatement, foundFor key: String) throws(SQLiteError) -> StoreEntry {
        var key = key
        let same = key.withUTF8 { expected in
            row.withBlob(at: 0) { found in
                found.count == expected.count
                    && (found.isEmpty || memcmp(found.baseAddress!, expected.baseAddress!, found.count) == 0)
            }
        }
        guard same else {
            throw SQLiteError(
                code: SQLiteCode.corrupt, message: "the key index leads to another key's row",
                operation: "read \(key.debugDescription)")
        }
        return entry(row, key: key)
    }

    /// The entry of the current row, from the first seven columns in `SQL.columns` order.
    /// A value out of range (a damaged row) reads as the nearest valid one, never a trap.
    static func entry(_ row: SQLiteStatement, key: String? = nil) -> StoreEntry {
        StoreEntry(
            key: key ?? row.text(at: 0), location: RowRecord.location(row.int64(at: 1)),
            size: Int(clamping: max(0, row.int64(at: 2))), lastUse: row.int64(at: 3),
            expiry: row.isNull(at: 4) ? nil : row.int64(at: 4), isLocked: row.int64(at: 5) != 0,
            frequency: Int(clamping: min(max(0, row.int64(at: 6)), Int64(maximumFrequency))))
    }
}

/// The texts of the hot statements, built once; each connection prepares them on first use and
/// keeps them in array slots (``StoreConnection``, ``StoreStatement``).
enum SQL {
    /// The columns ``EntryStore/entry(_:)`` reads, in its order.
    static let columns = "key, location, size, last_use, expiry, locked, frequency"
    private static let insert =
        "INSERT INTO entry(\(columns), record) VALUES(?, ?, ?, ?, ?, ?, ?, ?) "
        + "ON CONFLICT(key) DO UPDATE SET location = excluded.location, "
        + "size = excluded.size, last_use = excluded.last_use, expiry = excluded.expiry, "
        + "locked = excluded.locked, frequency = max(frequency, excluded.frequency), record = excluded.record"
    // A row found by the key index whose key differs means a damaged index: no update, and the
    // slow path's read reports the damage.
    static let upsert = insert + " WHERE key = excluded.key"
    /// Leaves a file entry's row alone (changes nothing): the write then looks at what it replaces.
    static let upsertOverRows = insert + " WHERE location <> 1 AND key = excluded.key"
    /// Leaves a file entry's row and a locked row alone: the write then looks at what it replaces.
    static let upsertOverUnlockedRows = insert + " WHERE location <> 1 AND locked = 0 AND key = excluded.key"
    static let record = "SELECT \(columns), record FROM entry WHERE key = ?"
    static let entry = "SELECT \(columns), id FROM entry WHERE key = ?"
    static let evictionOrder = "SELECT \(columns), id FROM entry WHERE locked = 0 ORDER BY last_use, size, id LIMIT ?"
}
