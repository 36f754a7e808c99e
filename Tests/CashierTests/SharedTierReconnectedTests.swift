import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A tier that knows which keys changed while its stream was away says so at the reconnection
/// (``SharedChange/reconnected(changed:)``): the instance drops those keys and keeps every
/// other local entry (``SharedChange/all`` drops them all), and what failed to reach the tier
/// goes again, as after ``SharedChange/all``.
extension SharedTierTests {
    @Suite struct Reconnected: TwoServerSuite {
        let servers = TwoServers()

        static let other = CacheKey<Int>("other", schemaVersion: 1)
        static let otherSlot = SharedSlot(name: "other", version: "schema-1")

        /// `retryDelay` an hour: only the reconnection sends a failed change again.
        func server(_ server: Int) -> Cache {
            Cache(servers.configuration(server, retryDelay: 3600))
        }

        @Test func aReconnectionDropsTheKeysItNamesAndKeepsEveryOtherLocalEntry() async throws {
            let (a, b) = (server(1), server(2))
            try a.set(1, for: Self.key)
            try a.set(5, for: Self.other)
            await a.waitForSharedTierWork()
            // Changed elsewhere while the streams are away: A hears nothing of it.
            backing.isMuted = true
            clockB.advance(by: 1)
            try b.set(2, for: Self.key)
            await b.waitForSharedTierWork()
            backing.isMuted = false
            #expect(a.value(for: Self.key) == 1, "A still holds the value the missed change replaced")

            backing.send(.reconnected(changed: ["n"]), to: 1)
            await eventually("A drops the key the reconnection names") { a.value(for: Self.key) == nil }
            #expect(try await a.value(for: Self.key, fetch: Self.noFetch) == 2)
            #expect(a.value(for: Self.other) == 5, "the key not named stays")
            #expect(try await a.value(for: Self.other, fetch: Self.noFetch) == 5)
            #expect(backing.reads(in: Self.otherSlot) == 0, "the key not named is read from A's own tiers")
        }

        @Test func aWriteThatFailedIsSentAgainWhenAReconnectionNamesNoKey() async throws {
            let a = server(1)
            try a.set(1, for: Self.key)
            await a.waitForSharedTierWork()
            backing.mode = .failing
            clockA.advance(by: 1)
            try a.set(2, for: Self.key)
            await a.waitForSharedTierWork()
            #expect(backing.value(Int.self, in: Self.slot) == 1)
            backing.mode = .working
            backing.send(.reconnected(changed: []), to: 1)
            await eventually("the failed write sent again") { backing.value(Int.self, in: Self.slot) == 2 }
            #expect(backing.record(in: Self.slot)?.writtenAt == clockA.now)
            #expect(a.value(for: Self.key) == 2, "A's own value stays")
        }
    }
}
