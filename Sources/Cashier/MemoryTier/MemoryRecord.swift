import Foundation

/// A decoded value in the memory tier; subclassed per value type so a hit needs no boxing.
///
/// `name` and `metadata` never change after init; the order's fields (`newer`, `older`,
/// `handle`, `usedSinceFlush`) are touched only under the tier's lock.
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
    /// The links of the replacement order (``RecencyList``, which alone touches them).
    var newer: RecencyList.Link?
    var older: RecencyList.Link?
    /// Under ``EvictionPolicy/frequencyAware``: its node in ``FrequencyOrder``'s policy (-1: none)…
    var handle = -1
    /// …and whether it was used since the disk's recency last took the used names.
    var usedSinceFlush = false
    /// For a ``Lifespan/sinceLastUse(_:)`` entry: its last use (read or written under the
    /// tier's lock), which `metadata.lastUsedAt` held when the record was made…
    var lastUse: Double
    /// …and the access time its file is known to keep, so a use is written there (at most
    /// once per ``DiskTier/recencyGranularity``) as it happens, not only at the next flush.
    var persistedUse: Double

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
    var currentMetadata: EntryMetadata {
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
