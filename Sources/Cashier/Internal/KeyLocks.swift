import CashierPlatform
import Foundation

/// Serializes work on one key name while leaving every other key free, and lets
/// bulk removals exclude every key at once.
///
/// Used around anything that reads or changes one entry's file and then its
/// memory record, so the two never disagree. The names are spread over
/// independent stripes, each a condition and the set of its names in use, so
/// threads working on different keys rarely meet on the same lock even for the
/// few instructions it is held.
///
/// ``withEveryKeyLocked(_:)`` is the barrier of bulk removals (`removeAll()`,
/// garbage collection, sweeps): it closes every stripe to new holders, waits
/// for the current ones to leave, and runs its body with no key held by anyone.
/// A `set` therefore lands wholly before a bulk removal (which then removes its
/// file and memory record together) or wholly after it, never across it. What
/// it costs a key's holder: one more `Bool` read under the stripe lock it takes
/// anyway. Key locks are never nested, and the barrier is never taken while
/// holding one (nor inside a body run under one: migrations and decoders are
/// user code; a migration that calls `removeAll()` would wait for itself).
///
/// Invariant behind `@unchecked Sendable`: a stripe's `busy` and `isClosed` are
/// read and written only while its `condition` is locked.
final class KeyLocks: @unchecked Sendable {
    private final class Stripe: @unchecked Sendable {
        let condition = NSCondition()
        /// The names held now: an array, not a set. A stripe holds none or one at a time but
        /// under contention, and a set hashed the name three times a lock (the stripe's own
        /// hash is a fourth), each as dear as the scan of a few names.
        var busy: [String] = []
        /// Set while a barrier holds or is waiting for this stripe: no new holder may enter.
        var isClosed = false
    }

    private let stripes: [Stripe] = (0..<32).map { _ in Stripe() }
    /// One barrier at a time (bulk removals of one folder already take turns on its file lock).
    private let barrier = NSLock()
    private let barrierHeld = Locked(false)

    /// Whether a barrier's body is running: what tests check the file I/O done under it against.
    var isBarrierHeld: Bool { barrierHeld.withLock { $0 } }

    func withLock<R>(_ name: String, _ body: () throws -> R) rethrows -> R {
        let stripe = stripe(of: name)
        stripe.condition.lock()
        while stripe.isClosed || stripe.busy.contains(name) { stripe.condition.wait() }
        stripe.busy.append(name)
        stripe.condition.unlock()
        defer { release(name, in: stripe) }
        return try body()
    }

    /// Runs `body` holding `name`'s lock when no one holds it and no barrier is up, and returns
    /// true; false, without running it, otherwise. For work a caller may hold another key's lock
    /// around (user code inside a migration): it never waits, so never on a key its thread holds.
    func withLockIfFree(_ name: String, _ body: () throws -> Void) rethrows -> Bool {
        let stripe = stripe(of: name)
        stripe.condition.lock()
        guard !stripe.isClosed, !stripe.busy.contains(name) else {
            stripe.condition.unlock()
            return false
        }
        stripe.busy.append(name)
        stripe.condition.unlock()
        defer { release(name, in: stripe) }
        try body()
        return true
    }

    private func stripe(of name: String) -> Stripe {
        // Hashing per process is fine here: stripes are never stored or shared.
        stripes[Int(UInt(bitPattern: name.hashValue) % UInt(stripes.count))]
    }

    private func release(_ name: String, in stripe: Stripe) {
        stripe.condition.lock()
        // Present: only this holder removes the name it appended.
        if let index = stripe.busy.firstIndex(of: name) {
            stripe.busy.swapAt(index, stripe.busy.count - 1)
            stripe.busy.removeLast()
        }
        stripe.condition.broadcast()
        stripe.condition.unlock()
    }

    /// Runs `body` while no key is held and none can be taken: the barrier of bulk removals.
    func withEveryKeyLocked<R>(_ body: () throws -> R) rethrows -> R {
        barrier.lock()
        defer { barrier.unlock() }
        // Close every stripe first, then wait: a holder never waits on a second key,
        // so each stripe empties whatever the others do.
        for stripe in stripes {
            stripe.condition.lock()
            stripe.isClosed = true
            stripe.condition.unlock()
        }
        for stripe in stripes {
            stripe.condition.lock()
            while !stripe.busy.isEmpty { stripe.condition.wait() }
            stripe.condition.unlock()
        }
        defer {
            for stripe in stripes {
                stripe.condition.lock()
                stripe.isClosed = false
                stripe.condition.broadcast()
                stripe.condition.unlock()
            }
        }
        barrierHeld.withLock { $0 = true }
        defer { barrierHeld.withLock { $0 = false } }
        return try body()
    }
}
