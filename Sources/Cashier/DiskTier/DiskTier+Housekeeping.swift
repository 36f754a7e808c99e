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
        /// The fraction a store's sweep trims down to instead when the folder is over its limit
        /// by more than a tenth (a limit lowered, a burst of writes): 90%, so that the rows'
        /// partly used pages, which give back less than the rows' sizes, leave it under the limit
        /// and no second sweep follows at once (at 95% one did: `cashier-ratios --only
        /// sqlite-evict-reclaim`, 40.5 ms against 35.5 ms for half of 10,000 entries).
        package var largeSweepTarget: Double = 0.9
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
        /// The store as the walk that chose the evictions began: unchanged when they are removed,
        /// their rows go by the ids the walk read (``Choice/rowID``).
        var walkedStore: StoreSnapshot?

        var isEmpty: Bool { choices.isEmpty }
    }

    /// A file housekeeping chose to remove, with the index's change counter when it chose it.
    struct Choice: Sendable {
        /// The file to remove; nil for a row chosen by its key alone (an eviction), whose file,
        /// if the folder has one, goes with the row by the key's name
        /// (``StoreIndex/removeRows(_:evictionOrder:walkedStore:)``): a sweep of 5,000 rows named none.
        var fileName: String?
        var sequence: UInt64?
        var removal: Removal
        /// The file's size: what removing it frees, as far as the plan counts.
        var size: Int
        /// The entry's row as the plan saw it: removed only if still so (see ``StoreIndex/removeRows(_:evictionOrder:walkedStore:)``).
        var stored: StoreEntry? = nil
        /// The row's id, for an eviction the store's walk chose (``RemovalPlan/walkedStore``).
        var rowID: Int64? = nil
    }

    /// Removes each file of `plan` that this process has not written, read or used since it
    /// was chosen, and returns what it removed.
    ///
    /// Call under the key barrier, and drop the removed keys' memory records there too: the
    /// unlinks are the one file I/O done under it, and they must be, since a file going and its
    /// memory record going must be one step no write of that key can enter (memory and disk
    /// agree). Everything that only decides (headers, free space) was done when the plan was made.
    package func apply(_ plan: RemovalPlan) -> [Removal] {
        openedIndex.apply(plan)
    }

    /// Removes each file `plan` chose without a row that this process has not written, read or
    /// used since it was chosen; what it removed.
    func removeChosenFiles(_ plan: RemovalPlan) -> [Removal] {
        var removals: [Removal] = []
        for choice in plan.choices where choice.stored == nil {
            guard let fileName = choice.fileName, sequence(of: fileName) == choice.sequence,
                (try? remove(fileName)) != nil
            else { continue }
            removals.append(choice.removal)
        }
        return removals
    }

    /// Removals up to which a sweep of rows unlinks each key's file name without listing the
    /// folder (``StoreIndex/removeRows(_:evictionOrder:walkedStore:)``).
    static let unlinksWithoutListing = 64

    /// Rebuilds the index after `plan` was applied, when the plan asks for it (garbage
    /// collection, which also removed files it does not report). Call after the barrier.
    package func finish(_ plan: RemovalPlan) {
        if plan.reclaimsStore {
            // Free pages go back whatever the pass chose: a process killed between a removal's
            // commit and its reclaim leaves them, and nothing else would. After a plan that
            // removed nothing (an empty sweep, `removeAll(where:)` or `removeExpired()` that
            // matched nothing, on the caller's thread for those two), only more than the batch
            // removals of single keys leave, where the next rows go, and without waiting
            // (``EntryIndex/reclaimFreePages(beyondABatch:)``).
            if plan.isEmpty {
                openedIndex.reclaimFreePages(beyondABatch: true)
            } else {
                openedIndex.reclaimSpace(retryingRemovals: false, foldingLog: true)
            }
            return
        }
        if plan.rescansAfterwards { rescan() }
    }

    /// Every entry's header, for listing and bulk removal (damaged files are reported, not returned).
    package func scanHeaders() -> (
        entries: [(fileName: String, header: EntryHeader, info: FileInfo)],
        damaged: [(fileName: String, error: EntryFormatError, size: Int)]
    ) {
        currentIndex().scanHeaders()
    }

    /// The keys of every entry whose header `include` accepts, rows and files, keeping no
    /// header: what ``Cache/keys`` lists. One pass over the index; a row's record is read only
    /// when its shape does not decide: `include` accepts every record written under
    /// `acceptedAppVersion`, so a row whose shape says that version is listed unread.
    package func keys(acceptingEveryRecordOf acceptedAppVersion: String?, where include: (EntryHeader) -> Bool)
        -> [String]
    {
        // None while the folder's store cannot be opened, as its reads miss (``indexForChanging()``).
        indexForChanging()?.keys(acceptingEveryRecordOf: acceptedAppVersion, where: include) ?? []
    }

    /// Plans the removal of every entry whose header `shouldRemove` accepts. Call holding the
    /// folder lock (``withFolderLock(_:)``) and no key lock: it reads every header.
    /// Nothing while the folder's store cannot be opened (``indexForChanging()``).
    package func planRemovals(where shouldRemove: (EntryHeader) -> Bool) -> RemovalPlan {
        indexForChanging()?.planRemovals(where: shouldRemove) ?? RemovalPlan()
    }

    /// Removes every entry file; temporary files of writers still running are left to them.
    /// Returns the removals that failed (a read-only folder, say); the index then rescans.
    ///
    /// Call under the folder lock and the key barrier, and drop every memory record there
    /// too. The folder is listed there as well (not before): a write that landed before the
    /// barrier must go with the rest, so no write lands between its file going and its memory
    /// record going.
    /// While the folder's store cannot be opened, nothing is removed and that is the failure
    /// (``indexForReading()``).
    @discardableResult
    package func removeAllEntries() -> [SystemError] {
        switch indexForReading() {
        case .success(let index): index.removeAllEntries()
        case .failure(let failure): [failure]
        }
    }

    /// Plans garbage collection: damaged files out, expired entries and entries no read can
    /// return out (as `reclaim` says), then least recently used down to the limits. Stale
    /// temporaries and orphans (KeyIdentity.swift), which no read or observer knows of, are
    /// removed on the way.
    ///
    /// Call holding the folder lock (``withFolderLock(waiting:_:)``) and no key lock: it reads
    /// every header and asks the volume for its free space once. The plan rebuilds the index
    /// once applied (``finish(_:)``).
    /// Nothing while the folder's store cannot be opened (``indexForChanging()``): the next
    /// collection tries again.
    package func planGarbageCollection(now: Double, limits: Limits, reclaim: Reclaim) -> RemovalPlan {
        indexForChanging()?.planGarbageCollection(now: now, limits: limits, reclaim: reclaim) ?? RemovalPlan()
    }

    /// Folds the store's log into it and cuts it back (without waiting for readers), and measures
    /// what the folder occupies: whether that is over `limit` (a sweep is then due). False for a
    /// folder without a store, whose sweeps count files.
    func settle(over limit: Int) -> Bool {
        openedIndex.settle(over: limit)
    }
}
