/// W-TinyLFU (Einziger, Friedman and Manes, 2017; Caffeine's policy): new keys enter a
/// small LRU window; a key leaving the window is admitted to the main segmented LRU
/// only if the frequency sketch estimates it more popular than main's victim.
///
/// Main is a probationary queue and a protected one (80% of main) that a key reaches
/// by a hit in probation. The window is a fixed 1% (Caffeine's starting size; its hill
/// climbing of the window did not follow a moving working set here, see
/// Benchmarks/Eviction/README.md: ``FrequencyAware`` adapts instead).
package struct WindowTinyLFU<Key: Hashable>: ReplacementPolicy {
    var store = NodeStore<Key>()
    var sketch = FrequencySketch()
    /// The window's share of the weight held.
    private let windowFraction: Double
    private let protectedFraction = 0.8

    private static var window: UInt8 { 0 }
    private static var probation: UInt8 { 1 }
    private static var protected: UInt8 { 2 }
    /// The mark of a key that left the window and has not yet been compared with a victim.
    private static var candidate: UInt8 { 1 }

    package init(windowFraction: Double = 0.01) {
        self.windowFraction = windowFraction
    }

    package var count: Int { store.count }
    package var totalWeight: Int { store.queues[0].weight + store.queues[1].weight + store.queues[2].weight }

    package mutating func insert(_ key: Key, weight: Int) -> Handle {
        if store.count >= sketch.capacity { sketch.ensureCapacity(store.count + 1) }
        // The window overflows only when the tier is full: until then every key stays in
        // it, and the first eviction makes them all candidates of probation at once (the
        // tier's first contents then form main, which is what holds part of a loop).
        return store.allocate(key, weight: weight, hash: key.hashValue, queue: Self.window)
    }

    /// Moves the window's oldest keys to probation, as candidates, until it is within its target.
    private mutating func demoteWindowOverflow() {
        let target = windowTarget
        while store.queues[0].weight > target, store.queues[0].count > 0 {
            let index = store.queues[0].tail
            store.move(index, toHeadOf: Self.probation)
            store[index].bits = Self.candidate
        }
    }

    package mutating func recordHit(_ handle: Handle) {
        sketch.increment(store[handle].hash)
        switch store[handle].queue {
        case Self.probation:
            store[handle].bits = 0
            store.move(handle, toHeadOf: Self.protected)
            let protectedTarget = Int(Double(totalWeight - windowTarget) * protectedFraction)
            while store.queues[2].weight > protectedTarget, store.queues[2].count > 1 {
                store.move(store.queues[2].tail, toHeadOf: Self.probation)
            }
        default:
            store.move(handle, toHeadOf: store[handle].queue)
        }
    }

    package mutating func recordMiss(_ key: Key) {
        sketch.increment(key.hashValue)
    }

    package mutating func remove(_ handle: Handle) { store.release(handle) }

    private var windowTarget: Int { max(1, Int(Double(totalWeight) * windowFraction)) }

    /// Moves the window's overflow to probation as candidates, then compares the newest
    /// candidate with probation's oldest key: the less frequent leaves (a tie keeps the
    /// incumbent, which is what holds part of a loop).
    package mutating func evict(where isEvictable: (Key) -> Bool) -> Key? {
        demoteWindowOverflow()
        var candidate = store.queues[1].head
        if candidate != NodeStore<Key>.none {
            if store[candidate].bits != Self.candidate || !isEvictable(store.key(candidate)) {
                candidate = NodeStore<Key>.none
            } else {
                store[candidate].bits = 0
            }
        }
        guard let victim = oldestEvictable(excluding: candidate, isEvictable) else {
            return candidate == NodeStore<Key>.none ? nil : store.release(candidate)
        }
        guard candidate != NodeStore<Key>.none else { return store.release(victim) }
        let admits = sketch.frequency(store[candidate].hash) > sketch.frequency(store[victim].hash)
        return store.release(admits ? victim : candidate)
    }

    /// The oldest key `isEvictable` accepts in probation, then protected, then the window.
    private func oldestEvictable(excluding excluded: Int, _ isEvictable: (Key) -> Bool) -> Int? {
        for queue in [Self.probation, Self.protected, Self.window] {
            var index = store.queues[Int(queue)].tail
            while index != NodeStore<Key>.none {
                if index != excluded && isEvictable(store.key(index)) { return index }
                index = store[index].prev
            }
        }
        return nil
    }

    package mutating func removeAll() {
        store.removeAll()
        sketch = FrequencySketch()
    }
}

// Sendable when its keys are, so a tier can keep it in its locked state.
extension WindowTinyLFU: Sendable where Key: Sendable {}
