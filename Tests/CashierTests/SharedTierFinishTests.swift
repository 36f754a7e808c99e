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

        static let key = CacheKey<Int>("finish", schemaVersion: 1)
        static let slot = SharedSlot(name: "finish", version: "schema-1")

        func server(_ server: Int) -> Cache { Cache(servers.configuration(server)) }

        /// Pins: it returns only once a change held at the tier's door has reached the tier (a
        /// version that returned at once, with the change still held, fails the first check).
        @Test func itReturnsOnceTheQueuedChangesReachedTheTier() async throws {
            let cache = server(1)
            backing.closeGate()
            try cache.set(7, for: Self.key)
            let opened = Flag()
            let opener = Task {
                await eventually("the write waits at the gate") { backing.storesAtGate == 1 }
                opened.set()
                backing.openGate()
            }
            await cache.finishBackgroundWork()
            #expect(opened.isSet, "it returned before the change could be sent")
            #expect(backing.value(Int.self, in: Self.slot) == 7, "the change had not reached the tier")
            await opener.value
        }
    }
}

/// A flag one task sets and another reads.
private final class Flag: Sendable {
    private let value = Locked(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
