import CashierEntryFormat
import CashierPlatform
import CashierSQLite
import CashierStore
import Foundation

/// Housekeeping of a folder with a store (``StoreIndex``): plans read the index (eviction order, sizes)
/// and the records (headers, checksums) from the store and list the folder only for large
/// entries' files; applying a plan removes rows in one transaction and unlinks large entries'
/// files, under the key barrier as for files (DiskTier+Housekeeping.swift); finishing gives
/// the freed pages back to the file system, off the barrier (a large eviction's own
/// transaction gives them back: `EntryStore.remove(unchanged:evictedIn:filePath:asWalked:)`).
extension StoreIndex {
    /// An entry a pass over the folder found: its header, what stands for its `stat`, and its
    /// row when it has one (a large entry's file found without one has none).
    struct ScannedEntry {
        var fileName: String
        var header: EntryHeader
        var info: FileInfo
        var stored: StoreEntry?
    }

    /// Every entry, rows and files (a file shadowed by its key's row is stale and skipped),
    /// and the damaged ones by key or file name.
    /// `stale`: entry files no read finds (one whose key's row holds the record, an orphan named
    /// from another spelling): garbage collection removes them.
    func scan(verifyingRows: Bool = false) -> (
        entries: [ScannedEntry], damaged: [(name: String, error: EntryFormatError, size: Int, stored: StoreEntry?)],
        rows: [String: StoreEntry], stale: [String]
    ) {
        var stale: [String] = []
        var entries: [ScannedEntry] = []
        var damaged: [(String, EntryFormatError, Int, StoreEntry?)] = []
        var rows: [String: StoreEntry] = [:]
        do throws(StoreError) {
            try store.forEachRecord { stored in
                rows[stored.entry.key] = stored.entry
                guard stored.entry.location == .row else { return }
                let info = DiskTier.rowInfo(stored.entry)
                switch Self.readRecord(stored.record, verifying: verifyingRows) {
                // `==` on strings is canonical equivalence: the same test as `storeKey` (NFC)
                // spelling equal, without normalizing every key.
                case .success(let header) where header.key == stored.entry.key:
                    entries.append(
                        ScannedEntry(
                            fileName: DiskTier.fileName(for: header.key), header: header, info: info,
                            stored: stored.entry))
                case .success:
                    damaged.append((stored.entry.key, .badField("key"), info.size, stored.entry))
                case .failure(let error):
                    damaged.append((stored.entry.key, error, info.size, stored.entry))
                }
            }
        } catch {
            if case .setAside(let setAside) = error { disk.noteSetAside(setAside, of: store) }
        }
        let names = (try? disk.fileSystem.contentsOfDirectory(disk.folder)) ?? []
        let importing = disk.storeState.withLock { $0.importPending }
        for name in names where DiskTier.isEntryFileName(name) {
            switch disk.readHeader(name) {
            case .success(let (header, info)):
                let row = rows[DiskTier.storeKey(header.key)]
                // A file whose key has a row holding its record is an older write, never read;
                // one without a row is read only while an import is under way.
                if row?.location == .row || !DiskTier.isHome(name, of: header.key) || (row == nil && !importing) {
                    stale.append(name)
                    continue
                }
                entries.append(ScannedEntry(fileName: name, header: header, info: info, stored: row))
            case .failure(.damaged(let error, let size)):
                damaged.append((name, error, size, nil))
            case .failure:
                continue
            }
        }
        return (entries, damaged, rows, stale)
    }

    /// The keys of every entry whose header `include` accepts, rows and files, keeping no
    /// header: what ``Cache/keys`` lists. One pass over the index; a row's record is read only
    /// when its shape does not decide: `include` accepts every record written under
    /// `acceptedAppVersion`, so a row whose shape says that version is listed unread.
    func keys(acceptingEveryRecordOf acceptedAppVersion: String?, where include: (EntryHeader) -> Bool) -> [String] {
        let importing = disk.storeState.withLock { $0.importPending }
        var keys: [String] = []
        var rowKeys = Set<String>()
        var fileKeys = Set<String>()
        do throws(StoreError) {
            // A shaped row's key bytes are its `key` column: its header's key is this one.
            let listed = try store.keys { shape in shape.isWritten(underAppVersion: acceptedAppVersion) }
            keys = listed.vouched
            fileKeys = Set(listed.files)
            if importing { rowKeys = Set(listed.vouched + listed.unread) }
            let unread = listed.unread
            func list(_ stored: StoredRecord) {
                guard stored.entry.location == .row,
                    case .success(let header) = Self.readRecord(stored.record, verifying: false),
                    header.key == stored.entry.key, include(header)
                else { return }
                keys.append(header.key)
            }
            // A few rows by point reads; many (an older version's) in one pass over the records.
            if unread.count <= 256 {
                for key in unread { if let stored = try store.record(for: key) { list(stored) } }
            } else if !unread.isEmpty {
                let wanted = Set(unread)
                try store.forEachRecord { if wanted.contains($0.entry.key) { list($0) } }
            }
        } catch {
            if case .setAside(let setAside) = error { disk.noteSetAside(setAside, of: store) }
        }
        let removed = keysRemovedAwaitingRoom()
        if !removed.isEmpty { keys.removeAll(where: removed.contains) }
        guard !fileKeys.isEmpty || importing else { return keys }
        for name in disk.entryFileNames() ?? [] {
            guard case .success(let (header, _)) = disk.readHeader(name), DiskTier.isHome(name, of: header.key),
                include(header)
            else { continue }
            // A large entry's file is listed; a file without a row only while an import is under way.
            let key = DiskTier.storeKey(header.key)
            guard fileKeys.contains(key) || (importing && !rowKeys.contains(key)), !removed.contains(header.key)
            else { continue }
            keys.append(header.key)
        }
        return keys
    }

    /// A row's record read as a file would be: the header, and with `verifying` the checksum.
    static func readRecord(_ record: [UInt8], verifying: Bool) -> Result<EntryHeader, EntryFormatError> {
        switch DiskTier.readEntry(fromRecord: record, wantsPayload: verifying) {
        case .entry(let header, _): return .success(header)
        case .damaged(let error, _): return .failure(error)
        case .outOfMemory: return .failure(.lengthMismatch(expected: record.count, actual: 0))
        }
    }

    /// Plans garbage collection with a store: damaged rows and files, expired entries and
    /// entries no read can return, then eviction in the index's order down to the limits.
    /// On the way, stale files (shadowed by a row, orphans, abandoned temporaries) go, rows of
    /// large entries whose file is gone go, and large entries' files without a row get one.
    func planGarbageCollection(now: Double, limits: DiskTier.Limits, reclaim: DiskTier.Reclaim) -> DiskTier.RemovalPlan
    {
        for name in (try? disk.fileSystem.contentsOfDirectory(disk.folder)) ?? []
        where name.hasPrefix(DiskTier.temporaryPrefix) {
            disk.removeIfAbandoned(temporary: name)
        }
        // Files a row shadows and orphans go, and (while an import is under way) files older than
        // the store get rows, under the store's lock (``reconcileFiles(with:indexing:removingStrays:)``).
        disk.reconcileFiles(with: store, indexing: disk.storeState.withLock { $0.importPending }, removingStrays: true)
        let scan = scan(verifyingRows: true)
        var chosen: [DiskTier.Choice] = []
        var seenFiles = Set<String>()
        for entry in scan.entries {
            let header = entry.header
            if entry.stored?.location != .row { seenFiles.insert(DiskTier.storeKey(header.key)) }
            let lastUse = max(entry.info.accessedAt, entry.stored.map { Double($0.lastUse) } ?? -.infinity)
            var reason: DiscardReason?
            if reclaim.expired, header.isExpired(at: now, lastUsedAt: lastUse) {
                reason = .expired
            } else if case .some(let appVersion) = reclaim.otherAppVersionsThan, header.schemaVersion == nil,
                header.appVersion != appVersion
            {
                reason = .appVersionMismatch(stored: header.appVersion, current: appVersion)
            }
            if let reason {
                chosen.append(
                    DiskTier.Choice(
                        fileName: entry.fileName, sequence: nil, removal: .discarded(key: header.key, reason: reason),
                        size: entry.info.size, stored: entry.stored))
            }
        }
        for (name, _, size, stored) in scan.damaged {
            chosen.append(
                DiskTier.Choice(
                    fileName: stored == nil ? name : DiskTier.fileName(for: name), sequence: nil,
                    removal: .discarded(key: name, reason: .corrupt), size: size, stored: stored))
        }
        // Damaged files are named by file name, not key: their rows (if any) stay until a read
        // or a later pass finds the file gone.
        for row in scan.rows.values where row.location == .file && !seenFiles.contains(row.key) {
            _ = try? store.remove(unchanged: row, ifMissing: disk.path(DiskTier.fileName(for: row.key)))
        }
        let freed = chosen.reduce(0) { $0.addingClamped($1.size) } // a damaged row's size may be near Int.max
        let (victims, walked) = chooseVictims(
            order: limits.evictionOrder, downTo: limits.size, minimumFreeSpace: limits.minimumFreeSpace,
            freedFirst: freed, excluding: Set(chosen.compactMap { $0.stored?.key }))
        return DiskTier.RemovalPlan(
            choices: chosen + victims, reclaimsStore: true, evictionOrder: limits.evictionOrder, walkedStore: walked)
    }

    /// Chooses unlocked entries in the index's eviction order `order` (a locked entry is never
    /// evicted) until the folder would occupy at most `limit` and the volume would
    /// have `minimumFreeSpace` free, counting `freedFirst` bytes removed before them.
    ///
    /// Each entry removed is taken to free its size. A row frees a little more (its page's
    /// share), but only once whole pages are free and given back: a pass that falls short is
    /// made up by the next sweep, which the measured total schedules.
    /// `startingAbove`: choose nothing unless the folder occupies more than this.
    /// `orAfterALargeOverrun`: the limit to go down to instead when the folder is over `limit` by
    /// more than a tenth of what it occupies (see ``DiskTier/Limits/largeSweepTarget``).
    /// Returns the victims with their row ids, and the store as the walk that chose them began.
    func chooseVictims(
        order: StoreEvictionOrder, downTo limit: Int?, orAfterALargeOverrun largeLimit: Int? = nil,
        minimumFreeSpace: Int?, freedFirst: Int = 0, excluding: Set<String> = [], startingAbove: Int? = nil
    ) -> (victims: [DiskTier.Choice], walked: StoreSnapshot?) {
        // The log first goes into the store and is cut back (never waiting: a writer or reader
        // of another process leaves it for the next checkpoint): it is part of what the folder
        // occupies and of the volume's room, though not of what the measure below counts as the
        // entries' (the pages of the walk's snapshot), which no checkpoint changes.
        _ = try? store.checkpoint()
        var free: Int?
        if let minimumFreeSpace, var measured = disk.fileSystem.availableCapacity(disk.folder) {
            // Free pages the store holds (removals of single keys leave them, up to a batch) are
            // room for the volume once given back: that first (a reclaim with none to give back
            // reads the free-page count and stops), then entries for what is missing. A reader
            // of another process may keep the store file from being cut back: the vacuum then
            // only lengthened the log, and the room measured before stands.
            if measured < minimumFreeSpace, (try? store.reclaimSpace(foldingLog: false)) ?? 0 > 0 {
                measured = max(measured, disk.fileSystem.availableCapacity(disk.folder) ?? measured)
            }
            free = measured
        }
        var occupied: Int?
        var needed = 0
        // What a row's eviction frees for each byte of its size (a large entry's frees its size).
        var rowFactor = 1.0
        // Measured in the walk's own snapshot (`EntryStore.walkEvictionOrder(_:measuring:_:)`).
        let measure = { [disk] (measure: StoreMeasure) -> Bool in
            occupied = measure.occupied
            disk.storeState.withLock { $0.occupiedEstimate = measure.occupied }
            if let startingAbove, measure.occupied <= startingAbove { return false }
            var over = 0
            if var limit {
                if let largeLimit, measure.occupied.subtractingClamped(limit) > measure.occupied / 10 {
                    limit = largeLimit
                    // What is over is counted in what the folder occupies, what a row's eviction
                    // frees in its size: rows of 1 KB, three to a 4 KiB page, had a sweep to 1 MB
                    // evict 2,400 of 2,500. For a large overrun a row counts as its share of the
                    // pages rows take (never less than its size; the `-shm` and the empty store's
                    // pages do not shrink with them), a large entry as its file. One ratio for
                    // the whole folder left it over its limit when old large files were among
                    // rows that take three times their sizes.
                    let rowsOccupied = measure.occupied.subtractingClamped(measure.files)
                        .subtractingClamped(measure.fixed)
                    let rowsEntries = measure.entries.subtractingClamped(measure.files)
                    rowFactor = max(1, Double(rowsOccupied) / Double(max(1, rowsEntries)))
                }
                over = measure.occupied.subtractingClamped(limit)
            }
            if let minimumFreeSpace, let free { over = max(over, minimumFreeSpace.subtractingClamped(free)) }
            needed = over.subtractingClamped(freedFirst)
            return needed > 0
        }
        var victims: [DiskTier.Choice] = []
        var freed = 0
        // One pass in the order, read as far as it chooses (the rest of the index is not read).
        let walked = try? store.walkEvictionOrder(order, measuring: measure) { entry, rowID in
            guard excluding.isEmpty || !excluding.contains(entry.key) else { return true }
            // A large entry's row whose file is gone (an eviction for room that could not commit,
            // reported then) frees nothing and is no eviction: its row goes, unannounced.
            if entry.location == .file,
                disk.fileSystem.info(DiskTier.fileName(for: entry.key), in: disk.folder) == nil
            {
                victims.append(
                    DiskTier.Choice(
                        fileName: nil, sequence: nil, removal: .removed(key: entry.key), size: 0, stored: entry))
                return true
            }
            freed = freed.addingClamped(entry.location == .file ? entry.size : Int(Double(entry.size) * rowFactor))
            victims.append(
                DiskTier.Choice(
                    fileName: nil, sequence: nil, removal: .evicted(key: entry.key, bytes: entry.size),
                    size: entry.size, stored: entry, rowID: rowID))
            return freed < needed
        }
        guard let occupied else { return ([], nil) }
        // Locked entries are never evicted (they are not candidates): a folder of locked entries
        // may stay over its limit, and is not swept again until it grows (see `fruitlessSweepAt`).
        disk.storeState.withLock { $0.fruitlessSweepAt = freed < needed ? occupied : nil }
        return (victims, walked ?? nil)
    }

    /// Removes the rows of `choices` that are as planned (one transaction), and the files of
    /// the large entries among them; returns the removals done.
    /// Each large entry's file goes inside the transaction, before its row (EntryStore's
    /// `remove(unchanged:evictedIn:filePath:)`): no process reads a removed entry's file again.
    /// `walkedStore`: the store as the walk that chose the evictions began; when it is so still,
    /// their rows go by id (EntryStore's `remove(unchanged:evictedIn:filePath:asWalked:)`).
    func removeRows(
        _ choices: [DiskTier.Choice], evictionOrder: StoreEvictionOrder?, walkedStore: StoreSnapshot?
    ) -> [DiskTier.Removal] {
        guard !choices.isEmpty else { return [] }
        var removed: [StoreEntry] = []
        func isEviction(_ choice: DiskTier.Choice) -> Bool {
            if case .evicted = choice.removal { true } else { false }
        }
        // A key's file goes with its row (a large entry's, or one a write cut between its two
        // transactions left behind a row), if the folder has it: listed at the first removal of
        // each store transaction, inside it. A file left behind was made before its write's
        // first transaction, so before this one: the listing has it. An unlink per row cost
        // about 4 µs (path lookup of a missing name), 22 ms of a 5,000-row eviction. A few
        // removals unlink as before: a folder of many files (one an older release filled) is not
        // listed under the store's lock for one entry.
        var present: Set<String>?
        var listed = choices.count <= DiskTier.unlinksWithoutListing
        let filePath: (String) -> String? = { [self] key in
            if !listed {
                listed = true
                present = disk.entryFileNames().map(Set.init)
            }
            if present?.isEmpty == true { return nil }
            let name = DiskTier.fileName(for: key)
            guard present?.contains(name) ?? true else { return nil }
            return disk.path(name)
        }
        // On a full volume the store removes the rows one a transaction; those that find no
        // room even so stay, reported (EntryStore's `remove(unchanged:evictedIn:filePath:)`).
        var awaitingRoom: [StoreEntry] = []
        func remove(
            _ entries: [StoreEntry], evictedIn order: StoreEvictionOrder?,
            asWalked walk: (rowIDs: [Int64], snapshot: StoreSnapshot)? = nil
        ) throws(StoreError) -> [StoreEntry] {
            let outcome = try store.remove(unchanged: entries, evictedIn: order, filePath: filePath, asWalked: walk)
            // An eviction that finds no room is left to the next sweep, which chooses again.
            if order == nil { awaitingRoom += outcome.awaitingRoom }
            return outcome.removed
        }
        do throws(StoreError) {
            var (others, evictions, rowIDs): ([StoreEntry], [StoreEntry], [Int64]) = ([], [], [])
            evictions.reserveCapacity(choices.count)
            rowIDs.reserveCapacity(choices.count)
            for choice in choices {
                guard let stored = choice.stored else { continue }
                if !isEviction(choice) {
                    others.append(stored)
                } else {
                    evictions.append(stored)
                    if let rowID = choice.rowID { rowIDs.append(rowID) }
                }
            }
            removed += try remove(others, evictedIn: nil)
            listed = choices.count <= DiskTier.unlinksWithoutListing // else listed again in the next transaction
            // Every eviction's row id, or none: the first transaction's removals, if any, are a
            // commit since the walk, which the store then finds (each row is checked).
            let walk = walkedStore.flatMap { rowIDs.count == evictions.count ? (rowIDs, $0) : nil }
            removed += try remove(evictions, evictedIn: evictionOrder, asWalked: walk)
        } catch {
            if case .setAside(let setAside) = error { disk.noteSetAside(setAside, of: store) }
            return []
        }
        if !awaitingRoom.isEmpty {
            let rows = Dictionary(awaitingRoom.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
            disk.noteRemovalsAwaitingRoom(
                choices.compactMap { choice in
                    choice.stored.flatMap { rows[$0.key] }.map { (choice.removal.key, $0) }
                })
        }
        // The oldest survivors move to the end of the table, so the pages the sweep left partly
        // empty go back whole; not on a tight volume, where the moves' pages may not fit.
        if evictionOrder != nil, !disk.isVolumeTight { try? store.compact(afterRemoving: removed.count) }
        // As many removed as chosen: every choice was done (a key chosen twice is removed once).
        if removed.count == choices.count, choices.allSatisfy({ $0.stored != nil }) { return choices.map(\.removal) }
        let removedKeys = Set(removed.map(\.key))
        return choices.compactMap { choice in
            guard let stored = choice.stored, removedKeys.contains(stored.key) else { return nil }
            return choice.removal
        }
    }

    /// After a plan that removed rows: the freed pages go back to the file system and the log
    /// is checkpointed, so what the folder occupies goes down, not only the entries' total.
    /// Without `foldingLog` (after removals of single keys) the log is left to SQLite's own
    /// checkpoints when no page was freed (`EntryStore.reclaimSpace(pages:foldingLog:)`).
    func reclaimStoreSpace(foldingLog: Bool = true) {
        let tight = disk.isVolumeTight
        store.adjustLog(tightVolume: tight)
        _ = try? store.reclaimSpace(foldingLog: foldingLog)
        noteSpaceGivenBack(tight: tight)
    }

    /// After a reclaim: the reserve a removal on a full volume (or a reclaim's last steps) drew
    /// on, made again if the room is there (EntryStore+Reserve.swift), now that the log gave its
    /// room back; then what the folder occupies, measured. Returns that.
    @discardableResult
    private func noteSpaceGivenBack(tight: Bool) -> Int? {
        store.keepReserve(tight: tight)
        let occupied = try? store.occupiedBytes()
        disk.storeState.withLock { $0.occupiedEstimate = occupied }
        return occupied
    }

    /// The free pages (a reader counts them) go back in steps that never wait
    /// (`EntryStore.reclaimSpace(pages:foldingLog:)`), the log folded in after them; the log's
    /// bounds stay as they are (setting them waits for the writer). A collection that removed
    /// nothing calls this under the folder lock: waiting there for a write of this process
    /// stuck on another process's lock held every collection of the folder for as long (a
    /// hostile review: `collectGarbage()`, `removeAll(where:)` and `removeExpired()` that
    /// removed nothing took the busy timeout).
    @discardableResult
    func reclaimFreePages(beyondABatch: Bool) -> Int? {
        guard let (free, pages, _) = try? store.freePages(),
            free >= (beyondABatch ? EntryStore.removalFreePages(ofPages: pages) : 1),
            (try? store.reclaimSpace(foldingLog: false)) ?? 0 > 0
        else { return nil }
        return noteSpaceGivenBack(tight: disk.isVolumeTight)
    }

    /// Folds the store's log into it and cuts it back (without waiting for readers), and measures
    /// what the folder occupies: whether that is over `limit` (a sweep is then due).
    ///
    /// Free pages count here (the volume holds them) and not in a sweep's measure (they are
    /// where the next rows go): over the limit, they go back first, or the sweep this schedules
    /// would find the rows within it and leave them. Single-key removals leave at most a batch;
    /// a process killed between a removal's commit and its reclaim leaves more (CI of 326e54a:
    /// a folder at rest over its limit after a write, a collection and another process's).
    func settle(over limit: Int) -> Bool {
        _ = try? store.checkpoint()
        guard var occupied = try? store.occupiedBytes() else { return false }
        if occupied > limit, let measured = reclaimFreePages(beyondABatch: false) { occupied = measured }
        // A sweep now, even if the last one found too little to evict (things may have changed).
        disk.storeState.withLock {
            $0.occupiedEstimate = occupied
            $0.fruitlessSweepAt = nil
        }
        return occupied > limit
    }

    /// Removes every row (and large entry's file), reporting failures as system errors.
    /// Every entry file goes inside the transaction, before the rows: the large entries', and
    /// any other the folder holds (older than the store, an orphan, one a killed write left
    /// behind a row); then the store gives its pages back off the caller's thread.
    func removeEveryRow() -> [SystemError] {
        do throws(StoreError) {
            let removeAll = { [self] (store: EntryStore) throws(StoreError) -> StoreRemovals in
                try store.removeAll(
                    filePath: { [self] key in disk.path(DiskTier.fileName(for: key)) },
                    otherFiles: { [self] in (disk.entryFileNames() ?? []).map(disk.path) })
            }
            let outcome: StoreRemovals
            do throws(StoreError) {
                outcome = try removeAll(store)
            } catch .failed(let error) where error.systemCode == ESTALE {
                // Another process replaced the store since the last check (its folder removed
                // and made again): every entry of the folder's store now goes, not the old one's.
                switch disk.storeAfterReplacement() {
                case .gone: return []
                case .unopenable(let failure): return [failure]
                case .reopened(let reopened): outcome = try removeAll(reopened)
                }
            }
            // On a full volume, rows whose own removal found no room: named, and retried.
            disk.noteRemovalsAwaitingRoom(outcome.awaitingRoom.map { ($0.key, $0) })
        } catch {
            if case .setAside(let setAside) = error {
                disk.noteSetAside(setAside, of: store)
                return []
            }
            return [DiskTier.systemError(error, path: store.path, "remove all")]
        }
        disk.scheduleReclaim()
        return []
    }

    /// Removes the entries whose removal found the volume full, each under its key's lock (a
    /// write of the key since then stays), once the log is folded into the store; those that
    /// still find no room wait for the next reclaim.
    func retryRemovalsAwaitingRoom() {
        guard !disk.storeState.withLock({ $0.removalsAwaitingRoom.isEmpty }) else { return }
        _ = try? store.checkpoint()
        let keys = disk.storeState.withLock { Array($0.removalsAwaitingRoom.keys) }
        for key in keys {
            disk.keyLocks.withLock(key) {
                // Taken under the key's lock: a write of the key since took it off the list.
                guard let row = disk.storeState.withLock({ $0.removalsAwaitingRoom.removeValue(forKey: key) }) else {
                    return
                }
                let file = disk.path(DiskTier.fileName(for: key))
                // Only the row as it was: another process's later write of the key stays. A
                // retry that could not be made (no room yet, the store busy: another process's
                // call, as processes alternating on a full volume make) waits for the next. It
                // evicts nothing for room: that was the removal's own one try.
                let outcome = try? store.remove(unchanged: [row], filePath: { _ in file })
                if outcome?.awaitingRoom.isEmpty != true {
                    disk.storeState.withLock { $0.removalsAwaitingRoom[key] = row }
                }
            }
        }
    }
}
