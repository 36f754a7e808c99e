extension Cache {
    /// Hands the values read from memory since the last call to the disk's recency
    /// bookkeeping, as used now by the cache's clock (see `DiskStore+Recency.swift`);
    /// a ``Lifespan/sinceLastUse(_:)`` entry as used at its own last use.
    ///
    /// A memory hit only moves its record in the memory tier's recency list, as it always
    /// has; this is called when the cache next does disk work (a write, a read from disk,
    /// garbage collection before it orders victims, ``waitForBackgroundWork()``, the end of
    /// the instance), so a hit never reads the clock or touches the disk for recency
    /// (except a hit on a sliding entry: see ``noteSlidingUse(_:at:countingHit:)``).
    func recordMemoryUses() {
        guard let disk else { return }
        let keys = memory.takeUsedNames()
        guard !keys.isEmpty else { return }
        disk.noteUses(ofKeys: keys, at: nowSeconds)
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
        disk.noteUses(ofKeys: [(name, now)], at: now)
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
