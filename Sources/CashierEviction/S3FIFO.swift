/// S3-FIFO (Yang et al., SOSP '23): a small FIFO queue that new keys enter, a main FIFO
/// queue for keys read while in it, and a ghost queue remembering recently evicted
/// keys (their hashes only), whose return goes straight to main.
///
/// A hit raises a two-bit frequency and moves nothing. Most one-hit keys leave from
/// the small queue quickly (the paper's "quick demotion"), which is what makes the
/// policy resist scans.
package struct S3FIFO<Key: Hashable>: ReplacementPolicy {
    var store = NodeStore<Key>()
    private var ghost = GhostQueue()
    /// The small queue's share of the weight held.
    private let smallFraction: Double
    /// How many hashes the ghost keeps, as a fraction of the number of keys held.
    private let ghostFraction: Double
    /// The frequency at which a key leaving the small queue goes to main instead.
    private let promotionThreshold: UInt8

    private static var small: UInt8 { 0 }
    private static var main: UInt8 { 1 }

    /// libCacheSim's defaults: a 10% small queue, a ghost of 90% of the keys held, promotion at 2 reads.
    package init(smallFraction: Double = 0.1, ghostFraction: Double = 0.9, promotionThreshold: UInt8 = 2) {
        self.smallFraction = smallFraction
        self.ghostFraction = ghostFraction
        self.promotionThreshold = promotionThreshold
    }

    package var count: Int { store.count }
    package var totalWeight: Int { store.queues[0].weight + store.queues[1].weight }

    package mutating func insert(_ key: Key, weight: Int) -> Handle {
        let hash = key.hashValue
        let queue = ghost.remove(hash) ? Self.main : Self.small
        return store.allocate(key, weight: weight, hash: hash, queue: queue)
    }

    package mutating func recordHit(_ handle: Handle) {
        if store[handle].bits < 3 { store[handle].bits += 1 }
    }

    package mutating func recordMiss(_ key: Key) {}

    package mutating func remove(_ handle: Handle) { store.release(handle) }

    package mutating func evict(where isEvictable: (Key) -> Bool) -> Key? {
        let smallTarget = Int(Double(totalWeight) * smallFraction)
        if store.queues[0].weight > smallTarget || store.queues[1].count == 0 {
            if let key = evictSmall(isEvictable) { return key }
            return evictMain(isEvictable)
        }
        if let key = evictMain(isEvictable) { return key }
        return evictSmall(isEvictable)
    }

    /// From the small queue's tail: a key read often enough moves to main, the first other one leaves.
    private mutating func evictSmall(_ isEvictable: (Key) -> Bool) -> Key? {
        var steps = store.queues[0].count
        while steps > 0 {
            steps -= 1
            let index = store.queues[0].tail
            let node = store[index]
            if node.bits >= promotionThreshold || !isEvictable(store.key(index)) {
                if node.bits >= promotionThreshold { store[index].bits = 0 }
                store.move(index, toHeadOf: node.bits >= promotionThreshold ? Self.main : Self.small)
                continue
            }
            ghost.insert(node.hash, capacity: Int(Double(store.count) * ghostFraction))
            return store.release(index)
        }
        return nil
    }

    /// From the main queue's tail: a key read since it last came round goes back to the
    /// head with one read fewer, the first other one leaves.
    private mutating func evictMain(_ isEvictable: (Key) -> Bool) -> Key? {
        // Each pass takes every frequency down by one: four passes leave none above zero.
        var steps = 4 * store.queues[1].count + 1
        while steps > 0 && store.queues[1].count > 0 {
            steps -= 1
            let index = store.queues[1].tail
            let node = store[index]
            if node.bits > 0 || !isEvictable(store.key(index)) {
                if node.bits > 0 { store[index].bits -= 1 }
                store.move(index, toHeadOf: Self.main)
                continue
            }
            return store.release(index)
        }
        return nil
    }

    package mutating func removeAll() {
        store.removeAll()
        ghost = GhostQueue()
    }
}

/// The hashes of recently evicted keys, oldest first out, with constant-time membership.
struct GhostQueue {
    private var order: [Int] = []
    private var start = 0
    /// How many times each hash is in `order` and not yet removed.
    private var members: [Int: Int] = [:]
    private var liveCount = 0

    mutating func insert(_ hash: Int, capacity: Int) {
        order.append(hash)
        members[hash, default: 0] += 1
        liveCount += 1
        while liveCount > max(capacity, 0) && start < order.count {
            drop(order[start])
            start += 1
        }
        if start > 1_024 && start * 2 > order.count {
            order.removeFirst(start)
            start = 0
        }
    }

    /// Whether `hash` was in the queue; it is not afterwards (a stale entry in `order` no longer counts).
    mutating func remove(_ hash: Int) -> Bool {
        guard members[hash] != nil else { return false }
        drop(hash)
        return true
    }

    private mutating func drop(_ hash: Int) {
        guard let n = members[hash] else { return }
        members[hash] = n > 1 ? n - 1 : nil
        liveCount -= 1
    }
}

// Sendable when its keys are, so a tier can keep it in its locked state.
extension S3FIFO: Sendable where Key: Sendable {}
