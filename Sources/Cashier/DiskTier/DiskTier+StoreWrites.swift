import CashierEntryFormat
import CashierPlatform
import CashierSQLite
import CashierStore
import Foundation

/// Writes and removals of one entry in the folder's store: a row (its record), a large entry
/// (its file and its row, in one transaction), a removal (the file before the row). Every
/// change to a large entry's file happens inside the store transaction that changes its row
/// (DiskTier+Store.swift says why).
extension DiskTier {
    /// Writes `header` and `payload` as `header.key`'s row; a large entry's file it replaces
    /// goes in the same transaction (with `removingFile`, any file of the key: an import is
    /// under way). Returns whether the entry is locked: `keepingLock`, an unlocked write over a
    /// locked row is written again, locked.
    func writeRow(
        _ store: EntryStore, fileName: String, header: EntryHeader, payload: Data, options: WriteOptions,
        keepingLock: Bool, removingFile: Bool, until deadline: MonotonicDeadline
    ) throws(SystemError) -> Bool {
        synchronize(store, options.synchronize)
        var header = header
        var outcome = try upsertRow(
            store, fileName: fileName, header: header, payload: payload, options: options, keepingLock: keepingLock,
            removingFile: removingFile, until: deadline)
        if outcome == .locked {
            header.isLocked = true
            outcome = try upsertRow(
                store, fileName: fileName, header: header, payload: payload, options: options, keepingLock: false,
                removingFile: removingFile, until: deadline)
        }
        noteGrowth(header.length + payload.count)
        return header.isLocked
    }

    /// The record of `header` and `payload`, as an entry file holds it.
    static func record(_ header: EntryHeader, payload: Data) -> [UInt8] {
        payload.withUnsafeBytes { payloadBytes in
            var record = header.encode(payload: payloadBytes)
            record.append(contentsOf: payloadBytes)
            return record
        }
    }

    private func upsertRow(
        _ store: EntryStore, fileName: String, header: EntryHeader, payload: Data, options: WriteOptions,
        keepingLock: Bool, removingFile: Bool, until deadline: MonotonicDeadline
    ) throws(SystemError) -> EntryStore.KeepingLockOutcome {
        let record = Self.record(header, payload: payload)
        let entry = StoreEntry(
            key: Self.storeKey(header.key), location: .row, size: record.count,
            lastUse: Int64((options.usedAt ?? Date().timeIntervalSince1970).rounded(.down)),
            expiry: Self.fixedExpiry(header), isLocked: header.isLocked)
        // The key's file, which the row may replace: named only when it does.
        let file = { [self] in path(fileName) }
        return try retryingOnceSetAside(store, "write") { () throws(StoreError) in
            try store.upsert(
                entry, record: record, keepingLock: keepingLock, file: file, removingFile: removingFile,
                until: deadline)
        }
    }

    /// Writes a large entry: its file, complete under the name `temporary`, renamed to
    /// `fileName`, and its row, in one store transaction (EntryStore's `upsertFile`). When it
    /// fails, the file it would have replaced is in place again; `temporary` is the caller's.
    func writeFile(
        _ store: EntryStore, temporary: String, header: EntryHeader, fileName: String, size: Int, options: WriteOptions,
        until deadline: MonotonicDeadline
    ) throws(SystemError) {
        synchronize(store, options.synchronize)
        let entry = Self.fileRow(header, size: size, lastUse: options.usedAt ?? Date().timeIntervalSince1970)
        let backup = path(Self.temporaryPrefix + "\(getpid())-\(state.withLock { $0.nextTemporary() })")
        let move = EntryStore.FileMove(
            temporary: temporary, destination: path(fileName), backup: backup,
            synchronizesFolder: options.synchronize)
        try retryingOnceSetAside(store, "write") { () throws(StoreError) in
            try store.upsertFile(entry, moving: move, until: deadline)
        }
        noteGrowth(size)
    }

    /// Runs a store call; when it found the store damaged and set it aside (a fresh store took
    /// its place), reports that and runs it once more there. Other failures are thrown as
    /// system errors (``systemError(_:path:_:)``).
    private func retryingOnceSetAside<R>(
        _ store: EntryStore, _ operation: String, _ call: () throws(StoreError) -> R
    ) throws(SystemError) -> R {
        do throws(StoreError) {
            return try call()
        } catch {
            guard case .setAside(let setAside) = error else {
                throw Self.systemError(error, path: store.path, operation)
            }
            noteSetAside(setAside, of: store)
            do throws(StoreError) {
                return try call()
            } catch {
                throw Self.systemError(error, path: store.path, operation)
            }
        }
    }

    /// Sets the store's durability to what this write asks: `synchronous=FULL` for a
    /// synchronized cache (and the full syncs of Apple platforms), `NORMAL` otherwise.
    private func synchronize(_ store: EntryStore, _ wanted: Bool) {
        guard storeState.withLock({ $0.synchronized }) != wanted else { return }
        if (try? store.setSynchronized(wanted)) != nil { storeState.withLock { $0.synchronized = wanted } }
    }

    /// Counts `bytes` written towards the estimate a sweep is scheduled by, and every
    /// ``volumeCheckGrowth`` written measures the volume off the caller's thread: one that went
    /// tight since the store opened gets the store's small log and its reserve for removals
    /// (EntryStore+Reserve.swift) before this process's own writes fill it, as at an opening or
    /// a reclaim, which a process that only writes may not reach.
    private func noteGrowth(_ bytes: Int) {
        let measures = storeState.withLock { state in
            state.occupiedEstimate = state.occupiedEstimate.map { $0 + bytes }
            state.grownSinceVolumeCheck += bytes
            guard state.grownSinceVolumeCheck >= Self.volumeCheckGrowth else { return false }
            state.grownSinceVolumeCheck = 0
            return true
        }
        guard measures else { return }
        inBackground { [self] in
            guard let store = openedStore else { return }
            let tight = isVolumeTight
            // On a roomy volume, one `lstat` (the reserve's) and no writer: a reclaim gives the
            // log its usual bounds back. On a tight one, the writer only the first time (on a
            // full volume taking it opens the store exclusively, which may wait for another process).
            if tight, !store.keepsLogSmall { store.adjustLog(tightVolume: true) }
            store.keepReserve(tight: tight)
        }
    }

    /// How much this process writes between two measures of the volume (`noteGrowth(_:)`):
    /// from 64 MiB free to none, some 60 measures, each a `statfs` and an `lstat` off the caller's thread.
    static let volumeCheckGrowth = 1 << 20

    /// Removes `key`'s file (a large entry's, or one older than the store) and then its row, in
    /// one store transaction. A store set aside meanwhile holds nothing to remove.
    /// On a full volume it may evict large entries to make room (EntryStore+Reserve.swift),
    /// reported as evictions. A store another process replaced since the last check (its folder
    /// removed and made again) is reopened and the key removed there: through the old one, the
    /// new store's row would stay, and be read again. When the replacing store cannot be opened
    /// (another process holds it past the wait), the removal throws, as any that cannot land.
    func removeFromStore(_ store: EntryStore, key: String, until deadline: MonotonicDeadline) throws(SystemError) {
        guard try !removeFromStoreOnce(store, key: key, until: deadline) else { return }
        switch storeAfterReplacement() {
        case .gone: return
        case .unopenable(let failure): throw failure
        case .reopened(let reopened):
            guard try !removeFromStoreOnce(reopened, key: key, until: deadline) else { return }
            // Replaced once more meanwhile, or a link on the folder's path names another folder now.
            throw SystemError(
                code: ESTALE, operation: "remove: the folder is not the open store's", path: reopened.path)
        }
    }

    /// ``removeFromStore(_:key:until:)`` through `store`; false when `store` is no longer the
    /// folder's (`ESTALE`), which removed nothing.
    private func removeFromStoreOnce(_ store: EntryStore, key: String, until deadline: MonotonicDeadline)
        throws(SystemError) -> Bool
    {
        let file = path(Self.fileName(for: key))
        do throws(StoreError) {
            let removed = try store.remove(
                Self.storeKey(key), filePath: file, evictingFilesAt: { [self] in path(Self.fileName(for: $0)) },
                until: deadline, evicted: { [self] in noteEvictedForRoom($0) })
            if removed != nil,
                // A small row's removal usually frees no page, and free pages go back in batches
                // (`EntryStore.removalFreePages`): no reclaim (a thread hop, the writer, a
                // `statvfs`) until then, unless the volume is tight or a removal awaits room.
                store.mayGiveSpaceBack(volumeIsTight: { isVolumeTight })
                    || storeState.withLock({ !$0.removalsAwaitingRoom.isEmpty })
            {
                scheduleReclaim(foldingLog: false)
            }
            return true
        } catch .failed(let error) where error.systemCode == ESTALE {
            return false
        } catch {
            if case .setAside(let setAside) = error {
                noteSetAside(setAside, of: store)
                return true
            }
            let failure = Self.systemError(error, path: store.path, "remove")
            if failure.code == ENOSPC, let row = try? store.entry(for: Self.storeKey(key)) {
                // The volume is full: the next reclaim tries again, once other removals (of large
                // entries' files) and the log's checkpoint have made room, if the row is unchanged.
                storeState.withLock { $0.removalsAwaitingRoom[key] = row }
                scheduleReclaim()
            }
            throw failure
        }
    }

    /// Notes large entries a removal evicted to make room for itself on a full volume
    /// (EntryStore+Reserve.swift), reported as evictions, and folds the log it wrote back in.
    /// When even the room their files gave back did not let the transaction commit, their rows
    /// stayed without their files: each reads as absent and `keys` leaves it out, but `count`
    /// counts it until its next read or garbage collection that finds room removes it.
    func noteEvictedForRoom(_ evicted: [StoreEntry]) {
        guard !evicted.isEmpty else { return }
        storeState.withLock { state in
            state.notices += evicted.map { .evictedForRoom(key: $0.key, bytes: $0.size) }
        }
        scheduleReclaim()
    }

    /// Notes rows a bulk removal could not remove, even one a transaction, for want of room
    /// (``StoreIndex/removeRows(_:evictionOrder:walkedStore:)``), by the keys the removals name: each is
    /// reported as a failure of kind ``CacheError/Kind/noSpace`` naming its key, and the next
    /// reclaim removes it, once other removals may have made room, if its row is unchanged (as
    /// ``removeFromStore(_:key:until:)`` does for one key).
    func noteRemovalsAwaitingRoom(_ rows: [(key: String, row: StoreEntry)]) {
        guard !rows.isEmpty else { return }
        let store = path(Self.storeFileName)
        storeState.withLock { state in
            for (key, row) in rows {
                state.removalsAwaitingRoom[key] = row
                state.notices.append(
                    .removalAwaitingRoom(
                        key: key,
                        SystemError(
                            code: ENOSPC, operation: "remove (no room even for its own transaction; tried again later)",
                            path: store)))
            }
        }
        scheduleReclaim()
    }

    /// Gives the store's free pages back and truncates its log, on the sweep queue (what
    /// ``waitForSweeps()`` waits for): after removals, so what they freed goes back to the
    /// volume (on a full one, that is what lets writes resume). One scheduled at a time; it folds
    /// the log in even when no page was freed if any of the calls it answers asked (`foldingLog`:
    /// all but the removal of one key, whose checkpoint cost a sync and a truncation each time).
    func scheduleReclaim(foldingLog: Bool = true) {
        guard
            storeState.withLock({ state in
                defer { state.reclaimScheduled = true }
                state.reclaimFoldsLog = state.reclaimFoldsLog || foldingLog
                return !state.reclaimScheduled
            })
        else { return }
        inBackground { [self] in
            let foldingLog = storeState.withLock { state in
                defer { (state.reclaimScheduled, state.reclaimFoldsLog) = (false, false) }
                return state.reclaimFoldsLog
            }
            _ = withBackgroundActivity("Cashier store reclaim") {
                openedIndex.reclaimSpace(retryingRemovals: true, foldingLog: foldingLog)
            }
        }
    }
}
