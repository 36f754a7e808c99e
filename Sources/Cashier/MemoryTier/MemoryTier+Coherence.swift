import CashierPlatform
import Foundation

/// What a memory tier knows of its folder's store, so it never serves for long a value another
/// process has since replaced or removed (Cache+Coherence.swift has the store's version read).
///
/// Every ``MemoryTier/coherenceInterval`` at most, the first hit checks the store's
/// ``StoreVersion``; when it is not the one last seen, another process committed (a write, a
/// removal, a use it recorded) and the tier empties. Values loaded or written while a check
/// emptied the tier are not stored (``CoherenceTicket``): they may predate the other write.
struct Coherence {
    /// The ``MonotonicClock`` moment from which the next hit checks the store.
    var nextCheck: UInt64 = 0
    /// The store's version when the tier last checked; `nil` before the first check.
    var seen: StoreVersion?
    /// Counts the times the tier was emptied for another process's writes.
    var epoch: UInt64 = 0
    /// The same count, for tests and diagnostics.
    var drops: Int { Int(truncatingIfNeeded: epoch) }

    /// Whether the check is due at `now`; if so, the next one is due `interval` later, so one
    /// caller checks while the others go on.
    mutating func claimCheck(at now: UInt64, interval: UInt64) -> Bool {
        guard now >= nextCheck else { return false }
        nextCheck = now &+ interval
        return true
    }
}

/// The tier's ``Coherence/epoch`` before some disk work: a record that work produced is stored
/// only if the tier was not emptied meanwhile (``MemoryTier/insert(_:ticket:)``).
struct CoherenceTicket {
    var epoch: UInt64
    /// The folder had no store when the ticket was taken, so the tier has no baseline yet.
    var needsBaseline = false
}

extension MemoryTier {
    /// Whether the store is to be checked now (at most once a ``coherenceInterval``); for the
    /// reads that do not go through ``hit(_:valueType:schemaVersion:appVersion:checkedAt:copy:)``.
    func claimCoherenceCheck() -> Bool {
        guard let interval = coherenceInterval else { return false }
        let now = MonotonicClock.nanoseconds()
        return withRecords(orIfNone: false) { $0.coherence.claimCheck(at: now, interval: interval) }
    }

    /// Makes the next hit check the store again: the check due now gave up its turn.
    func retryCoherenceSoon() {
        withRecords(orIfNone: ()) { $0.coherence.nextCheck = 0 }
    }

    /// The ticket for disk work whose result this tier will store, or `nil` when it has no
    /// baseline yet (the caller takes one with ``adoptBaseline(_:)`` before the disk work).
    func coherenceTicket() -> CoherenceTicket? {
        withRecords(orIfNone: nil) { state in
            state.coherence.seen == nil ? nil : CoherenceTicket(epoch: state.coherence.epoch)
        }
    }

    /// Takes `version`, read before any value of the store came into the tier, as the one the
    /// next check compares with (unless a check took one meanwhile); returns the ticket.
    func adoptBaseline(_ version: StoreVersion) -> CoherenceTicket {
        withRecords(orIfNone: CoherenceTicket(epoch: 0)) { state in
            if state.coherence.seen == nil { state.coherence.seen = version }
            return CoherenceTicket(epoch: state.coherence.epoch)
        }
    }

    /// Whether `version` is the one the tier last saw (nothing to drop).
    func isCurrent(_ version: StoreVersion) -> Bool {
        withRecords(orIfNone: true) { $0.coherence.seen == version }
    }

    /// Takes `version`, just read from the store, as current: when it differs from the one
    /// last seen, every record goes (another process may have replaced or removed any of
    /// them) and the epoch moves on. Returns the number of records dropped.
    ///
    /// A store that cannot say (``StoreVersion/unknown``: its folder removed, say) changes
    /// nothing: what the tier holds is not known to be stale, and a memory hit still answers
    /// without the disk. The first version seen, with no baseline before (the folder had no
    /// store when this tier's values came), is taken as the baseline.
    @discardableResult
    func adopt(_ version: StoreVersion) -> Int {
        withRecords(orIfNone: 0) { state in
            if case .unknown = version { return 0 }
            if !version.isStore, state.coherence.seen == nil { return 0 }
            let seen = state.coherence.seen
            state.coherence.seen = version
            if seen == nil || seen == version { return 0 }
            let dropped = state.records.count
            state.unlinkAll()
            state.coherence.epoch &+= 1
            return dropped
        }
    }

    /// The times this tier emptied itself because another process changed the store.
    var coherenceDrops: Int { withRecords(orIfNone: 0) { $0.coherence.drops } }
}

/// The clock the memory tier's coherence checks are spaced by (CashierPlatform's coarse one).
enum MonotonicClock {
    @inline(__always)
    static func nanoseconds() -> UInt64 { Platform.coarseMonotonicNanoseconds() }
}
