import CashierSQLite
import Foundation

/// One connection of the store (the writer, or a pooled reader) with its hot statements held
/// directly, prepared on first use.
///
/// `SQLiteConnection.cached(_:)` finds a statement by hashing its text: for the upsert, about
/// 9,000 instructions a call, more than the raw C API spends on the whole bind (callgrind,
/// `CashierStoreBench ops`). Here a hot statement is an array slot.
///
/// Not `Sendable`: used by one call at a time (the writer under the store's write lock, a
/// reader while it is out of the pool).
final class StoreConnection {
    let sqlite: SQLiteConnection
    /// Device and inode of the file opened (nil for a placeholder): another process may set it
    /// aside, and only the file a failing connection opened is set aside for its damage.
    let identity: FileIdentity?
    /// The busy timeout in force, in milliseconds: set again only when a call needs another.
    private var busyTimeout: Int32
    private var hot: [SQLiteStatement?] = Array(repeating: nil, count: HotStatement.allCases.count)
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

    init(_ sqlite: SQLiteConnection, identity: FileIdentity?, busyTimeout: Int32) {
        self.sqlite = sqlite
        self.identity = identity
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
    func statement(_ which: HotStatement) throws(SQLiteError) -> SQLiteStatement {
        if let statement = hot[which.rawValue] { return statement }
        let statement = try sqlite.prepare(which.sql, persistent: true)
        hot[which.rawValue] = statement
        return statement
    }

    /// Runs the hot statement `which`, which returns one integer; nil when it returns no row.
    func integer(_ which: HotStatement) throws(SQLiteError) -> Int64? {
        let statement = try statement(which)
        defer { statement.reset() }
        return try statement.step() ? statement.int64(at: 0) : nil
    }

    /// The shape of id `id`, from memory or the `shape` table; nil when the store has none of
    /// that id, or one that is damaged (not 80 bytes of header): the row then reads as damaged.
    /// Throws what SQLite throws, so a busy or damaged file is not taken for a damaged row.
    func shape(id: Int64) throws(SQLiteError) -> RowShape? {
        if id > 0, id < shapesByID.count, let known = shapesByID[Int(id)] { return known }
        let query = try statement(.shapeByID)
        defer { query.reset() }
        try query.bind(id, at: 1)
        guard try query.step() else { return nil }
        guard let shape = RowShape(id: id, names: query.blob(at: 0), header: query.blob(at: 1)) else { return nil }
        remember(shape)
        return shape
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
        let find = try statement(.shapeByNames)
        defer { find.reset() }
        // A row found, but damaged, gives nil: the record is then stored without a shape.
        let found: RowShape?? = try Self.stepping(find, blobs: names) { () throws(SQLiteError) in
            try find.step() ? .some(RowShape(id: find.int64(at: 0), names: names, header: find.blob(at: 1))) : nil
        }
        if let found { return found }
        guard try integer(.shapeCount) ?? 0 < Int64(RowShape.maximumCount) else {
            shapesFull = true
            return nil
        }
        let add = try statement(.addShape)
        defer { add.reset() }
        try Self.stepping(add, blobs: names, header) { () throws(SQLiteError) in _ = try add.step() }
        guard let id = try sqlite.integer("SELECT last_insert_rowid()") else { return nil }
        return RowShape(id: id, names: names, header: header)
    }

    /// Binds `blobs` to `statement`'s first parameters without copying them and runs `body`
    /// while their bytes are pinned.
    private static func stepping<R>(
        _ statement: SQLiteStatement, blobs first: [UInt8], _ second: [UInt8]? = nil,
        _ body: () throws(SQLiteError) -> R
    ) throws(SQLiteError) -> R {
        let hasSecond = second != nil
        let result = first.withUnsafeBytes { first in
            (second ?? []).withUnsafeBytes { second -> Result<R, SQLiteError> in
                do throws(SQLiteError) {
                    try statement.bind(blob: first, at: 1)
                    if hasSecond { try statement.bind(blob: second, at: 2) }
                    return .success(try body())
                } catch {
                    return .failure(error)
                }
            }
        }
        return try result.get()
    }

    private func execute(_ which: HotStatement) throws(SQLiteError) {
        let statement = try statement(which)
        defer { statement.reset() }
        _ = try statement.step()
    }

    func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement { try sqlite.prepare(sql) }
    func integer(_ sql: String) throws(SQLiteError) -> Int64? { try sqlite.integer(sql) }
    var changes: Int { sqlite.changes }
}

/// The statements of the hot paths: an array slot each in ``StoreConnection``.
enum HotStatement: Int, CaseIterable {
    case upsert, upsertOverRows, upsertOverUnlockedRows, record, entry, delete, begin, commit, rollback
    case touch, expired, evictionOrder, evict, setLocked, count, totalSize, fileBytes, dataVersion, keys, entries
    case shapeByID, shapeByNames, shapeCount, addShape, recordUse, beginRead

    var sql: String {
        switch self {
        case .upsert: SQL.upsert
        case .upsertOverRows: SQL.upsertOverRows
        case .upsertOverUnlockedRows: SQL.upsertOverUnlockedRows
        case .record: SQL.record
        case .entry: SQL.entry
        case .delete: "DELETE FROM entry WHERE id = ?"
        case .begin: "BEGIN IMMEDIATE"
        case .commit: "COMMIT"
        case .rollback: "ROLLBACK"
        case .touch: SQL.touch
        case .expired: SQL.expired
        case .evictionOrder: SQL.evictionOrder
        case .evict:
            "DELETE FROM entry WHERE id IN "
                + "(SELECT id FROM entry WHERE locked = 0 ORDER BY last_use, size, id LIMIT ?)"
        case .setLocked: "UPDATE entry SET locked = ? WHERE key = ?"
        case .count: "SELECT count(*) FROM entry"
        case .totalSize: "SELECT total(size) FROM entry"
        case .fileBytes: "SELECT total(size) FROM entry WHERE location = 1"
        case .dataVersion: "PRAGMA data_version"
        case .keys: "SELECT key FROM entry ORDER BY key"
        case .entries: "SELECT \(SQL.columns) FROM entry"
        case .shapeByID: "SELECT names, header FROM shape WHERE id = ?"
        case .shapeByNames: "SELECT id, header FROM shape WHERE names = ? ORDER BY id LIMIT 1"
        case .shapeCount: "SELECT count(*) FROM shape"
        case .addShape: "INSERT INTO shape(names, header) VALUES(?, ?)"
        case .recordUse:
            "UPDATE entry SET last_use = ?1, frequency = min(frequency + 1, \(EntryStore.maximumFrequency)) "
                + "WHERE key = ?2 AND last_use <= ?1 - ?3"
        case .beginRead: "BEGIN"
        }
    }
}
