import CashierEntryFormat
import CashierStore
import Foundation

/// Housekeeping in two steps: a plan, then its application.
///
/// A plan is made holding the folder lock and no key lock: listing the folder, reading
/// headers, asking the volume for its free space. Applying it is the one step taken under
/// the barrier of every key (``KeyLocks/withEveryKeyLocked(_:)``), and it only unlinks. The
/// disk layer never calls up into the front: ``apply(_:)`` returns what it removed, and the
/// cache, which holds the barrier around it, drops those memory records and tells observers
/// in the same step (see `Cache+Housekeeping.swift`).
extension DiskTier {
    /// What housekeeping did to one entry, reported so the cache can tell its memory tier and observers.
    package enum Removal: Sendable {
        case evicted(key: String, bytes: Int)
        case discarded(key: String, reason: DiscardReason)
        case removed(key: String)

        /// The key of the entry removed.
        package var key: String {
            switch self {
            case .evicted(let key, _), .discarded(let key, _), .removed(let key): key
            }
        }
    }

    package struct Limits: Sendable {
        package var size: Int?
        package var minimumFreeSpace: Int?
        /// Fraction of `size` a sweep trims down to (below 1, so sweeps are rare and small). 95%:
        /// the tier holds what its limit allows, on average, within about 2.5%; at 90% a disk tier
        /// of 1 KiB rows at a server's pace hit 0.006 less often on a Zipf trace, and a sweep of
        /// rows costs little (`CashierReplay disk-cache --object-bytes 1024`).
        package var sweepTarget: Double = 0.95
        /// The order the store's index evicts in (``Cache/Configuration-swift.struct/evictionPolicy``);
        /// without a store, eviction is least recently used.
        package var evictionOrder = StoreEvictionOrder.frequencyAware
        package init(size: Int?, minimumFreeSpace: Int?) {
            self.size = size
            self.minimumFreeSpace = minimumFreeSpace
        }
    }

    /// What garbage collection reclaims besides stale temporaries and damaged files.
    package struct Reclaim: Sendable {
        /// Expired entries.
        package var expired: Bool
        /// Entries of unversioned keys written under another app version than this one
        /// (`nil`: nothing is reclaimed for its app version).
        package var otherAppVersionsThan: String??
        package init(expired: Bool, otherAppVersionsThan: String?? = .none) {
            self.expired = expired
            self.otherAppVersionsThan = otherAppVersionsThan
        }
    }

    /// The files a housekeeping pass chose to remove, in order, each with the index's change
    /// counter when it was chosen. Made with no key lock held; see ``apply(_:)``.
    package struct RemovalPlan: Sendable {
        var choices: [Choice] = []
        /// Whether the index is rebuilt from the folder after the plan is applied.
        var rescansAfterwards = false
        /// Whether the store gives back the pages of the rows removed after the plan is applied.
        var reclaimsStore = false
        /// The order the plan's evictions were chosen in: the store remembers them by it.
        var evictionOrder: StoreEvictionOrder?

        var isEmpty: Bool { choices.isEmpty }
    }

    /// A file housekeeping chose to remove, with the index's change counter when it chose it.
    struct Choice: Sendable {
        var fileName: String
        var sequence: UInt64?
        var removal: Removal
        /// The file's size: what removing it frees, as far as the plan counts.
        var size: Int
        /// The entry's row as the plan saw it: removed only if still so (see ``applyInStore(_:evictionOrder:)``).
        var stored: StoreEntry? = nil
    }

    /// Removes each file of `plan` that this process has not written, read or used since it
    /// was chosen, and returns what it removed.
    ///
    /// Call under the key barrier, and drop the removed keys' memory records there too: the
    /// unlinks are the one file I/O done under it, and they must be, since a file going and its
    /// memory record going must be one step no write of that key can enter (memory and disk
    /// agree). Everything that only decides (headers, free space) was done when the plan was made.
    package func apply(_ plan: RemovalPlan) -> [Removal] {
        var removals = applyInStore(plan.choices.filter { $0.stored != nil }, evictionOrder: plan.evictionOrder)
        for choice in plan.choices where choice.stored == nil && sequence(of: choice.fileName) == choice.sequence {
            guard (try? remove(choice.fileName)) != nil else { continue }
            removals.append(choice.removal)
        }
        return removals
    }

    /// Rebuilds the index after `plan` was applied, when the plan asks for it (garbage
    /// collection, which also removed files it does not report). Call after the barrier.
    package func finish(_ plan: RemovalPlan) {
        if plan.reclaimsStore {
            if !plan.isEmpty { reclaimStoreSpace() }
            return
        }
        if plan.rescansAfterwards { rescan() }
    }

    /// Every entry's header, for listing and bulk removal (damaged files are reported, not returned).
    package func scanHeaders() -> (
        entries: [(fileName: String, header: EntryHeader, info: FileInfo)],
        damaged: [(fileName: String, error: EntryFormatError, size: Int)]
    ) {
        if let store = entryStore() {
            let scan = scanStore(store)
            return (
                scan.entries.map { ($0.fileName, $0.header, $0.info) },
                scan.damaged.map { ($0.name, $0.error, $0.size) }
            )
        }
        guard let names = try? fileSystem.contentsOfDirectory(folder) else { return ([], []) }
        var entries: [(String, EntryHeader, FileInfo)] = []
        var damaged: [(String, EntryFormatError, Int)] = []
        for name in names where Self.isEntryFileName(name) {
            switch readHeader(name) {
            case .success(let (header, info)): entries.append((name, header, info))
            case .failure(.damaged(let error, let size)): damaged.append((name, error, size))
            case .failure: break
            }
        }
        return (entries, damaged)
    }

    /// Plans the removal of every entry whose header `shouldRemove` accepts. Call holding the
    /// folder lock (``withFolderLock(_:)``) and no key lock: it reads every header.
    package func planRemovals(where shouldRemove: (EntryHeader) -> Bool) -> RemovalPlan {
        if let store = entryStore() { return planStoreRemovals(store, where: shouldRemove) }
        let known = state.withLock { $0.files }
        let choices = scanHeaders().entries.filter { shouldRemove($0.header) }.map { entry in
            Choice(
                fileName: entry.fileName, sequence: known[entry.fileName]?.sequence,
                removal: .removed(key: entry.header.key), size: entry.info.size)
        }
        return RemovalPlan(choices: choices)
    }

    /// Removes every entry file; temporary files of writers still running are left to them.
    /// Returns the removals that failed (a read-only folder, say); the index then rescans.
    ///
    /// Call under the folder lock and the key barrier, and drop every memory record there
    /// too. The folder is listed there as well (not before): a write that landed before the
    /// barrier must go with the rest, so no write lands between its file going and its memory
    /// record going.
    @discardableResult
    package func removeAllEntries() -> [SystemError] {
        var failures: [SystemError] = []
        if let store = entryStore() {
            // Files are the store's to remove, under its lock (a file another process renames
            // into place meanwhile is that process's entry).
            forgetPendingUses(of: nil)
            failures = removeAllFromStore(store)
            storeState.withLock { $0.occupiedEstimate = nil }
            state.withLock { $0.reset(loadedEmpty: failures.isEmpty) }
            return failures
        }
        for name in (try? fileSystem.contentsOfDirectory(folder)) ?? [] where Self.isEntryFileName(name) {
            do throws(SystemError) {
                try fileSystem.removeFile(path(name))
            } catch {
                failures.append(error)
            }
        }
        state.withLock { $0.reset(loadedEmpty: failures.isEmpty) }
        return failures
    }

    /// Plans garbage collection: damaged files out, expired entries and entries no read can
    /// return out (as `reclaim` says), then least recently used down to the limits. Stale
    /// temporaries and orphans (KeyIdentity.swift), which no read or observer knows of, are
    /// removed on the way.
    ///
    /// Call holding the folder lock (``withFolderLock(waiting:_:)``) and no key lock: it reads
    /// every header and asks the volume for its free space once. The plan rebuilds the index
    /// once applied (``finish(_:)``).
    package func planGarbageCollection(now: Double, limits: Limits, reclaim: Reclaim) -> RemovalPlan {
        if let store = entryStore() {
            return planStoreGarbageCollection(store, now: now, limits: limits, reclaim: reclaim)
        }
        let names = (try? fileSystem.contentsOfDirectory(folder)) ?? []
        var chosen: [Choice] = []
        var live: [Candidate] = []
        let known = state.withLock { $0.files }
        for name in names {
            if name.hasPrefix(Self.temporaryPrefix) {
                removeIfAbandoned(temporary: name)
                continue
            }
            guard Self.isEntryFileName(name) else { continue }
            let sequence = known[name]?.sequence
            switch readHeader(name) {
            case .success(let (header, info)):
                // An orphan (KeyIdentity.swift): no read finds it, and its key may be live elsewhere.
                guard Self.isHome(name, of: header.key) else {
                    _ = try? fileSystem.removeFile(path(name))
                    continue
                }
                let lastUse = Self.lastUse(info: info, indexed: known[name]?.lastUse)
                if reclaim.expired, header.isExpired(at: now, lastUsedAt: lastUse) {
                    chosen.append(
                        Choice(
                            fileName: name, sequence: sequence, removal: .discarded(key: header.key, reason: .expired),
                            size: info.size))
                    continue
                }
                if case .some(let appVersion) = reclaim.otherAppVersionsThan, header.schemaVersion == nil,
                    header.appVersion != appVersion
                {
                    let reason = DiscardReason.appVersionMismatch(stored: header.appVersion, current: appVersion)
                    chosen.append(
                        Choice(
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
                    Choice(
                        fileName: name, sequence: sequence, removal: .discarded(key: name, reason: .corrupt),
                        size: size))
            case .failure:
                continue
            }
        }
        let freed = chosen.reduce(0) { $0 + $1.size }
        let victims = chooseVictims(
            from: live, downTo: limits.size, minimumFreeSpace: limits.minimumFreeSpace, freedFirst: freed)
        return RemovalPlan(choices: chosen + victims, rescansAfterwards: true)
    }

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
    /// (``apply(_:)``); the next sweep or collection makes up for it.
    func chooseVictims(
        from candidates: [Candidate], downTo limit: Int?, minimumFreeSpace: Int?, freedFirst: Int = 0
    ) -> [Choice] {
        var total = candidates.reduce(0) { $0 + $1.size }
        var free = minimumFreeSpace == nil ? nil : fileSystem.availableCapacity(folder).map { $0 + freedFirst }
        func satisfied() -> Bool {
            if let limit, total > limit { return false }
            if let minimumFreeSpace, let free, free < minimumFreeSpace { return false }
            return true
        }
        guard !satisfied() else { return [] }
        var victims: [Choice] = []
        func choose(_ candidate: Candidate, key: String) {
            total -= candidate.size
            free? += candidate.size
            victims.append(
                Choice(
                    fileName: candidate.fileName, sequence: candidate.sequence,
                    removal: .evicted(key: key, bytes: candidate.size), size: candidate.size))
        }
        for var candidate in candidates.sorted(by: { $0.order < $1.order }) {
            if satisfied() { return victims }
            if candidate.key == nil || candidate.isLocked == nil {
                guard case .success(let (header, _)) = readHeader(candidate.fileName) else { continue }
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
