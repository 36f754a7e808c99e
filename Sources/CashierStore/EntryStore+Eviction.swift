import CashierSQLite

/// The order in which a sweep evicts: what a size limit costs the entries read again.
package enum StoreEvictionOrder: Sendable, CaseIterable {
    /// Least recently used first (`last_use`); among equal last uses (they are coarse) the
    /// smaller, then the row placed first (`id`: written first, unless a sweep moved it since,
    /// ``EntryStore/compact(afterRemoving:)``).
    case leastRecentlyUsed
    /// S3-FIFO's queues (Yang et al., SOSP '23) kept in the index, so every process shares
    /// them and they survive a relaunch. An entry is *new* while it has never been used since
    /// it was written (`frequency = 0`) and its key is not in the store's ghost table of keys
    /// evicted new; any other entry is *reused*. The order:
    ///
    /// 1. new entries, least recently written first, except the newest
    ///    ``EntryStore/newEntriesShare`` of the total size (they get that long to be reused);
    /// 2. reused entries, least recently used first;
    /// 3. the newest new entries.
    ///
    /// Ties are broken by size, then the row placed first, as in ``leastRecentlyUsed``. A key evicted
    /// new is remembered in the ghost (at most half as many keys as entries, oldest out first):
    /// written again, it comes back reused, so a working set that moves gets in after one
    /// eviction, while a one-time scan never gets past the newest share. A ghost key that
    /// leaves while its entry is still new gives the entry frequency 1.
    ///
    /// Chosen by replaying the disk-tier traces of issue 26 through the store
    /// (`swift run -c release CashierReplay disk-candidates` prints every order tried):
    /// within 0.02 of the best classical policy on each, against 0.1 below for
    /// least-recently-used on the Zipf and feed traces (Benchmarks/Eviction/README.md).
    case frequencyAware
}

extension EntryStore {
    /// The share of the total size that ``StoreEvictionOrder/frequencyAware`` keeps for the
    /// newest new entries: one twentieth.
    package static let newEntriesShare = 0.05

    /// Calls `body` with the unlocked entries in `order`, one at a time, while it returns true:
    /// a sweep stops reading once it has chosen enough. Changes nothing.
    package func forEachEvictionCandidate(order: StoreEvictionOrder, _ body: (StoreEntry) -> Bool)
        throws(StoreError)
    {
        _ = try walkEvictionOrder(order) { entry, _ in body(entry) }
    }

    /// ``forEachEvictionCandidate(order:_:)`` with each entry's row id, and the store as the
    /// walk began: given back to ``remove(unchanged:evictedIn:filePath:asWalked:)`` with the ids,
    /// it lets the removal delete the rows by id when nothing was committed since. Nil when
    /// this process's writer was busy (a write under way) or the store is opened exclusively.
    ///
    /// `measuring`: called first, in the walk's own read transaction, with what the entries
    /// occupy as that snapshot has them (``StoreMeasure``); the walk goes on only if it answers
    /// true. A measure of its own before the walk counted, as entries, pages a commit had given
    /// back while a reader of another process held the log (the file is cut back at a checkpoint:
    /// a second sweep chose every row left), and another process's sweep committed between the
    /// two evicted its overrun twice.
    package func walkEvictionOrder(
        _ order: StoreEvictionOrder, measuring: ((StoreMeasure) -> Bool)? = nil,
        _ body: (StoreEntry, _ rowID: Int64) -> Bool
    ) throws(StoreError) -> StoreSnapshot? {
        // Taken before the walk's read transaction begins: a commit between the two is in what
        // the walk reads, and in what the removal finds changed (it then checks every row).
        let before = try? withWriterIfFree { connection throws(SQLiteError) -> StoreSnapshot? in
            if connection.isExclusive { return nil }
            return try snapshot(of: connection)
        }
        // One read transaction: each queue's statement sees the same snapshot, so an entry used
        // by another process between two of them is neither listed twice nor evicted fresh.
        try withReader { connection throws(SQLiteError) in
            try connection.step(.beginRead)
            defer { _ = try? connection.step(.commit) }
            if let measuring, !measuring(try measure(connection)) { return }
            try walk(order, limit: -1, connection) { id, entry in body(entry, id) }
        }
        return before ?? nil
    }

    /// What the entries occupy in `connection`'s snapshot (``StoreMeasure``); with
    /// `includingFreePages`, the store's free pages counted as occupied.
    func measure(_ connection: StoreConnection, includingFreePages: Bool = false) throws(SQLiteError) -> StoreMeasure {
        let files = Int(clamping: try connection.integer(.fileBytes) ?? 0)
        let pages =
            (try connection.integer(.pageCount) ?? 0)
            - (includingFreePages ? 0 : try connection.integer(.freePages) ?? 0)
        let pageSize = try connection.integer(.pageSize) ?? 0
        let (used, overflow) = max(0, pages).multipliedReportingOverflow(by: pageSize)
        let shm = fileSize(path + "-shm")
        return StoreMeasure(
            occupied: files.addingClamped(overflow ? .max : Int(clamping: used)).addingClamped(shm),
            entries: Int(clamping: try connection.integer(.totalSize) ?? 0), files: files,
            fixed: shm.addingClamped(Self.emptyStorePages * Int(clamping: max(0, min(pageSize, 1 << 16)))))
    }

    /// Pages a store holds with no entry (its schema's tables' and indexes' roots, the pointer
    /// map, the header): what a sweep does not count as rows' (``StoreMeasure/fixed``).
    static let emptyStorePages = 10

    /// What the writer knows of the store's changes: which writer it is, every other
    /// connection's commits (in any process: `PRAGMA data_version`, with the writer's
    /// generation) and its own rows changed (`total_changes()`, rolled back or not). Equal
    /// twice: the same file, and nothing was committed between.
    func snapshot(of connection: StoreConnection) throws(SQLiteError) -> StoreSnapshot {
        StoreSnapshot(
            connection: connection.serial, dataVersion: try dataVersion(of: connection),
            changes: try connection.integer(.totalChanges) ?? -1)
    }

    /// The keys one statement puts in the ghost (``rememberEvicted(_:_:)``).
    static let ghostsPerInsert = 32

    /// The rows a statement of ``removeAsWalked(_:rowIDs:_:filePath:)`` deletes by id: the slots
    /// of the last one are filled with nulls, which match no row.
    static let rowsPerRemoval = 64

    /// Deletes `entries` by the row ids a walk read them with (`rowIDs`, in step), 64 a
    /// statement (half the time of a conditional `DELETE` per key for 5,000 rows: each statement's
    /// own cost was the half); an entry with a file (`filePath`) goes as
    /// ``remove(unchanged:evictedIn:filePath:asWalked:)`` removes it, file and row, after them. Call
    /// inside a transaction that found the store as the walk began. Returns the entries removed;
    /// nil, having deleted nothing, when a row the walk read is not there (not expected: the
    /// caller then checks each row).
    func removeAsWalked(
        _ entries: [StoreEntry], rowIDs: [Int64], _ connection: StoreConnection, filePath: ((String) -> String?)?
    ) throws(SQLiteError) -> [StoreEntry]? {
        var ids: [Int64] = []
        var removed: [StoreEntry] = []
        var withFiles: [(entry: StoreEntry, path: String)] = []
        ids.reserveCapacity(entries.count)
        removed.reserveCapacity(entries.count)
        for (entry, id) in zip(entries, rowIDs) {
            if let path = filePath?(entry.key) {
                withFiles.append((entry, path))
            } else {
                ids.append(id)
                removed.append(entry)
            }
        }
        try connection.sqlite.execute("SAVEPOINT walked")
        var deleted = 0
        for start in stride(from: 0, to: ids.count, by: Self.rowsPerRemoval) {
            let batch = ids[start..<min(start + Self.rowsPerRemoval, ids.count)]
            try connection.run(.removeRowsAsWalked) { delete throws(SQLiteError) in
                for slot in 0..<Self.rowsPerRemoval {
                    let index = batch.startIndex + slot
                    try delete.bind(index < batch.endIndex ? batch[index] : nil, at: Int32(slot + 1))
                }
                _ = try delete.step()
            }
            deleted += connection.changes
        }
        guard deleted == ids.count else {
            try connection.sqlite.execute("ROLLBACK TO walked")
            try connection.sqlite.execute("RELEASE walked")
            return nil
        }
        try connection.sqlite.execute("RELEASE walked")
        for (entry, path) in withFiles {
            removed += try removeUnchanged([entry], connection) { _ throws(SQLiteError) in
                try removeFileIfStillOurs(path, connection)
            }
        }
        return removed
    }

    /// Steps through the unlocked entries in `order`, at most `limit` (negative: all), while
    /// `body` returns true.
    ///
    /// ``StoreEvictionOrder/frequencyAware`` walks the `entry_by_use` index (least recently used
    /// first) three times, one per queue: the new entries up to the newest share's edge, the
    /// reused ones, then the newest new ones. Each walk reads the rows it passes and no more,
    /// and nothing is sorted: evicting half of 10,000 entries read every row and sorted them
    /// twice (11 ms), where the first walk now reads the half it evicts.
    private func walk(
        _ order: StoreEvictionOrder, limit: Int, _ connection: StoreConnection,
        _ body: (Int64, StoreEntry) -> Bool
    ) throws(SQLiteError) {
        var remaining = limit < 0 ? Int.max : limit
        func step(_ query: SQLiteStatement) throws(SQLiteError) -> Bool {
            while remaining > 0, try query.step() {
                remaining -= 1
                guard body(query.int64(at: 7), Self.entry(query)) else { return false }
            }
            return remaining > 0
        }
        guard order == .frequencyAware else {
            try connection.run(.evictionOrder) { query throws(SQLiteError) in
                try query.bind(Int64(limit), at: 1)
                _ = try step(query)
            }
            return
        }
        // Without an edge the new entries all fit in the newest share: no old queue.
        let edge = try newestShareEdge(connection)
        let queues: [StoreStatement] =
            edge == nil ? [.reusedQueue, .newQueue] : [.oldQueue, .reusedQueue, .newestQueue]
        for queue in queues {
            let more = try connection.run(queue) { query throws(SQLiteError) in
                if let edge, queue != .reusedQueue {
                    try query.bind(edge.lastUse, at: 1)
                    try query.bind(edge.size, at: 2)
                    try query.bind(edge.id, at: 3)
                }
                return try step(query)
            }
            guard more else { return }
        }
    }

    /// The oldest of the newest new entries that fill ``newEntriesShare`` of the total size (its
    /// `last_use, size, id`): new entries at or before it are evicted first. Nil when the new
    /// entries fit in the share. Walks the newest new entries only, newest first.
    private func newestShareEdge(_ connection: StoreConnection) throws(SQLiteError) -> (
        lastUse: Int64, size: Int64, id: Int64
    )? {
        let share = Double(try connection.integer(.totalSize) ?? 0) * Self.newEntriesShare
        return try connection.run(.newestNew) { query throws(SQLiteError) in
            var newer = 0.0
            while try query.step() {
                newer += Double(query.int64(at: 1))
                if newer > share { return (query.int64(at: 0), query.int64(at: 1), query.int64(at: 2)) }
            }
            return nil
        }
    }

    /// Puts the keys of `evicted` entries that were new in the ghost (a key already there keeps
    /// its place), then trims the ghost to half the entries, oldest first: an entry still new
    /// whose key leaves becomes reused (frequency 1), as it would have been had it come back
    /// while its key was remembered.
    ///
    /// The new keys are numbered in key order, after every key the ghost holds, and only the
    /// newest up to the ghost's share go in: an older one would be trimmed in the same
    /// transaction (its entry is gone, so nothing is promoted for it). Evicting half of 10,000 new
    /// entries put 5,000 keys in and took 2,500 out again: this took 56 million instructions of a
    /// 232 million sweep, 20 million of 182 since (callgrind, `cashier-ratios --rounds 1 --only
    /// sqlite-evict-reclaim`, the sweep's closure alone).
    func rememberEvicted(_ evicted: [StoreEntry], _ connection: StoreConnection) throws(SQLiteError) {
        var (ghosts, newest) = try connection.run(.ghostCensus) { census throws(SQLiteError) in
            try census.step() ? (census.int64(at: 0), census.int64(at: 1)) : (0, 0)
        }
        // Ids count up from 1; a ghost whose ids reach the top, or whose newest is not an integer
        // (a damaged or foreign file: the census reads it as -1), is forgotten whole rather than
        // numbered past it (the ghost only sharpens the order). A hostile review found a text id
        // read as 0: no key was trimmed, and every large sweep grew the ghost by its share.
        if newest < 0 || newest > Int64.max - Int64(evicted.count) - 1 {
            try connection.step(.forgetAll)
            (ghosts, newest) = (0, 0)
        }
        let share = (try connection.integer(.count) ?? 0) / 2
        let new = evicted.filter { $0.frequency == 0 }.sorted(by: { $0.key < $1.key })
        // The last `share` keys go in, in key order (in the reverse order each cost half as
        // much again); then, for each of them the ghost already held, one more before them.
        var added: Int64 = 0
        var end = new.endIndex
        while end > new.startIndex, added < share {
            let start = max(new.startIndex, end - Int(clamping: share - added))
            // ``ghostsPerInsert`` keys a statement, the rest one at a time.
            var offset = start
            while offset < end {
                let many = end - offset >= Self.ghostsPerInsert
                try connection.run(many ? .rememberMany : .remember) { remember throws(SQLiteError) in
                    for slot in 0..<(many ? Self.ghostsPerInsert : 1) {
                        try remember.bind(new[offset + slot].key, at: Int32(2 * slot + 1))
                        try remember.bind(newest + 1 + Int64(offset + slot), at: Int32(2 * slot + 2))
                    }
                    _ = try remember.step()
                }
                added += Int64(connection.changes)
                offset += many ? Self.ghostsPerInsert : 1
            }
            end = start
        }
        let excess = ghosts + added - share
        guard excess > 0 else { return }
        // The newest id that goes: ids are unique, so `id <= edge` is exactly the oldest `excess`.
        // When every key the ghost held goes, that is the newest of them, known without a look.
        let edge: Int64? =
            excess == ghosts
            ? newest
            : try connection.run(.ghostEdge) { edge throws(SQLiteError) in
                try edge.bind(excess - 1, at: 1)
                return try edge.step() ? edge.int64(at: 0) : nil
            }
        guard let newestForgotten = edge else { return }
        for statement in [StoreStatement.promoteForgotten, .forget] {
            try connection.run(statement) { statement throws(SQLiteError) in
                try statement.bind(newestForgotten, at: 1)
                _ = try statement.step()
            }
        }
    }
}

/// The statements of ``StoreEvictionOrder/frequencyAware`` (kept as ``StoreStatement``s).
enum EvictionSQL {
    /// A new entry's condition, for the row named `row`: never used since written, key not in the ghost.
    private static func isNew(_ row: String) -> String {
        "\(row).frequency = 0 AND NOT EXISTS (SELECT 1 FROM ghost WHERE ghost.key = \(row).key)"
    }

    /// The unlocked new entries, newest first (`last_use, size, id`), through `entry_by_use`.
    static let newestNew =
        "SELECT last_use, size, id FROM entry WHERE locked = 0 AND \(isNew("entry")) "
        + "ORDER BY last_use DESC, size DESC, id DESC"

    /// The frequency-aware order's queues, each walked in `entry_by_use`'s order (least
    /// recently used, the smaller, the row placed first); the edge is bound as `?1, ?2, ?3`.
    enum Queue {
        /// New entries at or before the edge.
        case old
        /// Entries used since written, or whose key the ghost remembers.
        case reused
        /// New entries after the edge.
        case newest
        /// Every new entry: the newest queue when there is no edge (the new entries fit in the share).
        case new
    }

    static func queue(_ queue: Queue) -> String {
        let select = "SELECT \(SQL.columns), id FROM entry WHERE locked = 0 AND "
        let order = " ORDER BY last_use, size, id"
        let new = isNew("entry")
        switch queue {
        case .old: return select + "\(new) AND (last_use, size, id) <= (?1, ?2, ?3)" + order
        case .reused: return select + "NOT (\(new))" + order
        case .newest: return select + new + " AND (last_use, size, id) > (?1, ?2, ?3)" + order
        case .new: return select + new + order
        }
    }

    // The ghost is keyed by `key` alone (``StoreSchema/ghostTable``): these read it whole, at a
    // sweep (50,000 keys: 3 ms to count, 8 ms to find the edge).
    static let ghostCensus =
        "SELECT count(*), CASE WHEN typeof(max(id)) IN ('integer', 'null') THEN ifnull(max(id), 0) ELSE -1 END FROM ghost"
    static let remember = "INSERT OR IGNORE INTO ghost(key, id) VALUES(?, ?)"
    /// ``EntryStore/ghostsPerInsert`` keys at once: a statement a key cost the 2,500 keys of an
    /// eviction of half of 10,000 new entries 1.8 ms, 32 a statement 0.9 ms.
    static let rememberMany =
        "INSERT OR IGNORE INTO ghost(key, id) VALUES "
        + (0..<EntryStore.ghostsPerInsert).map { "(?\(2 * $0 + 1), ?\(2 * $0 + 2))" }.joined(separator: ", ")
    static let ghostEdge = "SELECT id FROM ghost ORDER BY id LIMIT 1 OFFSET ?"
    static let promoteForgotten =
        "UPDATE entry SET frequency = 1 WHERE frequency = 0 AND key IN (SELECT key FROM ghost WHERE id <= ?)"
    static let forget = "DELETE FROM ghost WHERE id <= ?"
}
