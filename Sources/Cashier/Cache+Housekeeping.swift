import Foundation

extension Cache {
    /// Removes every entry, locked or not, from memory and disk.
    ///
    /// A file that cannot be removed stays readable and is reported as a
    /// ``CacheEvent/failure(key:error:)`` without a key. Writes racing with it land
    /// wholly before it (and are removed) or wholly after it (and stay): the files and
    /// the memory tiers of every instance on the folder go in one step that no write of
    /// any key can enter (see <doc:Concurrency>). With a ``Configuration-swift.struct/sharedTier``,
    /// every record there goes too, in the background (<doc:OnAServer>).
    public func removeAll() {
        removeAll(reachingSharedTier: true)
    }

    /// ``removeAll()``; `reachingSharedTier` false for the shared tier's own ``SharedChange/all``.
    func removeAll(reachingSharedTier: Bool) {
        let forget = {
            _ = self.memory.removeAll()
            self.publish(nil, nil)
            if reachingSharedTier, let shared = self.shared {
                shared.ledger.noteChange(nil, at: Date(timeIntervalSince1970: self.nowSeconds))
                shared.writes.enqueue(.removeAll)
            }
        }
        guard let disk else {
            folderState.keyLocks.withEveryKeyLocked(forget)
            return
        }
        // A refused folder is left alone, but what this instance holds in memory still goes.
        guard !isFolderRefused(key: nil, fresh: true) else { return folderState.keyLocks.withEveryKeyLocked(forget) }
        // The files and every instance's memory go in one step under the barrier.
        let failures = disk.withFolderLock {
            folderState.keyLocks.withEveryKeyLocked {
                let failures = disk.removeAllEntries()
                forget()
                return failures
            }
        }
        // On a full volume, the rows left for want of room, by key.
        reportStoreNotices()
        for failure in failures {
            emit(.failure(key: nil, error: failure.cacheError(key: nil)))
        }
    }

    /// Removes every expired entry (locked entries never expire), reporting each as
    /// ``DiscardReason/expired``. Scans the folder's headers.
    public func removeExpired() {
        let now = nowSeconds
        if let disk {
            guard !isFolderRefused(key: nil, fresh: true) else { return }
            // Memory hits count before `.sinceLastUse` lifespans are judged.
            recordMemoryUses()
            let removals = disk.withFolderLock {
                commit(
                    disk.planGarbageCollection(
                        now: now, limits: DiskTier.Limits(size: nil, minimumFreeSpace: nil),
                        reclaim: DiskTier.Reclaim(expired: true)))
            }
            report(removals)
        } else {
            removeFromMemory { record in
                memory.currentMetadata(of: record).isExpired(at: now)
                    ? .discarded(key: record.name, reason: .expired) : nil
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
    /// Reads each entry's header (keys are stored whole in them), not file names. With a
    /// ``Configuration-swift.struct/sharedTier``, the records there of the keys removed here go
    /// too (the tier lists no keys: a key stored only there stays). On a full volume, an entry
    /// whose removal finds no room stays, and ``Configuration-swift.struct/onEvent`` receives a
    /// ``CacheEvent/failure(key:error:)`` of kind ``CacheError/Kind/noSpace`` naming it; it goes
    /// once removals have made room (see <doc:StorageAndLimits>).
    public func removeAll(where shouldRemove: (String) -> Bool) {
        withoutActuallyEscaping(shouldRemove) { shouldRemove in
            removeAll { key, _ in shouldRemove(key) }
        }
    }

    private func removeAll(matching shouldRemove: (String, EntryMetadata) -> Bool) {
        guard let disk else {
            removeFromMemory { shouldRemove($0.name, $0.metadata) ? .removed(key: $0.name) : nil }
            return
        }
        recordMemoryUses()
        // A record whose file is gone (removed by hand, say) has nothing on disk to match.
        // Dropping a memory record early is always safe: the file is the truth.
        var inMemory: [String] = []
        for record in memory.allRecords where shouldRemove(record.name, record.metadata) {
            memory.remove(record.name)
            inMemory.append(record.name)
        }
        guard !isFolderRefused(key: nil, fresh: true) else { return }
        let removals = disk.withFolderLock {
            commit(disk.planRemovals { header in shouldRemove(header.key, EntryMetadata(header, size: 0)) })
        }
        report(removals)
        // A memory record the disk removed nothing for (its file gone by hand, say) was still
        // the key's value here: removed as ``removeValue(for:)`` removes it, so observers and
        // the shared tier hear of it, when the disk still holds nothing of the key (a file the
        // predicate did not match stays).
        let removedOnDisk = Set(removals.map(\.key))
        for name in inMemory where !removedOnDisk.contains(name) {
            removeEntry(
                named: name,
                unless: {
                    if case .absent = disk.read(key: name) { false } else { true }
                })
        }
    }

    /// Queues for the shared tier the removals a caller asked for (``DiskTier/Removal/removed(key:)``);
    /// evictions and discards stay local. Call under the barrier the removals were made under.
    private func shareRemovals(_ removals: [DiskTier.Removal]) {
        guard let shared else { return }
        let now = Date(timeIntervalSince1970: nowSeconds)
        for case .removed(let key) in removals { shared.writes.enqueue(.remove(key, at: now)) }
    }

    /// Removes the memory records `removal` names a removal for, in a memory-only cache:
    /// judged first, then removed and announced under the barrier, each if it is still the
    /// record that was judged; reported after.
    private func removeFromMemory(_ removal: (MemoryRecord) -> DiskTier.Removal?) {
        let chosen = memory.allRecords.compactMap { record in removal(record).map { (record, $0) } }
        guard !chosen.isEmpty else { return }
        let removed = folderState.keyLocks.withEveryKeyLocked {
            let removed = chosen.compactMap { record, removal -> DiskTier.Removal? in
                guard memory.peek(record.name) === record else { return nil }
                forget(removal)
                return removal
            }
            shareRemovals(removed)
            return removed
        }
        report(removed)
    }

    /// Schedules a size sweep off the caller's thread if the folder may be over
    /// ``Configuration-swift.struct/diskSizeLimit``. The sweep runs even after this instance
    /// is gone (it holds the folder's state, not `self`); its events go to this instance if alive.
    func sweepIfNeeded() {
        guard let disk else { return }
        let (folderState, memory, origin, limits, clock) = (folderState, memory, identity, limits, configuration.now)
        disk.sweepIfNeeded(limits: limits) { [weak self] in
            // The uses gathered so far go first (this instance's memory hits, every read's from
            // disk, waiting for their window): the victims are ordered by them.
            if let self { self.recordMemoryUses() } else { disk.flushUses() }
            let removals = disk.withFolderLock(waiting: false) {
                folderState.commit(
                    disk.planSweep(limits: limits, at: clock().timeIntervalSince1970), on: disk, dropping: memory,
                    origin: origin)
            }
            if let removals { self?.report(removals) }
            return removals
        }
    }

    /// Applies a housekeeping plan of this cache's disk and forgets what it removed (see
    /// ``FolderState/commit(_:on:dropping:origin:)``).
    private func commit(_ plan: DiskTier.RemovalPlan) -> [DiskTier.Removal] {
        guard let disk else { return [] }
        return folderState.commit(plan, on: disk, dropping: memory, origin: identity, whileBarred: shareRemovals)
    }

    /// Garbage collection: expired entries, damaged files, abandoned temporary files and
    /// entries no read can return (those of unversioned keys written under another
    /// ``Configuration/appVersion``, reported as ``DiscardReason/appVersionMismatch(stored:current:)``)
    /// out, then least recently used entries (unlocked first) until the folder
    /// is within ``Configuration/diskSizeLimit`` and the volume has
    /// ``Configuration/minimumFreeDiskSpace`` free.
    ///
    /// Holds the folder's advisory lock, so processes sharing the folder take turns.
    /// Runs on the calling thread; ``Configuration/garbageCollectionInterval`` runs it in the background.
    public func collectGarbage() {
        collectGarbage(waiting: true)
    }

    /// Garbage collection; with `waiting` false (the scheduled one) it never waits for the
    /// folder lock another process holds: that round is skipped and the next one tries again.
    func collectGarbage(waiting: Bool) {
        let now = nowSeconds
        if let disk {
            // Judged anew: a folder whose owner or mode changed, or that was replaced, is left alone.
            guard !isFolderRefused(key: nil, fresh: true) else { return }
            // Memory hits count before victims are ordered.
            recordMemoryUses()
            let reclaim = DiskTier.Reclaim(expired: true, otherAppVersionsThan: .some(configuration.appVersion))
            // With `waiting` false, `nil` when another process holds the folder lock: the next round tries again.
            let removals = disk.withFolderLock(waiting: waiting) {
                commit(disk.planGarbageCollection(now: now, limits: limits, reclaim: reclaim))
            }
            report(removals ?? [])
        } else {
            removeExpired()
        }
    }

    /// Bytes of the cache's entries, headers included: each small entry's record and each large
    /// entry's file length, exact to the byte.
    ///
    /// Read from the folder's store, which indexes every entry, without scanning the folder; in a
    /// folder without a store (not yet written by this release, or SQLite unavailable) the first call scans the
    /// folder once and later calls are kept current by this process's writes. What the folder
    /// occupies on disk (the store's free pages and log included) is what
    /// ``Configuration-swift.struct/diskSizeLimit`` bounds. 0 for a memory-only cache.
    public var totalSize: Int {
        isFolderRefused(key: nil) ? 0 : disk?.totals().size ?? 0
    }

    /// How many entries are stored (on disk; in memory for a memory-only cache).
    public var count: Int {
        isFolderRefused(key: nil) ? 0 : disk?.totals().count ?? memory.count
    }

    /// Counters since this instance was made.
    public var statistics: CacheStatistics { memory.statistics }

    /// Every stored key, sorted, from the store's index or the entries' headers.
    ///
    /// Entries no read can return are not listed: those of unversioned keys written under
    /// another ``Configuration-swift.struct/appVersion`` (garbage collection reclaims them).
    /// While every type the store holds was written under this app version, the index says so
    /// and no entry is read; otherwise each small entry's header is. Neither checks a payload:
    /// a damaged entry may be listed until a read finds it damaged and removes it.
    public var keys: [String] {
        if let disk {
            guard !isFolderRefused(key: nil) else { return [] }
            let appVersion = configuration.appVersion
            let keys = disk.keys(acceptingEveryRecordOf: appVersion) {
                $0.schemaVersion != nil || $0.appVersion == appVersion
            }
            return keys.sorted()
        }
        return memory.allRecords.map(\.name).sorted()
    }
}

extension FolderState {
    /// Applies `plan` (made with no key lock held) under the barrier of every key, and in the
    /// same step drops each removed entry from `memory` and tells observers and the other
    /// instances on the folder, as `origin`: no write of a key lands between its file going
    /// and its memory record going. Returns what was removed, for events reported after the
    /// barrier is lifted (`onEvent` is the app's code and may call the cache).
    ///
    /// The disk layer only unlinks under the barrier and reports what it removed; dropping
    /// memory and notifying is the front's, here.
    func commit(
        _ plan: DiskTier.RemovalPlan, on disk: DiskTier, dropping memory: MemoryTier, origin: ObjectIdentifier,
        whileBarred: ([DiskTier.Removal]) -> Void = { _ in }
    ) -> [DiskTier.Removal] {
        var removals: [DiskTier.Removal] = []
        if !plan.isEmpty {
            keyLocks.withEveryKeyLocked {
                removals = disk.apply(plan)
                for removal in removals {
                    memory.remove(removal.key)
                    hub.publish(Change(name: removal.key, value: nil, origin: origin))
                }
                whileBarred(removals)
            }
        }
        disk.finish(plan)
        return removals
    }
}
