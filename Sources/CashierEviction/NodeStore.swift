/// The slab of nodes a policy keeps its order in, with up to four intrusive doubly
/// linked queues through it (by index, so links cost no reference counting and a
/// node's index, its handle, never moves).
///
/// Each queue runs from its head (newest) to its tail (oldest). A node is in exactly
/// one queue, named by its `queue` field, or free. Freed nodes drop their key so the
/// slab retains no key it no longer holds.
///
/// The links live apart from the keys, in ``Links``, which is not generic: a hit moves
/// links only, so it runs at full speed even where the policy is not specialized for
/// its key type (a policy called from another module).
struct NodeStore<Key: Hashable> {
    var links = Links()
    private var keys: [Key?] = []
    private var free: [Int] = []

    static var none: Int { Links.none }

    var count: Int { keys.count - free.count }
    var queues: [Links.Queue] { links.queues }

    subscript(_ index: Int) -> Links.Node {
        get { links.nodes[index] }
        _modify { yield &links.nodes[index] }
    }

    /// The key of a live node.
    func key(_ index: Int) -> Key { keys[index]! }

    /// A new node for `key`, at the head of `queue`.
    mutating func allocate(_ key: Key, weight: Int, hash: Int, queue: UInt8, bits: UInt8 = 0) -> Int {
        let node = Links.Node(prev: Self.none, next: Self.none, weight: weight, hash: hash, queue: queue, bits: bits)
        let index: Int
        if let reused = free.popLast() {
            links.nodes[reused] = node
            keys[reused] = key
            index = reused
        } else {
            links.nodes.append(node)
            keys.append(key)
            index = keys.count - 1
        }
        links.link(index, atHeadOf: queue)
        return index
    }

    /// Unlinks the node and frees it; returns its key.
    @discardableResult
    mutating func release(_ index: Int) -> Key {
        links.unlink(index)
        let key = keys[index]!
        keys[index] = nil
        free.append(index)
        return key
    }

    /// Moves the node to the head of `queue` (its own or another).
    mutating func move(_ index: Int, toHeadOf queue: UInt8) { links.move(index, toHeadOf: queue) }

    /// Clears every node's policy-specific bits (when another policy takes the nodes over).
    mutating func resetBits() {
        for index in links.nodes.indices { links.nodes[index].bits = 0 }
    }

    mutating func removeAll() {
        links = Links()
        keys.removeAll()
        free.removeAll()
    }
}

/// The nodes' links and the queues' ends: everything a hit touches.
struct Links {
    struct Node {
        var prev: Int // toward the head (newer); `none` at the head
        var next: Int // toward the tail (older); `none` at the tail
        var weight: Int
        /// The key's hash, kept for sketches and ghosts so a hit hashes nothing.
        var hash: Int
        var queue: UInt8
        /// Policy-specific: a visited bit, a small frequency, a candidate flag.
        var bits: UInt8
    }

    struct Queue {
        var head = none
        var tail = none
        var count = 0
        var weight = 0
    }

    static var none: Int { -1 }

    var nodes: [Node] = []
    var queues = [Queue](repeating: Queue(), count: 4)

    /// Moves the node to the head of `queue` (its own or another).
    mutating func move(_ index: Int, toHeadOf queue: UInt8) {
        let node = nodes[index]
        if node.queue == queue && node.prev == Self.none { return }
        unlink(index)
        link(index, atHeadOf: queue)
    }

    mutating func link(_ index: Int, atHeadOf queue: UInt8) {
        let q = Int(queue)
        let head = queues[q].head
        nodes[index].queue = queue
        nodes[index].prev = Self.none
        nodes[index].next = head
        if head != Self.none { nodes[head].prev = index } else { queues[q].tail = index }
        queues[q].head = index
        queues[q].count += 1
        queues[q].weight += nodes[index].weight
    }

    mutating func unlink(_ index: Int) {
        let node = nodes[index]
        let q = Int(node.queue)
        if node.prev != Self.none { nodes[node.prev].next = node.next } else { queues[q].head = node.next }
        if node.next != Self.none { nodes[node.next].prev = node.prev } else { queues[q].tail = node.prev }
        nodes[index].prev = Self.none
        nodes[index].next = Self.none
        queues[q].count -= 1
        queues[q].weight -= node.weight
    }
}

extension NodeStore: Sendable where Key: Sendable {}
