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

    init(createdAt: Double, validatedAt: Double, lifespan: Lifespan, isLocked: Bool,
         schemaVersion: Int?, appVersion: String?, size: Int) {
        self.createdAt = createdAt
        self.validatedAt = validatedAt
        self.lifespan = lifespan
        self.isLocked = isLocked
        self.schemaVersion = schemaVersion
        self.appVersion = appVersion
        self.size = size
    }

    init(_ header: EntryHeader, size: Int) {
        self.init(createdAt: header.createdAt, validatedAt: header.validatedAt, lifespan: header.lifespan,
                  isLocked: header.isLocked, schemaVersion: header.schemaVersion,
                  appVersion: header.appVersion, size: size)
    }

    /// When the entry expires, ignoring the lock.
    var expiresAt: Double? {
        switch lifespan {
        case .never: nil
        case .seconds(let seconds): validatedAt + seconds
        case .until(let date): date.timeIntervalSince1970
        }
    }

    /// The moment after which the entry counts as expired: `nil` when locked or never.
    var expiryDeadline: Double? { isLocked ? nil : expiresAt }

    func isExpired(at now: Double) -> Bool {
        guard let deadline = expiryDeadline else { return false }
        return now >= deadline
    }
}

/// A decoded value in the memory tier; subclassed per value type so a hit needs no boxing.
///
/// `name` and `metadata` never change after init; `newer`/`older` are touched
/// only under the tier's lock.
class MemoryRecord: @unchecked Sendable {
    let name: String
    let metadata: EntryMetadata
    fileprivate var newer: MemoryRecord?
    fileprivate var older: MemoryRecord?

    init(name: String, metadata: EntryMetadata) {
        self.name = name
        self.metadata = metadata
    }

    /// The same value with other metadata.
    func replacing(metadata: EntryMetadata) -> MemoryRecord { MemoryRecord(name: name, metadata: metadata) }

    /// The value, type-erased, for change notifications.
    var anyValue: (any Sendable)? { nil }
}

final class TypedRecord<Value: Sendable>: MemoryRecord, @unchecked Sendable {
    let value: Value

    init(name: String, metadata: EntryMetadata, value: Value) {
        self.value = value
        super.init(name: name, metadata: metadata)
    }

    override func replacing(metadata: EntryMetadata) -> MemoryRecord {
        TypedRecord(name: name, metadata: metadata, value: value)
    }

    override var anyValue: (any Sendable)? { value }
}

/// The decoded-value tier: a dictionary plus an intrusive LRU list, bounded by a count.
///
/// The statistics counters live under the same lock so a hit takes one lock.
final class MemoryTier: Sendable {
    private let state: Locked<State>
    let limit: Int?

    init(limit: Int?) {
        self.limit = limit.map { max(0, $0) }
        state = Locked(State())
    }

    deinit { state.withLock { $0.unlinkAll() } }

    /// The record for `name` without changing its recency.
    func peek(_ name: String) -> MemoryRecord? {
        state.withLock { $0.records[name] }
    }

    /// Stores `record`, replacing any under its name; returns what the count limit pushed out.
    @discardableResult
    func insert(_ record: MemoryRecord) -> [MemoryRecord] {
        if limit == 0 { return [] }
        return state.withLock { state in
            state.insert(record)
            var evicted: [MemoryRecord] = []
            if let limit {
                while state.records.count > limit, let victim = state.victim() {
                    state.remove(victim.name)
                    evicted.append(victim)
                }
            }
            return evicted
        }
    }

    @discardableResult
    func remove(_ name: String) -> MemoryRecord? {
        state.withLock { $0.remove(name) }
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

    /// A hit found in memory: recency and the hit counter in one critical section.
    func hit<Value>(_ name: String, as type: Value.Type) -> TypedRecord<Value>? {
        state.withLock { state in
            guard let record = state.touch(name) as? TypedRecord<Value> else { return nil }
            return record
        }
    }

    private struct State {
        var records: [String: MemoryRecord] = [:]
        var newest: MemoryRecord?
        var oldest: MemoryRecord?
        var statistics = CacheStatistics()

        mutating func touch(_ name: String) -> MemoryRecord? {
            guard let record = records[name] else { return nil }
            if newest !== record {
                unlink(record)
                pushFront(record)
            }
            return record
        }

        mutating func insert(_ record: MemoryRecord) {
            if let old = records.updateValue(record, forKey: record.name) { unlink(old) }
            pushFront(record)
        }

        @discardableResult
        mutating func remove(_ name: String) -> MemoryRecord? {
            guard let record = records.removeValue(forKey: name) else { return nil }
            unlink(record)
            return record
        }

        /// The least recently used unlocked record, or the least recently used one if all are locked.
        func victim() -> MemoryRecord? {
            var candidate = oldest
            while let record = candidate {
                if !record.metadata.isLocked { return record }
                candidate = record.newer
            }
            return oldest
        }

        mutating func pushFront(_ record: MemoryRecord) {
            record.older = newest
            record.newer = nil
            newest?.newer = record
            newest = record
            if oldest == nil { oldest = record }
        }

        mutating func unlink(_ record: MemoryRecord) {
            if let newer = record.newer { newer.older = record.older } else if newest === record { newest = record.older }
            if let older = record.older { older.newer = record.newer } else if oldest === record { oldest = record.newer }
            record.newer = nil
            record.older = nil
        }

        mutating func unlinkAll() {
            for record in records.values {
                record.newer = nil
                record.older = nil
            }
            records.removeAll()
            newest = nil
            oldest = nil
        }
    }
}
