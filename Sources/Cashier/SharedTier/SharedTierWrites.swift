import CashierEntryFormat
import CashierPlatform
import Foundation

/// The writes and removals of every ``Cache`` of this process on one folder on their way to
/// their ``SharedTier``: queued in the order they landed locally, sent one call at a time (of one
/// change, or of several changes of distinct keys to a tier that takes them: ``SharedTier/apply(_:)``), off the
/// caller's thread. It lives in the folder's ``FolderState``, with the ledger: two instances on one
/// folder change one set of entries, so their changes reach the tier in one order, the
/// folder's (a removal by one is never overtaken by an earlier write of the other still on
/// its way, which would bring the removed value back).
///
/// - **Order.** Each change is queued under its key's lock (or the barrier of every key) in
///   the step that makes it locally, and the queue makes one call at a time, the next only
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
///   doubled at each failure, up to a minute), and at once when a change reaches the tier again,
///   the tier answers a read (``tierAnswered()``) or its stream says it is back
///   (``resendFailed(_:)``), so the tier does not keep a record older than this folder's
///   change after an outage; a newer change made elsewhere
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

        /// The change as a tier's ``SharedTier/apply(_:)`` takes it; `nil` for ``removeAll``,
        /// which goes on its own.
        var tierChange: SharedTierChange? {
            switch self {
            case .store(let slot, let header, let payload, let expiresAt, let removingOthers, let writtenAt):
                .store(
                    SharedRecord(header: header, payload: payload, expiresAt: expiresAt, writtenAt: writtenAt),
                    in: slot, removingOtherVersions: removingOthers)
            case .remove(let name, let date): .removal(named: name, writtenBefore: date)
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
        /// How many changes one call to the tier takes (``SharedTier/maximumBatch``, at least 1).
        var maximumBatch: Int { max(1, tier.maximumBatch) }

        /// The destination's identity as a dictionary key.
        var key: ObjectIdentifier { ObjectIdentifier(id) }
    }

    /// Why failed changes are sent again (``resendFailed(_:)``).
    enum ResendReason {
        /// The tier's stream is back after a disconnection (``SharedChange/all`` or
        /// ``SharedChange/reconnected(changed:)``): every
        /// failed change goes.
        case reconnected
        /// A change reached the tier: the failed changes still within their first
        /// ``FailedChanges/maximumResends`` resends since the tier was last back go (one the
        /// tier refuses for good must not cost a failing call after every change that gets
        /// through).
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

    /// Whether no change is queued or being sent (for tests, which wait for it without holding
    /// a thread of the pool the sending task needs).
    var isIdle: Bool { state.withLock { $0.queued.isEmpty && !$0.isSending } }

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
                    Queued(
                        change: resent.change, destination: resent.destination, resends: resent.resends,
                        sinceBack: resent.sinceBack, solo: resent.solo))
            }
            defer { state.isSending = true }
            return !state.isSending
        }
        if startsSending { Task { await self.sendQueued() } }
    }

    /// The tier answered a read: it is reachable again, so the failed changes within their quick
    /// resends go again at once, as when a change reaches it. After an outage, a change that
    /// failed once more just after the reconnection (calls on connections to the server that
    /// went down fail for a moment) otherwise waited for the timer, doubled during the outage,
    /// or for a change of this folder to get through: one that only read served, and left the
    /// other instances reading, the older record (FleetBench's outage runs under load).
    func tierAnswered() {
        if state.withLock({ $0.failed.hasQuickResends }) { resendFailed(.changeReached) }
    }

    /// Sends the queue until it is empty: one change at a time, or, to a tier that takes
    /// several at once (``SharedTier/maximumBatch``), the changes queued one after another for it,
    /// of distinct keys, in one call (``nextBatch()``).
    private func sendQueued() async {
        while let batch = nextBatch() {
            if batch.count == 1 { await send(batch[0]) } else { await send(batch) }
        }
    }

    /// The first change queued, and after it, for a tier that takes several in one call, the
    /// changes that follow it in the queue for the same tier, up to its
    /// ``SharedTier/maximumBatch``, until one of a key already taken, a removal of every record, a
    /// change for another tier or one that goes alone (``Queued/solo``): a prefix of the queue, so
    /// the order the tier sees is the queue's, and changes of one key never share a call (nor one
    /// of them its outcome).
    private func nextBatch() -> [Queued]? {
        state.withLock { state in
            guard let first = state.queued.popFirst() else {
                state.isSending = false
                return nil
            }
            var batch = [first]
            let maximum = first.solo ? 1 : first.destination.maximumBatch
            if let name = first.change.name, maximum > 1 {
                var names: Set<String> = [name]
                while batch.count < maximum, let next = state.queued.first, !next.solo,
                    next.destination.id === first.destination.id, let name = next.change.name,
                    names.insert(name).inserted
                {
                    batch.append(next)
                    _ = state.queued.popFirst()
                }
            }
            state.sendingTimeout = Self.timeout(of: batch)
            return batch
        }
    }

    /// The bound of one call sending `batch`: the destination's timeout, an eighth more for each
    /// change after the first (a call of 64 changes waits 8.9 times as long as one of one).
    static func timeout(of batch: [Queued]) -> TimeInterval {
        batch[0].destination.timeout * (1 + Double(batch.count - 1) / 8)
    }

    private func send(_ queued: Queued) async {
        let (change, destination) = (queued.change, queued.destination)
        let tier = destination.tier
        let (outcome, call) = await SharedTierCall.run(within: destination.timeout) { () -> SharedStoreOutcome in
            // The store or removal the change stands for (``SharedTier/applyOneByOne(_:)``).
            guard let change = change.tierChange else {
                try await tier.removeAllRecords()
                return .stored
            }
            return try await tier.applyOneByOne([change])[0]
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

    /// Sends `batch` (changes of distinct keys, for one tier; ``nextBatch()``) in one call of
    /// ``SharedTier/apply(_:)``, then settles each change as ``send(_:)`` settles one: all
    /// reached the tier, or none did (each is then reported and kept to send again).
    private func send(_ batch: [Queued]) async {
        let destination = batch[0].destination
        let tier = destination.tier
        let changes = batch.compactMap(\.change.tierChange)
        let (outcome, call) = await SharedTierCall.run(within: Self.timeout(of: batch)) { () -> [SharedStoreOutcome] in
            let outcomes = try await tier.apply(changes)
            guard outcomes.count == changes.count else {
                throw WrongOutcomeCount(changes: changes.count, outcomes: outcomes.count)
            }
            return outcomes
        }
        if case .failure(let error) = outcome {
            for queued in batch { report(error, of: queued.change, to: destination.onEvent) }
        }
        let result: Result<[SharedStoreOutcome], any Error>
        if outcome.timedOut {
            // Reported and no longer waited for; the next change waits until this call ends.
            for _ in batch { unsent.leave() }
            result = await call.result
        } else {
            result = outcome
        }
        let outcomes = try? result.get()
        let goingAgain = outcomes == nil && !outcome.timedOut ? sendAgainAlone(batch) : []
        var dues: [UInt64] = []
        for (index, queued) in batch.enumerated() where !goingAgain.contains(queued.change.name ?? "") {
            let due = end(queued, reached: outcomes != nil, superseded: outcomes?[index] == .superseded, inBatch: true)
            if let due { dues.append(due) }
        }
        // Queued before these count as sent: ``waitUntilSent()`` waits for them too.
        if outcomes != nil, state.withLock({ $0.failed.hasQuickResends }) { resendFailed(.changeReached) }
        if let due = dues.min() { scheduleRetry(at: due) }
        // Those going again stay unsent (and pending in the ledger) until their own call ends.
        if !outcome.timedOut { for _ in 0..<(batch.count - goingAgain.count) { unsent.leave() } }
    }

    /// After a call of `batch` threw (it did not time out): puts its changes back at the front
    /// of the queue, each to go in a call of its own (``Queued/solo``), before anything queued
    /// after them: one the tier refuses for good (a key it cannot store) then fails alone, and
    /// the others land. Not those with a later change of their key queued, nor any when a
    /// removal of every record is on its way to the tier: those are settled as failed. Answers
    /// the names put back.
    private func sendAgainAlone(_ batch: [Queued]) -> Set<String> {
        state.withLock { state in
            guard !state.queued.removesAll(for: batch[0].destination) else { return [] }
            var again = batch.filter { queued in queued.change.name.map { !state.queued.contains($0) } ?? false }
            for index in again.indices { again[index].solo = true }
            state.queued.prepend(again)
            return Set(again.compactMap(\.change.name))
        }
    }

    /// A tier's ``SharedTier/apply(_:)`` answered a number of outcomes other than its changes':
    /// none of them counts as reached.
    struct WrongOutcomeCount: Error, CustomStringConvertible {
        var changes: Int
        var outcomes: Int
        var description: String { "the tier answered \(outcomes) outcomes for \(changes) changes" }
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
    ///
    /// A change that failed in a call of several (`inBatch`) goes again in a call of its own
    /// (``Queued/solo``), and that failure does not count towards turning a store into a
    /// removal (``FailedChanges/maximumResends``): one change the tier refuses for good must not
    /// keep the others of its call off the tier, nor turn their stores into removals.
    private func end(_ queued: Queued, reached: Bool, superseded: Bool, inBatch: Bool = false) -> UInt64? {
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
            return state.failed.keep(
                change, for: destination, resends: inBatch ? max(queued.resends - 1, 0) : queued.resends,
                sinceBack: queued.sinceBack, solo: inBatch, at: now)
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
