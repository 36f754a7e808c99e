import Foundation

/// Serializes work on one key name while leaving every other key free.
///
/// Used around anything that reads or changes one entry's file and then its
/// memory record, so the two never disagree. Invariant behind
/// `@unchecked Sendable`: `busy` is read and written only while `condition` is locked.
final class KeyLocks: @unchecked Sendable {
    private let condition = NSCondition()
    private var busy = Set<String>()

    func withLock<R>(_ name: String, _ body: () throws -> R) rethrows -> R {
        condition.lock()
        while busy.contains(name) { condition.wait() }
        busy.insert(name)
        condition.unlock()
        defer {
            condition.lock()
            busy.remove(name)
            condition.broadcast()
            condition.unlock()
        }
        return try body()
    }
}
