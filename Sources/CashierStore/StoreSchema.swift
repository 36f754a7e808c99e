import CashierSQLite

/// The store's schema, its identity marks and the connection settings, written once.
///
/// One table, one row per entry, small or large. `id` is SQLite's rowid, given in insertion
/// order, so the table's pages fill up (a hash of the key as rowid scattered inserts over
/// the tree and left its pages a third empty: 2.45x the payload against 1.9x, measured).
/// `entry_by_key` finds a key (no hash, so no collisions) and lists keys in order. The blob
/// comes last: the metadata columns sit at the start of each cell. `entry_by_use` orders
/// eviction (unlocked first, then least recently used) and, holding `size`, covers
/// `SUM(size)` and `count(*)` without reading a record. Two partial indexes hold only the
/// rows they serve: `entry_unshaped` the large entries (their bytes, their sweep) and the rows
/// not stored by their shape, `entry_by_expiry` the entries that expire. `ghost` remembers keys the frequency-aware
/// order evicted before they were ever used again (``StoreEvictionOrder/frequencyAware``):
/// only keys, at most half as many as there are entries, oldest out first.
/// Query plans checked with EXPLAIN QUERY PLAN.
///
/// Footprint, 100,000 records of a 187-byte payload (allocated ÷ payload; a prototype of
/// issue 25 on the same SQLite, verbatim records): this schema 1.90x; `WITHOUT ROWID` keyed
/// by `key` 1.94x (the eviction index then carries the key); page size 8 KiB or 16 KiB 1.90x,
/// 1 KiB 2.06x; no `size` in `entry_by_use` 1.88x; no `auto_vacuum` 1.89x. The table is 89%
/// of the file and a verbatim record is already 1.5x its payload (80-byte header, key, type
/// name): the rows, not the schema, set the floor. So the schema stays and the rows shrink
/// instead (``RowRecord``), and `shape` keeps once what the records of a type share.
///
/// With shaped rows (2026-11-27, `cashier-ratios --footprint`, 197-byte payloads), 8 KiB pages
/// fit the table's rows tighter, 1.48x and 1.50x at rest against 1.51x, but a write then logs
/// whole 8 KiB pages: `--only default-write,default-overwrite,sqlite-write,sqlite-overwrite`
/// 1.72–1.80x the table's upsert against 1.18–1.24x. The pages stay at SQLite's 4 KiB.
enum StoreSchema {
    /// `PRAGMA application_id`: "CshS". A file without it is not a Cashier store.
    static let applicationID: Int64 = 0x4373_6853
    /// `PRAGMA user_version`: the schema's version. 2: `location` 2 and 3 are rows whose
    /// record is stored without its key, and 3 without its header's zero bytes (``RowRecord``).
    /// 3: the `ghost` table. 4: the `shape` table, and `location` 4 (``RowShape``). 5: the
    /// `entry_unshaped` index in place of `entry_files`. Each version is the one before with
    /// something added (or, for 5, an index widened): opening an older store for writing adds
    /// what it lacks, keeping every row, and marks it 5 (an older build then sets it aside rather
    /// than misread a row or meet an object it does not know); any other version is set aside.
    static let version: Int64 = 5
    /// Versions this build opens: they are this schema's subsets.
    static let readableVersions: ClosedRange<Int64> = 1...5

    static let table = """
        CREATE TABLE entry(\
        id INTEGER PRIMARY KEY, \
        key TEXT NOT NULL, \
        location INTEGER NOT NULL, \
        size INTEGER NOT NULL, \
        last_use INTEGER NOT NULL, \
        expiry INTEGER, \
        locked INTEGER NOT NULL, \
        frequency INTEGER NOT NULL, \
        record BLOB)
        """
    static let keyIndex = "CREATE UNIQUE INDEX entry_by_key ON entry(key)"
    static let index = "CREATE INDEX entry_by_use ON entry(locked, last_use, size)"
    /// The large entries (their bytes, their sweep) until version 5, which indexes them in
    /// ``unshapedIndex`` instead.
    static let filesIndex = "CREATE INDEX entry_files ON entry(location, size) WHERE location = 1"
    static let expiryIndex = "CREATE INDEX entry_by_expiry ON entry(expiry) WHERE expiry IS NOT NULL"
    /// The entries not stored by their shape (``RowRecord/shaped``): the large entries (their
    /// bytes, their sweep) and the rows kept verbatim or compact, few in a store this release
    /// writes. It lets listing the keys read them from `entry_by_key` alone when every shape is
    /// accepted, instead of every record's first bytes (``EntryStore/keys(vouchedBy:)``). It
    /// replaced `entry_files` (the large entries alone) rather than join it: one more index cost
    /// every write 1,100 instructions in SQLite (callgrind), this one 380 more than `entry_files`.
    /// A query of the large entries names its condition with `location = 1`, so SQLite uses it.
    static let unshapedIndex = "CREATE INDEX entry_unshaped ON entry(location, size) WHERE location != 4"
    /// Keyed by `key` (each key stored once: with a rowid and an index on `key`, twice, 2.0 MB
    /// against 1.0 MB for 50,000 keys of 10 bytes); `id` counts up as keys arrive, so the
    /// oldest go first (found by scanning the table, at a sweep).
    static let ghostTable = "CREATE TABLE ghost(key TEXT PRIMARY KEY, id INTEGER NOT NULL) WITHOUT ROWID"
    /// What the records of one type and app version share (``RowShape``): written once, never
    /// changed or removed. No uniqueness constraint (its index would be one more object): a
    /// writer looks for the names before adding them, inside one transaction.
    static let shapeTable = "CREATE TABLE shape(id INTEGER PRIMARY KEY, names BLOB NOT NULL, header BLOB NOT NULL)"
    /// What a read-only connection to an older store queries in place of a table it lacks: always empty.
    static let temporaryTables = [
        "ghost": "CREATE TEMP TABLE ghost(key TEXT PRIMARY KEY, id INTEGER NOT NULL) WITHOUT ROWID",
        "shape": "CREATE TEMP TABLE shape(id INTEGER PRIMARY KEY, names BLOB NOT NULL, header BLOB NOT NULL)",
    ]

    /// What `sqlite_schema` must hold, exactly, SQL text included: anything else (a trigger, a
    /// view, a column renamed by damage) is not ours.
    static let objects: Set<String> = versionFourObjects.subtracting([filesObject]).union([unshapedObject])
    /// What a version 4 store holds: no `entry_unshaped`.
    static let versionFourObjects: Set<String> = versionThreeObjects.union([shapeObject])
    /// What a version 3 store holds: no `shape`.
    static let versionThreeObjects: Set<String> = versionTwoObjects.union([ghostObject])
    static let ghostObject = "table ghost ghost \(ghostTable)"
    static let shapeObject = "table shape shape \(shapeTable)"
    static let unshapedObject = "index entry_unshaped entry \(unshapedIndex)"
    static let filesObject = "index entry_files entry \(filesIndex)"
    /// What a version 1 or 2 store holds: no `ghost`.
    static let versionTwoObjects: Set<String> = [
        "table entry entry \(table)", "index entry_by_key entry \(keyIndex)", "index entry_by_use entry \(index)",
        filesObject, "index entry_by_expiry entry \(expiryIndex)",
    ]

    /// Sets the connection up: defensive mode, corruption checks, no trust in the file's schema,
    /// WAL, the durability asked for. Runs on every open; none of it takes a lock.
    static func configure(
        _ connection: SQLiteConnection, synchronized: Bool, busyTimeout: Int32, tightVolume: Bool = false
    ) throws(SQLiteError) {
        try connection.enableDefensiveMode()
        try connection.setBusyTimeout(milliseconds: busyTimeout)
        try connection.execute("PRAGMA cell_size_check = ON")
        try connection.execute("PRAGMA trusted_schema = OFF")
        try connection.execute("PRAGMA mmap_size = 0")
        try setDurability(connection, synchronized: synchronized)
        try setLogBounds(connection, tightVolume: tightVolume)
    }

    /// `synchronous=FULL` (and on Apple platforms `fullfsync` and `checkpoint_fullfsync`,
    /// F_FULLFSYNC for commits and checkpoints; a no-op elsewhere): a commit survives power loss.
    /// Otherwise `NORMAL`: a commit survives the process being killed.
    static func setDurability(_ connection: SQLiteConnection, synchronized: Bool) throws(SQLiteError) {
        let on = synchronized ? "ON" : "OFF"
        try connection.execute("PRAGMA fullfsync = \(on)")
        try connection.execute("PRAGMA checkpoint_fullfsync = \(on)")
        try connection.execute("PRAGMA synchronous = \(synchronized ? "FULL" : "NORMAL")")
    }

    /// How large the log grows: on a roomy volume, SQLite's automatic checkpoint after 1,000
    /// pages and a `-wal` kept up to 6 MiB after one (it is reused, not grown again: a smaller
    /// limit, or checkpoints every 128 pages, made writes 25-50% slower, `cashier-ratios --only
    /// sqlite-write,sqlite-overwrite`). On a volume with little room (``tightVolumeBytes``), a
    /// checkpoint every 128 pages and 1 MiB kept: the log holds little the store does not, so
    /// when the volume is full a checkpoint needs little new room and removals can proceed.
    static func setLogBounds(_ connection: SQLiteConnection, tightVolume: Bool) throws(SQLiteError) {
        try connection.execute("PRAGMA journal_size_limit = \(tightVolume ? 1 << 20 : walLimit)")
        try connection.execute("PRAGMA wal_autocheckpoint = \(tightVolume ? 128 : 1000)")
    }

    /// Bytes a -wal file keeps after a checkpoint (on a roomy volume).
    static let walLimit = 6 << 20

    /// Creates the schema in an empty database, or checks an existing one is exactly ours.
    ///
    /// Returns nil when the file is a usable store, or why it is not.
    static func prepare(_ connection: SQLiteConnection, readOnly: Bool) throws(SQLiteError) -> String? {
        if readOnly, try isEmpty(connection) {
            throw SQLiteError(code: SQLiteCode.cantOpen, message: "no store yet", operation: "open read-only")
        }
        if try isEmpty(connection) {
            // auto_vacuum must be chosen before the first table; journal_mode=WAL is kept in the file.
            try connection.execute("PRAGMA auto_vacuum = INCREMENTAL")
            _ = try connection.text("PRAGMA journal_mode = WAL")
            try connection.execute("BEGIN IMMEDIATE")
            do {
                // Another process may have created it between the check and the lock.
                if try isEmpty(connection) {
                    try connection.execute(table)
                    try connection.execute(keyIndex)
                    try connection.execute(index)
                    try connection.execute(expiryIndex)
                    try connection.execute(unshapedIndex)
                    try connection.execute(ghostTable)
                    try connection.execute(shapeTable)
                    try connection.execute("PRAGMA application_id = \(applicationID)")
                    try connection.execute("PRAGMA user_version = \(version)")
                }
                try connection.execute("COMMIT")
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        }
        guard try connection.integer("PRAGMA application_id") == applicationID else {
            return "not a Cashier store (application_id)"
        }
        let foundVersion = try connection.integer("PRAGMA user_version") ?? 0
        guard readableVersions.contains(foundVersion) else {
            return "store schema version \(foundVersion) is not \(version)"
        }
        let found = try schemaObjects(connection)
        let olderObjects = [versionTwoObjects, versionThreeObjects, versionFourObjects]
        guard found == objects || (foundVersion < version && olderObjects.contains(found)) else {
            let names = found.map { $0.split(separator: " ").prefix(2).joined(separator: " ") }
            return "unexpected schema: \(names.sorted().joined(separator: ", "))"
        }
        if readOnly {
            // An older store read as it is: empty tables of this connection's own stand in.
            if !found.contains(ghostObject), let ghost = temporaryTables["ghost"] { try connection.execute(ghost) }
            if !found.contains(shapeObject), let shape = temporaryTables["shape"] { try connection.execute(shape) }
            return nil
        }
        if foundVersion != version {
            do throws(SQLiteError) {
                try migrate(connection)
            } catch  where error.primaryCode == SQLiteCode.full && found == versionFourObjects {
                // A version 4 store lacks only `entry_unshaped`, which no statement needs (they
                // scan without it): on a full volume it serves as it is, so removals can make
                // room, and a later open adds the index.
            }
        }
        guard try connection.text("PRAGMA journal_mode")?.lowercased() == "wal" else {
            // Another process may have changed it; WAL is what readers beside a writer rely on.
            _ = try connection.text("PRAGMA journal_mode = WAL")
            return nil
        }
        return nil
    }

    /// Adds what an older store lacks (`ghost`, `shape`, `entry_unshaped` in place of `entry_files`)
    /// and marks it ``version``, in one
    /// transaction: another process may be doing the same, and either finds the other's work done.
    private static func migrate(_ connection: SQLiteConnection) throws(SQLiteError) {
        try connection.execute("BEGIN IMMEDIATE")
        do {
            let found = try schemaObjects(connection)
            if !found.contains(ghostObject) { try connection.execute(ghostTable) }
            if !found.contains(shapeObject) { try connection.execute(shapeTable) }
            if !found.contains(unshapedObject) { try connection.execute(unshapedIndex) }
            if found.contains(filesObject) { try connection.execute("DROP INDEX entry_files") }
            try connection.execute("PRAGMA user_version = \(version)")
            try connection.execute("COMMIT")
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    private static func schemaObjects(_ connection: SQLiteConnection) throws(SQLiteError) -> Set<String> {
        Set(try connection.texts("SELECT type || ' ' || name || ' ' || tbl_name || ' ' || sql FROM sqlite_schema"))
    }

    private static func isEmpty(_ connection: SQLiteConnection) throws(SQLiteError) -> Bool {
        let objects = try connection.integer("SELECT count(*) FROM sqlite_schema")
        let application = try connection.integer("PRAGMA application_id")
        return objects == 0 && application == 0
    }
}
