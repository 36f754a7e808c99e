extension Cache {
    /// Hands the values read from memory since the last call to the disk's recency
    /// bookkeeping, as used now by the cache's clock (see `DiskTier+Recency.swift`);
    /// a ``Lifespan/sinceLastUse(_:)`` entry as used at its own last use.
    ///
    /// A memory hit only moves its record in the memory tier's recency list, as it always
    /// has; this is called when the cache next does disk work (a write, a read from disk,
    /// garbage collection before it orders victims, ``waitForBackgroundWork()``, the end of
    /// the instance), so a hit never reads the clock or touches the disk for recency
    /// (except a hit on a sliding entry: see ``noteSlidingUse(_:at:countingHit:)``).
    ///
    /// One call at a time: a caller that orders by recency (garbage collection) finds every use
    /// taken by a write under way off its thread (``recordMemoryUsesLater()``) written first.
    func recordMemoryUses() {
        guard let disk else { return }
        handOverMemoryUses(to: disk)
        // With the disk reads' uses, and any a write under way has taken (it holds the flush).
        disk.flushUses()
    }

    /// Takes the memory tier's uses into those the disk tier gathers for its rows, as used now
    /// (a sliding entry's at its own moment): no I/O with a store; without one, the access times
    /// are written now (``DiskTier/gatherUses(ofKeys:at:)``). Under ``usesWriting``, so a caller
    /// that orders by recency next finds every use taken meanwhile gathered.
    private func handOverMemoryUses(to disk: DiskTier) {
        usesWriting.lock()
        defer { usesWriting.unlock() }
        disk.gatherUses(ofKeys: memory.takeUsedNames(), at: nowSeconds)
    }

    /// ``recordMemoryUses()`` with the write off the caller's thread, a ``DiskTier/usesWindow``
    /// later: what reads and writes call, so no recency write (a store transaction, which may
    /// wait for another process's lock) runs on the caller's thread. The uses are taken now and
    /// stamped now, as the disk work that hands them over happens (a flush later must not date
    /// them later); many go in one transaction. ``waitForBackgroundWork()`` writes them at once.
    ///
    /// A folder without a store (SQLite missing) keeps uses in this process's index and in
    /// access times, which no other process holds: written at once, as before.
    func recordMemoryUsesLater() {
        guard let disk else { return }
        guard memory.hasUsedNames else { return }
        // Gathered uses schedule their write themselves (`DiskTier.persistStoreUses`).
        handOverMemoryUses(to: disk)
    }

    /// Records a read at `now` that found `name`'s ``Lifespan/sinceLastUse(_:)`` entry valid,
    /// given its memory record: the record's last use moves to `now` and, once the file's
    /// access time is a granularity (a minute) behind, the file's too, at once. So the next
    /// launch sees every use but the last minute's, even if this process is killed without
    /// another disk operation: a sliding entry may expire up to a minute early there, never
    /// a flush interval early.
    /// `countingHit`: the use is a memory hit, counted in ``statistics`` under the same lock.
    func noteSlidingUse(_ name: String, at now: Double, countingHit: Bool = false) {
        guard memory.noteUse(name, at: now, countingHit: countingHit), let disk else { return }
        // With a store: at once if that needs no wait (a memory hit never waits for another
        // process's lock, nor this process's writes), else off the caller's thread. A file's
        // access time: at once (``DiskTier/noteSlidingUseIfFree(_:at:)`` writes it).
        if disk.noteSlidingUseIfFree(name, at: now) { return }
        disk.inBackground { disk.noteUses(ofKeys: [(name, now)], at: now) }
    }

    /// Counts a read at `now` of an entry found in memory with `metadata` as a use of its
    /// ``Lifespan/sinceLastUse(_:)`` lifespan, if it has one and the read finds it valid:
    /// `metadata` then says it was last used now.
    func countSlidingUse(of name: String, _ metadata: inout EntryMetadata) {
        guard metadata.lifespan.slidingSeconds != nil else { return }
        let now = nowSeconds
        guard !metadata.isExpired(at: now) else { return }
        metadata.lastUsedAt = now
        noteSlidingUse(name, at: now)
    }
}
