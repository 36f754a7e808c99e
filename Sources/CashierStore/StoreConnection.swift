import CashierSQLite
import Foundation

/// One connection of the store (the writer, or a pooled reader) with the statements it runs
/// again (``StoreStatement``) held directly, prepared on first use.
///
/// A statement is an array slot: finding one by hashing its text cost about 9,000 instructions
/// a call for the upsert, more than the raw C API spends on the whole bind (callgrind).
///
/// Not `Sendable`: used by one call at a time (the writer under the store's write lock, a
/// reader while it is out of the pool).
final class StoreConnection {
    let sqlite: SQLiteConnection
    /// Device and inode of the file opened (nil for a placeholder): another process may set it
    /// aside, and only the file a failing connection opened is set aside for its damage.
    let identity: FileIdentity?
    /// Opened in exclusive locking mode, its log's index in this process's memory rather than in
    /// a `-shm` (``EntryStore`` falls back to it when no `-shm` can be made): the only connection
    /// to the file, which no other connection or process can use until it closes.
    let isExclusive: Bool
    /// A connection to an empty in-memory database standing in for the writer while the store
    /// file is closed (being set aside, or an exclusive writer between calls): no statement of
    /// the store's runs on it.
    let isPlaceholder: Bool
    /// The busy timeout in force, in milliseconds: set again only when a call needs another.
    private var busyTimeout: Int32
    private var kept: [SQLiteStatement?] = Array(repeating: nil, count: StoreStatement.allCases.count)
    /// Shapes this connection has met (``RowShape``): they never change once in the file, and a
    /// connection lives no longer than the file it has open.
    /// By id, which counts from 1 up to a few thousands (``RowShape/maximumCount``): an array
    /// slot each, as a read looks one up every time.
    private var shapesByID: [RowShape?] = []
    private var shapesByNames: [[UInt8]: RowShape] = [:]
    /// The shape a write last used: most writes in a row are of one type.
    private var lastShape: RowShape?
    /// Set when the file holds ``RowShape/maximumCount`` shapes: shapes are never removed, so
    /// new names are not looked for again (a scan of the table and a count each).
    private var shapesFull = false
    /// Shapes found or added in the transaction under way, remembered once it commits.
    private var pendingShapes: [RowShape] = []
    /// Set by a read that met a row naming a shape the file no longer has.
    var metMissingShape = false
    /// Set for the last run of a call that found the volume full, when a removal may evict large
    /// entries to make room (EntryStore+Reserve.swift); cleared when the call returns.
    var evictsForRoom = false
    /// This connection's number, unique in the process: the writer a ``StoreSnapshot`` was taken
    /// on. A fresh writer's `data_version` and `total_changes()` are the same whatever file it
    /// opened, so those alone would call a walk of a store since replaced a walk of the new one.
    /// (Not the object's address, nor the file's inode: each is reused once the old one is gone.)
    let serial = ConnectionSerials.shared.next()

    init(
        _ sqlite: SQLiteConnection, identity: FileIdentity?, busyTimeout: Int32, isExclusive: Bool = false,
        isPlaceholder: Bool = false
    ) {
        self.sqlite = sqlite
        self.identity = identity
        self.isExclusive = isExclusive
        self.isPlaceholder = isPlaceholder
        self.busyTimeout = busyTimeout
    }

    /// The moment by which the current call's statements stop waiting for other processes
    /// (set by the store's writer for one call; nil: the busy timeout).
    var deadline: MonotonicDeadline?

    /// Before a statement that may wait for another process's lock (`BEGIN IMMEDIATE`, a write
    /// outside a transaction): the wait is what is left of ``deadline``. A wait within 50 ms of the
    /// one in force keeps it (a call saved per statement; a wait may end up to 50 ms late).
    func waitUntilDeadline() throws(SQLiteError) {
        guard let deadline else { return }
        let remaining = deadline.remainingMilliseconds
        guard abs(Int(remaining) - Int(busyTimeout)) > 50 || remaining == 0 else { return }
        try waitAtMost(remaining)
    }

    /// Makes statements wait at most `milliseconds` for another connection's lock (0: fail at once).
    func waitAtMost(_ milliseconds: Int32) throws(SQLiteError) {
        guard milliseconds != busyTimeout else { return }
        try sqlite.setBusyTimeout(milliseconds: milliseconds)
        busyTimeout = milliseconds
    }

    /// The prepared statement `which`, kept for the connection's life.
    private func statement(_ which: StoreStatement) throws(SQLiteError) -> SQLiteStatement {
        if let statement = kept[which.rawValue] { return statement }
        let statement = try sqlite.prepare(which.sql, persistent: true)
        kept[which.rawValue] = statement
        return statement
    }

    /// Runs `body` with the statement `which`, which it binds and steps; the statement is reset
    /// however `body` ends (``SQLiteStatement/run(_:)``).
    func run<R>(_ which: StoreStatement, _ body: (SQLiteStatement) throws(SQLiteError) -> R) throws(SQLiteError) -> R {
        try statement(which).run(body)
    }

    /// Steps the statement `which` once; true when it gave a row.
    @discardableResult
    func step(_ which: StoreStatement) throws(SQLiteError) -> Bool {
        try run(which) { statement throws(SQLiteError) in try statement.step() }
    }

    /// Runs the statement `which`, which returns one integer; nil when it returns no row.
    func integer(_ which: StoreStatement) throws(SQLiteError) -> Int64? {
        try run(which) { statement throws(SQLiteError) in try statement.step() ? statement.int64(at: 0) : nil }
    }

    /// The shape of id `id`, from memory or the `shape` table; nil when the store has none of
    /// that id, or one that is damaged (not 80 bytes of header): the row then reads as damaged.
    /// Throws what SQLite throws, so a busy or damaged file is not taken for a damaged row.
    func shape(id: Int64) throws(SQLiteError) -> RowShape? {
        if id > 0, id < shapesByID.count, let known = shapesByID[Int(id)] { return known }
        let found = try run(.shapeByID) { query throws(SQLiteError) -> RowShape? in
            try query.bind(id, at: 1)
            guard try query.step() else { return nil }
            return RowShape(id: id, names: query.blob(at: 0), header: query.blob(at: 1))
        }
        guard let found else { return nil }
        remember(found)
        return found
    }

    private func remember(_ shape: RowShape) {
        // Ids beyond what a store holds (damage, or another writer's duplicates) stay unremembered.
        guard shape.id <= 2 * Int64(RowShape.maximumCount) else { return }
        let slot = Int(shape.id)
        if slot >= shapesByID.count { shapesByID += Array(repeating: nil, count: slot + 1 - shapesByID.count) }
        shapesByID[slot] = shape
    }

    /// The shape of a record's `names` when this connection has met it; nil otherwise (the
    /// writer then finds or adds it inside its transaction: ``shapeInTransaction(names:header:)``).
    func knownShape(names: UnsafeRawBufferPointer) -> RowShape? {
        if let lastShape, Self.same(lastShape.names, names) { return lastShape }
        guard let known = shapesByNames[[UInt8](names)] else { return nil }
        lastShape = known
        return known
    }

    /// The shape of a record's `names`, made from its predicted `header` when the store has
    /// none: found in the `shape` table, else added to it, inside the caller's `BEGIN IMMEDIATE`
    /// transaction, so a new shape commits with the row that first names it and costs the write
    /// no wait of its own. Remembered once the transaction commits (``settleShapes(committed:)``).
    /// Nil (the row is then stored without a shape) when the store holds
    /// ``RowShape/maximumCount`` shapes or the table cannot be read; the writer's own statement
    /// meets the same failure and reports it.
    func shapeInTransaction(names: UnsafeRawBufferPointer, header: UnsafeRawBufferPointer) -> RowShape? {
        guard !shapesFull else { return nil }
        let key = [UInt8](names)
        if let pending = pendingShapes.first(where: { $0.names == key }) { return pending }
        guard let shape = try? findOrAddShape(key, header: [UInt8](header)) else { return nil }
        pendingShapes.append(shape)
        return shape
    }

    /// Forgets every shape met: the file's `shape` table lost one (see ``EntryStore/forgetShapes()``).
    func forgetShapes() {
        shapesByID.removeAll()
        shapesByNames.removeAll()
        lastShape = nil
        shapesFull = false
    }

    /// Remembers the shapes found or added in the transaction that just ended, if it committed.
    func settleShapes(committed: Bool) {
        guard !pendingShapes.isEmpty else { return }
        if committed {
            for shape in pendingShapes {
                shapesByNames[shape.names] = shape
                remember(shape)
                lastShape = shape
            }
        }
        pendingShapes.removeAll()
    }

    private static func same(_ bytes: [UInt8], _ other: UnsafeRawBufferPointer) -> Bool {
        bytes.withUnsafeBytes { bytes in
            bytes.count == other.count
                && (bytes.isEmpty || memcmp(bytes.baseAddress!, other.baseAddress!, bytes.count) == 0)
        }
    }

    private func findOrAddShape(_ names: [UInt8], header: [UInt8]) throws(SQLiteError) -> RowShape? {
        // A row found, but damaged, gives nil: the record is then stored without a shape.
        let found: RowShape?? = try run(.shapeByNames) { find throws(SQLiteError) in
            try Self.stepping(find, blobs: names) { () throws(SQLiteError) in
                try find.step() ? .some(RowShape(id: find.int64(at: 0), names: names, header: find.blob(at: 1))) : nil
            }
        }
        if let found { return found }
        guard try integer(.shapeCount) ?? 0 < Int64(RowShape.maximumCount) else {
            shapesFull = true
            return nil
        }
        try run(.addShape) { add throws(SQLiteError) in
            try Self.stepping(add, blobs: names, header) { () throws(SQLiteError) in _ = try add.step() }
        }
        guard let id = try integer(.lastInsertedID) else { return nil }
        return RowShape(id: id, names: names, header: header)
    }

    /// Binds `blobs` to `statement`'s first parameters without copying them and runs `body`
    /// while their bytes are pinned.
    static func stepping<R>(
        _ statement: SQLiteStatement, blobs first: [UInt8], _ second: [UInt8]? = nil, from index: Int32 = 1,
        _ body: () throws(SQLiteError) -> R
    ) throws(SQLiteError) -> R {
        let hasSecond = second != nil
        let result = first.withUnsafeBytes { first in
            (second ?? []).withUnsafeBytes { second -> Result<R, SQLiteError> in
                do throws(SQLiteError) {
                    try statement.bind(blob: first, at: index)
                    if hasSecond { try statement.bind(blob: second, at: index + 1) }
                    return .success(try body())
                } catch {
                    return .failure(error)
                }
            }
        }
        return try result.get()
    }

    func integer(_ sql: String) throws(SQLiteError) -> Int64? { try sqlite.integer(sql) }
    var changes: Int { sqlite.changes }
}

/// Numbers the store's connections in the process (``StoreConnection/serial``).
final class ConnectionSerials: @unchecked Sendable {
    static let shared = ConnectionSerials()
    private let lock = NSLock()
    private var last: Int64 = 0 // under `lock`

    func next() -> Int64 {
        lock.withLock {
            last += 1
            return last
        }
    }
}

/// The statements the store runs more than once: an array slot each in ``StoreConnection``,
/// prepared on a connection's first use (one-off statements, pragmas and the schema's, go
/// through `SQLiteConnection.run(_:_:)`).
enum StoreStatement: Int, CaseIterable {
    // Reads and writes of one entry.
    case upsert, upsertOverRows, upsertOverUnlockedRows, record, entry, delete, recordUse, recordFirstUse
    case shapeByID, shapeByNames, shapeCount, addShape, lastInsertedID, allShapes
    // Transactions and the coherence check.
    case begin, beginRead, commit, rollback, dataVersion
    // The index: counts, listings, passes over every record.
    case count, totalSize, fileBytes, freePages, pageSize, pageCount
    case keys, keysAndShapes, unshapedKeys, largeEntryKeys, entries, largeEntries, largestUnlockedFiles, allRecords
    // Removals, imports, upkeep.
    case removeUnchanged, removeRowsAsWalked, totalChanges, insertIfAbsent, deleteAll, checkpoint
    // Eviction: least recently used first, and frequency-aware (``EvictionSQL``).
    case evictionOrder, newestNew, oldQueue, reusedQueue, newestQueue, newQueue, ghostCensus, remember, rememberMany
    case ghostEdge
    case promoteForgotten, forget, forgetAll
    // Compaction after a sweep: the rows with the lowest ids move to the end of the table.
    case idSpan, lowestIDs, moveRow

    var sql: String {
        switch self {
        case .upsert: SQL.upsert
        case .upsertOverRows: SQL.upsertOverRows
        case .upsertOverUnlockedRows: SQL.upsertOverUnlockedRows
        case .record: SQL.record
        case .entry: SQL.entry
        case .delete: "DELETE FROM entry WHERE id = ?"
        case .recordUse:
            "UPDATE entry SET last_use = ?1, frequency = min(frequency + 1, \(EntryStore.maximumFrequency)) "
                + "WHERE key = ?2 AND (last_use <= ?1 - ?3 OR (frequency = 0 AND last_use < ?1))"
        case .recordFirstUse:
            "UPDATE entry SET last_use = max(last_use, ?1), frequency = 1 WHERE key = ?2 AND frequency = 0 AND last_use = ?3"
        case .shapeByID: "SELECT names, header FROM shape WHERE id = ?"
        case .shapeByNames: "SELECT id, header FROM shape WHERE names = ? ORDER BY id LIMIT 1"
        case .shapeCount: "SELECT count(*) FROM shape"
        case .allShapes: "SELECT id, names, header FROM shape"
        case .addShape: "INSERT INTO shape(names, header) VALUES(?, ?)"
        case .lastInsertedID: "SELECT last_insert_rowid()"
        case .idSpan: "SELECT count(*), ifnull(min(id), 0), ifnull(max(id), 0) FROM entry"
        case .lowestIDs: "SELECT id FROM entry ORDER BY id LIMIT ?"
        case .moveRow: "UPDATE entry SET id = ?1 WHERE id = ?2"
        case .begin: "BEGIN IMMEDIATE"
        case .beginRead: "BEGIN"
        case .commit: "COMMIT"
        case .rollback: "ROLLBACK"
        case .dataVersion: "PRAGMA data_version"
        case .count: "SELECT count(*) FROM entry"
        case .totalSize: "SELECT total(size) FROM entry"
        // The large entries: `location != 4` is `entry_unshaped`'s condition, word for word (SQLite
        // then uses it; an older store's `entry_files` serves `location = 1`).
        case .fileBytes: "SELECT total(size) FROM entry WHERE location != 4 AND location = 1"
        case .freePages: "PRAGMA freelist_count"
        case .pageSize: "PRAGMA page_size"
        case .pageCount: "PRAGMA page_count"
        case .keys: "SELECT key FROM entry ORDER BY key"
        case .keysAndShapes: "SELECT key, location, substr(record, 1, 3) FROM entry"
        // The condition of `entry_unshaped`, word for word (what lets SQLite use it).
        case .unshapedKeys: "SELECT key, location FROM entry WHERE location != \(RowRecord.shaped)"
        case .largeEntryKeys: "SELECT key FROM entry WHERE location != 4 AND location = 1"
        case .entries: "SELECT \(SQL.columns) FROM entry"
        case .largeEntries: "SELECT \(SQL.columns) FROM entry WHERE location != 4 AND location = 1"
        case .largestUnlockedFiles:
            "SELECT \(SQL.columns), id FROM entry WHERE location != 4 AND location = 1 AND locked = 0 ORDER BY size DESC"
        case .allRecords: "SELECT \(SQL.columns), record FROM entry"
        case .removeUnchanged:
            "DELETE FROM entry WHERE key = ? AND (location = 1) = ? AND size = ? AND last_use <= ? AND locked = ?"
        case .removeRowsAsWalked:
            "DELETE FROM entry WHERE id IN (\((1...EntryStore.rowsPerRemoval).map { "?\($0)" }.joined(separator: ", ")))"
        case .totalChanges: "SELECT total_changes()"
        case .insertIfAbsent:
            "INSERT INTO entry(\(SQL.columns), record) VALUES(?, 1, ?, ?, ?, ?, 0, NULL) ON CONFLICT(key) DO NOTHING"
        case .deleteAll: "DELETE FROM entry"
        case .checkpoint: "PRAGMA wal_checkpoint(TRUNCATE)"
        case .evictionOrder: SQL.evictionOrder
        case .newestNew: EvictionSQL.newestNew
        case .oldQueue: EvictionSQL.queue(.old)
        case .reusedQueue: EvictionSQL.queue(.reused)
        case .newestQueue: EvictionSQL.queue(.newest)
        case .newQueue: EvictionSQL.queue(.new)
        case .ghostCensus: EvictionSQL.ghostCensus
        case .remember: EvictionSQL.remember
        case .rememberMany: EvictionSQL.rememberMany
        case .ghostEdge: EvictionSQL.ghostEdge
        case .promoteForgotten: EvictionSQL.promoteForgotten
        case .forget: EvictionSQL.forget
        case .forgetAll: "DELETE FROM ghost"
        }
    }
}
