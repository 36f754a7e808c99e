import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// `finishBackgroundWork()`, the async counterpart of `waitForBackgroundWork()`: what a
/// server's graceful shutdown awaits so that the changes it queued reach the shared tier before
/// the tier's service stops.
extension SharedTierTests {
    @Suite struct Finish: TwoServerSuite {
        let servers = TwoServers()

        func server(_ server: Int) -> Cache { Cache(servers.configuration(server)) }

        /// Pins: it returns only once a change held at the tier's door has reached the tier (a
        /// version that returned at once, with the change still held, fails the first check).
        @Test func itReturnsOnceTheQueuedChangesReachedTheTier() async throws {
            let cache = server(1)
            backing.closeGate()
            try cache.set(7, for: Self.key)
            let opened = Locked(false)
            let opener = Task {
                await eventually("the write waits at the gate") { backing.storesAtGate == 1 }
                opened.withLock { $0 = true }
                backing.openGate()
            }
            await cache.finishBackgroundWork()
            #expect(opened.withLock { $0 }, "it returned before the change could be sent")
            #expect(backing.value(Int.self, in: Self.slot) == 7, "the change had not reached the tier")
            await opener.value
        }

        /// Pins: it does not hold the caller's pool thread while it waits. Every thread of the
        /// cooperative pool but the caller's is blocked; the change is still sent. (A version
        /// that called `waitForBackgroundWork()` on the caller's thread held the last free pool
        /// thread until its bound, the timeout and five seconds, and returned with the change
        /// unsent; the test above passes with it, its opener finding the other thread free: a
        /// hostile review.) The blocks last as long as the send. The timeout is long: a suite
        /// running beside may take the thread this test frees (the process tests hold theirs for
        /// up to a minute), and the send must outwait it rather than the wait's bound end first.
        @Test func itSendsWhileEveryOtherThreadOfThePoolIsBlocked() async throws {
            let cache = Cache(servers.configuration(1, timeout: 120))
            let blockers = max(0, ProcessInfo.processInfo.activeProcessorCount - 1)
            let release = DispatchSemaphore(value: 0)
            let started = Locked(0)
            let tasks = (0..<blockers).map { _ in
                Task.detached {
                    started.withLock { $0 += 1 }
                    release.wait()
                }
            }
            await eventually("the blockers hold their threads") { started.withLock { $0 } == blockers }
            try cache.set(7, for: Self.key)
            await cache.finishBackgroundWork()
            let reached = backing.value(Int.self, in: Self.slot)
            for _ in 0..<blockers { release.signal() }
            for task in tasks { await task.value }
            #expect(reached == 7, "the change had not reached the tier when the wait returned")
        }

        /// Pins: cancelling the awaiting task ends the wait at once, while a change is still
        /// held at the tier's door (a shutdown's deadline cuts it short; a version that ignored
        /// the cancellation waited out its bound: a hostile review). The watchdog opens the door
        /// only for a version that keeps waiting, so that it fails instead of hanging.
        @Test func cancellingTheTaskEndsTheWaitAtOnce() async throws {
            let cache = server(1)
            backing.closeGate()
            try cache.set(7, for: Self.key)
            await eventually("the write waits at the gate") { backing.storesAtGate == 1 }
            let waiter = Task { await cache.finishBackgroundWork() }
            waiter.cancel()
            let watchdog = Task {
                try await Task.sleep(nanoseconds: 20_000_000_000)
                backing.openGate()
            }
            await waiter.value
            #expect(backing.storesAtGate == 1, "the wait went on after its task was cancelled")
            watchdog.cancel()
            backing.openGate()
            await cache.finishBackgroundWork()
            #expect(backing.value(Int.self, in: Self.slot) == 7)
        }
    }
}
