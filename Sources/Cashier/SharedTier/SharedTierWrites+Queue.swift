import CashierEntryFormat
import CashierPlatform
import Foundation

extension SharedTierWrites {
    /// A change in the queue: where it goes, and how often it was sent again after failing.
    struct Queued {
        var change: Change
        var destination: Destination
        var resends = 0
        /// How often since the tier was last back (a reconnection): what its quick resends and
        /// its timer's wait go by (``FailedChanges``).
        var sinceBack = 0
        /// Whether it goes in a call of its own (it failed in a call of several).
        var solo = false
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

        var isEmpty: Bool { head == items.count }

        /// Puts `changes` back at the front of the queue, in order (a call of several that failed,
        /// each to go again in a call of its own).
        mutating func prepend(_ changes: [Queued]) {
            items = changes + items[head...]
            head = 0
            for queued in changes {
                if let name = queued.change.name { names[name, default: 0] += 1 }
            }
        }

        /// The first change, left in the queue.
        var first: Queued? { head < items.count ? items[head] : nil }

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
}
