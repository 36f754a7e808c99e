/// Evicts the key read or inserted longest ago: one queue, a hit moves its key to the head.
///
/// The order of Cashier's tiers before frequency-aware eviction, kept for
/// `.leastRecentlyUsed` and as the baseline of the trace-replay benchmark.
package struct LeastRecentlyUsed<Key: Hashable>: ReplacementPolicy {
    private var store = NodeStore<Key>()
    private static var queue: UInt8 { 0 }

    package init() {}

    package var count: Int { store.count }
    package var totalWeight: Int { store.queues[0].weight }

    package mutating func insert(_ key: Key, weight: Int) -> Handle {
        store.allocate(key, weight: weight, hash: 0, queue: Self.queue)
    }

    package mutating func recordHit(_ handle: Handle) {
        store.move(handle, toHeadOf: Self.queue)
    }

    package mutating func recordMiss(_ key: Key) {}

    package mutating func remove(_ handle: Handle) {
        store.release(handle)
    }

    /// The least recently used key `isEvictable` accepts.
    package mutating func evict(where isEvictable: (Key) -> Bool) -> Key? {
        var index = store.queues[0].tail
        while index != NodeStore<Key>.none {
            if isEvictable(store.key(index)) { return store.release(index) }
            index = store[index].prev
        }
        return nil
    }

    package mutating func removeAll() { store.removeAll() }

    /// The keys from most to least recently used (for tests).
    package var keysByRecency: [Key] {
        var keys: [Key] = []
        var index = store.queues[0].head
        while index != NodeStore<Key>.none {
            keys.append(store.key(index))
            index = store[index].next
        }
        return keys
    }
}

// Sendable when its keys are, so a tier can keep it in its locked state.
extension LeastRecentlyUsed: Sendable where Key: Sendable {}
