import CashierEntryFormat
import CashierPlatform
import CashierStore
import Foundation

/// What the disk tier finds, writes, lists, orders and removes its entries through: the
/// folder's store (``StoreIndex``: small entries as rows, every entry indexed by a row), or,
/// where the folder has none, its files alone (``FileIndex``: one file per entry, an index
/// built in this process by a folder scan, recency in the files' access times).
///
/// The disk tier's operations call the index and never ask which one it is. Which one the
/// folder has is decided in one place, the accessors below: ``DiskTier/openedIndex`` (the store
/// only if already open), ``DiskTier/currentIndex()`` (opening a store the folder has),
/// ``DiskTier/indexForReading()`` (or why a store the folder has cannot be used now) and
/// ``DiskTier/indexForWriting(_:judgesAnew:until:)`` (creating the store). The files serve a
/// folder without a store: SQLite cannot be loaded, the disk tier runs over a test double of
/// the file system, or no write has made the store yet.
protocol EntryIndex: Sendable {
    // MARK: One entry

    /// Reads and verifies the entry of `key`, whose file would be `fileName`.
    func read(key: String, fileName: String) -> DiskTier.ReadResult
    /// Reads the header of `key`'s entry (checksum not verified).
    func readHeader(key: String, fileName: String) -> Result<(EntryHeader, FileInfo), DiskTier.HeaderFailure>
    /// Whether an entry of `size` bytes is written through the store's open file (a row), not as a file.
    func keepsAsRow(size: Int) -> Bool
    /// Writes an entry whose header is writable and whose folder is ready (see ``DiskTier/write(_:header:payload:options:)``).
    func write(
        _ fileName: String, header: EntryHeader, payload: Data, options: DiskTier.WriteOptions,
        until deadline: MonotonicDeadline
    ) throws(SystemError) -> (size: Int, isLocked: Bool)
    /// Removes `key`'s entry.
    func remove(key: String, fileName: String, busyTimeoutMilliseconds: Int32) throws(SystemError)

    // MARK: Recency (DiskTier+Recency.swift)

    /// Records a read (see ``DiskTier/noteRead(_:key:info:isLocked:at:foundSlidingLifespanOver:sliding:)``).
    func noteRead(
        _ fileName: String, key: String, info: FileInfo, isLocked: Bool, at now: Double,
        foundSlidingLifespanOver: Bool, sliding: Bool
    ) -> Double
    /// Records uses of the entries of `keys`, written before this returns or by the next flush.
    func noteUses(ofKeys keys: [(name: String, usedAt: Double?)], at now: Double)
    /// Takes uses of `keys` in, written off the caller's thread where the index can (rows);
    /// where it cannot (files' access times), written now.
    func gatherUses(ofKeys keys: [(name: String, usedAt: Double?)], at now: Double)
    /// Writes the uses gathered so far.
    func flushUses()
    /// Writes the uses gathered so far if that needs no wait; whether none is left.
    func flushUsesIfFree() -> Bool
    /// Records a sliding lifespan's use at once if that needs no wait; false, having done nothing, otherwise.
    func noteSlidingUseIfFree(_ key: String, at now: Double) -> Bool
    /// The latest exact use of `key` gathered and not yet written, if any.
    func pendingExactUse(of key: String) -> Double?

    // MARK: Every entry

    /// Entry count and bytes the folder holds for them.
    func totals() -> (count: Int, size: Int)
    /// Every entry's header, and the damaged entries.
    func scanHeaders() -> (
        entries: [(fileName: String, header: EntryHeader, info: FileInfo)],
        damaged: [(fileName: String, error: EntryFormatError, size: Int)]
    )
    /// The keys of every entry whose header `include` accepts (see ``DiskTier/keys(acceptingEveryRecordOf:where:)``).
    func keys(acceptingEveryRecordOf acceptedAppVersion: String?, where include: (EntryHeader) -> Bool) -> [String]
    /// Removes every entry; the removals that failed.
    func removeAllEntries() -> [SystemError]

    // MARK: Housekeeping (DiskTier+Housekeeping.swift)

    func planRemovals(where shouldRemove: (EntryHeader) -> Bool) -> DiskTier.RemovalPlan
    func planGarbageCollection(now: Double, limits: DiskTier.Limits, reclaim: DiskTier.Reclaim) -> DiskTier.RemovalPlan
    func planSweep(limits: DiskTier.Limits) -> DiskTier.RemovalPlan
    /// Whether the folder may be over `limit`, so that a sweep is worth scheduling.
    func mayExceed(_ limit: Int) -> Bool
    /// Removes what `plan` chose that is still as it was chosen; what it removed.
    func apply(_ plan: DiskTier.RemovalPlan) -> [DiskTier.Removal]
    /// Gives back what removals freed (with `retryingRemovals`, retrying those that found the volume full first).
    func reclaimSpace(retryingRemovals: Bool)
    /// Measures what the folder occupies now: whether that is over `limit`.
    func settle(over limit: Int) -> Bool

    /// The version of what the memory tier's values were read from (see `DiskTier+Coherence.swift`).
    func versionWithoutWaiting() -> StoreVersion?
}

extension DiskTier {
    /// The index the folder has now, without opening a store: the store's if open, else the files'.
    var openedIndex: any EntryIndex {
        if let store = openedStore { return StoreIndex(disk: self, store: store) }
        return FileIndex(disk: self)
    }

    /// The index the folder has, opening its store if it has one.
    func currentIndex() -> any EntryIndex {
        if let store = entryStore() { return StoreIndex(disk: self, store: store) }
        return FileIndex(disk: self)
    }

    /// The index for a read or a removal: the store's, opened if the folder has one, or why a
    /// store the folder has cannot be used now (never the files it indexes instead: one may be
    /// a removed or shadowed entry's), or the files' (no store yet, SQLite missing).
    ///
    /// At most every ``recheckInterval`` it also checks (one `lstat`) that the store file is
    /// still the one open: a process that only reads notices a store another process set aside
    /// or deleted as soon as one that writes.
    func indexForReading() -> Result<any EntryIndex, SystemError> {
        guard let store = entryStore() else {
            if let failure = storeOpenFailure() { return .failure(failure) }
            return .success(FileIndex(disk: self))
        }
        let now = MonotonicClock.nanoseconds()
        let due = storeState.withLock { state in
            guard now &- state.lastReplacementCheck >= recheckInterval else { return false }
            state.lastReplacementCheck = now
            return true
        }
        if due, store.isReplaced { checkStoreFile() }
        return .success(StoreIndex(disk: self, store: store))
    }

    /// The index for a write: the store's, created if the folder has none yet (the folder made
    /// first), or the files' where SQLite cannot be used.
    ///
    /// A store that is there but cannot be opened now (another process's lock past the wait, an
    /// I/O error) may hold an older row of the key, which reads find first: a file written
    /// instead would be hidden by it. The write fails; nothing is lost.
    func indexForWriting(_ options: WriteOptions, judgesAnew: Bool, until deadline: MonotonicDeadline)
        throws(SystemError) -> any EntryIndex
    {
        guard usesStore else { return FileIndex(disk: self) }
        if judgesAnew { checkStoreFile() }
        try prepareFolder(options)
        if let store = entryStore(creatingWith: options, until: deadline) {
            return StoreIndex(disk: self, store: store)
        }
        if let failure = storeOpenFailure() { throw failure }
        return FileIndex(disk: self)
    }
}
