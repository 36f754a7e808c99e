import Foundation

// The memory tier kept coherent with the folder's store, which other processes write: what the
// cache asks of the disk tier (``DiskTier/storeVersionWithoutWaiting()``) and what it does with
// the answer.

extension Cache {
    /// Empties the memory tier when the folder's store changed since it last looked (another
    /// process wrote): checks at most once a ``MemoryTier/coherenceInterval``. The reads that
    /// do not go through ``memoryHit(_:valueType:schemaVersion:fetching:copy:)`` call it first.
    func keepMemoryCoherentIfDue() {
        if memory.claimCoherenceCheck() { checkMemoryCoherence() }
    }

    /// Reads the store's version and empties the memory tier if it is not the one last seen;
    /// the uses of the values dropped are handed to the background queue first. Never waits:
    /// when a call of this process holds the store (``DiskTier/storeVersionWithoutWaiting()``),
    /// the check gives up its turn and the next hit tries again. Call holding no key lock.
    @inline(never)
    func checkMemoryCoherence() {
        guard let disk else { return }
        guard let version = disk.storeVersionWithoutWaiting() else {
            memory.retryCoherenceSoon()
            return
        }
        guard !memory.isCurrent(version) else { return }
        recordMemoryUsesLater()
        memory.adopt(version)
    }

    /// The ticket for disk work (a read, a write) whose value will be stored in memory: taken
    /// before that work, it keeps a value the work found from being stored when the tier was
    /// emptied meanwhile. The first one reads the store's version as the tier's baseline.
    /// `nil` for a tier that checks nothing. Needs no key lock.
    func coherenceTicket() -> CoherenceTicket? {
        guard memory.coherenceInterval != nil, let disk else { return nil }
        if let ticket = memory.coherenceTicket() { return ticket }
        // A store the folder has is opened here (this is disk work); its version never waits:
        // with the writer busy now there is no baseline, and what this work finds is not kept.
        _ = disk.currentIndex()
        guard let version = disk.storeVersionWithoutWaiting() else { return CoherenceTicket(epoch: .max) }
        // No store yet: no baseline either; the write that makes the store takes one after it
        // (``settleCoherenceBaseline(after:)``), the first check otherwise.
        guard version.isStore else { return CoherenceTicket(epoch: 0, needsBaseline: true) }
        return memory.adoptBaseline(version)
    }

    /// After a write whose ticket found no store: the store the write made gives the baseline,
    /// microseconds after its creation rather than at the next check.
    func settleCoherenceBaseline(after ticket: CoherenceTicket?) {
        guard let ticket, ticket.needsBaseline, memory.coherenceTicket() == nil, let disk else { return }
        let version = disk.storeVersionWithoutWaiting() ?? .unknown
        guard version.isStore else { return }
        _ = memory.adoptBaseline(version)
    }
}

extension Cache.Configuration {
    /// How often at most a memory hit checks the folder's store for another process's writes:
    /// 10 ms, so a value another process replaced or removed is served from memory for at most
    /// that long after its commit, plus one tick of the coarse clock (4 ms at Linux's usual
    /// 250 Hz) and the check's few microseconds, once the check finds the store's writer free
    /// (a check never waits: while this process's own write holds it, the next hit tries). A check costs about 6 µs (`CashierStoreBench
    /// coherence`: `dataVersion()` 4 µs, an `lstat` 1 µs, on a loaded 2-core Linux machine), so
    /// checking on every hit (about 100 ns) was out; once every 10 ms it is under 0.1% of a
    /// thread that does nothing but hit.
    static let memoryCoherenceInterval: UInt64 = 10_000_000
}
