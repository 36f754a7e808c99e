import Foundation

extension Cache {
    /// Removes every entry, locked or not, from memory and disk.
    ///
    /// A file that cannot be removed stays readable and is reported as a
    /// ``CacheEvent/failure(key:error:)`` without a key.
    public func removeAll() {
        _ = memory.removeAll()
        for failure in disk?.removeAllEntries() ?? [] {
            emit(.failure(key: nil, error: failure.cacheError(key: nil)))
        }
        publish(nil, nil)
    }

    /// Removes every expired entry (locked entries never expire), reporting each as
    /// ``DiscardReason/expired``. Scans the folder's headers.
    public func removeExpired() {
        let now = nowSeconds
        if let disk {
            apply(disk.collectGarbage(now: now, limits: DiskStore.Limits(size: nil, minimumFreeSpace: nil), removeExpired: true))
        } else {
            for record in memory.allRecords where record.metadata.isExpired(at: now) {
                memory.remove(record.name)
                emit(.discarded(key: record.name, reason: .expired))
                publish(record.name, nil)
            }
        }
    }

    /// Removes every entry that is not locked.
    public func removeAllUnlocked() {
        removeAll { _, metadata in !metadata.isLocked }
    }

    /// Removes every locked entry (SPTPersistentCache's `wipeLockedFiles`).
    public func removeAllLocked() {
        removeAll { _, metadata in metadata.isLocked }
    }

    /// Removes every entry whose key `shouldRemove` accepts, e.g. `{ $0.hasPrefix("user42.") }` at sign-out.
    ///
    /// Reads each entry's header (keys are stored whole in them), not file names.
    public func removeAll(where shouldRemove: (String) -> Bool) {
        withoutActuallyEscaping(shouldRemove) { shouldRemove in
            removeAll { key, _ in shouldRemove(key) }
        }
    }

    private func removeAll(matching shouldRemove: (String, EntryMetadata) -> Bool) {
        for record in memory.allRecords where shouldRemove(record.name, record.metadata) {
            memory.remove(record.name)
            if disk == nil { publish(record.name, nil) }
        }
        if let disk {
            apply(disk.removeEntries { header in shouldRemove(header.key, EntryMetadata(header, size: 0)) })
        }
    }

    /// Garbage collection: expired entries, damaged files and abandoned temporary
    /// files out, then least recently used entries (unlocked first) until the folder
    /// is within ``Configuration/diskSizeLimit`` and the volume has
    /// ``Configuration/minimumFreeDiskSpace`` free.
    ///
    /// Holds the folder's advisory lock, so processes sharing the folder take turns.
    /// Runs on the calling thread; ``Configuration/garbageCollectionInterval`` runs it in the background.
    public func collectGarbage() {
        let now = nowSeconds
        if let disk {
            apply(disk.collectGarbage(now: now, limits: limits, removeExpired: true))
        } else {
            removeExpired()
        }
    }

    /// Bytes the cache's files take on disk, headers included (file lengths, exact to the byte).
    ///
    /// The first call scans the folder once; later calls are kept current by this process's writes.
    /// 0 for a memory-only cache.
    public var totalSize: Int {
        disk?.totals().size ?? 0
    }

    /// How many entries are stored (on disk; in memory for a memory-only cache).
    public var count: Int {
        disk?.totals().count ?? memory.count
    }

    /// Counters since this instance was made.
    public var statistics: CacheStatistics { memory.statistics }

    /// Every stored key, sorted, read from the entries' headers.
    public var keys: [String] {
        if let disk { return disk.scanHeaders().entries.map(\.header.key).sorted() }
        return memory.allRecords.map(\.name).sorted()
    }
}
