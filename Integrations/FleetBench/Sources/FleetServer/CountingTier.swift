import Cashier
import Foundation
import Synchronization

/// A shared tier that counts what this instance asks of the one it wraps: stores per slot
/// (what "no key written more than once per version per expiry" is checked against) and reads.
final class CountingTier: SharedTier {
    let base: any SharedTier
    private let counts = Mutex<Counts>(Counts())

    struct Counts: Sendable {
        var stores: [String: Int] = [:]
        var reads = 0
    }

    init(_ base: any SharedTier) { self.base = base }

    var snapshot: Counts { counts.withLock { $0 } }

    /// The base's: what Cashier sends again after a failure depends on it.
    var ordersChanges: Bool { base.ordersChanges }

    func record(in slot: SharedSlot) async throws -> SharedRecord? {
        counts.withLock { $0.reads += 1 }
        return try await base.record(in: slot)
    }

    func store(_ record: SharedRecord, in slot: SharedSlot) async throws {
        try await base.store(record, in: slot)
        counted(slot)
    }

    func storeRemovingOtherVersions(_ record: SharedRecord, in slot: SharedSlot) async throws {
        try await base.storeRemovingOtherVersions(record, in: slot)
        counted(slot)
    }

    /// The store Cashier calls: forwarded whole, so the base orders it and its outcome comes back
    /// (the defaults would call the unordered `store(_:in:)` and answer `.stored`). Counted only
    /// when it stored.
    func store(
        _ record: SharedRecord, in slot: SharedSlot, removingOtherVersions: Bool
    ) async throws -> SharedStoreOutcome {
        let outcome = try await base.store(record, in: slot, removingOtherVersions: removingOtherVersions)
        if outcome == .stored { counted(slot) }
        return outcome
    }

    func removeRecords(named name: String, writtenBefore date: Date) async throws {
        try await base.removeRecords(named: name, writtenBefore: date)
    }

    /// The base's: Cashier sends it several changes a call when it takes them.
    var maximumBatch: Int { base.maximumBatch }

    /// Forwarded whole, as the ordered store; each store counted when it stored.
    func apply(_ changes: [SharedTierChange]) async throws -> [SharedStoreOutcome] {
        let outcomes = try await base.apply(changes)
        for (change, outcome) in zip(changes, outcomes) {
            if case .store(_, let slot, _) = change, outcome == .stored { counted(slot) }
        }
        return outcomes
    }

    func removeRecords(named name: String) async throws { try await base.removeRecords(named: name) }
    func removeAllRecords() async throws { try await base.removeAllRecords() }

    /// The base's changes; a reconnection is noted in the server's log, with the time and how
    /// many keys it named, to line it up with the harness's.
    func changes() -> AsyncStream<SharedChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: SharedChange.self)
        let base = base.changes()
        let task = Task {
            for await change in base {
                let time = String(format: "%.3f", Date().timeIntervalSince1970)
                switch change {
                case .reconnected(let names):
                    FileHandle.standardError.write(Data("\(time) reconnected: \(names.count) keys\n".utf8))
                case .all: FileHandle.standardError.write(Data("\(time) reconnected: all\n".utf8))
                default: break
                }
                continuation.yield(change)
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    private func counted(_ slot: SharedSlot) {
        counts.withLock { $0.stores["\(slot.name) \(slot.version)", default: 0] += 1 }
    }
}
