import Foundation

/// What Cashier knows of a stored entry besides its value.
struct EntryMetadata: Sendable, Hashable {
    var createdAt: Double
    var validatedAt: Double
    var lifespan: Lifespan
    var isLocked: Bool
    var schemaVersion: Int?
    var appVersion: String?
    var size: Int
    /// The entry's last use as far as it is known, for a ``Lifespan/sinceLastUse(_:)``
    /// lifespan (which runs from the later of this and `validatedAt`); `nil`: unknown,
    /// taken as `validatedAt`. Other lifespans ignore it.
    var lastUsedAt: Double?

    init(
        createdAt: Double, validatedAt: Double, lifespan: Lifespan, isLocked: Bool,
        schemaVersion: Int?, appVersion: String?, size: Int, lastUsedAt: Double? = nil
    ) {
        self.createdAt = createdAt
        self.validatedAt = validatedAt
        self.lifespan = lifespan
        self.isLocked = isLocked
        self.schemaVersion = schemaVersion
        self.appVersion = appVersion
        self.size = size
        self.lastUsedAt = lastUsedAt
    }

    init(_ header: EntryHeader, size: Int, lastUsedAt: Double? = nil) {
        self.init(
            createdAt: header.createdAt, validatedAt: header.validatedAt, lifespan: header.lifespan,
            isLocked: header.isLocked, schemaVersion: header.schemaVersion,
            appVersion: header.appVersion, size: size, lastUsedAt: lastUsedAt)
    }

    /// When the entry expires, ignoring the lock.
    var expiresAt: Double? {
        lifespan.expiration(validatedAt: validatedAt, lastUsedAt: lastUsedAt)
    }

    /// The moment a ``Lifespan/sinceLastUse(_:)`` lifespan runs from: the later of the
    /// last use known and the last validation.
    var lastUse: Double { Lifespan.lastUse(validatedAt: validatedAt, lastUsedAt: lastUsedAt) }

    /// The moment after which the entry counts as expired: `nil` when locked or never.
    var expiryDeadline: Double? { isLocked ? nil : expiresAt }

    /// Whether an entry with this metadata is usable for a key of `schemaVersion` in a cache
    /// of `appVersion`: same schema version, and for unversioned keys the same app version.
    func matches(schemaVersion: Int?, appVersion: String?) -> Bool {
        self.schemaVersion == schemaVersion && (schemaVersion != nil || self.appVersion == appVersion)
    }

    func isExpired(at now: Double) -> Bool {
        guard let deadline = expiryDeadline else { return false }
        return now >= deadline
    }

    /// The moment a read at `now` records as the entry's last use: `now`, except that a read
    /// of an expired ``Lifespan/sinceLastUse(_:)`` entry leaves its last use where it was
    /// (a read never brings an expired entry back).
    func use(at now: Double) -> Double {
        lifespan.slidingSeconds != nil && isExpired(at: now) ? lastUse : now
    }
}

/// A decoded value in the memory tier; subclassed per value type so a hit needs no boxing.
///
/// `name` and `metadata` never change after init; `newer`/`older` are touched
/// only under the tier's lock.
class MemoryRecord: @unchecked Sendable {
    let name: String
    let metadata: EntryMetadata
    /// The stored value's type, so a hit checks it with one comparison instead of a dynamic cast.
    let valueType: ObjectIdentifier?
    /// Where ``TypedRecord`` keeps its value: read through ``value(as:)`` with no generic
    /// metadata lookup, which matters on the memory-hit path of unspecialized callers.
    let storage: UnsafeMutableRawPointer?
    /// What the value counts against ``Cache/Configuration-swift.struct/memoryCostLimit``:
    /// about its encoded size, the payload's length in bytes.
    let cost: Int
    // Links of the recency list, which never owns records (the tier's dictionary does,
    // and a record leaves the list before it leaves the dictionary): `Unmanaged`, so
    // moving a record to the front costs no reference counting. (`unowned(unsafe)` is
    // not enough: loading one into a local retains it, five retains per hit.)
    fileprivate var newer: Link?
    fileprivate var older: Link?
    /// For a ``Lifespan/sinceLastUse(_:)`` entry: its last use (read or written under the
    /// tier's lock), which `metadata.lastUsedAt` held when the record was made…
    fileprivate var lastUse: Double
    /// …and the access time its file is known to keep, so a use is written there (at most
    /// once per ``DiskStore/recencyGranularity``) as it happens, not only at the next flush.
    fileprivate var persistedUse: Double

    init(
        name: String, metadata: EntryMetadata, valueType: ObjectIdentifier? = nil,
        storage: UnsafeMutableRawPointer? = nil,
        cost: Int = 0, persistedUse: Double? = nil
    ) {
        self.name = name
        self.metadata = metadata
        self.valueType = valueType
        self.storage = storage
        self.cost = max(0, cost)
        lastUse = metadata.lastUse
        self.persistedUse = persistedUse ?? metadata.lastUse
    }

    /// The value of a record whose ``valueType`` is `V`'s.
    func value<V>(as type: V.Type) -> V {
        assert(valueType == ObjectIdentifier(V.self))
        return storage!.assumingMemoryBound(to: V.self).pointee
    }

    /// The same value with other metadata (whose `lastUsedAt` the file now keeps as its access time).
    func replacing(metadata: EntryMetadata) -> MemoryRecord { MemoryRecord(name: name, metadata: metadata, cost: cost) }

    /// `metadata` with the last use this record knows. Call under the tier's lock.
    fileprivate var currentMetadata: EntryMetadata {
        guard metadata.lifespan.slidingSeconds != nil else { return metadata }
        var current = metadata
        current.lastUsedAt = lastUse
        return current
    }
}

final class TypedRecord<Value: Sendable>: MemoryRecord, @unchecked Sendable {
    init(name: String, metadata: EntryMetadata, value: Value, cost: Int, persistedUse: Double? = nil) {
        let storage = UnsafeMutablePointer<Value>.allocate(capacity: 1)
        storage.initialize(to: value)
        super.init(
            name: name, metadata: metadata, valueType: ObjectIdentifier(Value.self),
            storage: UnsafeMutableRawPointer(storage),
            cost: cost, persistedUse: persistedUse)
    }

    deinit {
        let storage = storage!.assumingMemoryBound(to: Value.self)
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    var value: Value { storage!.assumingMemoryBound(to: Value.self).pointee }

    override func replacing(metadata: EntryMetadata) -> MemoryRecord {
        TypedRecord(name: name, metadata: metadata, value: value, cost: cost)
    }
}

/// The decoded-value tier: a dictionary plus an intrusive LRU list, bounded by a count
/// and by the records' total cost.
///
/// The statistics counters live under the same lock so a hit takes one lock. Costs are
/// added and taken away only where records come and go, never on a hit.
final class MemoryTier: Sendable {
    private let state: Locked<State>
    let limit: Int?
    /// The bound on the records' total ``MemoryRecord/cost``; `nil` for none.
    let costLimit: Int?

    init(limit: Int?, costLimit: Int? = nil) {
        self.limit = limit.map { max(0, $0) }
        self.costLimit = costLimit.map { max(0, $0) }
        state = Locked(State())
    }

    deinit { state.withLock { $0.unlinkAll() } }

    /// The record for `name` without changing its recency.
    func peek(_ name: String) -> MemoryRecord? {
        withRecords(orIfNone: nil) { $0.records[name] }
    }

    /// Stores `record`, replacing any under its name; returns what the count and cost limits pushed out.
    @discardableResult
    func insert(_ record: MemoryRecord) -> [MemoryRecord] {
        withRecords(orIfNone: []) { state in
            state.insert(record)
            var evicted: [MemoryRecord] = []
            if let limit {
                while state.records.count > limit, let victim = state.victim() {
                    state.remove(victim.name)
                    evicted.append(victim)
                }
            }
            if let costLimit {
                state.evict(downToCost: costLimit, into: &evicted)
            }
            return evicted
        }
    }

    /// Removes least recently used records (unlocked first) until their total cost is at most
    /// `budget(totalCost)`, all in one critical section; returns them.
    func trim(toCost budget: (Int) -> Int) -> [MemoryRecord] {
        withRecords(orIfNone: []) { state in
            var evicted: [MemoryRecord] = []
            state.evict(downToCost: max(0, budget(state.totalCost)), into: &evicted)
            return evicted
        }
    }

    /// The total ``MemoryRecord/cost`` of the records held.
    var totalCost: Int { state.withLock { $0.totalCost } }

    @discardableResult
    func remove(_ name: String) -> MemoryRecord? {
        withRecords(orIfNone: nil) { $0.remove(name) }
    }

    func removeAll() -> [MemoryRecord] {
        state.withLock { state in
            let all = Array(state.records.values)
            state.unlinkAll()
            return all
        }
    }

    var allRecords: [MemoryRecord] { state.withLock { Array($0.records.values) } }
    var count: Int { state.withLock { $0.records.count } }

    /// Applies `change` to the counters.
    func count(_ change: (inout CacheStatistics) -> Void) {
        state.withLock { change(&$0.statistics) }
    }

    var statistics: CacheStatistics { state.withLock { $0.statistics } }

    /// The names of the records used (hit or stored) since the last call, most recent first,
    /// each with the moment of its last use for a ``Lifespan/sinceLastUse(_:)`` entry
    /// (`nil` for others: they were used "by now").
    ///
    /// What lets memory hits count for the disk's least-recently-used order at no cost
    /// to a hit: a hit already moves its record to the front of the recency list, and a
    /// marker record in that list stands where the last call left the front. This walks
    /// from the front to the marker, then moves the marker to the front. Empty, without
    /// allocating, when nothing was used.
    ///
    /// A sliding entry's use is its own time, not the caller's "now": a hit on it that found
    /// it expired is no use, and must not bring it back in the next launch.
    func takeUsedNames() -> [(name: String, usedAt: Double?)] {
        withRecords(orIfNone: []) { $0.takeUsed() }
    }

    /// Records a use at `now` of `name`'s ``Lifespan/sinceLastUse(_:)`` record (a read that found
    /// it valid). Returns whether its file's access time is ``DiskStore/recencyGranularity`` or
    /// more behind, in which case the caller writes it (and the record now counts it as written).
    /// `countingHit`: also counts a hit in ``statistics``, under the same lock.
    func noteUse(_ name: String, at now: Double, countingHit: Bool = false) -> Bool {
        withRecords(orIfNone: false) { state in
            if countingHit { state.statistics.hits += 1 }
            guard let record = state.records[name], record.metadata.lifespan.slidingSeconds != nil else { return false }
            record.lastUse = max(record.lastUse, now)
            guard now - record.persistedUse >= DiskStore.recencyGranularity else { return false }
            record.persistedUse = now
            return true
        }
    }

    /// `record`'s metadata with the last use the tier knows of it (see ``EntryMetadata/lastUsedAt``).
    func currentMetadata(of record: MemoryRecord) -> EntryMetadata {
        state.withLock { _ in record.currentMetadata }
    }

    /// Looks up `name` for a read of a `valueType` value stored under `schemaVersion`
    /// (and, unversioned, `appVersion`): on a match, makes the record the most recently
    /// used and hands `copy` the value's address, all in one critical section.
    ///
    /// Not generic, no allocation, no dynamic cast, no reference counting of the record.
    func hit(
        _ name: String, valueType: ObjectIdentifier, schemaVersion: Int?, appVersion: String?,
        copy: (UnsafeMutableRawPointer) -> Void
    ) -> Hit {
        withRecords(orIfNone: .none) { state in
            guard let record = state.usable(name, valueType, schemaVersion, appVersion), let storage = record.storage
            else { return .none }
            state.moveToFront(record)
            copy(storage)
            if record.metadata.lifespan.slidingSeconds != nil {
                // The deadline by the one definition of expiry, with the last use this tier knows.
                let deadline =
                    record.metadata.isLocked
                    ? nil
                    : record.metadata.lifespan.expiration(
                        validatedAt: record.metadata.validatedAt, lastUsedAt: record.lastUse)
                return .sliding(until: deadline ?? .infinity)
            }
            guard let deadline = record.metadata.expiryDeadline else {
                state.statistics.hits += 1
                return .counted
            }
            return .expiring(at: deadline)
        }
    }

    /// What ``hit(_:valueType:schemaVersion:appVersion:copy:)`` found.
    enum Hit {
        /// Nothing usable: the read goes on to the disk.
        case none
        /// A value that cannot expire, copied out and counted as a hit under the same lock.
        case counted
        /// A value copied out whose entry expires at this moment (seconds since 1970), left for
        /// the caller to check against its clock (user code, never called under this lock) and count.
        case expiring(at: Double)
        /// The same for a ``Lifespan/sinceLastUse(_:)`` entry (`infinity` when locked): if the
        /// read finds it valid, the caller records the use with ``MemoryTier/noteUse(_:at:countingHit:)``.
        case sliding(until: Double)
    }

    /// The record for `name` if it holds a value usable for a read of `valueType` under
    /// `schemaVersion` (and, unversioned, `appVersion`), made the most recently used, with
    /// its current metadata: every read counts, for this tier's order and, through
    /// ``takeUsedNames()``, the disk's (a sliding lifespan's use is the caller's to note).
    func peekUsable(_ name: String, valueType: ObjectIdentifier, schemaVersion: Int?, appVersion: String?)
        -> (record: MemoryRecord, metadata: EntryMetadata)?
    {
        withRecords(orIfNone: nil) { state in
            guard let record = state.usable(name, valueType, schemaVersion, appVersion) else { return nil }
            state.moveToFront(record)
            return (record, record.currentMetadata)
        }
    }

    /// `body` run under the lock; or, when the limit is 0 and the tier never holds anything,
    /// `empty`, without taking the lock or hashing a name.
    private func withRecords<R>(orIfNone empty: R, _ body: (inout State) -> R) -> R {
        limit == 0 ? empty : state.withLock(body)
    }

    private struct State {
        var records: [String: MemoryRecord] = [:]
        var newest: Link?
        var oldest: Link?
        var statistics = CacheStatistics()
        /// The sum of the records' costs. Added and subtracted with wrapping arithmetic: with no
        /// cost limit, encoded sizes could sum past `Int.max` where `Int` is 32 bits (watchOS) even
        /// though the decoded values fit; that must not trap, and the sum stays exact modulo 2^32.
        var totalCost = 0
        /// Stands in the recency list where ``takeUsed()`` last left its front; never in `records`.
        let marker = MemoryRecord(
            name: "",
            metadata: EntryMetadata(
                createdAt: 0, validatedAt: 0, lifespan: .never, isLocked: false, schemaVersion: nil, appVersion: nil,
                size: 0))

        init() {
            pushFront(marker)
        }

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

        /// The one definition of a memory record that may answer a read: same value type,
        /// same schema version, and for unversioned keys the same app version.
        func usable(_ name: String, _ valueType: ObjectIdentifier, _ schemaVersion: Int?, _ appVersion: String?)
            -> MemoryRecord?
        {
            guard let record = records[name], record.valueType == valueType,
                record.metadata.matches(schemaVersion: schemaVersion, appVersion: appVersion)
            else { return nil }
            return record
        }

        mutating func moveToFront(_ record: MemoryRecord) {
            if !newest.is(record) {
                unlink(record)
                pushFront(record)
            }
        }

        mutating func insert(_ record: MemoryRecord) {
            if let old = records.updateValue(record, forKey: record.name) {
                unlink(old)
                totalCost &-= old.cost
            }
            totalCost &+= record.cost
            pushFront(record)
        }

        @discardableResult
        mutating func remove(_ name: String) -> MemoryRecord? {
            guard let record = records.removeValue(forKey: name) else { return nil }
            unlink(record)
            totalCost &-= record.cost
            return record
        }

        /// Removes ``victim()`` after victim until the total cost is at most `budget`.
        mutating func evict(downToCost budget: Int, into evicted: inout [MemoryRecord]) {
            while totalCost > budget, let victim = victim() {
                remove(victim.name)
                evicted.append(victim)
            }
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

        mutating func pushFront(_ record: MemoryRecord) {
            let link = Link.passUnretained(record)
            record.older = newest
            record.newer = nil
            newest?._withUnsafeGuaranteedRef { $0.newer = link }
            newest = link
            if oldest == nil { oldest = link }
        }

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

        mutating func unlinkAll() {
            for record in records.values {
                record.newer = nil
                record.older = nil
            }
            records.removeAll()
            totalCost = 0
            marker.newer = nil
            marker.older = nil
            newest = nil
            oldest = nil
            pushFront(marker)
        }
    }
}

/// A link of the recency list: a record reference that is neither retained nor released.
private typealias Link = Unmanaged<MemoryRecord>

extension Optional where Wrapped == Unmanaged<MemoryRecord> {
    /// Whether this link points at `record`.
    fileprivate func `is`(_ record: MemoryRecord) -> Bool {
        self?.toOpaque() == Unmanaged.passUnretained(record).toOpaque()
    }
}
