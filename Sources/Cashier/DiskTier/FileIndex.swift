import CashierEntryFormat
import CashierPlatform
import CashierStore
import Foundation

/// The folder without a store, as in 0.1.0: every entry a file, named from its key; the index
/// this process's (`IndexState`, DiskTier+Index.swift), loaded by one folder scan the first time
/// it is needed, never on the read path; recency exact in that index and coarse in the files'
/// access times (DiskTier+Recency.swift), which the next launch's scan reads back.
///
/// It serves a folder where SQLite cannot be loaded, a disk tier over a test double of the
/// file system, and a folder no write has given a store yet.
struct FileIndex: EntryIndex {
    let disk: DiskTier

    private var fileSystem: any FileSystem { disk.fileSystem }
    private var folder: String { disk.folder }

    // MARK: One entry

    func read(key: String, fileName: String) -> DiskTier.ReadResult {
        disk.read(fileName)
    }

    func readHeader(key: String, fileName: String) -> Result<(EntryHeader, FileInfo), DiskTier.HeaderFailure> {
        disk.readHeader(fileName)
    }

    func keepsAsRow(size: Int) -> Bool { false }

    /// Writes a temporary file and renames it over `fileName`, then notes it in the index.
    func write(
        _ fileName: String, header: EntryHeader, payload: Data, options: DiskTier.WriteOptions,
        until deadline: MonotonicDeadline
    ) throws(SystemError) -> (size: Int, isLocked: Bool) {
        var header = header
        let size = header.length + payload.count
        if options.keepsStoredLock, !header.isLocked { header.isLocked = disk.storedLock(of: header.key) }
        let temporary = try disk.writeTemporaryFile(header: header, payload: payload, options: options)
        do {
            try fileSystem.rename(temporary, to: disk.path(fileName))
        } catch {
            try? fileSystem.removeFile(temporary)
            throw error
        }
        disk.noteWritten(
            fileName, size: size, isLocked: header.isLocked, at: options.usedAt ?? Date().timeIntervalSince1970)
        // The new entry is in place (and in the index); a failing folder sync only
        // leaves its durability unknown, which the caller is told by the error.
        if options.synchronize { try fileSystem.synchronizeDirectory(folder) }
        return (size, header.isLocked)
    }

    func remove(key: String, fileName: String, busyTimeoutMilliseconds: Int32) throws(SystemError) {
        try disk.remove(fileName)
    }

    // MARK: Recency

    /// Records the read exactly in the index, and in the file's access time when that is a
    /// granularity or more off.
    func noteRead(
        _ fileName: String, key: String, info: FileInfo, isLocked: Bool, at now: Double,
        foundSlidingLifespanOver: Bool, sliding: Bool
    ) -> Double {
        disk.state.withLock {
            $0.note(
                fileName,
                IndexRecord(
                    size: info.size, lastUse: now, isLocked: isLocked, stamp: info.accessedAt,
                    modifiedAt: info.modifiedAt))
        }
        return disk.persistUse(fileName, at: now, stamp: foundSlidingLifespanOver ? nil : info.accessedAt)
    }

    /// Records each use in the index and, as ``DiskTier/persistUse(_:at:stamp:onlyLater:)``
    /// says, in the file's access time, at once.
    func noteUses(ofKeys keys: [(name: String, usedAt: Double?)], at now: Double) {
        for (key, usedAt) in keys {
            let fileName = DiskTier.fileName(for: key)
            let (known, stamp) = disk.recordUse(fileName, at: usedAt ?? now)
            disk.persistUse(fileName, at: usedAt ?? now, stamp: known ? stamp : nil, onlyLater: usedAt != nil)
        }
    }

    /// Access times are written at once: this process's index and its files' access times are
    /// no other process's to wait for.
    func gatherUses(ofKeys keys: [(name: String, usedAt: Double?)], at now: Double) {
        noteUses(ofKeys: keys, at: now)
    }

    func flushUses() {}

    func flushUsesIfFree() -> Bool { true }

    func noteSlidingUseIfFree(_ key: String, at now: Double) -> Bool {
        noteUses(ofKeys: [(key, now)], at: now)
        return true
    }

    func pendingExactUse(of key: String) -> Double? { nil }

    // MARK: Every entry

    /// Entry count and total bytes, scanning the folder once if this process has not yet.
    func totals() -> (count: Int, size: Int) {
        disk.loadIndexIfNeeded()
        return disk.state.withLock { ($0.files.count, $0.totalSize) }
    }

    func scanHeaders() -> (
        entries: [(fileName: String, header: EntryHeader, info: FileInfo)],
        damaged: [(fileName: String, error: EntryFormatError, size: Int)]
    ) {
        guard let names = try? fileSystem.contentsOfDirectory(folder) else { return ([], []) }
        var entries: [(String, EntryHeader, FileInfo)] = []
        var damaged: [(String, EntryFormatError, Int)] = []
        for name in names where DiskTier.isEntryFileName(name) {
            switch disk.readHeader(name) {
            case .success(let (header, info)): entries.append((name, header, info))
            case .failure(.damaged(let error, let size)): damaged.append((name, error, size))
            case .failure: break
            }
        }
        return (entries, damaged)
    }

    func keys(acceptingEveryRecordOf acceptedAppVersion: String?, where include: (EntryHeader) -> Bool) -> [String] {
        scanHeaders().entries.filter { include($0.header) }.map(\.header.key)
    }

    func removeAllEntries() -> [SystemError] {
        var failures: [SystemError] = []
        for name in (try? fileSystem.contentsOfDirectory(folder)) ?? [] where DiskTier.isEntryFileName(name) {
            do throws(SystemError) {
                try fileSystem.removeFile(disk.path(name))
            } catch {
                failures.append(error)
            }
        }
        disk.state.withLock { $0.reset(loadedEmpty: failures.isEmpty) }
        return failures
    }

    // MARK: Housekeeping

    func planRemovals(where shouldRemove: (EntryHeader) -> Bool) -> DiskTier.RemovalPlan {
        let known = disk.state.withLock { $0.files }
        let choices = scanHeaders().entries.filter { shouldRemove($0.header) }.map { entry in
            DiskTier.Choice(
                fileName: entry.fileName, sequence: known[entry.fileName]?.sequence,
                removal: .removed(key: entry.header.key), size: entry.info.size)
        }
        return DiskTier.RemovalPlan(choices: choices)
    }

    /// Reads every file's header: damaged, expired and unreadable entries out, then least
    /// recently used (by the index, else the access time) down to the limits; the index is
    /// rebuilt once the plan is applied.
    func planGarbageCollection(now: Double, limits: DiskTier.Limits, reclaim: DiskTier.Reclaim) -> DiskTier.RemovalPlan
    {
        let names = (try? fileSystem.contentsOfDirectory(folder)) ?? []
        var chosen: [DiskTier.Choice] = []
        var live: [Candidate] = []
        let known = disk.state.withLock { $0.files }
        for name in names {
            if name.hasPrefix(DiskTier.temporaryPrefix) {
                disk.removeIfAbandoned(temporary: name)
                continue
            }
            guard DiskTier.isEntryFileName(name) else { continue }
            let sequence = known[name]?.sequence
            switch disk.readHeader(name) {
            case .success(let (header, info)):
                // An orphan (KeyIdentity.swift): no read finds it, and its key may be live elsewhere.
                guard DiskTier.isHome(name, of: header.key) else {
                    _ = try? fileSystem.removeFile(disk.path(name))
                    continue
                }
                let lastUse = DiskTier.lastUse(info: info, indexed: known[name]?.lastUse)
                if reclaim.expired, header.isExpired(at: now, lastUsedAt: lastUse) {
                    chosen.append(
                        DiskTier.Choice(
                            fileName: name, sequence: sequence, removal: .discarded(key: header.key, reason: .expired),
                            size: info.size))
                    continue
                }
                if case .some(let appVersion) = reclaim.otherAppVersionsThan, header.schemaVersion == nil,
                    header.appVersion != appVersion
                {
                    let reason = DiscardReason.appVersionMismatch(stored: header.appVersion, current: appVersion)
                    chosen.append(
                        DiskTier.Choice(
                            fileName: name, sequence: sequence, removal: .discarded(key: header.key, reason: reason),
                            size: info.size))
                    continue
                }
                live.append(
                    Candidate(
                        fileName: name, key: header.key, size: info.size, lastUse: lastUse, sequence: sequence,
                        modifiedAt: info.modifiedAt, isLocked: header.isLocked))
            case .failure(.damaged(_, let size)):
                chosen.append(
                    DiskTier.Choice(
                        fileName: name, sequence: sequence, removal: .discarded(key: name, reason: .corrupt),
                        size: size))
            case .failure:
                continue
            }
        }
        let freed = chosen.reduce(0) { $0 + $1.size }
        let victims = chooseVictims(
            from: live, downTo: limits.size, minimumFreeSpace: limits.minimumFreeSpace, freedFirst: freed)
        return DiskTier.RemovalPlan(choices: chosen + victims, rescansAfterwards: true)
    }

    /// Rescans the folder (another process may have written: the folder, not this process's
    /// index, is the truth), then chooses least recently used entries down to the sweep's target.
    func planSweep(limits: DiskTier.Limits, at now: Double) -> DiskTier.RemovalPlan {
        disk.rescan()
        let (files, total) = disk.state.withLock { ($0.files, $0.totalSize) }
        guard let limit = limits.size, total > limit else { return DiskTier.RemovalPlan() }
        let candidates = files.map { name, record in
            Candidate(
                fileName: name, key: nil, size: record.size, lastUse: record.lastUse, sequence: record.sequence,
                modifiedAt: record.modifiedAt, isLocked: record.isLocked)
        }
        return DiskTier.RemovalPlan(
            choices: chooseVictims(
                from: candidates, downTo: Int(Double(limit) * limits.sweepTarget), minimumFreeSpace: nil))
    }

    /// By the index's total once loaded. (A disk tier that uses the store when it has one,
    /// whose folder has none yet, sweeps after every write past the limit, as the store's
    /// first measure will.)
    func mayExceed(_ limit: Int) -> Bool {
        disk.usesStore || disk.state.withLock { !$0.loaded || $0.totalSize > limit }
    }

    func apply(_ plan: DiskTier.RemovalPlan) -> [DiskTier.Removal] {
        disk.removeChosenFiles(plan)
    }

    func reclaimSpace(retryingRemovals: Bool, foldingLog: Bool) {}

    func reclaimFreePages(beyondABatch: Bool) -> Int? { nil }

    func settle(over limit: Int) -> Bool { false }

    /// No store, nothing to compare; a store the folder has (another process made it) is
    /// opened off the caller's thread, and the next check compares its version.
    func versionWithoutWaiting() -> StoreVersion? {
        guard disk.usesStore else { return StoreVersion.none }
        if case .closed = disk.storeState.withLock({ $0.phase }) {
            disk.inBackground { [disk] in _ = disk.entryStore() }
        }
        return StoreVersion.none
    }

    // MARK: Eviction

    /// An entry eviction may choose: what the index or its header says of it.
    struct Candidate {
        var fileName: String
        var key: String?
        var size: Int
        /// The last use by the caches' clock, then two tie-breakers: the order this process
        /// noted uses in (0 for files it has not touched), and the real time of the write.
        var lastUse: Double
        var sequence: UInt64?
        var modifiedAt: Double
        var isLocked: Bool?

        var order: (Double, UInt64, Double) { (lastUse, sequence ?? 0, modifiedAt) }
    }

    /// Chooses least recently used unlocked entries (a locked one is never chosen) until the total is at most
    /// `limit` and the volume would have `minimumFreeSpace` free, counting `freedFirst` bytes
    /// that the plan removes before them. Call with no key lock held: the volume is asked for
    /// its free space once, here, and each choice counts as freeing its size; the header of a
    /// candidate whose key or lock the index does not know is read here, for the candidates
    /// reached only. A chosen file this process touches before the plan is applied is spared
    /// (``DiskTier/apply(_:)``); the next sweep or collection makes up for it.
    func chooseVictims(
        from candidates: [Candidate], downTo limit: Int?, minimumFreeSpace: Int?, freedFirst: Int = 0
    ) -> [DiskTier.Choice] {
        var total = candidates.reduce(0) { $0 + $1.size }
        var free = minimumFreeSpace == nil ? nil : fileSystem.availableCapacity(folder).map { $0 + freedFirst }
        func satisfied() -> Bool {
            if let limit, total > limit { return false }
            if let minimumFreeSpace, let free, free < minimumFreeSpace { return false }
            return true
        }
        guard !satisfied() else { return [] }
        var victims: [DiskTier.Choice] = []
        func choose(_ candidate: Candidate, key: String) {
            total -= candidate.size
            free? += candidate.size
            victims.append(
                DiskTier.Choice(
                    fileName: candidate.fileName, sequence: candidate.sequence,
                    removal: .evicted(key: key, bytes: candidate.size), size: candidate.size))
        }
        for var candidate in candidates.sorted(by: { $0.order < $1.order }) {
            if satisfied() { return victims }
            if candidate.key == nil || candidate.isLocked == nil {
                guard case .success(let (header, _)) = disk.readHeader(candidate.fileName) else { continue }
                candidate.key = header.key
                candidate.isLocked = header.isLocked
            }
            // Locked entries are never evicted (DESIGN's fourth wave, as in a folder with a
            // store): a folder of locked entries may stay over its limit.
            if candidate.isLocked == true { continue }
            choose(candidate, key: candidate.key!)
        }
        return victims
    }
}
