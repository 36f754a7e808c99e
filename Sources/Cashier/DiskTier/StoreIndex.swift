import CashierEntryFormat
import CashierPlatform
import CashierStore
import Foundation

/// The folder with a store (`store.sqlite`, CashierStore's `EntryStore`, DiskTier+Store.swift):
/// small entries are rows, large ones files indexed by a row of their own; the store is the
/// index `count`, `keys`, `totalSize` and eviction read, and uses are kept in the rows
/// (DiskTier+Recency.swift). Its rows and the large entries' files are changed in one store
/// transaction (DiskTier+StoreWrites.swift); housekeeping reads the index
/// (StoreIndex+Housekeeping.swift).
struct StoreIndex: EntryIndex {
    let disk: DiskTier
    let store: EntryStore

    // MARK: One entry

    /// A key without a row is absent: its file, if any, is read only while the folder's files
    /// older than the store may still lack rows (an import is under way).
    func read(key: String, fileName: String) -> DiskTier.ReadResult {
        let (importing, removal) = disk.storeState.withLock { ($0.importPending, $0.removalAwaitingRoom(of: key)) }
        if let found = readRow(key: key, fileName: fileName, removalAwaitingRoom: removal) { return found }
        guard importing else { return .absent }
        return disk.read(fileName)
    }

    func readHeader(key: String, fileName: String) -> Result<(EntryHeader, FileInfo), DiskTier.HeaderFailure> {
        // Whether files may lack rows, asked before the row is: an import that gives this
        // key's file a row meanwhile still leaves the file to read.
        let (importing, removal) = disk.storeState.withLock { ($0.importPending, $0.removalAwaitingRoom(of: key)) }
        switch readRow(key: key, fileName: fileName, headerOnly: true, removalAwaitingRoom: removal) {
        case nil: guard importing else { return .failure(.absent) }
        case .absent?: return .failure(.absent)
        case .entry(let header, _, let info)?: return .success((header, info))
        case .damaged(let error, let info, _)?: return .failure(.damaged(error, size: info.size))
        case .failed(let error)?: return .failure(.failed(error))
        }
        return disk.readHeader(fileName)
    }

    /// Reads `key`'s entry from the store: a row checked like a file, a large entry's file,
    /// or `nil` when the store has no row for it (the caller then reads the file).
    /// `rereads`: how many times the row was read again because the file of the row read
    /// before was gone (another process replaced the entry meanwhile).
    /// `removalAwaitingRoom`: the row as it was when this process's removal of the key found the
    /// volume full (``DiskTier/StoreState/removalsAwaitingRoom``). That removal returned to its
    /// caller: for this process's reads it is done, so the row, if unchanged since, reads as
    /// absent, as it will once the next reclaim has room to remove it. (A later write of the
    /// key, here or in another process, changes the row, which then reads as usual.)
    func readRow(
        key: String, fileName: String, headerOnly: Bool = false, rereads: Int = 0,
        removalAwaitingRoom: StoreEntry? = nil
    ) -> DiskTier.ReadResult? {
        let stored: StoredRecord?
        do throws(StoreError) {
            stored = try store.record(for: DiskTier.storeKey(key))
        } catch {
            return readFailure(error, operation: "read")
        }
        guard let stored else { return nil }
        if let removalAwaitingRoom, stored.entry.isUnchanged(since: removalAwaitingRoom) { return .absent }
        guard stored.entry.location == .row else {
            // A large entry: its header is its file's (only the header, for `headerOnly`).
            let found: DiskTier.ReadResult
            if headerOnly {
                switch disk.fileSystem.readEntryHeader(disk.path(fileName)) {
                case .success(let (header, info)): found = .entry(header, payload: Data(), info: info)
                case .failure(.absent): found = .absent
                case .failure(.damaged(let error, let size)):
                    found = .damaged(
                        error, info: DiskTier.rowInfo(StoreEntry(key: key, location: .file, size: size, lastUse: 0)))
                case .failure(.failed(let error)): found = .failed(error)
                }
            } else {
                found = disk.fileSystem.readEntry(disk.path(fileName))
            }
            switch found {
            case .absent:
                // Another process may have replaced the entry and removed the file after this
                // read found the row: the row read again says (once, no wait).
                // (The row read again may look the same: a large write of the same size in the same
                // second; what tells is whether its file is there now.)
                if rereads < Self.rereadsOfAReplacedRow {
                    return readRow(
                        key: key, fileName: fileName, headerOnly: headerOnly, rereads: rereads + 1,
                        removalAwaitingRoom: removalAwaitingRoom)
                }
                // The row of a file that is gone: the entry is (the row goes if the file is still
                // missing under the store's lock, where no write of the key is under way).
                _ = try? store.remove(unchanged: stored.entry, ifMissing: disk.path(fileName))
                return .absent
            case .entry(let header, let payload, var info):
                // Uses are kept in the row, not the file's access time.
                info.accessedAt = max(info.accessedAt, Double(stored.entry.lastUse))
                info.unusedSinceWrite = stored.entry.frequency == 0 ? stored.entry.lastUse : nil
                return .entry(header, payload: payload, info: info)
            case let other:
                return other
            }
        }
        let info = DiskTier.rowInfo(stored.entry)
        switch DiskTier.readEntry(fromRecord: stored.record, wantsPayload: !headerOnly) {
        case .entry(let header, let payload): return .entry(header, payload: payload ?? Data(), info: info)
        case .damaged(let error, let header):
            // Its shape may be what is damaged: no connection goes on using the shapes it knows.
            store.forgetShapes()
            return .damaged(error, info: info, header: header)
        case .outOfMemory: return .failed(SystemError(code: ENOMEM, operation: "read", path: store.path))
        }
    }

    /// How many times at most a read follows a row that changed under it (each time because
    /// another process replaced the entry between the row's reading and its file's): a read
    /// never waits, and every reading again is another process's progress.
    static let rereadsOfAReplacedRow = 4

    /// A read's answer to a store that failed: a damaged store set aside is an empty one.
    private func readFailure(_ error: StoreError, operation: String) -> DiskTier.ReadResult {
        switch error {
        case .setAside(let setAside):
            disk.noteSetAside(setAside, of: store)
            return .absent
        case .unavailable, .busy, .failed:
            return .failed(DiskTier.systemError(error, path: store.path, operation))
        }
    }

    func keepsAsRow(size: Int) -> Bool { size <= disk.rowLimit }

    /// A record of at most ``DiskTier/rowLimit`` bytes is a row; a larger one a file renamed
    /// into place in the transaction that writes its row.
    func write(
        _ fileName: String, header: EntryHeader, payload: Data, options: DiskTier.WriteOptions,
        until deadline: MonotonicDeadline
    ) throws(SystemError) -> (size: Int, isLocked: Bool) {
        var header = header
        let size = header.length + payload.count
        // A row keeps a stored lock in its own statement; a file, or a row while files older
        // than the store may lack rows (an import is pending), reads the stored header first.
        let row = keepsAsRow(size: size)
        let (importing, removal) = disk.storeState.withLock { state in
            // A write of a key whose removal awaits room is the newer word on it: the removal
            // is taken off the list before the write (no retry may remove what it writes)…
            (
                state.importPending,
                state.removalsAwaitingRoom.isEmpty ? nil : state.removalsAwaitingRoom.removeValue(forKey: header.key)
            )
        }
        var written = false
        defer {
            // …and put back if the write did not land (a full volume, most likely): the row is
            // still the removed one, and the removal still the last word on it.
            if !written, let removal {
                disk.storeState.withLock { state in
                    if state.removalsAwaitingRoom[header.key] == nil {
                        state.removalsAwaitingRoom[header.key] = removal
                    }
                }
            }
        }
        let lockInRow = row && options.keepsStoredLock && !importing
        if options.keepsStoredLock, !lockInRow, !header.isLocked { header.isLocked = disk.storedLock(of: header.key) }
        if row {
            let isLocked = try disk.writeRow(
                store, fileName: fileName, header: header, payload: payload, options: options,
                keepingLock: lockInRow, removingFile: importing, until: deadline)
            written = true
            return (size, isLocked)
        }
        let temporary = try disk.writeTemporaryFile(header: header, payload: payload, options: options)
        // The file is renamed into place and its row written in one store transaction.
        do {
            try disk.writeFile(
                store, temporary: temporary, header: header, fileName: fileName, size: size, options: options,
                until: deadline)
        } catch {
            try? disk.fileSystem.removeFile(temporary)
            throw error
        }
        written = true
        return (size, header.isLocked)
    }

    /// Removes the row and the file (a large entry's, or one older than the store), the file
    /// first, in one store transaction.
    func remove(key: String, fileName: String, busyTimeoutMilliseconds: Int32) throws(SystemError) {
        disk.forgetPendingUses(of: key)
        try disk.removeFromStore(store, key: key, until: MonotonicDeadline(milliseconds: busyTimeoutMilliseconds))
    }

    // MARK: Recency

    /// The use goes to `key`'s row, on the same terms as a file's access time (see
    /// ``DiskTier/persistStoreUses(_:_:exactly:)``).
    func noteRead(
        _ fileName: String, key: String, info: FileInfo, isLocked: Bool, at now: Double,
        foundSlidingLifespanOver: Bool, sliding: Bool
    ) -> Double {
        // A sliding lifespan runs from its last use: that one is written exactly.
        if sliding {
            if now > info.accessedAt { disk.persistStoreUses(store, [(key, now)], exactly: true) }
            return now
        }
        // An entry's first use since its write is written whatever the granularity: at a
        // server's pace most entries are read again (or never) within a minute of their write.
        if let written = info.unusedSinceWrite {
            disk.persistFirstUse(of: key, at: now, writtenAt: written)
            return now
        }
        // The granularity, and the use noted or gathered, under one lock (a cold read took it twice).
        let (stamp, schedules) = disk.storeState.withLock { state -> (Double, Bool) in
            guard abs(now - info.accessedAt) >= state.useGranularity else {
                state.noteStoredUse(of: key, at: info.accessedAt)
                return (info.accessedAt, false)
            }
            state.gatherCoarseUse(of: key, at: now)
            return (now, state.claimUsesFlush())
        }
        if schedules { disk.scheduleUsesFlush() }
        return stamp
    }

    func noteUses(ofKeys keys: [(name: String, usedAt: Double?)], at now: Double) {
        gatherUses(ofKeys: keys, at: now)
        flushUses()
    }

    /// Gathers the uses for their rows without writing them (``flushUses()`` does).
    func gatherUses(ofKeys keys: [(name: String, usedAt: Double?)], at now: Double) {
        // A use with its own moment is a sliding lifespan's: its row keeps it exactly, as
        // garbage collection judges the lifespan by it; the others coarsely.
        disk.persistStoreUses(store, keys.filter { $0.usedAt == nil }.map { ($0.name, now) })
        disk.persistStoreUses(store, keys.compactMap { use in use.usedAt.map { (use.name, $0) } }, exactly: true)
    }

    /// ``flushUses()`` now if that needs no wait (the store's writer and lock free, commits
    /// not synchronized: see ``noteSlidingUseIfFree(_:at:)``). What could not be written stays
    /// gathered. Returns whether none is left.
    func flushUsesIfFree() -> Bool {
        guard !disk.storeState.withLock({ $0.synchronized }), disk.usesFlushing.try() else { return false }
        defer { disk.usesFlushing.unlock() }
        var (coarse, exact, first) = disk.storeState.withLock { $0.takePendingUses() }
        if !coarse.isEmpty || !first.isEmpty,
            store.recordUsesIfFree(coarse, granularity: disk.useGranularity, firstUses: Self.firstUses(first))
        {
            (coarse, first) = ([], [:])
        }
        if !exact.isEmpty, store.recordUsesIfFree(exact, granularity: 0) { exact = [] }
        guard !coarse.isEmpty || !exact.isEmpty || !first.isEmpty else { return true }
        disk.storeState.withLock { state in
            state.pendingUses.insert(contentsOf: coarse, at: 0)
            state.pendingExactUses.insert(contentsOf: exact, at: 0)
            state.pendingFirstUses.merge(first) { gathered, _ in gathered }
        }
        return false
    }

    /// Writes the uses gathered so far into their rows, in one transaction (two with exact ones).
    ///
    /// One at a time (``DiskTier/usesFlushing``): a caller that orders by recency next (a sweep,
    /// garbage collection) finds the uses a flush under way took written first.
    func flushUses() {
        disk.usesFlushing.lock()
        defer { disk.usesFlushing.unlock() }
        let (coarse, exact, first) = disk.storeState.withLock { $0.takePendingUses() }
        if !coarse.isEmpty || !first.isEmpty {
            try? store.recordUses(coarse, granularity: disk.useGranularity, firstUses: Self.firstUses(first))
        }
        if !exact.isEmpty { try? store.recordUses(exact, granularity: 0) }
    }

    /// The gathered first uses as the store takes them.
    private static func firstUses(_ gathered: [String: (time: Int64, written: Int64)]) -> [StoreFirstUse] {
        gathered.map { StoreFirstUse(key: $0.key, time: $0.value.time, written: $0.value.written) }
    }

    /// Writes the use into its row at once if that needs no wait: the store's writer and lock
    /// free and commits not synchronized (`synchronous=FULL` syncs). So a process killed right
    /// after a memory hit still leaves the use to the next launch.
    func noteSlidingUseIfFree(_ key: String, at now: Double) -> Bool {
        guard !disk.storeState.withLock({ $0.synchronized }) else { return false }
        return store.recordUsesIfFree([(DiskTier.storeKey(key), Int64(now.rounded(.down)))], granularity: 0)
    }

    /// The instance that made a use gathered for its row and not yet written knows it exactly,
    /// and so does every instance on this disk tier.
    func pendingExactUse(of key: String) -> Double? {
        let storeKey = DiskTier.storeKey(key)
        return disk.storeState.withLock { state in
            state.pendingExactUses.lazy.filter { $0.key == storeKey }.map { Double($0.time) }.max()
        }
    }

    // MARK: Every entry

    /// The bytes are what the folder occupies (the store, its `-wal` and `-shm`, the large
    /// entries' files): what ``Cache/Configuration-swift.struct/diskSizeLimit`` bounds. A store
    /// that cannot say is counted as files are.
    func totals() -> (count: Int, size: Int) {
        if let count = try? store.count(), let size = try? store.occupiedBytes() {
            return (max(0, count - keysRemovedAwaitingRoom().count), size)
        }
        return FileIndex(disk: disk).totals()
    }

    /// The keys whose removal by this process awaits room and whose rows are unchanged since:
    /// removed, as far as this process's reads go (``readRow(key:fileName:headerOnly:rereads:removalAwaitingRoom:)``),
    /// so `count` and `keys` leave them out too. Empty, with one lock and no query, unless some
    /// removal awaits room (a full volume).
    func keysRemovedAwaitingRoom() -> Set<String> {
        let awaiting = disk.storeState.withLock { $0.removalsAwaitingRoom }
        guard !awaiting.isEmpty else { return [] }
        var removed = Set<String>()
        for (key, noted) in awaiting {
            if let row = try? store.entry(for: DiskTier.storeKey(key)), row.isUnchanged(since: noted) {
                removed.insert(key)
            }
        }
        return removed
    }

    func scanHeaders() -> (
        entries: [(fileName: String, header: EntryHeader, info: FileInfo)],
        damaged: [(fileName: String, error: EntryFormatError, size: Int)]
    ) {
        let scan = scan()
        return (
            scan.entries.map { ($0.fileName, $0.header, $0.info) },
            scan.damaged.map { ($0.name, $0.error, $0.size) }
        )
    }

    /// Files are the store's to remove, under its lock (a file another process renames into
    /// place meanwhile is that process's entry).
    func removeAllEntries() -> [SystemError] {
        disk.forgetPendingUses(of: nil)
        let failures = removeEveryRow()
        let complete = disk.storeState.withLock { state in
            state.occupiedEstimate = nil
            return state.removalsAwaitingRoom.isEmpty
        }
        disk.state.withLock { $0.reset(loadedEmpty: failures.isEmpty && complete) }
        return failures
    }

    // MARK: Housekeeping

    /// Every entry whose header `shouldRemove` accepts, rows and files.
    func planRemovals(where shouldRemove: (EntryHeader) -> Bool) -> DiskTier.RemovalPlan {
        let choices = scan().entries.filter { shouldRemove($0.header) }.map { entry in
            DiskTier.Choice(
                fileName: entry.fileName, sequence: nil, removal: .removed(key: entry.header.key),
                size: entry.info.size, stored: entry.stored)
        }
        return DiskTier.RemovalPlan(choices: choices, reclaimsStore: true)
    }

    /// Entries in the index's eviction order until the folder occupies at most
    /// `limits.sweepTarget` of `limits.size`. The store's own files count: what the folder
    /// occupies is measured, not the entries' sizes added up. The victims set the granularity
    /// of uses (``DiskTier/adaptUseGranularity(toVictims:at:)``).
    func planSweep(limits: DiskTier.Limits, at now: Double) -> DiskTier.RemovalPlan {
        guard let limit = limits.size else { return DiskTier.RemovalPlan() }
        let (victims, walked) = chooseVictims(
            order: limits.evictionOrder, downTo: Int(Double(limit) * limits.sweepTarget),
            orAfterALargeOverrun: Int(Double(limit) * limits.largeSweepTarget), minimumFreeSpace: nil,
            startingAbove: limit)
        disk.adaptUseGranularity(toVictims: victims.compactMap(\.stored), at: now)
        return DiskTier.RemovalPlan(
            choices: victims, reclaimsStore: true, evictionOrder: limits.evictionOrder, walkedStore: walked)
    }

    /// By the estimate of what the folder occupies (DiskTier+Store.swift).
    func mayExceed(_ limit: Int) -> Bool {
        disk.storeState.withLock { state in
            let floor = state.fruitlessSweepAt.map { max(limit, $0 + limit / 10) } ?? limit
            return state.occupiedEstimate.map { $0 > floor } ?? true
        }
    }

    /// The rows as planned in the store's transactions, then the files the plan chose without a
    /// row (damaged files).
    func apply(_ plan: DiskTier.RemovalPlan) -> [DiskTier.Removal] {
        removeRows(
            plan.choices.filter { $0.stored != nil }, evictionOrder: plan.evictionOrder, walkedStore: plan.walkedStore)
            + disk.removeChosenFiles(plan)
    }

    func reclaimSpace(retryingRemovals: Bool, foldingLog: Bool) {
        if retryingRemovals { retryRemovalsAwaitingRoom() }
        reclaimStoreSpace(foldingLog: foldingLog)
    }

    /// One `lstat` and, if no call of this process holds the store's writer, `PRAGMA
    /// data_version` on it; nil, at once, if one does.
    func versionWithoutWaiting() -> StoreVersion? {
        var info = stat()
        guard lstat(store.path, &info) == 0 else { return .unknown }
        let device = UInt64(truncatingIfNeeded: info.st_dev)
        let inode = UInt64(truncatingIfNeeded: info.st_ino)
        guard FileIdentity(device: device, inode: inode) == store.writerIdentity else {
            // Another process set the store aside, or it was deleted and made anew: what the
            // tier holds may be gone. The writer reopens off this thread.
            disk.inBackground { [disk] in disk.checkStoreFile() }
            return .version(device: device, inode: inode, dataVersion: Int64.min)
        }
        do throws(StoreError) {
            guard let dataVersion = try store.dataVersionIfFree() else { return nil }
            return .version(device: device, inode: inode, dataVersion: dataVersion)
        } catch {
            return .unknown
        }
    }
}
