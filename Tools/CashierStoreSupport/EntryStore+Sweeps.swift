import CashierStore

/// Whole sweeps and coarse recency of the store, made of the calls the cache's disk tier makes
/// (``EntryStore/walkEvictionOrder(_:_:)`` to plan, ``EntryStore/remove(unchanged:evictedIn:filePath:asWalked:)``
/// to apply, ``EntryStore/recordUses(_:granularity:)``): what the store's tests, its benchmark,
/// its kill child and the trace replay drive, so they drive the store as the library runs it.
extension EntryStore {
    /// Unlocked entries in `order`, at most `limit` (negative: all).
    package func evictionCandidates(order: StoreEvictionOrder, limit: Int) throws(StoreError) -> [StoreEntry] {
        var result: [StoreEntry] = []
        guard limit != 0 else { return result }
        try forEachEvictionCandidate(order: order) { entry in
            result.append(entry)
            return limit < 0 || result.count < limit
        }
        return result
    }

    /// Unlocked entries, least recently used first (among equal last uses the smaller, then the
    /// older row), at most `limit`.
    package func evictionCandidates(limit: Int) throws(StoreError) -> [StoreEntry] {
        try evictionCandidates(order: .leastRecentlyUsed, limit: limit)
    }

    /// A sweep: removes unlocked entries in `order` until the total size is at most `bytes`, or
    /// none is left, as the disk tier plans and applies one; returns those removed.
    @discardableResult
    package func evict(order: StoreEvictionOrder, downTo bytes: Int) throws(StoreError) -> [StoreEntry] {
        var left = try totalSize()
        guard left > bytes else { return [] }
        var victims: [StoreEntry] = []
        var rowIDs: [Int64] = []
        let walked = try walkEvictionOrder(order) { entry, rowID in
            victims.append(entry)
            rowIDs.append(rowID)
            left -= entry.size
            return left > bytes
        }
        let removed = try remove(unchanged: victims, evictedIn: order, asWalked: walked.map { (rowIDs, $0) }).removed
        try? compact(afterRemoving: removed.count)
        return removed
    }

    /// Removes up to `count` unlocked entries, least recently used first; returns them.
    @discardableResult
    package func removeLeastRecentlyUsed(_ count: Int) throws(StoreError) -> [StoreEntry] {
        try remove(unchanged: evictionCandidates(limit: count)).removed
    }

    /// Records a use of each of `keys` at `time`, as the disk tier records exact uses.
    package func recordUses(_ keys: [String], at time: Int64) throws(StoreError) {
        try recordUses(keys.map { (key: $0, time: time) }, granularity: 0)
    }
}
