import CashierSQLite
import Foundation

/// What the index answers without reading a record, and the store's upkeep.
extension EntryStore {
    /// Entries, small and large.
    package func count() throws(StoreError) -> Int {
        try withReader { connection throws(SQLiteError) in
            Int(try connection.integer(.count) ?? 0)
        }
    }

    /// Every key, sorted (by UTF-8 bytes).
    package func keys() throws(StoreError) -> [String] {
        try withReader { connection throws(SQLiteError) in
            try connection.run(.keys) { query throws(SQLiteError) in
                var keys: [String] = []
                while try query.step() { keys.append(query.text(at: 0)) }
                return keys
            }
        }
    }

    /// Every entry's key, in no particular order, sorted out by what the index
    /// tells of it without reading its record: `vouched`, rows laid out as ``RowRecord/shaped``
    /// whose shape (what the records of one type and app version share) `vouches` accepts,
    /// asked once a shape; `unread`, the other rows (the caller reads their records); `files`,
    /// the large entries.
    ///
    /// When `vouches` accepts every shape the store holds, which is usual (it refuses only the
    /// shapes of an earlier app version's unversioned keys), the shaped rows' keys come from
    /// `entry_by_key` alone and the other rows from `entry_unshaped`: no record is read. Else
    /// every row's first bytes are read to find its shape. Either way in one read transaction,
    /// so a shape or a row another process adds meanwhile is not vouched for unseen.
    package func keys(vouchedBy vouches: (RowShape) -> Bool) throws(StoreError)
        -> (vouched: [String], unread: [String], files: [String])
    {
        try withReader { connection throws(SQLiteError) in
            try connection.step(.beginRead)
            defer { _ = try? connection.step(.commit) }
            // By shape id, whether `vouches` accepts it: every shape of this snapshot, asked once.
            // A damaged shape is refused (its rows are read, and read as damaged); an id with no
            // shape is not in it (a row naming one is damaged, and read only when a shape is refused).
            let verdicts = try connection.run(.allShapes) { query throws(SQLiteError) in
                var verdicts: [Int64: Bool] = [:]
                while try query.step() {
                    let id = query.int64(at: 0)
                    let shape = RowShape(id: id, names: query.blob(at: 1), header: query.blob(at: 2))
                    verdicts[id] = shape.map(vouches) ?? false
                }
                return verdicts
            }
            if !verdicts.values.contains(false) { return try Self.keysOfEveryShape(connection) }
            return try connection.run(.keysAndShapes) { query throws(SQLiteError) in
                var keys: (vouched: [String], unread: [String], files: [String]) = ([], [], [])
                while try query.step() {
                    let location = query.int64(at: 1)
                    if location == RowRecord.shaped, let id = query.withBlob(at: 2, { RowRecord.shapeID($0)?.id }),
                        verdicts[id] == true
                    {
                        keys.vouched.append(query.text(at: 0))
                        continue
                    }
                    if RowRecord.location(location) == .file {
                        keys.files.append(query.text(at: 0))
                    } else {
                        keys.unread.append(query.text(at: 0))
                    }
                }
                return keys
            }
        }
    }

    /// ``keys(vouchedBy:)`` when every shape is vouched for: the rows not stored by their shape
    /// (few), then every key from the key index; the keys left are the shaped rows'.
    private static func keysOfEveryShape(_ connection: StoreConnection) throws(SQLiteError)
        -> (vouched: [String], unread: [String], files: [String])
    {
        var keys: (vouched: [String], unread: [String], files: [String]) = ([], [], [])
        try connection.run(.unshapedKeys) { query throws(SQLiteError) in
            while try query.step() {
                if RowRecord.location(query.int64(at: 1)) == .file {
                    keys.files.append(query.text(at: 0))
                } else {
                    keys.unread.append(query.text(at: 0))
                }
            }
        }
        let unshaped = Set(keys.files + keys.unread)
        try connection.run(.keys) { query throws(SQLiteError) in
            while try query.step() {
                let key = query.text(at: 0)
                if unshaped.isEmpty || !unshaped.contains(key) { keys.vouched.append(key) }
            }
        }
        return keys
    }

    /// The keys of the large entries (those whose record is a file), in no particular order.
    package func largeEntryKeys() throws(StoreError) -> [String] {
        try withReader { connection throws(SQLiteError) in
            try connection.run(.largeEntryKeys) { query throws(SQLiteError) in
                var keys: [String] = []
                while try query.step() { keys.append(query.text(at: 0)) }
                return keys
            }
        }
    }

    /// Every entry without its record, in no particular order (what `cashier-tool list` shows).
    package func entries() throws(StoreError) -> [StoreEntry] {
        try withReader { connection throws(SQLiteError) in
            try connection.run(.entries) { query throws(SQLiteError) in
                var entries: [StoreEntry] = []
                while try query.step() { entries.append(Self.entry(query)) }
                return entries
            }
        }
    }

    /// The sum of the entries' sizes: records in rows and large entries' files, as written.
    ///
    /// Read from the `entry_by_use` index alone (it holds `size`), never the records.
    package func totalSize() throws(StoreError) -> Int {
        try withReader { connection throws(SQLiteError) in
            Int(clamping: try connection.integer(.totalSize) ?? 0)
        }
    }

    /// The bytes the folder's entries occupy: the store file, its `-wal` and `-shm` as they are
    /// on disk (pages, free pages and all) plus the large entries' files. What a disk size limit
    /// bounds, and what `totalSize` reports.
    /// `includingLog: false` leaves the `-wal` out: what the entries themselves take, which a
    /// sweep chooses its victims by (the log is folded into the store and cut back, not evicted),
    /// measured as a sweep measures it (``StoreMeasure/occupied``: the pages of one snapshot,
    /// whatever the store file's length until the next checkpoint).
    /// `includingFreePages: false` leaves the store's free pages out too: room the next writes
    /// reuse and the next reclaim gives back, not entries (a sweep that counted them, after a
    /// reclaim another write kept from running, evicted entries for room already free).
    package func occupiedBytes(includingLog: Bool = true, includingFreePages: Bool = true) throws(StoreError) -> Int {
        guard includingLog else {
            return try withReader { connection throws(SQLiteError) in
                try connection.step(.beginRead)
                defer { _ = try? connection.step(.commit) }
                return try measure(connection, includingFreePages: includingFreePages).occupied
            }
        }
        let (files, free) = try withReader { connection throws(SQLiteError) -> (Int, Int) in
            let files = Int(clamping: try connection.integer(.fileBytes) ?? 0)
            guard !includingFreePages else { return (files, 0) }
            let pages = try connection.integer(.freePages) ?? 0
            let (free, overflow) = pages.multipliedReportingOverflow(by: try connection.integer(.pageSize) ?? 0)
            return (files, overflow ? .max : Int(clamping: free))
        }
        // Clamped: a damaged row may claim a size near `Int.max`, and `count` must not trap on it.
        return files.addingClamped(storeFileBytes()).subtractingClamped(max(0, free))
    }

    /// The store's free pages, all its pages and their size, read by a reader of the pool: no
    /// wait for the writer, except on a read-only or exclusive store, whose reads all go
    /// through it (``withReader(_:)``).
    package func freePages() throws(StoreError) -> (free: Int64, pages: Int64, pageSize: Int64) {
        try withReader { connection throws(SQLiteError) in
            (
                try connection.integer(.freePages) ?? 0, try connection.integer(.pageCount) ?? 0,
                try connection.integer(.pageSize) ?? 0
            )
        }
    }

    /// Bytes the store's own files hold: the store, its `-wal` and its `-shm`.
    package func storeFileBytes() -> Int { fileSize(path) + fileSize(path + "-wal") + fileSize(path + "-shm") }

    func fileSize(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : 0
    }

    /// SQLite's `data_version`: changes when another connection (another process, or another store
    /// instance) commits, not on this store's own writes. Compare two values to know whether
    /// what a memory tier holds may be stale. Reopens the file when another process set it aside.
    package func dataVersion() throws(StoreError) -> Int64 {
        try withWriter { connection throws(SQLiteError) in
            if try reopenIfReplaced() { return Int64.min }
            return try dataVersion(of: connection)
        }
    }

    /// ``dataVersion()`` if the writer is free now, nil at once if a call of this process holds
    /// it (a write waiting for another process's lock, say): what a memory hit asks, which never
    /// waits. Neither reopens a replaced file nor waits for SQLite: the caller compares the file's
    /// identity itself (``writerIdentity``, `lstat`) and reopens off its thread.
    package func dataVersionIfFree() throws(StoreError) -> Int64? {
        try withWriterIfFree(evenClosed: true) { connection throws(SQLiteError) in try dataVersion(of: connection) }
    }

    /// Copies the `-wal` into the store and truncates it, without waiting: a reader (in any
    /// process) still using part of the log, or another process's checkpoint or write, leaves
    /// the log as it is, copied as far as it could be. Returns false when some of the log stayed.
    /// A log copied whole is reused from its start by the next write, so it stops growing.
    @discardableResult
    package func checkpoint() throws(StoreError) -> Bool {
        try withWriter(until: MonotonicDeadline(milliseconds: 0)) { connection throws(SQLiteError) in
            try connection.run(.checkpoint) { statement throws(SQLiteError) in
                try statement.step() && statement.int64(at: 0) == 0
            }
        }
    }

    /// SQLite's structural check of the store file (`PRAGMA quick_check`): empty when sound,
    /// else its findings. Reads the whole file: for `cashier-tool verify`, not for the cache's path.
    /// Records' checksums are the caller's to check.
    package func structuralProblems() throws(StoreError) -> [String] {
        try withReader { connection throws(SQLiteError) in
            let findings = try connection.sqlite.texts("PRAGMA quick_check")
            return findings == ["ok"] ? [] : findings
        }
    }

    /// Returns up to `pages` free pages to the file system (`incremental_vacuum`), then checkpoints
    /// so the store file itself shrinks. Slow work: call it off the caller's thread, after removals.
    /// Returns the bytes the store's files gave back.
    ///
    /// Without `foldingLog`, when no page was free (a removal of one small row frees room inside
    /// a page, not a page) and the volume has room, there is nothing to give back and no
    /// checkpoint is made while the log holds at most ``removalLogBytes``: past them it is folded
    /// in and cut back. A checkpoint at every such removal cost it a `fdatasync` and a `ftruncate`
    /// (issue 37's profile: a third of the server CPU a shared tier added, where every change
    /// elsewhere removes a row here). On a volume the store knows to be tight the log is still cut
    /// back every time: its room may be what the next write needs. A volume that filled since the
    /// store last measured it gets the room of a log over ``removalLogBytes`` back at the next
    /// removal (whose reclaim measures the volume).
    ///
    /// Works in steps of ``reclaimStep`` pages, each its own transaction, so writers (this
    /// process's and others') wait for one step, not the whole reclaim: 100,000 entries of 187
    /// bytes, half evicted, give back 17.5 MB in about 56 ms (`cashier-ratios --only
    /// sqlite-evict-reclaim` times a whole eviction, this included). A step whose log finds no
    /// room on the volume goes again an eighth as large (down to a page), each folded in and cut
    /// back: 512 pages a step, on a volume another app filled, gave nothing back, and garbage
    /// collection for `minimumFreeDiskSpace` evicted again and again for room it never got.
    ///
    /// A step of one page that still finds the volume full draws on the reserve
    /// (EntryStore+Reserve.swift) when the free pages are more than the reserve holds, so they
    /// repay it and the caller's ``keepReserve(tight:)`` makes it again: on a full volume with
    /// no other room, the pages a killed process left otherwise never went back (a hostile
    /// review: 78 free pages, and the folder over its limit, at every collection).
    @discardableResult
    package func reclaimSpace(pages: Int = 1 << 20, foldingLog: Bool = true) throws(StoreError) -> Int {
        let before = storeFileBytes()
        var remaining = max(0, pages)
        var vacuumed = false
        var stepPages = Self.reclaimStep
        var room = RoomSource.log
        while remaining > 0 {
            let step = min(remaining, stepPages)
            let freed: Int
            do throws(StoreError) {
                freed = try withWriter(until: MonotonicDeadline(milliseconds: 0), room: room) {
                    connection throws(SQLiteError) -> Int in
                    let free = Int(try connection.integer(.freePages) ?? 0)
                    guard free > 0 else { return 0 }
                    try connection.sqlite.execute("PRAGMA incremental_vacuum(\(step))")
                    return free - Int(try connection.integer(.freePages) ?? 0)
                }
            } catch .failed(let error) where error.primaryCode == SQLiteCode.full && stepPages > 1 {
                // The log had no room for the step's pages (another app filled the volume since the
                // store measured it): the log is folded in and cut back, and the pages go in
                // smaller steps, each folded in, so the log never needs more than a step's room.
                _ = try? checkpoint()
                stepPages = max(1, stepPages / 8)
                // Decided once, as the steps come down to a page: the reserve, once drawn on, is gone.
                if stepPages == 1, let (free, _, pageSize) = try? freePages(), pageSize > 0,
                    free > Int64(Self.reserveBytes) / pageSize
                {
                    room = .reserve
                }
                continue
            }
            guard freed > 0 else { break }
            vacuumed = true
            remaining -= freed
            if stepPages < Self.reclaimStep { _ = try? checkpoint() }
        }
        guard vacuumed || foldingLog || keepsLogSmall || logExceedsRemovalBound else { return 0 }
        try checkpoint()
        return max(0, before - storeFileBytes())
    }

    /// Whether the writer keeps the log small now (``Options/tightVolume``, or a write that met
    /// a full volume); true, without waiting, while another call of this process holds the writer.
    package var keepsLogSmall: Bool {
        guard writeLock.try() else { return true }
        defer { writeLock.unlock() }
        return tightVolume
    }

    /// Whether a removal of one key should be followed by a ``reclaimSpace(pages:foldingLog:)``
    /// without `foldingLog`: the log holds more than ``removalLogBytes``, the log is kept small,
    /// the last removal of one key left at least ``removalFreePages(ofPages:)`` free pages (it
    /// counts them inside its own transaction, so this takes no lock of the file), or it left
    /// some and `volumeIsTight` (asked then only: a `statfs`) says the volume has little room
    /// now, which another app may have taken since this store last measured it: pages earlier
    /// removals left go back then too, whichever removal freed them.
    ///
    /// Decided under a lock of its own, not the writer's: another thread's write taking the
    /// writer the moment the removal let go must not make it reclaim whatever is free.
    package func mayGiveSpaceBack(volumeIsTight: () -> Bool) -> Bool {
        if logExceedsRemovalBound { return true }
        guard let (free, pages, tight) = removalLock.withLock({ pagesAfterRemoval }), !tight else { return true }
        return free >= Self.removalFreePages(ofPages: pages) || (free > 0 && volumeIsTight())
    }

    /// Free pages that removals of single keys leave in the store before one of them gives
    /// them back: 64 pages (256 KiB of 4 KiB pages), or a sixteenth of the store's pages when
    /// that is fewer, so a small store's size limit is not held up by free pages (they count
    /// towards ``DiskTier`` limits), and at least one. Giving back every freed page at once cost
    /// a removal that emptied a page a checkpoint (three `fdatasync` and two `ftruncate` of the
    /// store and its log): one removal in about fifteen, one key at a time, paid a millisecond.
    /// Free pages left in the store are where its next rows go.
    package static func removalFreePages(ofPages pages: Int64) -> Int64 { max(1, min(64, pages / 16)) }

    /// Bytes of log that removals of single keys leave to SQLite's own checkpoints (three pages,
    /// 12 KiB, a removal): what the store keeps on a tight volume (`journal_size_limit`,
    /// StoreSchema's `setLogBounds`). Removals then never leave the folder more than this above
    /// what it held, where SQLite's own checkpoints (1,000 pages, with a 6 MiB limit) let it grow
    /// by 4 MiB; and a checkpoint costs one removal in about 85.
    package static let removalLogBytes = 1 << 20

    /// Whether the log holds more than ``removalLogBytes`` (one `stat`, no lock).
    var logExceedsRemovalBound: Bool { fileSize(path + "-wal") > Self.removalLogBytes }

    /// Pages one step of ``reclaimSpace(pages:foldingLog:)`` returns: 2 MiB of 4 KiB pages.
    package static let reclaimStep = 512
}
