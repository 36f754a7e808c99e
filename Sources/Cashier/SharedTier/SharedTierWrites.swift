import CashierEntryFormat
import CashierPlatform
import Foundation

/// The writes and removals of every ``Cache`` of this process on one folder on their way to
/// their ``SharedTier``: queued in the order they landed locally, sent one at a time, off the
/// caller's thread. It lives in the folder's ``FolderState``, with the ledger: two instances on one
/// folder change one set of entries, so their changes reach the tier in one order, the
/// folder's (a removal by one is never overtaken by an earlier write of the other still on
/// its way, which would bring the removed value back).
///
/// - **Order.** Each change is queued under its key's lock (or the barrier of every key) in
///   the step that makes it locally, and the queue sends one change at a time, the next only
///   once the last has ended, even one cancelled at its timeout: a later change of a key never
///   overtakes an earlier one, whichever instance on the folder made either.
/// - **Superseded changes go unsent.** A change still queued when a later change, for the same
///   tier (``Destination``), of the same slot (a write), the same key (a removal) or every key
///   (``Cache/removeAll()``) comes is dropped: the tier ends as it would have, and a tier that is down or slow keeps the
///   queue at one change a key.
/// - **Failure is local.** A change that throws, or takes longer than the timeout, is reported
///   through `onEvent` as ``CacheEvent/failure(key:error:)`` of kind
///   ``CacheError/Kind/sharedTierUnavailable``; the caller saw no error. The ledger then keeps
///   this folder's reads of that key away from the shared tier (``SharedTierLedger``).
///
/// Holds no reference to the cache: changes queued before it went are still sent.
final class SharedTierWrites: Sendable {
    /// A change for the shared tier.
    enum Change: Sendable {
        /// Store the entry (its header and payload; the record's bytes are made when sent);
        /// a write of the app's also removes the key's other versions (`removingOthers`).
        case store(SharedSlot, header: EntryHeader, payload: Data, expiresAt: Date?, removingOthers: Bool)
        /// Remove every record of the key.
        case remove(String)
        /// Remove every record.
        case removeAll

        /// The key's name; `nil` for every key.
        var name: String? {
            switch self {
            case .store(let slot, _, _, _, _): slot.name
            case .remove(let name): name
            case .removeAll: nil
            }
        }

        /// Whether a change queued later than this one makes it moot.
        func isSuperseded(by later: Change) -> Bool {
            switch (self, later) {
            case (_, .removeAll): true
            // A store that removes other versions is superseded only by another that does.
            case (.store(let slot, _, _, _, let removing), .store(let laterSlot, _, _, _, let laterRemoving)):
                slot == laterSlot && (laterRemoving || !removing)
            case (_, .remove(let name)): self.name == name
            default: false
            }
        }
    }

    /// Where a change goes: one ``Cache``'s tier, its timeout and its event handler.
    struct Destination: Sendable {
        /// Tells destinations apart (by identity): only a change for the same one supersedes another.
        let id = Identity()
        final class Identity: Sendable {}
        let tier: any SharedTier
        let timeout: TimeInterval
        let onEvent: (@Sendable (CacheEvent) -> Void)?
    }

    private struct State {
        var queued: [(change: Change, destination: Destination)] = []
        /// Whether a task is sending the queue (one at a time).
        var isSending = false
        /// The timeout of the change being sent.
        var sendingTimeout: TimeInterval = 0
    }

    /// Which keys' records the folder's reads must not trust now.
    let ledger = SharedTierLedger()
    private let state = Locked(State())
    /// Entered for each change queued; left when it is superseded, sent, failed or timed out:
    /// what ``waitUntilSent()`` waits for.
    private let unsent = DispatchGroup()

    /// Queues `change`, dropping what it supersedes. Call holding its key's lock (or the
    /// barrier of every key, for ``Change/removeAll``), in the step that made it locally.
    func enqueue(_ change: Change, to destination: Destination) {
        unsent.enter()
        ledger.begin(change.name)
        let (superseded, startsSending) = state.withLock { state -> ([Change], Bool) in
            var superseded: [Change] = []
            state.queued.removeAll { queued in
                guard queued.destination.id === destination.id, queued.change.isSuperseded(by: change) else {
                    return false
                }
                superseded.append(queued.change)
                return true
            }
            state.queued.append((change, destination))
            defer { state.isSending = true }
            return (superseded, !state.isSending)
        }
        for change in superseded {
            ledger.end(change.name, reached: nil)
            unsent.leave()
        }
        if startsSending { Task { await self.sendQueued() } }
    }

    /// Blocks until every change queued so far has been sent, has failed or has timed out,
    /// and no longer than each one's timeout in turn and five seconds more (a tier that
    /// ignores cancellation, or a pool of threads all blocked, never blocks this for good).
    func waitUntilSent() {
        let timeouts = state.withLock { state in
            state.queued.map(\.destination.timeout) + (state.isSending ? [state.sendingTimeout] : [])
        }
        guard !timeouts.isEmpty else { return }
        let bound = timeouts.reduce(5) { $0 + ($1.isFinite ? min(max($1, 0), 3600) : 0) }
        _ = unsent.wait(timeout: .now() + bound)
    }

    /// Sends the queue, one change at a time, until it is empty.
    private func sendQueued() async {
        while let (change, destination) = nextChange() {
            await send(change, to: destination)
        }
    }

    private func nextChange() -> (Change, Destination)? {
        state.withLock { state in
            guard !state.queued.isEmpty else {
                state.isSending = false
                return nil
            }
            let next = state.queued.removeFirst()
            state.sendingTimeout = next.destination.timeout
            return next
        }
    }

    private func send(_ change: Change, to destination: Destination) async {
        let tier = destination.tier
        let (outcome, call) = await SharedTierCall.run(within: destination.timeout) {
            switch change {
            case .store(let slot, let header, let payload, let expiresAt, let removingOthers):
                let record = SharedRecord(header: header, payload: payload, expiresAt: expiresAt)
                if removingOthers {
                    try await tier.storeRemovingOtherVersions(record, in: slot)
                } else {
                    try await tier.store(record, in: slot)
                }
            case .remove(let name):
                try await tier.removeRecords(named: name)
            case .removeAll:
                try await tier.removeAllRecords()
            }
        }
        if case .failure(let error) = outcome { report(error, of: change, to: destination.onEvent) }
        if outcome.timedOut {
            // Reported and no longer waited for; the next change waits until this one ends.
            unsent.leave()
            let reached = await call.result.succeeded
            ledger.end(change.name, reached: reached)
        } else {
            ledger.end(change.name, reached: outcome.succeeded)
            unsent.leave()
        }
    }

    private func report(_ error: any Error, of change: Change, to onEvent: (@Sendable (CacheEvent) -> Void)?) {
        let what: String
        switch change {
        case .store(let slot, _, _, _, _): what = "storing \(slot) in the shared tier"
        case .remove: what = "removing its records from the shared tier"
        case .removeAll: what = "removing every record from the shared tier"
        }
        let failure = CacheError(kind: .sharedTierUnavailable, key: change.name, message: "\(what): \(error)")
        onEvent?(.failure(key: change.name, error: failure))
    }
}

extension SharedRecord {
    /// The record the disk tier stores for an entry (`EntryHeader`, OnDiskFormat): the header,
    /// its checksum computed over it and the payload, then the payload.
    init(header: EntryHeader, payload: Data, expiresAt: Date?) {
        var bytes = Data(capacity: header.length + payload.count)
        payload.withUnsafeBytes { bytes.append(contentsOf: header.encode(payload: $0)) }
        bytes.append(payload)
        self.init(bytes: bytes, expiresAt: expiresAt)
    }
}

extension Result {
    fileprivate var succeeded: Bool {
        if case .success = self { true } else { false }
    }

    fileprivate var timedOut: Bool {
        if case .failure(let error) = self { error is SharedTierCall.TimedOut } else { false }
    }
}
