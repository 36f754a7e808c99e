/// SIEVE (Zhang et al., NSDI '24): a FIFO queue and a hand that sweeps it from the
/// oldest key to the newest, sparing (and unmarking) keys read since it last passed.
///
/// A hit only sets a bit, and new keys that are never read again leave first, so a
/// one-time scan passes through without pushing out what is read often.
package struct Sieve<Key: Hashable>: ReplacementPolicy {
    private var store = NodeStore<Key>()
    /// The next node the hand looks at; `none`: start again at the tail.
    private var hand = NodeStore<Key>.none

    package init() {}

    package var count: Int { store.count }
    package var totalWeight: Int { store.queues[0].weight }

    package mutating func insert(_ key: Key, weight: Int) -> Handle {
        store.allocate(key, weight: weight, hash: 0, queue: 0)
    }

    package mutating func recordHit(_ handle: Handle) { store[handle].bits = 1 }

    package mutating func recordMiss(_ key: Key) {}

    package mutating func remove(_ handle: Handle) {
        if hand == handle { hand = store[handle].prev }
        store.release(handle)
    }

    package mutating func evict(where isEvictable: (Key) -> Bool) -> Key? {
        // Two passes clear every visited bit; a third finds nothing new.
        var steps = 2 * store.count + 1
        var index = hand == NodeStore<Key>.none ? store.queues[0].tail : hand
        while index != NodeStore<Key>.none && steps > 0 {
            steps -= 1
            let node = store[index]
            let newer = node.prev == NodeStore<Key>.none ? store.queues[0].tail : node.prev
            if node.bits != 0 {
                store[index].bits = 0
            } else if isEvictable(store.key(index)) {
                hand = node.prev
                return store.release(index)
            }
            index = newer
        }
        return nil
    }

    package mutating func removeAll() {
        store.removeAll()
        hand = NodeStore<Key>.none
    }
}

// Sendable when its keys are, so a tier can keep it in its locked state.
extension Sieve: Sendable where Key: Sendable {}
