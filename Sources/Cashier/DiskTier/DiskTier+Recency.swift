import CashierStore
import Foundation

/// Least-recently-used order that counts every read and survives a relaunch.
///
/// A use is measured with the cache's clock (``Cache/Configuration-swift.struct/now``)
/// and kept twice: exactly, in this process's index (what sweeps and garbage collection
/// order by), and coarsely, as the entry file's access time, which Cashier sets itself
/// (reads open files with `O_NOATIME`, so the kernel never moves it) and which a folder
/// scan of the next launch reads back. A write sets it with the new file; a read or a
/// memory hit sets it only when the file's is ``recencyGranularity`` or more away from
/// the use's time, so an entry read all day costs one `utimensat` a minute, and a read
/// right after a write none.
///
/// The access time is also the last use a ``Lifespan/sinceLastUse(_:)`` lifespan runs
/// from, as far as the next launch knows. For those entries a use is recorded at its own
/// moment, not at the next flush's, and only when the read found the entry valid; such a
/// use never moves an access time back, and a read that found the entry expired sets
/// back any access time the read itself moved (see `EntryMetadata.use(at:)`).
extension DiskTier {
    /// How far a use may be from the access time its file keeps before the file is updated, in seconds.
    package static let recencyGranularity: Double = 60

    /// Gives a new entry file (still under its temporary name) the write's time by the
    /// cache's clock as its access time: unless that is within a second of the real clock,
    /// which the kernel has just set it to.
    func stampWrite(_ temporary: String, at usedAt: Double?) {
        guard let usedAt, abs(usedAt - Date().timeIntervalSince1970) >= 1 else { return }
        try? fileSystem.setAccessTime(temporary, to: usedAt)
    }

    /// Writes a use at `now` into `fileName`'s access time if the time the file keeps
    /// (`stamp`, `nil` when unknown) is a granularity or more away (with `onlyLater`, a
    /// granularity or more earlier: what another launch or process wrote is never moved
    /// back). Best effort: a file that is gone or not ours keeps what it has. Returns the
    /// access time the file keeps (as far as known).
    @discardableResult
    func persistUse(_ fileName: String, at now: Double, stamp: Double?, onlyLater: Bool = false) -> Double {
        if let stamp, (onlyLater ? now - stamp : abs(now - stamp)) < Self.recencyGranularity { return stamp }
        guard (try? fileSystem.setAccessTime(path(fileName), to: now)) != nil else { return stamp ?? now }
        noteStamp(fileName, now)
        return now
    }

    /// Records uses of the entries of `keys` (memory hits, gathered by the memory tier and
    /// handed over when the cache next does disk work): in the index, and in their files'
    /// access times as ``persistUse(_:at:stamp:onlyLater:)`` says. A use is at `now` unless
    /// it comes with its own moment (a ``Lifespan/sinceLastUse(_:)`` entry's last use, which
    /// its lifespan runs from), which only ever moves an access time later.
    package func noteUses(ofKeys keys: [(name: String, usedAt: Double?)], at now: Double) {
        openedIndex.noteUses(ofKeys: keys, at: now)
    }

    /// Takes in the uses of `keys` as ``noteUses(ofKeys:at:)`` records them: with the store,
    /// gathered for their rows and written off the caller's thread (``flushUses()`` writes them
    /// now); without one, written at once (access times are no other process's to wait for).
    func gatherUses(ofKeys keys: [(name: String, usedAt: Double?)], at now: Double) {
        openedIndex.gatherUses(ofKeys: keys, at: now)
    }

    /// Writes the uses gathered so far (``gatherUses(ofKeys:at:)``).
    func flushUses() {
        openedIndex.flushUses()
    }

    /// ``flushUses()`` if that needs no wait; returns whether no use is left gathered.
    func flushUsesIfFree() -> Bool {
        openedIndex.flushUsesIfFree()
    }

    /// The last use of an entry whose file reads `info`, for a ``Lifespan/sinceLastUse(_:)``
    /// lifespan: the file's access time, or what this process knows of later uses.
    /// With the store, a use of `key` gathered and not yet written counts too: the instance that
    /// made it knows it exactly, and so does every instance on this disk tier.
    package func lastUse(of fileName: String, key: String, info: FileInfo) -> Double {
        max(Self.lastUse(info: info, indexed: indexedLastUse(of: fileName)), pendingExactUse(of: key) ?? -.infinity)
    }

    /// The latest exact use of `key` gathered for its row and not yet written, if any.
    func pendingExactUse(of key: String) -> Double? {
        openedIndex.pendingExactUse(of: key)
    }

    /// Forgets the uses gathered for `key`'s row (`nil`: every row's): its entry is removed, and
    /// a use written later would count for the entry written next under its key. Call holding
    /// the key's lock (the barrier of every key for `nil`).
    func forgetPendingUses(of key: String?) {
        storeState.withLock { state in
            guard let key else {
                _ = state.takePendingUses()
                return
            }
            let storeKey = Self.storeKey(key)
            state.pendingUses.removeAll { $0.key == storeKey }
            state.pendingExactUses.removeAll { $0.key == storeKey }
            state.pendingFirstUses[storeKey] = nil
        }
    }

    /// The later of a file's access time and the last use an index holds for it (`nil`: none).
    static func lastUse(info: FileInfo, indexed: Double?) -> Double {
        max(info.accessedAt, indexed ?? -.infinity)
    }
}

extension DiskTier {
    /// Writes the use at `now` of a ``Lifespan/sinceLastUse(_:)`` entry (which its lifespan runs
    /// from) into its row at once, if that needs no wait: the store's writer and lock free and
    /// commits not synchronized (`synchronous=FULL` syncs). So a process killed right after a
    /// memory hit still leaves the use to the next launch. Returns false, having done nothing,
    /// otherwise: the caller hands it to the background queue. Without a store the use goes to
    /// the file's access time, at once, and this returns true.
    func noteSlidingUseIfFree(_ key: String, at now: Double) -> Bool {
        openedIndex.noteSlidingUseIfFree(key, at: now)
    }

    /// Gathers uses for their rows (last use and frequency), written off the caller's thread
    /// by ``flushUses()``, many in one transaction, on the same terms as access times:
    /// only a use a granularity or more after the row's last use changes it. Uses this
    /// process sent less than a granularity ago are not sent again, so a stream of reads
    /// costs no store call. Best effort, like an access time: a kill loses at most the uses of
    /// the last ``usesWindow``.
    ///
    /// `exactly`: every use is written (a sliding lifespan's last use, which expiry runs from).
    func persistStoreUses(_ store: EntryStore, _ uses: [(key: String, at: Double)], exactly: Bool = false) {
        guard !uses.isEmpty else { return }
        let schedules = storeState.withLock { state -> Bool in
            if exactly {
                state.pendingExactUses += uses.map { (Self.storeKey($0.key), Int64($0.at.rounded(.down))) }
            } else {
                for use in uses { state.gatherCoarseUse(of: use.key, at: use.at) }
            }
            return state.claimUsesFlush()
        }
        if schedules { scheduleUsesFlush() }
    }

    /// Gathers the first use, at `now`, of `key`'s row, which a read found never used since its
    /// write at `written` (its `last_use`): written with the other uses, whatever the granularity,
    /// to that row only (`EntryStore.recordUses(_:granularity:firstUses:)`). At server pace most
    /// entries are read again, or never, within a minute of their write. One a row a window.
    func persistFirstUse(of key: String, at now: Double, writtenAt written: Int64) {
        let storeKey = Self.storeKey(key)
        let schedules = storeState.withLock { state -> Bool in
            guard state.pendingFirstUses[storeKey] == nil else { return false }
            state.pendingFirstUses[storeKey] = (Int64(now.rounded(.down)), written)
            if state.persistedUses.count > 4096 { state.persistedUses.removeAll(keepingCapacity: true) }
            state.persistedUses[key] = now
            guard !state.usesFlushScheduled else { return false }
            state.usesFlushScheduled = true
            return true
        }
        if schedules { scheduleUsesFlush() }
    }

    /// The granularity of the uses of rows gathered without their own moment, in whole seconds
    /// (``StoreState/useGranularity``).
    var useGranularity: Int64 { Int64(storeState.withLock { $0.useGranularity }) }

    /// Sets the granularity of the uses of rows from what a size sweep chose: an eighth of the
    /// age (time since last use) of the youngest entry it evicts that had been used since its
    /// write, within a second and ``recencyGranularity``. The eviction order can only tell apart
    /// uses further apart than the granularity: with entries evicted a minute or less after their
    /// last use (a server's pace: thousands of requests a minute), a use a minute would leave it
    /// blind. A sweep that evicts none such leaves it as it is, and so does one whose youngest
    /// such victim was last used at or after `now` (a clock set back, or another process's ahead).
    func adaptUseGranularity(toVictims victims: [StoreEntry], at now: Double) {
        guard let youngest = victims.lazy.filter({ $0.frequency > 0 }).map(\.lastUse).max(), now > Double(youngest)
        else { return }
        let granularity = min(Self.recencyGranularity, max(1, (now - Double(youngest)) / 8))
        storeState.withLock { $0.useGranularity = granularity.rounded(.down) }
    }

    /// Notes that `key`'s row was last used at `time` as far as this process knows (a read
    /// found it so): a use less than a granularity later is not sent.
    func noteStoredUse(_ key: String, at time: Double) {
        storeState.withLock { $0.noteStoredUse(of: key, at: time) }
    }

    /// How long uses gather before their write: one transaction a window, whatever the reads.
    static let usesWindow: TimeInterval = 0.25

    /// Writes the gathered uses a ``usesWindow`` from now on the sweep queue. The work holds
    /// the disk tier weakly (an instance that goes first hands its uses over in `Cache.deinit`),
    /// and is not among what ``waitForSweeps()`` waits for: that writes them itself.
    func scheduleUsesFlush() {
        afterUsesWindow { [weak self] in
            guard let self else { return }
            storeState.withLock { $0.usesFlushScheduled = false }
            flushUses()
        }
    }

    /// Runs `work` a ``usesWindow`` from now on the sweep queue, outside what ``waitForSweeps()``
    /// waits for: for uses, which gather meanwhile and which a wait writes itself.
    func afterUsesWindow(_ work: @escaping @Sendable () -> Void) {
        sweepQueue.asyncAfter(deadline: .now() + Self.usesWindow, execute: work)
    }
}
