import CashierEntryFormat
import CashierPlatform
import Foundation

extension SharedTierWrites {
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
    /// - A reconnection starts the count of quick resends and the timer's doubling again (the
    ///   tier is back): a change that fails once more just after it (calls on connections to
    ///   the server that went down fail for a moment) goes again with the next change that gets
    ///   through, and on the timer after the first delay, not after the delay an outage of
    ///   minutes doubled to a minute. It does not start the count that turns a store into a
    ///   removal again: a store the tier refuses for good becomes one while the tier's stream
    ///   keeps reconnecting too.
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
            /// How often it was sent again already, and how often since the tier was last back.
            var resends: Int
            var sinceBack: Int
            /// When it goes again on the timer (`DispatchTime` uptime nanoseconds).
            var due: UInt64
            /// Whether it failed in a call of several changes: it goes again in a call of its own,
            /// so that a change the tier refuses for good does not fail the others with it.
            var solo = false
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
        /// already, `sinceBack` how often since the tier was last back. Returns when it goes
        /// again on the timer; nil if it could not be kept.
        mutating func keep(
            _ change: Change, for destination: Destination, resends: Int, sinceBack: Int, solo: Bool = false,
            at now: UInt64
        ) -> UInt64? {
            guard let name = change.name else { return nil }
            let slot = Slot(name: name, destination: destination.key)
            forget(slot)
            guard changes.count < Self.countLimit || makeRoom() else { return nil }
            var (kept, resends, sinceBack) = (change, resends, sinceBack)
            if case .store(_, _, let payload, _, _, let writtenAt) = change {
                if resends < Self.maximumResends, bytes + payload.count <= Self.byteLimit,
                    destination.tier.ordersChanges
                {
                    bytes += payload.count
                } else {
                    kept = .remove(name, at: writtenAt)
                    if resends >= Self.maximumResends { (resends, sinceBack) = (0, 0) }
                }
            }
            let due = now &+ Self.nanoseconds(Self.retryDelay(after: sinceBack, first: destination.retryDelay))
            changes[slot] = Failed(
                change: kept, destination: destination, resends: resends, sinceBack: sinceBack, due: due, solo: solo)
            if sinceBack < Self.maximumResends { quick.insert(slot) }
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
            guard quick.count < changes.count, let slot = changes.first(where: { !quick.contains($0.key) })?.key
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
            quick.remove(slot)
        }

        /// A removal of every record reached `destination`'s tier, or is on its way there.
        mutating func forgetAll(of destination: Destination) {
            for slot in changes.keys where slot.destination == destination.key { forget(slot) }
        }

        /// Removes and answers the changes `reason` sends at `now` (``ResendReason``) of the
        /// keys and tiers `isFree` accepts, each counted as sent again once more (after a
        /// reconnection, its quick resends and the timer's doubling start again, and a change
        /// that failed in a call of several goes in one again: the failure was the connection's,
        /// likely). A change due on the timer whose key is not free waits another
        /// ``Destination/retryDelay``.
        mutating func take(
            for reason: ResendReason, at now: UInt64, where isFree: (String, Destination) -> Bool
        ) -> [(change: Change, destination: Destination, resends: Int, sinceBack: Int, solo: Bool)] {
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
                let isBack = reason == .reconnected
                return (
                    taken.change, taken.destination, taken.resends + 1, isBack ? 0 : taken.sinceBack + 1,
                    taken.solo && !isBack
                )
            }
        }
    }
}
