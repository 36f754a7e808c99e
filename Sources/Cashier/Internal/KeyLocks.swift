import Foundation

/// Serializes work on one key name while leaving every other key free.
///
/// Used around anything that reads or changes one entry's file and then its
/// memory record, so the two never disagree. The names are spread over
/// independent stripes, each a condition and the set of its names in use, so
/// threads working on different keys rarely meet on the same lock even for the
/// few instructions it is held. Invariant behind `@unchecked Sendable`: a
/// stripe's `busy` is read and written only while its `condition` is locked.
final class KeyLocks: @unchecked Sendable {
    private final class Stripe: @unchecked Sendable {
        let condition = NSCondition()
        var busy = Set<String>()
    }

    private let stripes: [Stripe] = (0..<32).map { _ in Stripe() }

    func withLock<R>(_ name: String, _ body: () throws -> R) rethrows -> R {
        // Hashing per process is fine here: stripes are never stored or shared.
        let stripe = stripes[Int(UInt(bitPattern: name.hashValue) % UInt(stripes.count))]
        stripe.condition.lock()
        while stripe.busy.contains(name) { stripe.condition.wait() }
        stripe.busy.insert(name)
        stripe.condition.unlock()
        defer {
            stripe.condition.lock()
            stripe.busy.remove(name)
            stripe.condition.broadcast()
            stripe.condition.unlock()
        }
        return try body()
    }
}
