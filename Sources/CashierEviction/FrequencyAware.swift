/// The adaptive policy: S3-FIFO or W-TinyLFU over one slab of nodes, whichever a
/// miniature simulation of both on a sample of the keys finds hitting more lately.
///
/// Neither fixed policy wins everywhere: S3-FIFO follows a moving working set quickly
/// (its small queue demotes new keys fast and promotes what is read twice), W-TinyLFU
/// holds a steady part of a loop its sketch finds no less frequent than what it keeps.
/// So this policy runs one of them and, for a sample of keys (one in `sampling`, chosen
/// by hash), replays every request through small copies of both (Waldspurger et al.'s
/// miniature simulation, ATC '17), each at the same fraction of the keys held; when the
/// other's decayed hit count leads by a margin, it switches.
///
/// Switching keeps every handle: the two share queue numbers (S3-FIFO's small queue
/// is W-TinyLFU's window, its main queue W-TinyLFU's probation), so a switch relabels
/// nothing but moves W-TinyLFU's protected keys into main. The frequency sketch counts
/// every request in both modes. A hit costs a bit or a list move, a sketch increment
/// and, for a sampled key, two small simulations.
package struct FrequencyAware<Key: Hashable>: ReplacementPolicy {
    private var s3fifo = S3FIFO<Key>()
    private var tinyLFU = WindowTinyLFU<Key>()
    private(set) package var mode = FrequencyAwareMode.s3fifo
    private var simulation = MiniatureSimulation()
    /// How many switches were made (for the benchmark's report).
    private(set) package var switches = 0
    /// Whether anything was evicted since the policy was made or emptied. Until then no
    /// choice was made that the sketch or the simulation could inform: a hit only sets
    /// S3-FIFO's bits, a miss costs nothing, so a tier that never fills (the memory tier
    /// with no count limit, below its cost limit) pays a bit per hit and no more.
    private var hasEvicted = false
    /// How many more sampled requests the simulation replays: each eviction grants
    /// ``simulationCreditPerEviction``. A tier that keeps hitting (it no longer evicts, so
    /// no choice is being made) stops paying for the simulation, which at small sizes,
    /// where the simulated cache is a few keys, replays a miss for most sampled hits.
    private var simulationCredit = 0
    private static var simulationCreditPerEviction: Int { 64 }

    package init() {}

    package var count: Int { mode == .s3fifo ? s3fifo.count : tinyLFU.count }
    package var totalWeight: Int { mode == .s3fifo ? s3fifo.totalWeight : tinyLFU.totalWeight }

    package mutating func insert(_ key: Key, weight: Int) -> Handle {
        simulation.resize(forKeys: count + 1)
        switch mode {
        case .s3fifo:
            if s3fifo.count >= tinyLFU.sketch.capacity { tinyLFU.sketch.ensureCapacity(s3fifo.count + 1) }
            return s3fifo.insert(key, weight: weight)
        case .tinyLFU:
            return tinyLFU.insert(key, weight: weight)
        }
    }

    package mutating func recordHit(_ handle: Handle) {
        guard hasEvicted else { return s3fifo.recordHit(handle) }
        let hash: Int
        switch mode {
        case .s3fifo:
            hash = s3fifo.store[handle].hash
            tinyLFU.sketch.increment(hash)
            s3fifo.recordHit(handle)
        case .tinyLFU:
            hash = tinyLFU.store[handle].hash
            tinyLFU.recordHit(handle)
        }
        if simulation.samples(hash), simulationCredit > 0 {
            simulationCredit -= 1
            observe(hash)
        }
    }

    package mutating func recordMiss(_ key: Key) {
        guard hasEvicted else { return }
        tinyLFU.recordMiss(key)
        let hash = key.hashValue
        if simulation.samples(hash), simulationCredit > 0 {
            simulationCredit -= 1
            observe(hash)
        }
    }

    package mutating func remove(_ handle: Handle) {
        switch mode {
        case .s3fifo: s3fifo.remove(handle)
        case .tinyLFU: tinyLFU.remove(handle)
        }
    }

    package mutating func evict(where isEvictable: (Key) -> Bool) -> Key? {
        hasEvicted = true
        simulationCredit = min(simulationCredit + Self.simulationCreditPerEviction, 1 << 20)
        return switch mode {
        case .s3fifo: s3fifo.evict(where: isEvictable)
        case .tinyLFU: tinyLFU.evict(where: isEvictable)
        }
    }

    package mutating func removeAll() {
        s3fifo.removeAll()
        tinyLFU.removeAll()
        simulation = MiniatureSimulation()
        mode = .s3fifo
        hasEvicted = false
        simulationCredit = 0
    }

    private mutating func observe(_ hash: Int) {
        guard let better = simulation.access(hash), better != mode else { return }
        switches += 1
        mode = better
        var nodes = NodeStore<Key>()
        switch better {
        case .tinyLFU:
            swap(&nodes, &s3fifo.store)
            nodes.resetBits()
            swap(&nodes, &tinyLFU.store)
        case .s3fifo:
            swap(&nodes, &tinyLFU.store)
            nodes.resetBits()
            // Protected keys join main, the most recently used nearest its head.
            while nodes.queues[2].count > 0 { nodes.move(nodes.queues[2].tail, toHeadOf: 1) }
            swap(&nodes, &s3fifo.store)
        }
    }
}

/// The policy ``FrequencyAware`` runs.
package enum FrequencyAwareMode: Sendable { case s3fifo, tinyLFU }

/// Both policies at a fraction of the size over a sample of the keys (their hashes),
/// with hit counts that decay so the comparison follows the workload as it changes.
struct MiniatureSimulation {
    /// One key in `sampling` (a power of two) is simulated.
    private(set) var sampling = minimumSampling
    private var capacity = 0
    private var s3fifo = S3FIFO<Int>()
    private var tinyLFU = WindowTinyLFU<Int>()
    private var s3fifoHandles: [Int: Int] = [:]
    private var tinyLFUHandles: [Int: Int] = [:]
    private var s3fifoHits = 0.0
    private var tinyLFUHits = 0.0
    private var requests = 0.0
    private var current = FrequencyAwareMode.s3fifo

    /// The simulated cache's size: about 256 keys once the real one holds more.
    private static var targetCapacity: Int { 256 }
    /// At least one key in this many is left out, however small the cache: a sampled hit
    /// replays through both simulations (tens of nanoseconds), which a memory hit of a
    /// small tier, all sampled at rate 1, paid on every read.
    private static var minimumSampling: Int { 8 }

    func samples(_ hash: Int) -> Bool {
        // The sketch and the sampling should not pick the same keys: use the top bits.
        Int(truncatingIfNeeded: UInt64(bitPattern: Int64(hash)) >> 40) & (sampling - 1) == 0
    }

    /// Follows the real policy's size; starts over when the sampling rate must change.
    mutating func resize(forKeys keys: Int) {
        var rate = Self.minimumSampling
        while keys / (rate * 2) >= Self.targetCapacity { rate *= 2 }
        if rate != sampling {
            self = MiniatureSimulation()
            sampling = rate
        }
        capacity = max(capacity, keys / sampling)
    }

    /// Replays a sampled request through both; the mode to switch to, if one leads by enough.
    mutating func access(_ hash: Int) -> FrequencyAwareMode? {
        guard capacity > 0 else { return nil }
        // Counts decay with a horizon of a few simulated caches' worth of requests.
        let decay = 1 - 1 / Double(8 * capacity)
        s3fifoHits *= decay
        tinyLFUHits *= decay
        requests = requests * decay + 1
        if Self.replay(hash, &s3fifo, &s3fifoHandles, capacity) { s3fifoHits += 1 }
        if Self.replay(hash, &tinyLFU, &tinyLFUHandles, capacity) { tinyLFUHits += 1 }
        let margin = 0.01 * requests
        switch current {
        case .s3fifo where tinyLFUHits > s3fifoHits + margin: current = .tinyLFU
        case .tinyLFU where s3fifoHits > tinyLFUHits + margin: current = .s3fifo
        default: return nil
        }
        return current
    }

    private static func replay<P: ReplacementPolicy>(
        _ hash: Int, _ policy: inout P, _ handles: inout [Int: Int], _ capacity: Int
    ) -> Bool where P.Key == Int {
        if let handle = handles[hash] {
            policy.recordHit(handle)
            return true
        }
        policy.recordMiss(hash)
        while policy.count >= capacity, let victim = policy.evict() { handles[victim] = nil }
        handles[hash] = policy.insert(hash, weight: 1)
        return false
    }
}

// Sendable when its keys are, so a tier can keep it in its locked state.
extension FrequencyAware: Sendable where Key: Sendable {}
