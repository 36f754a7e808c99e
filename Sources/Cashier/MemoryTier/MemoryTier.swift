import CashierPlatform
import Foundation

/// The decoded-value tier: its bookkeeping (a dictionary of records, their total cost, the
/// statistics), bounded by a count and by that cost, over a replacement order kept apart,
/// which picks every victim: ``FrequencyOrder`` (``EvictionPolicy/frequencyAware``) or
/// ``RecencyList`` (``EvictionPolicy/leastRecentlyUsed``: least recently used, unlocked
/// first). Either way a locked record goes only when every record is locked.
///
/// The statistics counters live under the same lock so a hit takes one lock. Costs are
/// added and taken away only where records come and go, never on a hit.
final class MemoryTier: Sendable {
    private let state: Locked<State>
    let limit: Int?
    /// The bound on the records' total ``MemoryRecord/cost``; `nil` for none.
    let costLimit: Int?
    /// How often, in nanoseconds of ``MonotonicClock``, a hit checks whether another process
    /// changed the folder's store (MemoryTier+Coherence.swift); `nil` for never (a memory-only
    /// cache, a folder without a store): such a tier reads no clock.
    let coherenceInterval: UInt64?

    /// `tracksUse`: whether ``takeUsedNames()`` will be called (a cache with a disk tier); under
    /// ``EvictionPolicy/frequencyAware`` nothing is kept for it otherwise.
    init(
        limit: Int?, costLimit: Int? = nil, policy: EvictionPolicy = .leastRecentlyUsed, tracksUse: Bool = true,
        coherenceInterval: UInt64? = nil
    ) {
        self.limit = limit.map { max(0, $0) }
        self.costLimit = costLimit.map { max(0, $0) }
        self.coherenceInterval = limit == 0 ? nil : coherenceInterval
        var state = State()
        if policy == .frequencyAware { state.frequency = FrequencyOrder(tracksUse: tracksUse) }
        self.state = Locked(state)
    }

    deinit { state.withLock { $0.unlinkAll() } }

    /// The record for `name` without changing its recency.
    func peek(_ name: String) -> MemoryRecord? {
        withRecords(orIfNone: nil) { $0.records[name] }
    }

    /// Stores `record`, replacing any under its name; returns what the count and cost limits pushed out.
    ///
    /// `ticket`: the ``coherenceTicket()`` taken before the disk work that produced `record`; when
    /// the tier was emptied since (another process changed the store meanwhile), `record` may
    /// already be stale: it is not stored, and neither is anything under its name.
    @discardableResult
    func insert(_ record: MemoryRecord, ticket: CoherenceTicket? = nil) -> [MemoryRecord] {
        withRecords(orIfNone: []) { state in
            if let ticket, ticket.epoch != state.coherence.epoch {
                state.remove(record.name)
                return []
            }
            var evicted: [MemoryRecord] = []
            if let limit, state.frequency != nil, state.records[record.name] == nil {
                // Room first, then the newcomer (as the policy's simulations do), while an
                // unlocked record can go; else the newcomer may be the one that leaves.
                while state.records.count >= limit, let victim = state.evictFrequency(unlockedOnly: true) {
                    evicted.append(victim)
                }
            }
            state.insert(record)
            if let limit {
                while state.records.count > limit, let victim = state.evictOne() {
                    evicted.append(victim)
                }
            }
            if let costLimit {
                state.evict(downToCost: costLimit, into: &evicted)
            }
            return evicted
        }
    }

    /// Removes records in the order's choice (unlocked first) until their total cost is at most
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

    /// Whether ``takeUsedNames()`` has names to give (false at once for a tier that keeps nothing).
    var hasUsedNames: Bool {
        withRecords(orIfNone: false) { $0.hasUsed }
    }

    /// Records a use at `now` of `name`'s ``Lifespan/sinceLastUse(_:)`` record (a read that found
    /// it valid). Returns whether its file's access time is ``DiskTier/recencyGranularity`` or
    /// more behind, in which case the caller writes it (and the record now counts it as written).
    /// `countingHit`: also counts a hit in ``statistics``, under the same lock.
    func noteUse(_ name: String, at now: Double, countingHit: Bool = false) -> Bool {
        withRecords(orIfNone: false) { state in
            if countingHit { state.statistics.hits += 1 }
            guard let record = state.records[name], record.metadata.lifespan.slidingSeconds != nil else { return false }
            record.lastUse = max(record.lastUse, now)
            guard now - record.persistedUse >= DiskTier.recencyGranularity else { return false }
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
    ///
    /// `checkedAt`: the ``MonotonicClock`` now, when the tier has a ``coherenceInterval``: once
    /// that interval has passed since the last check, the answer is ``Hit/checkCoherence``
    /// (nothing copied), and the caller checks the store before asking again without it.
    func hit(
        _ name: String, valueType: ObjectIdentifier, schemaVersion: Int?, appVersion: String?,
        checkedAt now: UInt64? = nil, copy: (UnsafeMutableRawPointer) -> Void
    ) -> Hit {
        // Read here, not in the closure: capturing `self` there costs a retain and a release a hit.
        let interval = coherenceInterval ?? 0
        return withRecords(orIfNone: .none) { state in
            if let now, state.coherence.claimCheck(at: now, interval: interval) {
                return .checkCoherence
            }
            // A miss is the order's to learn in peekUsable(_:valueType:schemaVersion:appVersion:),
            // which the read's way to the disk goes through: once per read.
            guard let record = state.usable(name, valueType, schemaVersion, appVersion), let storage = record.storage
            else { return .none }
            state.recordHit(record)
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

    /// What ``hit(_:valueType:schemaVersion:appVersion:checkedAt:copy:)`` found.
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
        /// Nothing looked up: the store must be checked first (another process may have written).
        case checkCoherence
    }

    /// The record for `name` if it holds a value usable for a read of `valueType` under
    /// `schemaVersion` (and, unversioned, `appVersion`), made the most recently used, with
    /// its current metadata: every read counts, for this tier's order and, through
    /// ``takeUsedNames()``, the disk's (a sliding lifespan's use is the caller's to note).
    /// A miss counts for the order too (a frequency-aware one learns from it).
    func peekUsable(_ name: String, valueType: ObjectIdentifier, schemaVersion: Int?, appVersion: String?)
        -> (record: MemoryRecord, metadata: EntryMetadata)?
    {
        withRecords(orIfNone: nil) { state in
            // `usable` is asked of the record alone: asked of the `inout` state here, it had the
            // whole state copied for it (about 20 retains and releases, 1,500 instructions a
            // cold read).
            guard let record = State.usable(state.records[name], valueType, schemaVersion, appVersion) else {
                state.frequency?.recordMiss(name)
                return nil
            }
            state.recordHit(record)
            return (record, record.currentMetadata)
        }
    }

    /// `body` run under the lock; or, when the limit is 0 and the tier never holds anything,
    /// `empty`, without taking the lock or hashing a name.
    func withRecords<R>(orIfNone empty: R, _ body: (inout State) -> R) -> R {
        limit == 0 ? empty : state.withLock(body)
    }

    struct State {
        /// What the tier knows of the folder's store (MemoryTier+Coherence.swift).
        var coherence = Coherence()
        var records: [String: MemoryRecord] = [:]
        /// Under ``EvictionPolicy/leastRecentlyUsed``: which record leaves first, every record
        /// in `records` in it, and what was used since ``takeUsed()``.
        var order = RecencyList()
        /// Under ``EvictionPolicy/frequencyAware``: the same, and `order` holds nothing.
        var frequency: FrequencyOrder?
        var statistics = CacheStatistics()
        /// The sum of the records' costs. Added and subtracted with wrapping arithmetic: with no
        /// cost limit, encoded sizes could sum past `Int.max` where `Int` is 32 bits (watchOS) even
        /// though the decoded values fit; that must not trap, and the sum stays exact modulo 2^32.
        var totalCost = 0

        var hasUsed: Bool { frequency?.hasUsed ?? order.hasUsed }

        mutating func takeUsed() -> [(name: String, usedAt: Double?)] {
            if frequency != nil { return frequency!.takeUsed(records) }
            return order.takeUsed()
        }

        /// The one definition of a memory record that may answer a read: same value type,
        /// same schema version, and for unversioned keys the same app version.
        func usable(_ name: String, _ valueType: ObjectIdentifier, _ schemaVersion: Int?, _ appVersion: String?)
            -> MemoryRecord?
        {
            Self.usable(records[name], valueType, schemaVersion, appVersion)
        }

        /// ``usable(_:_:_:_:)`` of the record found for the name, if any.
        static func usable(
            _ record: MemoryRecord?, _ valueType: ObjectIdentifier, _ schemaVersion: Int?, _ appVersion: String?
        ) -> MemoryRecord? {
            guard let record, record.valueType == valueType,
                record.metadata.matches(schemaVersion: schemaVersion, appVersion: appVersion)
            else { return nil }
            return record
        }

        /// A read of `record`, which is held.
        mutating func recordHit(_ record: MemoryRecord) {
            if frequency != nil {
                frequency!.recordHit(record)
            } else {
                order.moveToFront(record)
            }
        }

        mutating func insert(_ record: MemoryRecord) {
            let old = records.updateValue(record, forKey: record.name)
            if let old { totalCost &-= old.cost }
            totalCost &+= record.cost
            if frequency != nil {
                // A replaced record keeps its place: the name's frequency is the same.
                if let old, old.handle >= 0 {
                    frequency!.replace(old, with: record)
                } else {
                    frequency!.insert(record)
                }
                frequency!.compactUsed(records)
            } else {
                if let old { order.unlink(old) }
                order.pushFront(record)
            }
        }

        @discardableResult
        mutating func remove(_ name: String) -> MemoryRecord? {
            guard let record = records.removeValue(forKey: name) else { return nil }
            if frequency != nil { frequency!.remove(record) } else { order.unlink(record) }
            totalCost &-= record.cost
            return record
        }

        /// Removes ``evictOne()`` after victim until the total cost is at most `budget`.
        mutating func evict(downToCost budget: Int, into evicted: inout [MemoryRecord]) {
            while totalCost > budget, let victim = evictOne() {
                evicted.append(victim)
            }
        }

        /// Removes the record the replacement order gives up first and returns it.
        mutating func evictOne() -> MemoryRecord? {
            if frequency != nil { return evictFrequency(unlockedOnly: false) }
            guard let victim = order.victim() else { return nil }
            return remove(victim.name)
        }

        /// Removes ``FrequencyOrder``'s victim (`unlockedOnly`: only an unlocked one) and returns it.
        mutating func evictFrequency(unlockedOnly: Bool) -> MemoryRecord? {
            guard let name = frequency!.evict(from: records, unlockedOnly: unlockedOnly),
                let record = records.removeValue(forKey: name)
            else { return nil }
            record.handle = -1
            totalCost &-= record.cost
            return record
        }

        mutating func unlinkAll() {
            if frequency != nil { frequency!.removeAll(records.values) }
            order.removeAll(records.values)
            records.removeAll()
            totalCost = 0
        }
    }
}
