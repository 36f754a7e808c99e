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
/// folder has is decided in one place, beside the store's opening (DiskTier+Store.swift): ``DiskTier/openedIndex`` (the store
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
    /// `now`: the cache's clock, which uses are counted by.
    func planSweep(limits: DiskTier.Limits, at now: Double) -> DiskTier.RemovalPlan
    /// Whether the folder may be over `limit`, so that a sweep is worth scheduling.
    func mayExceed(_ limit: Int) -> Bool
    /// Removes what `plan` chose that is still as it was chosen; what it removed.
    func apply(_ plan: DiskTier.RemovalPlan) -> [DiskTier.Removal]
    /// Gives back what removals freed (with `retryingRemovals`, retrying those that found the
    /// volume full first). `foldingLog`: the log is checkpointed and cut back even when no page
    /// was freed (after bulk removals and `removeAll`, so the folder shrinks to what is left).
    func reclaimSpace(retryingRemovals: Bool, foldingLog: Bool)
    /// Gives back the store's free pages, if it holds any (with `beyondABatch`, at least the
    /// batch removals of single keys leave, `EntryStore.removalFreePages(ofPages:)`), without
    /// waiting for this process's writer or another process's lock (a call that finds either
    /// busy leaves them; on an exclusive or read-only store the count itself is read through
    /// the writer, as that pass's other reads are): what a housekeeping pass that removed
    /// nothing (more than a batch), and a folder at rest over its limit (any), do. Returns what
    /// the folder occupies after it, when it gave pages back.
    @discardableResult
    func reclaimFreePages(beyondABatch: Bool) -> Int?
    /// Measures what the folder occupies now: whether that is over `limit`.
    func settle(over limit: Int) -> Bool

    /// The version of what the memory tier's values were read from (see `DiskTier+Coherence.swift`).
    func versionWithoutWaiting() -> StoreVersion?
}
