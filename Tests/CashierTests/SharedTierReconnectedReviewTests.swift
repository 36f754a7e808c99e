import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile review of ``SharedChange/reconnected(changed:)`` in the cache: what a
/// reconnection naming a key does to observers of it and to this instance's own change of it
/// that failed to reach the tier. Both held.
extension SharedTierTests {
    @Suite struct ReconnectedReview: TwoServerSuite {
        let servers = TwoServers()

        static let other = CacheKey<Int>("other", schemaVersion: 1)

        /// `retryDelay` an hour: only the reconnection sends a failed change again.
        func server(_ server: Int) -> Cache {
            Cache(servers.configuration(server, retryDelay: 3600))
        }

        /// Pins: an observer of a key a reconnection names sees it go (`nil`); an observer of a
        /// key it does not name sees nothing.
        @Test func observersOfANamedKeySeeItGoAndOthersSeeNothing() async throws {
            let a = server(1)
            try a.set(1, for: Self.key)
            try a.set(5, for: Self.other)
            await a.waitForSharedTierWork()
            var named = a.updates(for: Self.key).makeAsyncIterator()
            var unnamed = a.updates(for: Self.other).makeAsyncIterator()
            #expect(await named.next() == .some(1), "the current value first")
            #expect(await unnamed.next() == .some(5), "the current value first")

            backing.send(.reconnected(changed: ["n", "never stored"]), to: 1)
            #expect(await named.next() == .some(nil), "the named key's observer sees it go")
            // A later change of the unnamed key is the next thing its observer sees.
            try a.set(6, for: Self.other)
            #expect(await unnamed.next() == .some(6), "nothing came before the later change")
        }

        /// Pins: a reconnection that names a key this instance changed itself, in a write that
        /// failed to reach the tier, does not let the instance serve the older value another
        /// instance wrote meanwhile: its own write goes again and wins, and its reads say so.
        @Test func aNamedKeyWithOwnFailedWriteEndsWithTheOwnNewerValue() async throws {
            let (a, b) = (server(1), server(2))
            try a.set(1, for: Self.key)
            await a.waitForSharedTierWork()
            // B writes 2 unheard; then A's newer write of 3 fails.
            backing.isMuted = true
            clockB.advance(by: 1)
            try b.set(2, for: Self.key)
            await b.waitForSharedTierWork()
            backing.isMuted = false
            backing.mode = .failing
            clockA.advance(by: 2)
            try a.set(3, for: Self.key)
            await a.waitForSharedTierWork()
            backing.mode = .working
            #expect(backing.value(Int.self, in: Self.slot) == 2)

            backing.send(.reconnected(changed: ["n"]), to: 1)
            await eventually("A's failed write sent again") { backing.value(Int.self, in: Self.slot) == 3 }
            await a.waitForSharedTierWork()
            #expect(try await a.value(for: Self.key, fetch: Self.noFetch) == 3, "never B's older 2")
        }
    }
}
