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
/// - **Times.** Each change carries the moment it was made locally (a store, its record's
///   ``SharedRecord/writtenAt``; a removal, its time), so a tier that orders changes keeps the
///   newest of several instances' (``SharedTier``). A store the tier refuses as older
///   (``SharedStoreOutcome/superseded``) drops the destination's own copy of the key, unless a
///   later change of the key is queued here (``Destination/dropsCopies``).
/// - **Failure is local.** A change that throws, or takes longer than the timeout, is reported
///   through `onEvent` as ``CacheEvent/failure(key:error:)`` of kind
///   ``CacheError/Kind/sharedTierUnavailable``; the caller saw no error. The ledger then keeps
///   this folder's reads of that key away from the shared tier (``SharedTierLedger``).
/// - **Failed changes are sent again** (``FailedChanges``): the last failed change of each key,
///   with its original time, on a timer that backs off (the destination's ``Destination/retryDelay``,
///   doubled at each failure, up to a minute), and at once when a change reaches the tier again
///   or the tier's stream says it is back (``resendFailed(_:)``), so the tier does not keep a
///   record older than this folder's change after an outage; a newer change made elsewhere
///   meanwhile still wins. A change is never given up while its key has no later one: a store
///   refused too often becomes a removal of what is older, so the other instances fetch the
///   key rather than read the record from before it.
///
/// Holds no reference to the cache: changes queued before it went are still sent.
final class SharedTierWrites: Sendable {
    /// A change for the shared tier.
    enum Change: Sendable {
        /// Store the entry (its header and payload; the record's bytes are made when sent),
        /// written at `writtenAt`; a write of the app's also removes the key's other versions
        /// (`removingOthers`).
        case store(
            SharedSlot, header: EntryHeader, payload: Data, expiresAt: Date?, removingOthers: Bool, writtenAt: Date)
        /// Remove the records of the key written before the removal was made (`at`).
        case remove(String, at: Date)
        /// Remove every record.
        case removeAll

        /// The key's name; `nil` for every key.
        var name: String? {
            switch self {
            case .store(let slot, _, _, _, _, _): slot.name
            case .remove(let name, _): name
            case .removeAll: nil
            }
        }

        /// When the change was made here: a store's record's time, a removal's; `nil` for
        /// ``removeAll`` (its caller notes its time, ``SharedTierLedger/noteChange(_:at:)``).
        var date: Date? {
            switch self {
            case .store(_, _, _, _, _, let writtenAt): writtenAt
            case .remove(_, let date): date
            case .removeAll: nil
            }
        }

        /// Whether a change queued later than this one makes it moot.
        func isSuperseded(by later: Change) -> Bool {
            switch (self, later) {
            case (_, .removeAll): true
            // A store that removes other versions is superseded only by another that does.
            case (.store(let slot, _, _, _, let removing, _), .store(let laterSlot, _, _, _, let laterRemoving, _)):
                slot == laterSlot && (laterRemoving || !removing)
            case (_, .remove(let name, _)): self.name == name
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
        /// How long after a change first failed it is sent again on the timer, in seconds; each
        /// further failure doubles it, up to ``FailedChanges/longestRetryDelay``.
        var retryDelay: TimeInterval = 1
        /// Drops the destination cache's own copy of a key whose store the tier refused as
        /// older; set once the cache is whole.
        let dropsCopies = CopyDropper()

        /// The destination's identity as a dictionary key.
        var key: ObjectIdentifier { ObjectIdentifier(id) }
    }

    /// Why failed changes are sent again (``resendFailed(_:)``).
    enum ResendReason {
        /// The tier's stream is back after a disconnection (``SharedChange/all``): every
        /// failed change goes.
        case reconnected
        /// A change reached the tier: the failed changes still within their first
        /// ``FailedChanges/maximumResends`` resends go (one the tier refuses for good must not
        /// cost a failing call after every change that gets through).
        case changeReached
        /// The retry timer: the failed changes whose time to go again has come.
        case timer
    }

    /// What drops a cache's copy of a key: a closure set when the cache starts, holding it weakly.
    final class CopyDropper: Sendable {
        private let drop = Locked<(@Sendable (String) -> Void)?>(nil)

        func set(_ drop: @escaping @Sendable (String) -> Void) { self.drop.withLock { $0 = drop } }

        func callAsFunction(_ name: String) { drop.withLock { $0 }?(name) }
    }

    private struct State {
        var queued = ChangeQueue()
        /// Whether a task is sending the queue (one at a time).
        var isSending = false
        /// The timeout of the change being sent.
        var sendingTimeout: TimeInterval = 0
        /// The last change of each key that failed to reach its tier, to send again.
        var failed = FailedChanges()
        /// When the retry timer waiting now fires (`DispatchTime` uptime nanoseconds), if one is.
        var retryAt: UInt64?
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
        if let name = change.name, let date = change.date { ledger.noteChange(name, at: date) }
        let (superseded, startsSending) = state.withLock { state -> ([Change], Bool) in
            let superseded = state.queued.removeSuperseded(by: change, for: destination)
            // What failed before a removal of every record needs no resending: the removal
            // clears it from the tier (and a resend after it would bring it back).
            if change.name == nil { state.failed.forgetAll(of: destination) }
            state.queued.append(Queued(change: change, destination: destination))
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
            state.queued.timeouts + (state.isSending ? [state.sendingTimeout] : [])
        }
        guard !timeouts.isEmpty else { return }
        let bound = timeouts.reduce(5) { $0 + ($1.isFinite ? min(max($1, 0), 3600) : 0) }
        _ = unsent.wait(timeout: .now() + bound)
    }

    /// How many failed changes are kept to be sent again (for tests).
    var keptFailures: Int { state.withLock { $0.failed.count } }

    /// Whether a change of `name` is queued and not sent yet. Call holding the key's lock, to
    /// know that none will be until the lock is released.
    func hasQueuedChange(of name: String) -> Bool {
        state.withLock { state in state.queued.contains(name) }
    }

    /// Queues again, with its original time, the last failed change (``FailedChanges``) of each
    /// key that has no change on its way and that `reason` sends: all when the tier's stream
    /// said ``SharedChange/all`` after a reconnection (the default), those not given up on a
    /// quick resend when a change reached the tier, those whose time came on the timer. None
    /// for a tier that a removal of every record is on its way to: sent after it, a change
    /// made before it would bring back what it removed.
    func resendFailed(_ reason: ResendReason = .reconnected) {
        let now = DispatchTime.now().uptimeNanoseconds
        let startsSending = state.withLock { state -> Bool in
            // Taken out while the queue is read (no copy of either: the queue grows next).
            var failed = FailedChanges()
            swap(&failed, &state.failed)
            let taken = failed.take(for: reason, at: now) { name, destination in
                !state.queued.contains(name) && !state.queued.removesAll(for: destination) && !ledger.isPending(name)
            }
            swap(&failed, &state.failed)
            guard !taken.isEmpty else { return false }
            for resent in taken {
                unsent.enter()
                ledger.begin(resent.change.name)
                state.queued.append(
                    Queued(change: resent.change, destination: resent.destination, resends: resent.resends))
            }
            defer { state.isSending = true }
            return !state.isSending
        }
        if startsSending { Task { await self.sendQueued() } }
    }

    /// Sends the queue, one change at a time, until it is empty.
    private func sendQueued() async {
        while let next = nextChange() {
            await send(next)
        }
    }

    private func nextChange() -> Queued? {
        state.withLock { state in
            guard let next = state.queued.popFirst() else {
                state.isSending = false
                return nil
            }
            state.sendingTimeout = next.destination.timeout
            return next
        }
    }

    private func send(_ queued: Queued) async {
        let (change, destination) = (queued.change, queued.destination)
        let tier = destination.tier
        let (outcome, call) = await SharedTierCall.run(within: destination.timeout) { () -> SharedStoreOutcome in
            switch change {
            case .store(let slot, let header, let payload, let expiresAt, let removingOthers, let writtenAt):
                let record = SharedRecord(header: header, payload: payload, expiresAt: expiresAt, writtenAt: writtenAt)
                return try await tier.store(record, in: slot, removingOtherVersions: removingOthers)
            case .remove(let name, let date):
                try await tier.removeRecords(named: name, writtenBefore: date)
            case .removeAll:
                try await tier.removeAllRecords()
            }
            return .stored
        }
        if case .failure(let error) = outcome { report(error, of: change, to: destination.onEvent) }
        let reached: Bool
        let due: UInt64?
        if outcome.timedOut {
            // Reported and no longer waited for; the next change waits until this one ends.
            unsent.leave()
            let result = await call.result
            reached = result.succeeded
            due = end(queued, reached: reached, superseded: (try? result.get()) == .superseded)
        } else {
            reached = outcome.succeeded
            due = end(queued, reached: reached, superseded: (try? outcome.get()) == .superseded)
        }
        // Queued before this change counts as sent: ``waitUntilSent()`` waits for them too.
        if reached, state.withLock({ $0.failed.hasQuickResends }) { resendFailed(.changeReached) }
        if let due { scheduleRetry(at: due) }
        if !outcome.timedOut { unsent.leave() }
    }

    /// Starts the retry timer for `due` (a kept change's time to go again), unless one fires by
    /// then. The timer sends what is due, then waits for the next kept change's time. It holds
    /// the queue weakly: once the folder's last cache is gone, its failed changes are not sent.
    private func scheduleRetry(at due: UInt64) {
        let starts = state.withLock { state -> Bool in
            guard state.retryAt.map({ $0 > due }) ?? true else { return false }
            state.retryAt = due
            return true
        }
        guard starts else { return }
        Task { [weak self] in
            let now = DispatchTime.now().uptimeNanoseconds
            if due > now { try? await Task.sleep(nanoseconds: due - now) }
            self?.retryRound(scheduledAt: due)
        }
    }

    /// A round of the retry timer scheduled for `due`: what is due goes, and the timer waits
    /// for the next.
    private func retryRound(scheduledAt due: UInt64) {
        state.withLock { state in
            if state.retryAt == due { state.retryAt = nil }
        }
        resendFailed(.timer)
        if let next = state.withLock({ $0.failed.earliestDue }) { scheduleRetry(at: next) }
    }

    /// Settles a change that was sent: the ledger learns whether it reached the tier, a failed
    /// change is kept to send again (one that reached it forgets the key's earlier failure), and
    /// a store the tier refused as older drops the destination's own copy of the key. Returns
    /// when a kept change goes again on the timer.
    private func end(_ queued: Queued, reached: Bool, superseded: Bool) -> UInt64? {
        let (change, destination) = (queued.change, queued.destination)
        let now = DispatchTime.now().uptimeNanoseconds
        let due = state.withLock { state -> UInt64? in
            guard let name = change.name else {
                state.queued.endRemovalOfAll(for: destination)
                if reached { state.failed.forgetAll(of: destination) }
                return nil
            }
            if reached {
                state.failed.forget(name, of: destination)
                return nil
            }
            // A removal of every record queued after it makes it moot.
            guard !state.queued.removesAll(for: destination) else { return nil }
            return state.failed.keep(change, for: destination, resends: queued.resends, at: now)
        }
        if superseded, let name = change.name { destination.dropsCopies(name) }
        ledger.end(change.name, reached: reached)
        return due
    }

    private func report(_ error: any Error, of change: Change, to onEvent: (@Sendable (CacheEvent) -> Void)?) {
        let what: String
        switch change {
        case .store(let slot, _, _, _, _, _): what = "storing \(slot) in the shared tier"
        case .remove: what = "removing its records from the shared tier"
        case .removeAll: what = "removing every record from the shared tier"
        }
        let failure = CacheError(kind: .sharedTierUnavailable, key: change.name, message: "\(what): \(error)")
        onEvent?(.failure(key: change.name, error: failure))
    }
}

extension SharedTierWrites {
    /// A change in the queue: where it goes, and how often it was sent again after failing.
    struct Queued {
        var change: Change
        var destination: Destination
        var resends = 0
    }

    /// The changes waiting to be sent, in order, with what the hot questions need counted as
    /// they come and go: which keys have a change queued (asked for every resend candidate and
    /// by reads), and which tiers a removal of every record is on its way to (queued or being
    /// sent). Taking the first is O(1), and queuing a change of a key none queued is too: after
    /// an outage the queue may hold tens of thousands of changes.
    struct ChangeQueue {
        private var items: [Queued] = []
        private var head = 0
        private var names: [String: Int] = [:]
        private var removalsOfAll: [ObjectIdentifier: Int] = [:]

        var timeouts: [TimeInterval] { items[head...].map(\.destination.timeout) }

        func contains(_ name: String) -> Bool { names[name] != nil }

        /// Whether a removal of every record is queued for `destination`, or being sent to it.
        func removesAll(for destination: Destination) -> Bool { removalsOfAll[destination.key] != nil }

        mutating func append(_ queued: Queued) {
            items.append(queued)
            if let name = queued.change.name {
                names[name, default: 0] += 1
            } else {
                removalsOfAll[queued.destination.key, default: 0] += 1
            }
        }

        /// The first change; a removal of every record still counts as on its way until
        /// ``endRemovalOfAll(for:)``.
        mutating func popFirst() -> Queued? {
            guard head < items.count else { return nil }
            let first = items[head]
            head += 1
            if head == items.count {
                items.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 1024, head * 2 >= items.count {
                items.removeSubrange(0..<head)
                head = 0
            }
            if let name = first.change.name { uncount(name) }
            return first
        }

        /// A removal of every record for `destination` was sent (or failed).
        mutating func endRemovalOfAll(for destination: Destination) {
            guard let count = removalsOfAll[destination.key] else { return }
            removalsOfAll[destination.key] = count > 1 ? count - 1 : nil
        }

        /// Removes the changes for `destination` that `change`, queued after them, makes moot
        /// (``Change/isSuperseded(by:)``), and answers them.
        mutating func removeSuperseded(by change: Change, for destination: Destination) -> [Change] {
            if let name = change.name, names[name] == nil { return [] }
            if head > 0 {
                items.removeSubrange(0..<head)
                head = 0
            }
            var superseded: [Change] = []
            items.removeAll { queued in
                guard queued.destination.id === destination.id, queued.change.isSuperseded(by: change) else {
                    return false
                }
                superseded.append(queued.change)
                return true
            }
            for change in superseded {
                if let name = change.name { uncount(name) } else { endRemovalOfAll(for: destination) }
            }
            return superseded
        }

        private mutating func uncount(_ name: String) {
            guard let count = names[name] else { return }
            names[name] = count > 1 ? count - 1 : nil
        }
    }

    /// The last change of each key that failed to reach its tier (of each key and tier, when
    /// caches on one folder have tiers of their own), kept to be sent again with its original
    /// time (``SharedTierWrites/resendFailed(_:)``), each with its time to go again on the timer:
    /// the destination's ``Destination/retryDelay`` after a first failure, doubled at each
    /// resend that failed, up to ``longestRetryDelay``.
    ///
    /// A change is never given up while its key has no later change: a tier that was down for
    /// an hour must end holding nothing older than this folder's last change of each key.
    /// - A store that failed ``maximumResends`` resends, or whose payload would take the stores
    ///   kept past ``byteLimit``, is kept as a removal of the key at the store's time instead (a
    ///   name and a time), which clears what is older in the tier, so the other instances fetch
    ///   the key rather than read the record from before the failure. A store the tier refuses
    ///   for good (too large for its bound, say) so leaves no older record behind it.
    /// - For a tier that does not order changes (``SharedTier/ordersChanges``), where the change
    ///   arriving last wins, a failed store is kept as a removal at once: sent late, the store
    ///   could replace a newer one made elsewhere meanwhile, while a removal at worst costs the
    ///   other instances a fetch.
    /// - After ``maximumResends`` resends, a change goes again only on the timer (at most once
    ///   a ``longestRetryDelay``) or after a reconnection, no longer after each change that
    ///   gets through: one the tier refuses for good must not cost a failing call each time.
    /// - Bounded: at most ``countLimit`` keys; past it, a change already past its quick resends
    ///   is forgotten to make room, or if none is, the new failure is not kept (the ledger still
    ///   keeps this folder's reads of such a key away from the tier until a later change of it
    ///   gets through).
    struct FailedChanges {
        /// The most bytes of payload the stores kept to send again hold: 4 MiB.
        static let byteLimit = 4 << 20
        /// How often a failed change is sent again at once when another change reaches the
        /// tier; a store is then kept as a removal (sent as often again), and a removal is left
        /// to the timer.
        static let maximumResends = 3
        /// The longest wait between two resends of a change on the timer: a minute.
        static let longestRetryDelay: TimeInterval = 60
        /// The most keys whose failed change is kept.
        static let countLimit = 65_536

        struct Failed {
            var change: Change
            var destination: Destination
            /// How often it was sent again already.
            var resends: Int
            /// When it goes again on the timer (`DispatchTime` uptime nanoseconds).
            var due: UInt64
        }

        /// A key's failed change for one tier.
        private struct Slot: Hashable {
            var name: String
            var destination: ObjectIdentifier
        }

        private var changes: [Slot: Failed] = [:]
        private var bytes = 0
        /// The slots of `changes` still within their quick resends: what a change reaching the
        /// tier sends again, without a pass over those left to the timer.
        private var quick: Set<Slot> = []

        var isEmpty: Bool { changes.isEmpty }

        var count: Int { changes.count }

        /// Whether a kept change goes again when another change reaches the tier.
        var hasQuickResends: Bool { !quick.isEmpty }

        /// The earliest time a kept change goes again on the timer (a pass over them: once a
        /// timer round).
        var earliestDue: UInt64? { changes.values.lazy.map(\.due).min() }

        /// Keeps `change` (of a key), which failed at `now`, as its key's last failed change for
        /// `destination`, replacing an earlier one; `resends`: how often it was sent again
        /// already. Returns when it goes again on the timer; nil if it could not be kept.
        mutating func keep(_ change: Change, for destination: Destination, resends: Int, at now: UInt64) -> UInt64? {
            guard let name = change.name else { return nil }
            let slot = Slot(name: name, destination: destination.key)
            forget(slot)
            guard changes.count < Self.countLimit || makeRoom() else { return nil }
            var (kept, resends) = (change, resends)
            if case .store(_, _, let payload, _, _, let writtenAt) = change {
                if resends < Self.maximumResends, bytes + payload.count <= Self.byteLimit,
                    destination.tier.ordersChanges
                {
                    bytes += payload.count
                } else {
                    kept = .remove(name, at: writtenAt)
                    if resends >= Self.maximumResends { resends = 0 }
                }
            }
            let due = now &+ Self.nanoseconds(Self.retryDelay(after: resends, first: destination.retryDelay))
            changes[slot] = Failed(change: kept, destination: destination, resends: resends, due: due)
            if resends < Self.maximumResends { quick.insert(slot) }
            return due
        }

        /// The wait before the resend that follows `resends` failed ones: `first`, doubled at
        /// each, up to ``longestRetryDelay``.
        static func retryDelay(after resends: Int, first: TimeInterval) -> TimeInterval {
            let first = first.isFinite ? min(max(first, 0.001), longestRetryDelay) : longestRetryDelay
            return min(first * pow(2, Double(min(max(resends, 0), 16))), longestRetryDelay)
        }

        private static func nanoseconds(_ seconds: TimeInterval) -> UInt64 { UInt64(seconds * 1e9) }

        /// Forgets a change past its quick resends, to keep another: whether one was.
        private mutating func makeRoom() -> Bool {
            guard quick.count < changes.count,
                let slot = changes.first(where: { $0.value.resends >= Self.maximumResends })?.key
            else { return false }
            forget(slot)
            return true
        }

        /// A change of `name` reached `destination`'s tier: its earlier failure there needs no
        /// resending.
        mutating func forget(_ name: String, of destination: Destination) {
            forget(Slot(name: name, destination: destination.key))
        }

        private mutating func forget(_ slot: Slot) {
            guard let old = changes.removeValue(forKey: slot) else { return }
            if case .store(_, _, let payload, _, _, _) = old.change { bytes -= payload.count }
            if old.resends < Self.maximumResends { quick.remove(slot) }
        }

        /// A removal of every record reached `destination`'s tier, or is on its way there.
        mutating func forgetAll(of destination: Destination) {
            for slot in changes.keys where slot.destination == destination.key { forget(slot) }
        }

        /// Removes and answers the changes `reason` sends at `now` (``ResendReason``) of the
        /// keys and tiers `isFree` accepts, each counted as sent again once more. A change due
        /// on the timer whose key is not free waits another ``Destination/retryDelay``.
        mutating func take(
            for reason: ResendReason, at now: UInt64, where isFree: (String, Destination) -> Bool
        ) -> [(change: Change, destination: Destination, resends: Int)] {
            let slots: [Slot]
            switch reason {
            case .reconnected: slots = Array(changes.keys)
            case .changeReached: slots = Array(quick)
            // Those due within the coming tenth of a second too: one round for many.
            case .timer: slots = changes.compactMap { slot, failed in failed.due <= now &+ 100_000_000 ? slot : nil }
            }
            return slots.compactMap { slot in
                guard let taken = changes[slot] else { return nil }
                guard isFree(slot.name, taken.destination) else {
                    if reason == .timer {
                        let wait = Self.retryDelay(after: 0, first: taken.destination.retryDelay)
                        changes[slot]?.due = now &+ Self.nanoseconds(wait)
                    }
                    return nil
                }
                forget(slot)
                return (taken.change, taken.destination, taken.resends + 1)
            }
        }
    }
}

extension SharedRecord {
    /// The record the disk tier stores for an entry (`EntryHeader`, OnDiskFormat): the header,
    /// its checksum computed over it and the payload, then the payload.
    init(header: EntryHeader, payload: Data, expiresAt: Date?, writtenAt: Date) {
        var bytes = Data(capacity: header.length + payload.count)
        payload.withUnsafeBytes { bytes.append(contentsOf: header.encode(payload: $0)) }
        bytes.append(payload)
        self.init(bytes: bytes, expiresAt: expiresAt, writtenAt: writtenAt)
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
