import CashierEviction

/// The memory tier's replacement order under ``EvictionPolicy/frequencyAware``: the
/// package's adaptive policy (`FrequencyAware`: S3-FIFO or W-TinyLFU by simulation) over
/// the records' names, and, apart from the order, what was used since it was last asked.
///
/// Each record keeps its handle into the policy (``MemoryRecord/handle``), so a hit costs
/// the policy's `recordHit` on an index and no second hash lookup. The policy is a concrete
/// stored type with non-generic methods (`NameFrequencyAware`), not an existential nor a
/// generic called across the module boundary, which Swift 6.3 leaves unspecialized (about
/// 35 ns a hit: Benchmarks/Eviction/README.md). A hit sets a flag and, on its first use since the last
/// ``takeUsed(_:)``, appends the name to `used`: what the disk's recency needs, which the
/// policy's order (not by recency) cannot give.
/// Not thread-safe: it lives in the tier's locked state.
struct FrequencyOrder {
    private var policy = NameFrequencyAware()
    /// The names used since the last ``takeUsed(_:)``, in order of first use; a name may be
    /// stale (its record gone) or repeated (removed and stored again): its record's
    /// ``MemoryRecord/usedSinceFlush`` flag is what counts.
    private var used: [String] = []
    /// Whether anyone asks for ``takeUsed(_:)`` (a cache with a disk tier); else nothing is kept.
    private let tracksUse: Bool

    init(tracksUse: Bool) {
        self.tracksUse = tracksUse
    }

    /// A read of `record`, which is in the order.
    mutating func recordHit(_ record: MemoryRecord) {
        policy.recordHit(record.handle)
        markUsed(record)
    }

    /// A read of `name` that found no usable record.
    mutating func recordMiss(_ name: String) {
        policy.recordMiss(name)
    }

    /// Adds `record`, not in the order, as just stored. Not a use for the disk: what stores a
    /// record in memory is disk work that dates the entry's use itself (a write sets its row's
    /// last use, a read from disk gathers its use), so handing it over again cost every cold
    /// read a lock and a hand-over (4,000 instructions, callgrind).
    mutating func insert(_ record: MemoryRecord) {
        record.handle = policy.insert(record.name, weight: 1)
    }

    /// `record` takes the place of `old` (same name, still in the order) with its position and
    /// frequency, and its hits not yet handed to the disk (their name is in `used` already).
    mutating func replace(_ old: MemoryRecord, with record: MemoryRecord) {
        record.handle = old.handle
        old.handle = -1
        record.usedSinceFlush = old.usedSinceFlush
    }

    /// Takes `record` out of the order.
    mutating func remove(_ record: MemoryRecord) {
        guard record.handle >= 0 else { return }
        policy.remove(record.handle)
        record.handle = -1
    }

    /// Chooses the next victim among `records` (an unlocked one while there is one, unless
    /// `unlockedOnly` is false), forgets it and returns its name; `nil` when there is none.
    mutating func evict(from records: [String: MemoryRecord], unlockedOnly: Bool = false) -> String? {
        if let name = policy.evict(where: { records[$0]?.metadata.isLocked == false }) { return name }
        return unlockedOnly ? nil : policy.evict()
    }

    /// The names of the records used since the last call (see ``RecencyList/takeUsed()``),
    /// most recently first used first. Empty, without allocating, when nothing was used.
    /// Whether ``takeUsed(_:)`` has names to give.
    var hasUsed: Bool { !used.isEmpty }

    mutating func takeUsed(_ records: [String: MemoryRecord]) -> [(name: String, usedAt: Double?)] {
        guard !used.isEmpty else { return [] }
        var names: [(name: String, usedAt: Double?)] = []
        for name in used.reversed() {
            guard let record = records[name], record.usedSinceFlush else { continue }
            record.usedSinceFlush = false
            names.append((name, record.metadata.lifespan.slidingSeconds == nil ? nil : record.lastUse))
        }
        used.removeAll(keepingCapacity: true)
        return names
    }

    /// Forgets every record of `records` (every record it holds).
    mutating func removeAll(_ records: some Sequence<MemoryRecord>) {
        for record in records {
            record.handle = -1
            record.usedSinceFlush = false
        }
        policy.removeAll()
        used.removeAll()
    }

    private mutating func markUsed(_ record: MemoryRecord) {
        guard tracksUse, !record.usedSinceFlush else { return }
        record.usedSinceFlush = true
        used.append(record.name)
    }

    /// Drops stale and repeated names once `used` is twice the records held (or 64), so it
    /// stays within a small multiple of the tier's size between calls of ``takeUsed(_:)``.
    mutating func compactUsed(_ records: [String: MemoryRecord]) {
        guard used.count >= 2 * max(records.count, 32) else { return }
        var kept: [String] = []
        for name in used {
            guard let record = records[name], record.usedSinceFlush else { continue }
            record.usedSinceFlush = false
            kept.append(name)
        }
        for name in kept { records[name]?.usedSinceFlush = true }
        used = kept
    }
}
