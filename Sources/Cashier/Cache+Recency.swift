extension Cache {
    /// Hands the values read from memory since the last call to the disk's recency
    /// bookkeeping, as used now by the cache's clock (see `DiskStore+Recency.swift`).
    ///
    /// A memory hit only moves its record in the memory tier's recency list, as it always
    /// has; this is called when the cache next does disk work (a write, a read from disk,
    /// garbage collection before it orders victims, ``waitForBackgroundWork()``, the end of
    /// the instance), so a hit never reads the clock or touches the disk for recency.
    func recordMemoryUses() {
        guard let disk else { return }
        let keys = memory.takeUsedNames()
        guard !keys.isEmpty else { return }
        disk.noteUses(ofKeys: keys, at: nowSeconds)
    }
}
