import CashierEntryFormat
import CashierPlatform
import Foundation
import Testing

@testable import Cashier

/// One store several servers share, in memory, as servers share one PostgreSQL: each server's
/// cache reaches it through a ``FakeSharedTier`` of its own (`tier(_:)`), and a change one
/// makes is streamed to the others' ``SharedTier/changes()``.
///
/// It counts what it is asked (stores and reads per slot, removals, notifications), and can
/// fail every call, hang every call until the call is cancelled, hold stores at a gate (every
/// server's or one's), damage a record, end the streams, and send a change as if another
/// server had made it.
///
/// The ordered requirements (``SharedTier/store(_:in:removingOtherVersions:)``,
/// ``SharedTier/removeRecords(named:writtenBefore:)``) keep the newest change by its time, as
/// the protocol asks: a store lands only over an older record and after the key's last removal
/// (its tombstone, kept here for good), and tells the others only what changed something. The
/// original ones (`store(_:in:)`, `removeRecords(named:)`) keep the change that arrives last.
final class SharedBacking: Sendable {
    enum Mode: Sendable {
        case working
        /// Every call throws ``Unavailable``.
        case failing
        /// Every call waits until it is cancelled (the cache's timeout cancels it).
        case hanging
    }

    struct Unavailable: Error, CustomStringConvertible {
        var description: String { "the fake shared tier is down" }
    }

    private struct State {
        var records: [SharedSlot: SharedRecord] = [:]
        var stores: [SharedSlot: Int] = [:]
        var reads: [SharedSlot: Int] = [:]
        var removals: [String] = []
        var removalsOfAll = 0
        /// The time of each key's latest removal (ordered removals and stores removing others).
        var tombstones: [String: Date] = [:]
        /// Stores refused as older than what the tier held.
        var superseded = 0
        /// Changes streamed to other servers.
        var notifications = 0
        /// Keys whose ordered stores and removals always throw, and those calls by key.
        var failingNames: Set<String> = []
        var orderedCalls: [String: Int] = [:]
        var mode = Mode.working
        /// Whether an ordered store that landed tells the others its record (``SharedChange/stored(_:_:)``).
        var announcesRecords = false
        /// Whether changes land unheard, as while every instance's stream is disconnected.
        var isMuted = false
        /// How many changes one `apply` takes (`SharedTier.maximumBatch`), and the names of each
        /// call's changes, in order.
        var maximumBatch = 1
        var batches: [[String]] = []
        /// Open streams by server, each by its id.
        var streams: [Int: [Int: AsyncStream<SharedChange>.Continuation]] = [:]
        var nextID = 0
        /// How many times each server asked for ``SharedTier/changes()``.
        var subscriptions: [Int: Int] = [:]
        /// Streams that ended (finished here or dropped by their consumer).
        var endedStreams = 0
        var hanging: [Int: CheckedContinuation<Void, any Error>] = [:]
        var cancelledBeforeHanging: Set<Int> = []
        /// The servers whose stores wait at the gate; `nil`: every server's.
        var gatesStores = false
        var gatedServers: Set<Int>? = nil
        var atGate: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Locked(State())

    /// The tier server `server` reaches the store through.
    func tier(_ server: Int) -> FakeSharedTier { FakeSharedTier(backing: self, server: server) }

    var mode: Mode {
        get { state.withLock { $0.mode } }
        set { state.withLock { $0.mode = newValue } }
    }

    /// Whether an ordered store that landed tells the others the record it stored
    /// (``SharedChange/stored(_:_:)``, as PostgreSQL's notifications do) rather than the key's name.
    var announcesRecords: Bool {
        get { state.withLock { $0.announcesRecords } }
        set { state.withLock { $0.announcesRecords = newValue } }
    }

    func stores(in slot: SharedSlot) -> Int { state.withLock { $0.stores[slot] ?? 0 } }
    func reads(in slot: SharedSlot) -> Int { state.withLock { $0.reads[slot] ?? 0 } }
    var removals: [String] { state.withLock { $0.removals } }
    var removalsOfAll: Int { state.withLock { $0.removalsOfAll } }
    func subscriptions(of server: Int) -> Int { state.withLock { $0.subscriptions[server] ?? 0 } }
    var endedStreams: Int { state.withLock { $0.endedStreams } }
    func record(in slot: SharedSlot) -> SharedRecord? { state.withLock { $0.records[slot] } }
    func tombstone(of name: String) -> Date? { state.withLock { $0.tombstones[name] } }
    var supersededStores: Int { state.withLock { $0.superseded } }
    var notifications: Int { state.withLock { $0.notifications } }
    /// Ordered stores and removals of `name` asked for, those that threw included.
    func orderedCalls(of name: String) -> Int { state.withLock { $0.orderedCalls[name] ?? 0 } }

    /// Makes every ordered store and removal of `name` throw, whatever the mode: a key the
    /// tier refuses for good.
    func failCalls(of name: String) { state.withLock { _ = $0.failingNames.insert(name) } }

    /// Undoes ``failCalls(of:)``: the tier takes `name`'s ordered calls again (it was down for that key only).
    func restoreCalls(of name: String) { state.withLock { _ = $0.failingNames.remove(name) } }

    /// Counts an ordered call of `name`; throws for a key ``failCalls(of:)`` named.
    fileprivate func enterOrdered(_ name: String) throws {
        let fails = state.withLock { state in
            state.orderedCalls[name, default: 0] += 1
            return state.failingNames.contains(name)
        }
        if fails { throw Unavailable() }
    }

    /// The value the record in `slot` holds, decoded as a read would (`nil`: none, or damaged).
    func value<V: Codable & Sendable>(_ type: V.Type, in slot: SharedSlot) -> V? {
        guard let record = record(in: slot),
            case .entry(let header, let payload) = DiskTier.readEntry(
                fromRecord: [UInt8](record.bytes), wantsPayload: true)
        else { return nil }
        return try? ValueCoding.decode(V.self, from: payload ?? Data(), format: header.format)
    }

    /// Flips one byte of the record in `slot` (its last: the payload's, which the checksum covers).
    func damage(_ slot: SharedSlot) {
        state.withLock { state in
            guard var record = state.records[slot], !record.bytes.isEmpty else { return }
            record.bytes[record.bytes.count - 1] ^= 0xFF
            state.records[slot] = record
        }
    }

    /// How many changes one `apply` of the tiers takes (1: one call per change, as by default).
    var maximumBatch: Int {
        get { state.withLock { $0.maximumBatch } }
        set { state.withLock { $0.maximumBatch = newValue } }
    }

    /// The names of the changes of each `apply`, in the order called.
    var batches: [[String]] { state.withLock { $0.batches } }

    fileprivate func noteBatch(_ names: [String]) { state.withLock { $0.batches.append(names) } }

    /// Whether changes land without any stream hearing of them, as while the instances'
    /// streams are disconnected (a reconnection then says what they missed).
    var isMuted: Bool {
        get { state.withLock { $0.isMuted } }
        set { state.withLock { $0.isMuted = newValue } }
    }

    /// Sends `change` to server `server`'s streams, as if another server had made it.
    func send(_ change: SharedChange, to server: Int) {
        let streams = state.withLock { Array(($0.streams[server] ?? [:]).values) }
        for stream in streams { stream.yield(change) }
    }

    /// Ends every stream of server `server`, as an implementation that lost its connection for good.
    func endStreams(of server: Int) {
        let streams = state.withLock { Array(($0.streams[server] ?? [:]).values) }
        for stream in streams { stream.finish() }
    }

    /// Holds every store (of `servers` only, when given) at a gate from now until ``openGate()``.
    func closeGate(for servers: Set<Int>? = nil) {
        state.withLock { state in
            state.gatesStores = true
            state.gatedServers = servers
        }
    }

    /// How many stores wait at the gate.
    var storesAtGate: Int { state.withLock { $0.atGate.count } }

    func openGate() {
        let waiting = state.withLock { state in
            state.gatesStores = false
            defer { state.atGate = [] }
            return state.atGate
        }
        for store in waiting { store.resume() }
    }

    // MARK: What the tiers call

    /// Fails or hangs as the mode says; returns when the call may go on.
    fileprivate func enter() async throws {
        switch mode {
        case .working: return
        case .failing: throw Unavailable()
        case .hanging: try await hang()
        }
    }

    private func hang() async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let cancelled = state.withLock { state in
                    if state.cancelledBeforeHanging.remove(id) != nil { return true }
                    state.hanging[id] = continuation
                    return false
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                if let continuation = state.hanging.removeValue(forKey: id) { return continuation }
                state.cancelledBeforeHanging.insert(id)
                return nil
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    fileprivate func passGate(server: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let passes = state.withLock { state in
                let gated = state.gatesStores && state.gatedServers.map { $0.contains(server) } != false
                if gated { state.atGate.append(continuation) }
                return !gated
            }
            if passes { continuation.resume() }
        }
    }

    fileprivate func read(_ slot: SharedSlot) -> SharedRecord? {
        state.withLock { state in
            state.reads[slot, default: 0] += 1
            return state.records[slot]
        }
    }

    /// Stores `record` in `slot` (and, `removingOthers`, removes the other slots of its key in
    /// the same step, as one statement would); counted as a store, not a removal.
    fileprivate func store(_ record: SharedRecord, in slot: SharedSlot, removingOthers: Bool = false, by server: Int) {
        state.withLock { state in
            if removingOthers { state.records = state.records.filter { $0.key.name != slot.name } }
            state.records[slot] = record
            state.stores[slot, default: 0] += 1
        }
        broadcast(.key(slot.name), from: server)
    }

    fileprivate func removeRecords(named name: String, by server: Int) {
        state.withLock { state in
            state.records = state.records.filter { $0.key.name != name }
            state.removals.append(name)
        }
        broadcast(.key(name), from: server)
    }

    /// The ordered store: lands only when neither the slot's record nor the key's last removal
    /// is newer than `record`; `removingOthers` removes the other slots' older records and
    /// keeps the time as a removal's, whether the store lands or not.
    fileprivate func storeInOrder(
        _ record: SharedRecord, in slot: SharedSlot, removingOthers: Bool, by server: Int
    ) -> SharedStoreOutcome {
        let (outcome, changed, announces) = state.withLock { state -> (SharedStoreOutcome, Bool, Bool) in
            var changed = false
            if removingOthers {
                changed = removeInOrder(named: slot.name, before: record.writtenAt, except: slot, &state)
            }
            let isNewer =
                (state.records[slot].map { $0.writtenAt <= record.writtenAt } ?? true)
                && (state.tombstones[slot.name].map { $0 <= record.writtenAt } ?? true)
            guard isNewer else {
                state.superseded += 1
                return (.superseded, changed, false)
            }
            state.records[slot] = record
            state.stores[slot, default: 0] += 1
            return (.stored, true, state.announcesRecords)
        }
        if changed { broadcast(announces ? .stored(slot, record) : .key(slot.name), from: server) }
        return outcome
    }

    /// The ordered removal: the key's records written no later than `date` go, and `date`
    /// stays as its tombstone.
    fileprivate func removeRecordsInOrder(named name: String, before date: Date, by server: Int) {
        let changed = state.withLock { state in
            state.removals.append(name)
            return removeInOrder(named: name, before: date, except: nil, &state)
        }
        if changed { broadcast(.key(name), from: server) }
    }

    private func removeInOrder(named name: String, before date: Date, except kept: SharedSlot?, _ state: inout State)
        -> Bool
    {
        let gone = state.records.filter { $0.key.name == name && $0.key != kept && $0.value.writtenAt <= date }
        for slot in gone.keys { state.records[slot] = nil }
        let isNewest = state.tombstones[name].map { $0 < date } ?? true
        if isNewest { state.tombstones[name] = date }
        return !gone.isEmpty || isNewest
    }

    fileprivate func removeAllRecords(by server: Int) {
        state.withLock { state in
            state.records = [:]
            state.removalsOfAll += 1
        }
        broadcast(.all, from: server)
    }

    /// Streams `change` to every server but `server`.
    private func broadcast(_ change: SharedChange, from server: Int) {
        let streams = state.withLock { state -> [AsyncStream<SharedChange>.Continuation] in
            guard !state.isMuted else { return [] }
            state.notifications += 1
            return state.streams.filter { $0.key != server }.flatMap { $0.value.values }
        }
        for stream in streams { stream.yield(change) }
    }

    fileprivate func changes(for server: Int) -> AsyncStream<SharedChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: SharedChange.self)
        let id = state.withLock { state in
            state.nextID += 1
            state.subscriptions[server, default: 0] += 1
            state.streams[server, default: [:]][state.nextID] = continuation
            return state.nextID
        }
        continuation.onTermination = { [self] _ in
            state.withLock { state in
                state.streams[server]?[id] = nil
                state.endedStreams += 1
            }
        }
        return stream
    }
}

/// One server's way to a ``SharedBacking``.
struct FakeSharedTier: SharedTier {
    let backing: SharedBacking
    let server: Int

    func record(in slot: SharedSlot) async throws -> SharedRecord? {
        try await backing.enter()
        return backing.read(slot)
    }

    func store(_ record: SharedRecord, in slot: SharedSlot) async throws {
        try await backing.enter()
        await backing.passGate(server: server)
        backing.store(record, in: slot, by: server)
    }

    func storeRemovingOtherVersions(_ record: SharedRecord, in slot: SharedSlot) async throws {
        try await backing.enter()
        await backing.passGate(server: server)
        backing.store(record, in: slot, removingOthers: true, by: server)
    }

    func store(
        _ record: SharedRecord, in slot: SharedSlot, removingOtherVersions: Bool
    ) async throws -> SharedStoreOutcome {
        try await backing.enter()
        try backing.enterOrdered(slot.name)
        await backing.passGate(server: server)
        return backing.storeInOrder(record, in: slot, removingOthers: removingOtherVersions, by: server)
    }

    /// It keeps the newest change of a key, whatever order they arrive in.
    var ordersChanges: Bool { true }

    func removeRecords(named name: String, writtenBefore date: Date) async throws {
        try await backing.enter()
        try backing.enterOrdered(name)
        backing.removeRecordsInOrder(named: name, before: date, by: server)
    }

    func removeRecords(named name: String) async throws {
        try await backing.enter()
        backing.removeRecords(named: name, by: server)
    }

    func removeAllRecords() async throws {
        try await backing.enter()
        backing.removeAllRecords(by: server)
    }

    func changes() -> AsyncStream<SharedChange> { backing.changes(for: server) }

    var maximumBatch: Int { backing.maximumBatch }

    /// Notes the batch, then applies each change as its own call would, stopping at the first
    /// that throws (a tier whose statement fails changes nothing: the fake's calls fail whole
    /// when the fake is down, which is what the tests make fail).
    func apply(_ changes: [SharedTierChange]) async throws -> [SharedStoreOutcome] {
        backing.noteBatch(changes.map(\.name))
        return try await applyOneByOne(changes)
    }
}

/// Waits, without blocking a thread, until `condition` holds; records an issue naming `what`
/// after `seconds` of polls without it. For what a cache's background task does (the change
/// stream), which no event announces; the bound is generous on purpose, it measures no speed.
///
/// The bound counts polls (one each 2 ms), not the clock: while the cooperative pool's threads
/// (two on a two-core machine) are held by tests of other suites, neither this task nor the
/// background task it waits for runs, and a deadline by the clock could pass before either
/// ran again (as `waitForBackgroundWork()`'s bound did, see ``Cache/waitForSharedTierWork(sourceLocation:)``).
@discardableResult
func eventually(
    _ what: String, seconds: Double = 30, sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () -> Bool
) async -> Bool {
    for _ in 0..<max(1, Int(seconds / 0.002)) {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 2_000_000)
    }
    if condition() { return true }
    Issue.record("\(what) did not happen within \(seconds) seconds", sourceLocation: sourceLocation)
    return false
}

extension Cache {
    /// ``waitForBackgroundWork()`` for a test of the shared tier: first waits, without holding
    /// a thread, until no change for the tier is queued or being sent. The changes go from a
    /// task of the cooperative pool (two threads on a two-core machine), and the library's wait
    /// holds its caller's thread for each change's timeout and five seconds at most (it must not
    /// wait for good on a pool it blocks). With the other thread held meanwhile by a test of
    /// another suite (the process tests block theirs for long), the sending task may not start
    /// within that bound, and the test went on to read a tier the change had not reached (one
    /// CI run of about thirty). The bound here is generous on purpose: it measures no speed.
    func waitForSharedTierWork(sourceLocation: SourceLocation = #_sourceLocation) async {
        await eventually("the changes for the shared tier sent", seconds: 600, sourceLocation: sourceLocation) {
            shared?.writes.queue.isIdle ?? true
        }
        waitForBackgroundWork()
    }
}
