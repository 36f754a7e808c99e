/// The memory tier's replacement order: least recently used first, unlocked before locked.
///
/// An intrusive doubly linked list through the records themselves (``MemoryRecord/newer`` and
/// ``MemoryRecord/older``), so a hit moves its record to the front with no hash lookup, no
/// allocation and no reference counting. The list never owns records (the tier's dictionary
/// does, and a record leaves the list before it leaves the dictionary): its links are
/// `Unmanaged`. (`unowned(unsafe)` is not enough: loading one into a local retains it, five
/// retains per hit.)
///
/// It also remembers what was used since it was last asked (``takeUsed()``): a marker record
/// stands in the list where the last call left its front, so memory hits count for the disk's
/// least-recently-used order at no cost to a hit.
///
/// The order of ``EvictionPolicy/leastRecentlyUsed``; ``FrequencyOrder`` is the default's.
/// Not thread-safe: it lives in the tier's locked state.
struct RecencyList {
    /// A link: a record reference that is neither retained nor released.
    typealias Link = Unmanaged<MemoryRecord>

    private var newest: Link?
    private var oldest: Link?
    /// Stands in the list where ``takeUsed()`` last left its front; never in the tier's records.
    private let marker = MemoryRecord(
        name: "",
        metadata: EntryMetadata(
            createdAt: 0, validatedAt: 0, lifespan: .never, isLocked: false, schemaVersion: nil, appVersion: nil,
            size: 0))

    init() {
        pushFront(marker)
    }

    /// Makes `record`, already in the list, the most recently used.
    mutating func moveToFront(_ record: MemoryRecord) {
        if !newest.is(record) {
            unlink(record)
            pushFront(record)
        }
    }

    /// Adds `record` as the most recently used.
    mutating func pushFront(_ record: MemoryRecord) {
        let link = Link.passUnretained(record)
        record.older = newest
        record.newer = nil
        newest?._withUnsafeGuaranteedRef { $0.newer = link }
        newest = link
        if oldest == nil { oldest = link }
    }

    /// Takes `record` out of the list.
    mutating func unlink(_ record: MemoryRecord) {
        let (newer, older) = (record.newer, record.older)
        if let newer {
            newer._withUnsafeGuaranteedRef { $0.older = older }
        } else if newest.is(record) {
            newest = older
        }
        if let older {
            older._withUnsafeGuaranteedRef { $0.newer = newer }
        } else if oldest.is(record) {
            oldest = newer
        }
        record.newer = nil
        record.older = nil
    }

    /// The least recently used unlocked record, or the least recently used one if all are locked.
    func victim() -> MemoryRecord? {
        var candidate = oldest
        var oldestRecord: MemoryRecord?
        while let link = candidate {
            let record = link.takeUnretainedValue()
            candidate = record.newer
            if record === marker { continue }
            if !record.metadata.isLocked { return record }
            if oldestRecord == nil { oldestRecord = record }
        }
        return oldestRecord
    }

    /// The names of the records used since the last call, most recent first, each with its
    /// last use for a ``Lifespan/sinceLastUse(_:)`` entry (`nil` for others); then moves the
    /// marker to the front. Empty, without allocating, when nothing was used.
    /// Whether ``takeUsed()`` has names to give.
    var hasUsed: Bool { !newest.is(marker) }

    mutating func takeUsed() -> [(name: String, usedAt: Double?)] {
        guard !newest.is(marker) else { return [] }
        var names: [(name: String, usedAt: Double?)] = []
        var link = newest
        while let current = link, !link.is(marker) {
            let record = current.takeUnretainedValue()
            names.append((record.name, record.metadata.lifespan.slidingSeconds == nil ? nil : record.lastUse))
            link = record.older
        }
        unlink(marker)
        pushFront(marker)
        return names
    }

    /// Empties the list of `records` (every record it holds).
    mutating func removeAll(_ records: some Sequence<MemoryRecord>) {
        for record in records {
            record.newer = nil
            record.older = nil
        }
        marker.newer = nil
        marker.older = nil
        newest = nil
        oldest = nil
        pushFront(marker)
    }
}

extension Optional where Wrapped == Unmanaged<MemoryRecord> {
    /// Whether this link points at `record`.
    fileprivate func `is`(_ record: MemoryRecord) -> Bool {
        self?.toOpaque() == Unmanaged.passUnretained(record).toOpaque()
    }
}
