import CashierPlatform
import Foundation
import Testing

/// `Locked`, the one lock type: exclusive, and `Sendable` only when what it holds is.
@Suite struct LockTests {
    @Test func lockedIsSendableOnlyWhenItsStateIs() {
        // Overload resolution sees the conformance: before, `Locked` was Sendable whatever it held.
        #expect(isSendable(Locked(0)))
        #expect(!isSendable(Locked(NotSendable())))
    }

    @Test func withLockMakesUpdatesExclusive() async {
        let counter = Locked(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<1000 { counter.withLock { $0 += 1 } }
                }
            }
        }
        #expect(counter.withLock { $0 } == 8000)
    }
}

private final class NotSendable {}

private func isSendable<T>(_ value: T) -> Bool { false }
private func isSendable<T: Sendable>(_ value: T) -> Bool { true }
