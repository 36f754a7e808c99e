import Foundation

/// The disk tier's eviction, simulated over the store's index (issue 26): no policy object in
/// memory, only each entry's columns (`id`, the rowid in insertion order; `last_use`;
/// `frequency`; `size`), a use recorded as `recordUses(_:at:)` does (at most once per
/// granularity per entry), and a sweep when the total is over the limit that deletes
/// candidates, in an order SQL can express over those columns, down to 90% of the limit.
///
/// `CashierReplay disk-candidates` prints what each candidate order scores; the winner is the
/// engine's `StoreEvictionOrder.frequencyAware`, which ``DiskReplay`` runs through a real store.
enum DiskCandidates {
    /// One row of the simulated index.
    struct Row: Sendable {
        var id: Int64
        var lastUse: Int64
        var frequency: Int
        /// The use before the last (a column the schema does not have: LRU-2).
        var previousUse: Int64 = .min
        /// When the row was written (a column the schema does not have).
        var written: Int64 = 0
        /// Never used since written, but its key is in the ghost (an evicted key written again).
        var returning = false
        var size = 1
        /// In the small queue: never used since written, and not returning.
        var isSmall: Bool { frequency == 0 && !returning }
    }

    typealias Entry = (key: UInt64, row: Row)

    /// What a sweep's query may read besides the rows: the clock and the limit.
    struct Context: Sendable {
        var now: Int64
        var limit: Int
    }

    /// How a ghost of evicted keys (a table the schema does not have) is kept.
    enum Ghost: Sendable {
        /// The write looks the key up: found, it leaves the ghost and the row is written with
        /// frequency 1. At most `share` times the limit's keys.
        case atWrite(share: Double)
        /// The sweep looks keys up: first it gives every never-used row whose key is in the
        /// ghost frequency 1, taking the key out. At most `share` times the rows left.
        case atSweep(share: Double)
        /// The store's: the sweep's order counts a never-used row whose key is in the ghost as
        /// reused (``Row/returning``); keys stay until trimmed to `share` times the rows left,
        /// and a trimmed key whose row is still never used gives it frequency 1.
        case inOrder(share: Double)

        var share: Double {
            switch self {
            case .atWrite(let share), .atSweep(let share), .inOrder(let share): share
            }
        }

        var label: String {
            switch self {
            case .atWrite(let share): "ghost \(format(share))x limit, looked up by the write"
            case .atSweep(let share): "ghost \(format(share))x rows, looked up by the sweep"
            case .inOrder(let share): "ghost \(format(share))x rows, in the order"
            }
        }
    }

    /// A candidate order: sorts the unlocked rows into eviction order.
    struct Candidate: Sendable {
        let name: String
        /// Whether the store would need a column or table it does not have.
        var schemaChange = false
        var ghost: Ghost? = nil
        /// Halve every frequency (`UPDATE entry SET frequency = frequency / 2`) after this many
        /// recorded uses per entry of the limit.
        var aging: Double? = nil
        let order: @Sendable ([Entry], Context) -> [Entry]
    }

    // MARK: - The orders

    /// `ORDER BY` a key of the row, then the store's tie-breaks (`size, id`).
    static func sorted(_ entries: [Entry], by key: (Row) -> Double) -> [Entry] {
        entries.map { (key($0.row), $0) }.sorted { a, b in
            if a.0 != b.0 { return a.0 < b.0 }
            if a.1.row.size != b.1.row.size { return a.1.row.size < b.1.row.size }
            return a.1.row.id < b.1.row.id
        }.map(\.1)
    }

    static let lru = Candidate(name: "LRU: last_use") { entries, _ in sorted(entries) { Double($0.lastUse) } }

    static let fifo = Candidate(name: "FIFO: id") { entries, _ in sorted(entries) { Double($0.id) } }

    /// Fewest uses first (counted up to `cap`), least recently used among equals.
    static func lfu(cap: Int, aging: Double? = nil) -> Candidate {
        Candidate(
            name: "min(frequency, \(cap)), last_use" + (aging.map { "; halved every \(format($0))x limit uses" } ?? ""),
            aging: aging
        ) { entries, _ in
            sorted(entries) { Double(min($0.frequency, cap)) * 1e12 + Double($0.lastUse) }
        }
    }

    /// Recency with a bonus for frequency: `last_use + β · age · min(frequency, cap)`, where
    /// `age` is the oldest unlocked row's (`now - min(last_use)`), LRU's eviction age.
    static func ageBonus(beta: Double, cap: Int) -> Candidate {
        Candidate(name: "last_use + \(format(beta)) · age · min(frequency, \(cap))") { entries, context in
            let oldest = entries.map(\.row.lastUse).min() ?? context.now
            let age = Double(context.now - oldest)
            return sorted(entries) { Double($0.lastUse) + beta * age * Double(min($0.frequency, cap)) }
        }
    }

    /// The time `limit` writes take, from the rows never used (whose `last_use` is their
    /// write): `(now - min(last_use)) · limit / count(*) WHERE frequency = 0`. A clock of the
    /// writes, which rows kept for their frequency cannot stretch (the oldest row's age can).
    static func writeCycle(_ entries: [Entry], _ context: Context) -> Double {
        let fresh = entries.filter { $0.row.frequency == 0 }
        guard let oldest = fresh.map(\.row.lastUse).min() else {
            return Double(context.now - (entries.map(\.row.lastUse).min() ?? context.now))
        }
        return Double(context.now - oldest) * Double(context.limit) / Double(fresh.count)
    }

    /// `last_use + β · cycle · min(frequency, cap)`, the cycle of ``writeCycle(_:_:)``.
    static func cycleBonus(beta: Double, cap: Int) -> Candidate {
        Candidate(name: "last_use + \(format(beta)) · write cycle · min(frequency, \(cap))") { entries, context in
            let cycle = writeCycle(entries, context)
            return sorted(entries) { Double($0.lastUse) + beta * cycle * Double(min($0.frequency, cap)) }
        }
    }

    /// Hyperbolic caching's priority (Blankstein et al., ATC '17), lowest first: uses (up to
    /// `cap`) plus one over the time since the last use, or (`sinceWrite`) since the write;
    /// with `quota`, the small queue's rows past it first (as in ``queues(quota:ghost:main:)``).
    static func hyperbolic(cap: Int, sinceWrite: Bool = false, quota: Double? = nil) -> Candidate {
        Candidate(
            name: "(min(frequency, \(cap)) + 1) / (now - \(sinceWrite ? "written" : "last_use") + 1)"
                + (quota.map { "; small past \(format($0)) of limit first" } ?? ""),
            schemaChange: sinceWrite
        ) { entries, context in
            let overQuota = quota.map { smallPastQuota(entries, $0 * Double(context.limit)) } ?? []
            return sorted(entries) { row in
                let since = Double(context.now - (sinceWrite ? row.written : row.lastUse) + 1)
                return (overQuota.contains(row.id) ? -1e12 : 0) + Double(min(row.frequency, cap) + 1) / since
            }
        }
    }

    /// LRU-2: the oldest second-to-last use first; rows used once by their one use.
    static let lru2 = Candidate(name: "LRU-2: previous_use, last_use", schemaChange: true) { entries, _ in
        sorted(entries) { row in row.previousUse == .min ? Double(row.lastUse) - 1e12 : Double(row.previousUse) }
    }

    /// The ids of the small queue's rows past `bytes`, counted from the newest.
    static func smallPastQuota(_ entries: [Entry], _ bytes: Double) -> Set<Int64> {
        let small = entries.filter { $0.row.isSmall }.sorted {
            ($0.row.lastUse, $0.row.size, $0.row.id) > ($1.row.lastUse, $1.row.size, $1.row.id)
        }
        var running = 0
        var past = Set<Int64>()
        for entry in small {
            running += entry.row.size
            if Double(running) > bytes { past.insert(entry.row.id) }
        }
        return past
    }

    /// How main is ordered in ``queues(quota:ghost:main:)``.
    enum Main: Sendable {
        case leastRecentlyUsed
        /// `last_use + β · cycle · min(frequency, cap)`.
        case cycleBonus(beta: Double, cap: Int)
        /// Rows unused for `k · cycle · min(frequency, cap)` go with the small queue's past its quota.
        case stale(k: Double, cap: Int)

        var label: String {
            switch self {
            case .leastRecentlyUsed: "last_use"
            case .cycleBonus(let beta, let cap): "last_use + \(format(beta)) · write cycle · min(frequency, \(cap))"
            case .stale(let k, let cap):
                "last_use, stale after \(format(k)) · write cycle · min(frequency, \(cap)) first"
            }
        }
    }

    /// S3-FIFO's queues as a column: `frequency = 0` is the small queue (never used since
    /// written), the rest main. First the small queue's rows, oldest first, except the newest
    /// `quota` of the limit; then main by `main`; then the rest of the small queue.
    static func queues(quota: Double, ghost: Ghost? = nil, main: Main = .leastRecentlyUsed) -> Candidate {
        Candidate(
            name: "small past \(format(quota)) of limit, main by \(main.label), small"
                + (ghost.map { "; \($0.label)" } ?? ""),
            schemaChange: ghost != nil, ghost: ghost
        ) { entries, context in
            let overQuota = smallPastQuota(entries, quota * Double(context.limit))
            let cycle = writeCycle(entries, context)
            return sorted(entries) { row in
                // Classes 0, 1, 2 far apart; within a class the class's order.
                if row.isSmall { return (overQuota.contains(row.id) ? 0 : 2e12) + Double(row.lastUse) }
                switch main {
                case .leastRecentlyUsed: return 1e12 + Double(row.lastUse)
                case .cycleBonus(let beta, let cap):
                    return 1e12 + Double(row.lastUse) + beta * cycle * Double(min(row.frequency, cap))
                case .stale(let k, let cap):
                    let stale = Double(context.now - row.lastUse) > k * cycle * Double(min(row.frequency, cap))
                    return (stale ? 0 : 1e12) + Double(row.lastUse)
                }
            }
        }
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%g", value)
    }

    // MARK: - The simulation

    /// The hit ratio of `candidate` on `trace`, with the limit the trace's capacity (each
    /// object weighs 1), a use recorded when `granularity` requests or more have passed since
    /// the row's `last_use`, and sweeps down to `target` of the limit (1: one at a time).
    static func hitRatio(_ candidate: Candidate, _ trace: Trace, granularity: Int64 = 1, target: Double = 0.9)
        -> Double
    {
        var rows: [UInt64: Row] = [:]
        var nextID: Int64 = 1
        // The ghost: keys in eviction order, and each key's place (a key put back moves).
        var ghostOrder: [UInt64] = []
        var ghostHead = 0
        var ghost: [UInt64: Int] = [:]
        var usesSinceAging = 0
        var hits = 0
        let keep = Int((Double(trace.capacity) * target).rounded(.down))
        for (index, key) in trace.requests.enumerated() {
            let now = Int64(index)
            if var row = rows[key] {
                hits += 1
                if now - row.lastUse >= granularity {
                    row.previousUse = row.lastUse
                    row.lastUse = now
                    row.frequency = min(row.frequency + 1, 255)
                    rows[key] = row
                    usesSinceAging += 1
                }
                continue
            }
            var frequency = 0
            if case .atWrite = candidate.ghost, ghost.removeValue(forKey: key) != nil { frequency = 1 }
            rows[key] = Row(id: nextID, lastUse: now, frequency: frequency, written: now)
            nextID += 1
            if rows.count > trace.capacity {
                switch candidate.ghost {
                case .inOrder:
                    for (key, row) in rows where row.frequency == 0 { rows[key]!.returning = ghost[key] != nil }
                case .atSweep:
                    for (key, row) in rows where row.frequency == 0 && ghost[key] != nil {
                        rows[key]!.frequency = 1
                        ghost[key] = nil
                    }
                case .atWrite, nil: break
                }
                let order = candidate.order(
                    rows.map { (key: $0.key, row: $0.value) }, Context(now: now, limit: trace.capacity))
                for victim in order.prefix(rows.count - keep) {
                    rows[victim.key] = nil
                    guard candidate.ghost != nil, victim.row.isSmall else { continue }
                    ghost[victim.key] = ghostOrder.count
                    ghostOrder.append(victim.key)
                }
                if let kind = candidate.ghost {
                    let limit: Int
                    if case .atWrite = kind {
                        limit = Int(kind.share * Double(trace.capacity))
                    } else {
                        limit = Int(kind.share * Double(rows.count))
                    }
                    while ghost.count > limit {
                        let old = ghostOrder[ghostHead]
                        if ghost[old] == ghostHead {
                            ghost[old] = nil
                            if case .inOrder = kind, rows[old]?.frequency == 0 { rows[old]!.frequency = 1 }
                        }
                        ghostHead += 1
                    }
                }
            }
            if let aging = candidate.aging, Double(usesSinceAging) >= aging * Double(trace.capacity) {
                for key in rows.keys { rows[key]!.frequency /= 2 }
                usesSinceAging = 0
            }
        }
        return Double(hits) / Double(trace.requests.count)
    }

    /// The orders tried, by family, with the parameters that told the most.
    static var candidates: [Candidate] {
        var list = [lru, fifo, lru2, lfu(cap: 1), lfu(cap: 255)]
        for aging in [1.0, 4, 10] { list.append(lfu(cap: 255, aging: aging)) }
        list += [ageBonus(beta: 0.25, cap: 3), ageBonus(beta: 1, cap: 1)]
        list += [cycleBonus(beta: 1, cap: 3), cycleBonus(beta: 2, cap: 3)]
        list += [hyperbolic(cap: 3), hyperbolic(cap: 15), hyperbolic(cap: 15, sinceWrite: true)]
        list += [hyperbolic(cap: 15, quota: 0.1)]
        for quota in [0.0, 0.1, 0.2, 0.25] { list.append(queues(quota: quota)) }
        list += [
            queues(quota: 0.2, main: .cycleBonus(beta: 1, cap: 3)), queues(quota: 0.1, main: .stale(k: 4, cap: 3)),
            queues(quota: 0.2, main: .stale(k: 2, cap: 1)),
        ]
        list += [queues(quota: 0.05, ghost: .atWrite(share: 0.5)), queues(quota: 0.1, ghost: .atWrite(share: 1))]
        list += [queues(quota: 0.05, ghost: .atSweep(share: 0.5))]
        for share in [0.25, 0.5, 0.75, 1] { list.append(queues(quota: 0.05, ghost: .inOrder(share: share))) }
        list += [queues(quota: 0.03, ghost: .inOrder(share: 0.5)), queues(quota: 0.1, ghost: .inOrder(share: 0.5))]
        list += [queues(quota: 0.05, ghost: .inOrder(share: 0.5), main: .cycleBonus(beta: 1, cap: 3))]
        return list
    }

    /// Prints each candidate's hit ratio on the disk-tier traces: every request recorded and
    /// sweeps to 90%, then one at a time, then a use recorded at most once per 30 requests.
    static func run(only: String?) {
        let traces = Traces.all(tiers: ["disk"])
        let settings: [(granularity: Int64, target: Double)] = [(1, 0.9), (1, 1), (30, 0.9)]
        var header = ["candidate"]
        for setting in settings {
            for trace in traces {
                header.append("\(trace.name) \(setting.target < 1 ? "sweep" : "one") g\(setting.granularity)")
            }
        }
        print(header.joined(separator: "\t"))
        for candidate in candidates where only.map({ candidate.name.contains($0) }) ?? true {
            var cells = [candidate.name + (candidate.schemaChange ? " [schema]" : "")]
            for setting in settings {
                for trace in traces {
                    cells.append(
                        Replay.format(
                            hitRatio(candidate, trace, granularity: setting.granularity, target: setting.target)))
                }
            }
            print(cells.joined(separator: "\t"))
        }
    }
}
