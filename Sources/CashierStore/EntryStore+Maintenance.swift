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
            try connection.run(.allRecords) { query throws(SQLiteError) in
                while try query.step() {
                    let entry = Self.entry(query)
                    body(StoredRecord(entry: entry, record: try Self.record(query, entry, connection)))
                }
            }
        }
    }

    /// Removes every entry; returns the large entries' rows. `filePath`: where a large entry's
    /// file is, by key; each is removed inside the transaction, before the rows go.
    /// `otherFiles`: the paths of every other entry file the folder holds, asked for inside the
    /// transaction and removed there too: a file a killed write left behind a row would
    /// otherwise outlive its row, and the next import would bring its value back.
    ///
    /// On a full volume, deleting every row at once needs a page of log for each page of the
    /// store, more than the removed files may give back (a 110 KiB store against their 98 KiB):
    /// the rows then go one a transaction, which needs a few pages, the writer folding its log
    /// back into the store whenever a commit finds no room.
    @discardableResult
    package func removeAll(filePath: ((String) -> String)? = nil, otherFiles: (() -> [String])? = nil)
        throws(StoreError) -> StoreRemovals
    {
        do throws(StoreError) {
            return StoreRemovals(removed: try removeEveryRow(filePath: filePath, otherFiles: otherFiles))
        } catch .failed(let error) where error.primaryCode == SQLiteCode.full {
            // What the whole transaction answers: the large entries removed (their files first,
            // which makes room), then the rows one a transaction, as any bulk removal on a full
            // volume goes (``remove(unchanged:evictedIn:filePath:asWalked:)``): those that find no room
            // even so stay as they were, in `awaitingRoom`, for the caller to name and retry.
            var removed: [StoreEntry] = []
            var rows: [StoreEntry] = []
            for entry in try entries() {
                if entry.location == .file {
                    removed += try remove([entry.key], filePath: filePath)
                } else {
                    rows.append(entry)
                }
            }
            return StoreRemovals(removed: removed, awaitingRoom: try remove(unchanged: rows).awaitingRoom)
        }
    }

    private func removeEveryRow(filePath: ((String) -> String)?, otherFiles: (() -> [String])?)
        throws(StoreError) -> [StoreEntry]
    {
        try withWriter { connection throws(SQLiteError) in
            try transaction(connection) { () throws(SQLiteError) in
                // Through a store another process replaced (its folder removed and made again),
                // the files are the other store's entries and its rows would stay: the caller
                // reopens the store and removes every entry there.
                try ensureOpensItsPath(connection, "remove every entry")
                let removed = try connection.run(.largeEntries) { files throws(SQLiteError) in
                    var removed: [StoreEntry] = []
                    while try files.step() { removed.append(Self.entry(files)) }
                    return removed
                }
                // Every file lies in the cache's folder: judged once (``isItsFolder(_:_:)``), not
                // for each file. Not the store's folder: a large entry's file ends the removal
                // (as ``removeFileIfStillOurs(_:_:)`` does), another file stays.
                let largeFiles = filePath.map { path in removed.map { path($0.key) } } ?? []
                if let first = largeFiles.first { try ensureIsItsFolder(first, connection) }
                for file in largeFiles { try Self.removeFile(file) }
                // Files are renamed into their names only inside their rows' transactions: what
                // the folder holds under an entry's name now is committed or left behind. Best
                // effort (something that is not a file keeps its name): the caller's reconcile
                // after the transaction deals with what stays, as it did before.
                let others = otherFiles?() ?? []
                if !largeFiles.isEmpty || others.first.map({ isItsFolder($0, connection) }) ?? true {
                    for file in others { _ = unlink(file) }
                }
                try connection.step(.deleteAll)
                return removed
            }
        }
    }

    /// Removes each of `entries` whose row is still as planned (same location and size, last use
    /// no later), in one transaction; returns those it removed. A row written or used since the
    /// plan was made is spared: the next pass decides again. `evictedIn`: the removals are a
    /// sweep's evictions in that order, remembered as ``removeEvicted(_:order:)`` remembers them.
    /// `filePath`: where a key's large-entry file is (nil: there is none, as the caller knows);
    /// the file of each entry removed (a large entry's, or one left behind a row) is removed
    /// inside the transaction, before its row goes, so no reader finds a removed entry's file
    /// without its row, even after a kill.
    ///
    /// On a full volume one transaction for many rows may need more room in the log than the
    /// volume has (a page of log for every page it touches: removing the 40 rows of a 110 KiB
    /// store did not fit in the 98 KiB its files' removal freed). The rows then go one a
    /// transaction, which needs a few pages (the writer folds the log back into the store when a
    /// commit finds no room); a row whose own transaction does not fit either stays as it was
    /// and is reported in ``StoreRemovals/awaitingRoom``, never dropped silently. Another failure
    /// of a one-row transaction ends the removals there: thrown if none was removed yet. (No
    /// entry is evicted to make room here: only ``remove(_:filePath:evictingFilesAt:until:evicted:)``,
    /// the removal of one key on its caller's thread, does that, once.)
    ///
    /// `asWalked`: the row ids and snapshot of the walk the entries were chosen by
    /// (``walkEvictionOrder(_:_:)``). When the store is as it was then, nothing changed since
    /// the walk read the rows, and they are deleted by id (``removeAsWalked(_:rowIDs:_:filePath:)``).
    ///
    /// An eviction of more than ``movesPerSweep`` rows (no compaction follows it) gives the free
    /// pages back inside its own transaction (`PRAGMA incremental_vacuum`), unless the store
    /// keeps its log small: the pages it empties reach the log once, where a vacuum of its own
    /// after the commit wrote them again. Evicting half of 10,000 rows took 2 ms less
    /// (`cashier-ratios --only sqlite-evict-reclaim`). If that transaction finds the volume full,
    /// the writer's own retry (``withWriter(until:room:_:)``, which then keeps the log small) makes
    /// it again without the vacuum.
    @discardableResult
    package func remove(
        unchanged entries: [StoreEntry], evictedIn order: StoreEvictionOrder? = nil,
        filePath: ((String) -> String?)? = nil, asWalked walk: (rowIDs: [Int64], snapshot: StoreSnapshot)? = nil
    ) throws(StoreError) -> StoreRemovals {
        guard !entries.isEmpty else { return StoreRemovals() }
        do throws(StoreError) {
            return StoreRemovals(
                removed: try removeInOneTransaction(
                    entries, evictedIn: order, filePath: filePath, asWalked: walk,
                    givingPagesBack: order != nil && entries.count > Self.movesPerSweep))
        } catch .failed(let error) where error.primaryCode == SQLiteCode.full && entries.count > 1 {
            var outcome = StoreRemovals()
            for entry in entries {
                do throws(StoreError) {
                    // Not remembered in the ghost (it only sharpens the order): its keys took pages
                    // the store file did not have, which the log, the only room left, then could
                    // not be folded into (a collection for room on a volume with 40 KiB free left
                    // it none). A key evicted so comes back new if written again.
                    outcome.removed += try removeInOneTransaction([entry], evictedIn: nil, filePath: filePath)
                } catch .failed(let error) where error.primaryCode == SQLiteCode.full {
                    outcome.awaitingRoom.append(entry)
                } catch {
                    if outcome.removed.isEmpty && outcome.awaitingRoom.isEmpty { throw error }
                    break
                }
            }
            return outcome
        } catch .failed(let error) where error.primaryCode == SQLiteCode.full {
            // One row already had its own transaction: no second one for it.
            return StoreRemovals(awaitingRoom: entries)
        }
    }

    /// One row draws on the folder's reserve when the volume is full (EntryStore+Reserve.swift);
    /// many do not: what does not fit goes again one a transaction, each of which may.
    private func removeInOneTransaction(
        _ entries: [StoreEntry], evictedIn order: StoreEvictionOrder?, filePath: ((String) -> String?)?,
        asWalked walk: (rowIDs: [Int64], snapshot: StoreSnapshot)? = nil, givingPagesBack: Bool = false
    ) throws(StoreError) -> [StoreEntry] {
        try withWriter(room: entries.count == 1 ? .reserve : .log) { connection throws(SQLiteError) in
            try transaction(connection) { () throws(SQLiteError) in
                // Inside the write transaction: no commit can come between the look and the deletes.
                // The path must still name the store the walk read (not one another process put there).
                var asWalked: [StoreEntry]? = nil
                if let walk, walk.rowIDs.count == entries.count, try snapshot(of: connection) == walk.snapshot,
                    opensItsPath(connection)
                {
                    asWalked = try removeAsWalked(entries, rowIDs: walk.rowIDs, connection, filePath: filePath)
                }
                // Whatever the row's location: a row that replaced a large entry may have its old
                // file still under the key's name (a kill between its two transactions); with the
                // row gone, the next import would give that file a row again.
                let removed: [StoreEntry]
                if let asWalked {
                    removed = asWalked
                } else {
                    removed = try removeUnchanged(entries, connection) { entry throws(SQLiteError) in
                        if let path = filePath?(entry.key) { try removeFileIfStillOurs(path, connection) }
                    }
                }
                if order == .frequencyAware { try rememberEvicted(removed, connection) }
                if givingPagesBack, !tightVolume { try connection.sqlite.execute("PRAGMA incremental_vacuum") }
                return removed
            }
        }
    }

    /// After a sweep removed `count` rows (at most ``movesPerSweep``; more: nothing moves): when
    /// the table's ids span more than a tenth again as many rows as it holds, moves `count` of the
    /// rows with the lowest ids to the end of the table, in a transaction of its own, without
    /// waiting for another process (busy: nothing moves; the next sweep tries again). Rows are
    /// laid out in id order and a new row always goes last, so the room a removed
    /// row leaves is never filled again; the frequency-aware order evicts all over the table, and
    /// the pages left partly empty counted against the size limit (a limit held 20% fewer rows
    /// than their bytes). Moving the oldest survivors out empties the oldest pages whole, which
    /// the sweep's reclaim gives back. At most one move a removal: a sweep of 30 rows of 1 KiB
    /// at a server's pace (`CashierReplay disk-cache --object-bytes 1024`) then held 262 rows of a
    /// limit of 300 where it held 241. The price: among entries last used in the same second and
    /// of one size, a moved row goes after rows written after it (the order's last tie-break).
    package func compact(afterRemoving count: Int) throws(StoreError) {
        guard count > 0, count <= Self.movesPerSweep else { return }
        try withWriter(until: MonotonicDeadline(milliseconds: 0)) { connection throws(SQLiteError) in
            try transaction(connection) { () throws(SQLiteError) in try compact(moving: count, connection) }
        }
    }

    private func compact(moving count: Int, _ connection: StoreConnection) throws(SQLiteError) {
        let (rows, lowest, highest) = try connection.run(.idSpan) { span throws(SQLiteError) in
            try span.step() ? (span.int64(at: 0), span.int64(at: 1), span.int64(at: 2)) : (0, 0, 0)
        }
        // Ids are SQLite's rowids, in 1...Int64.max for the rows it numbers; a store whose ids
        // are not (a damaged or foreign file) is not compacted: no arithmetic on them overflows.
        guard rows > 0, lowest > 0, highest < Int64.max - Self.movesPerSweepID,
            Double(highest - lowest + 1) > Double(rows) * 1.1
        else { return }
        let ids = try connection.run(.lowestIDs) { lowest throws(SQLiteError) in
            try lowest.bind(Int64(count), at: 1)
            var ids: [Int64] = []
            while try lowest.step() { ids.append(lowest.int64(at: 0)) }
            return ids
        }
        var next = highest + 1
        for id in ids {
            try connection.run(.moveRow) { move throws(SQLiteError) in
                try move.bind(next, at: 1)
                try move.bind(id, at: 2)
                _ = try move.step()
            }
            next += 1
        }
    }

    /// The most rows a sweep removes for it to move rows (``compact(afterRemoving:)``): a larger
    /// eviction (half the store: a limit lowered) is timed by whoever waits for it, and its moves
    /// and the reclaim that puts their pages back cost it a sixth more (`cashier-ratios --only
    /// sqlite-evict-reclaim`, 1.74x against 1.50x); the sweeps after it move as they go.
    static let movesPerSweep = 256
    private static let movesPerSweepID = Int64(movesPerSweep)

    /// Removes `entry`'s row if it is still as it was (see ``remove(unchanged:evictedIn:filePath:asWalked:)``)
    /// and no file is at `file`, checked under the store's write lock, where no write of the key
    /// is under way: the row of a large entry whose file is gone. Returns whether it removed it.
    @discardableResult
    package func remove(unchanged entry: StoreEntry, ifMissing file: String) throws(StoreError) -> Bool {
        try withWriter { connection throws(SQLiteError) in
            try transaction(connection) { () throws(SQLiteError) in
                var info = stat()
                guard lstat(file, &info) != 0 else { return false }
                return try !removeUnchanged([entry], connection).isEmpty
            }
        }
    }

    /// Deletes each of `entries` whose row is as planned, inside the caller's transaction,
    /// calling `removed` for each deleted (before the transaction commits); returns them.
    func removeUnchanged(
        _ entries: [StoreEntry], _ connection: StoreConnection,
        removed: (StoreEntry) throws(SQLiteError) -> Void = { _ in }
    ) throws(SQLiteError) -> [StoreEntry] {
        var done: [StoreEntry] = []
        for entry in entries {
            try connection.run(.removeUnchanged) { delete throws(SQLiteError) in
                try delete.bind(entry.key, at: 1)
                // A row's stored location may be a compact form of it (``RowRecord``): row or file is what counts.
                try delete.bind(entry.location == .file ? 1 : 0, at: 2)
                try delete.bind(Int64(entry.size), at: 3)
                try delete.bind(entry.lastUse, at: 4)
                try delete.bind(entry.isLocked ? 1 : 0, at: 5)
                _ = try delete.step()
            }
            guard connection.changes > 0 else { continue }
            try removed(entry)
            done.append(entry)
        }
        return done
    }

    /// Records uses (`last_use` forward, `frequency` + 1), but only of entries whose last use is
    /// `granularity` seconds or more before `time`, and of entries never used since written
    /// (`frequency = 0`) by a use in a later second than their write: a use within the granularity changes
    /// no page, so an entry read all day costs one write a granularity, while the first use of
    /// an entry, which moves it out of the frequency-aware order's new entries, is never lost
    /// to it (at a server's pace most entries are read again, or never, within a minute).
    /// Each use has its own time. (A use of the write's own second is left out: it may be of a
    /// value another process removed, then wrote anew; the new entry was not used.)
    ///
    /// `firstUses`: uses of rows a read found never used since written, each written to that row
    /// only (same `last_use`, still `frequency = 0`), whatever the granularity and the second.
    package func recordUses(
        _ uses: [(key: String, time: Int64)], granularity: Int64, firstUses: [StoreFirstUse] = []
    ) throws(StoreError) {
        guard !uses.isEmpty || !firstUses.isEmpty else { return }
        try withWriter { connection throws(SQLiteError) in
            try touch(uses, granularity: granularity, firstUses: firstUses, connection)
        }
    }

    /// Writes `uses` in one transaction on `connection` (see ``recordUses(_:granularity:)``).
    private func touch(
        _ uses: [(key: String, time: Int64)], granularity: Int64, firstUses: [StoreFirstUse] = [],
        _ connection: StoreConnection
    ) throws(SQLiteError) {
        try transaction(connection) { () throws(SQLiteError) in
            for use in firstUses {
                try connection.run(.recordFirstUse) { touch throws(SQLiteError) in
                    try touch.bind(use.time, at: 1)
                    try touch.bind(use.key, at: 2)
                    try touch.bind(use.written, at: 3)
                    _ = try touch.step()
                }
            }
            for use in uses {
                try connection.run(.recordUse) { touch throws(SQLiteError) in
                    try touch.bind(use.time, at: 1)
                    try touch.bind(use.key, at: 2)
                    try touch.bind(granularity, at: 3)
                    _ = try touch.step()
                }
            }
        }
    }

    /// ``recordUses(_:granularity:)`` now if the writer and the store's lock are free (no call
    /// of this process holds the writer, no other process the lock); false, having done nothing,
    /// at once otherwise: for a use a memory hit records, which never waits.
    package func recordUsesIfFree(
        _ uses: [(key: String, time: Int64)], granularity: Int64, firstUses: [StoreFirstUse] = []
    ) -> Bool {
        let done: Void? = try? withWriterIfFree { connection throws(SQLiteError) in
            try touch(uses, granularity: granularity, firstUses: firstUses, connection)
        }
        return done != nil
    }

    /// Writes `entry`'s row unless its key has one already (a large entry found on disk
    /// without a row: an older version's file, or a write cut between its file and its row).
    /// Returns whether it wrote.
    @discardableResult
    package func insertIfAbsent(_ entries: [StoreEntry]) throws(StoreError) -> Int {
        guard !entries.isEmpty else { return 0 }
        return try withWriter { connection throws(SQLiteError) in
            try transaction(connection) { () throws(SQLiteError) in try insertIfAbsent(entries, connection) }
        }
    }

    private func insertIfAbsent(_ entries: [StoreEntry], _ connection: StoreConnection) throws(SQLiteError) -> Int {
        var written = 0
        for entry in entries {
            try connection.run(.insertIfAbsent) { insert throws(SQLiteError) in
                try insert.bind(entry.key, at: 1)
                try insert.bind(Int64(entry.size), at: 2)
                try insert.bind(entry.lastUse, at: 3)
                try insert.bind(entry.expiry, at: 4)
                try insert.bind(entry.isLocked ? 1 : 0, at: 5)
                _ = try insert.step()
            }
            written += connection.changes
        }
        return written
    }

    /// What ``reconcile(files:indexing:)`` did with the files it was given.
    package struct Reconciled: Sendable, Equatable {
        /// Files that got a row (large entries indexed).
        package var indexed = 0
        /// Paths of the files removed: shadowed by their key's row, or (not indexing) without one.
        package var removed: [String] = []
    }

    /// Brings entry files found in the folder in line with the index, in one transaction, under
    /// the store's write lock (so no write or removal of theirs is under way in any process):
    /// a file whose key's row holds a record is an older write no read returns, and goes; a file
    /// whose key has no row gets one with `indexing` (a file older than the store, imported) and
    /// goes without (an orphan: what a write killed between its file and its row left, or a
    /// removed entry's); a file whose key's row is a large entry's is its file, and stays.
    /// `files`: each file's path and the row it would get; nil for a file no read finds (named
    /// from another spelling of its key), which goes. A file gone meanwhile is skipped.
    package func reconcile(files: [(path: String, entry: StoreEntry?)], indexing: Bool) throws(StoreError)
        -> Reconciled
    {
        guard !files.isEmpty else { return Reconciled() }
        return try withWriter { connection throws(SQLiteError) in
            return try transaction(connection) { () throws(SQLiteError) in
                var done = Reconciled()
                for (path, entry) in files {
                    var info = stat()
                    guard lstat(path, &info) == 0 else { continue }
                    guard let entry else {
                        try removeFileIfStillOurs(path, connection)
                        done.removed.append(path)
                        continue
                    }
                    switch try existing(entry.key, connection)?.location {
                    case .file?: continue
                    case nil where indexing: done.indexed += try insertIfAbsent([entry], connection)
                    case nil, .row?:
                        try removeFileIfStillOurs(path, connection)
                        done.removed.append(path)
                    }
                }
                return done
            }
        }
    }
}

extension EntryStore {
    /// Makes every later write durable against power loss (`synchronous=FULL`, and on Apple
    /// platforms `fullfsync` and `checkpoint_fullfsync`), or only against the process being
    /// killed (`NORMAL`): what ``Options/synchronized`` sets at opening, changed for the writer.
    package func setSynchronized(_ synchronized: Bool) throws(StoreError) {
        try withWriter { connection throws(SQLiteError) in
            try StoreSchema.setDurability(connection.sqlite, synchronized: synchronized)
        }
    }
}

extension EntryStore {
    /// Reopens the store when its file is no longer the one open: another process set it aside,
    /// or someone deleted it (a fresh, empty store is created in its place). One `lstat`.
    /// Returns true when it reopened; throws when the file cannot be opened again (its folder is gone).
    @discardableResult
    package func reopenIfMoved() throws(StoreError) -> Bool {
        try withWriter { _ throws(SQLiteError) in try reopenIfReplaced() }
    }

    /// Whether the file at the store's path is no longer the one the writer has open (another
    /// process set it aside, or it was deleted): one `lstat`, no lock.
    package var isReplaced: Bool {
        FileIdentity(path: path) != writerIdentity
    }

    /// Removes `file`, an entry's file of the store's folder, unless ``isItsFolder(_:_:)`` says
    /// the folder `file` lies in is no longer this store's. Throws `ESTALE` then, which ends the
    /// transaction; the store is reopened once a later call notices it was replaced. Asked before
    /// each removal, under this store's lock (which does not hold the other store's writers back).
    func removeFileIfStillOurs(_ file: String, _ connection: StoreConnection) throws(SQLiteError) {
        try ensureIsItsFolder(file, connection)
        try Self.removeFile(file)
    }

    /// Throws `ESTALE` unless ``isItsFolder(_:_:)``: `file`'s folder is no longer this store's.
    func ensureIsItsFolder(_ file: String, _ connection: StoreConnection) throws(SQLiteError) {
        guard isItsFolder(file, connection) else {
            throw SQLiteError(systemCode: ESTALE, operation: "remove \(file): \(path) is not its folder's store now")
        }
    }

    /// Whether the folder `file` lies in is still this store's: the store's path names the file
    /// `connection` has open, and `file`'s folder is the store's. Not once another process removed
    /// the folder and made it again (another store), nor once a symbolic link on the way to `file`
    /// names another folder (the store opened its folder's resolved path; files are named as the
    /// cache was given its folder): what this store says of the files there (no row: an orphan; a
    /// row being removed: its file) is not so, and removing them would lose another cache's
    /// entries. An `lstat` and two `stat`s.
    func isItsFolder(_ file: String, _ connection: StoreConnection) -> Bool {
        guard opensItsPath(connection), let folder = FileIdentity(followingLinksAt: Self.folder(of: file)) else {
            return false
        }
        return folder == FileIdentity(followingLinksAt: Self.folder(of: path))
    }

    private static func folder(of path: String) -> String { (path as NSString).deletingLastPathComponent }

    /// Throws `ESTALE` unless ``opensItsPath(_:)``: a removal through a store another process
    /// replaced would leave the replacing store's rows (and, once it removed files, take that
    /// store's files). The caller reopens the store (``reopenIfMoved()``) and removes there.
    func ensureOpensItsPath(_ connection: StoreConnection, _ operation: String) throws(SQLiteError) {
        guard opensItsPath(connection) else {
            throw SQLiteError(systemCode: ESTALE, operation: "\(operation): \(path) is not its folder's store now")
        }
    }

    /// Whether the store's path still names the file `connection` has open: not once another
    /// process set the store aside or deleted it, or removed its folder and made it again (the
    /// files there are then another store's entries). One `lstat`; the caller holds the writer.
    func opensItsPath(_ connection: StoreConnection) -> Bool {
        FileIdentity(path: path) == connection.identity
    }
}
