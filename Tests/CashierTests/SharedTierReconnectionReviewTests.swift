import CashierEntryFormat
import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile review of the resend count starting again at a reconnection (the count of quick
/// resends and the timer's doubling; ``SharedTierWrites/FailedChanges``): a store the tier
/// refuses for good still becomes the removal that clears the older record while the tier's
/// stream keeps reconnecting (a first version, which started every count again, never sent
/// it), and a reconnection costs a bounded number of failing calls for such a key.
extension SharedTierTests {
    @Suite struct ReconnectionReview: TwoServerSuite {
        let servers = TwoServers()

        static let header = EntryHeader(
            key: "n", typeName: "Int", format: .json, createdAt: 0, validatedAt: 0, lifespan: .never,
            schemaVersion: 1, appVersion: nil, isLocked: false, payloadLength: 1)

        /// A store of key `name` (slot `schema-1`) written at `seconds` since 1970.
        static func store(_ name: String, at seconds: TimeInterval, removingOthers: Bool = false)
            -> SharedTierWrites.Change
        {
            .store(
                SharedSlot(name: name, version: "schema-1"), header: header, payload: Data("1".utf8), expiresAt: nil,
                removingOthers: removingOthers, writtenAt: Date(timeIntervalSince1970: seconds))
        }

        static func record(at seconds: TimeInterval) -> SharedRecord {
            SharedRecord(
                header: header, payload: Data("7".utf8), expiresAt: nil,
                writtenAt: Date(timeIntervalSince1970: seconds))
        }

        func destination(_ tier: (any SharedTier)? = nil, timeout: TimeInterval = 30) -> SharedTierWrites.Destination {
            SharedTierWrites.Destination(
                tier: tier ?? backing.tier(1), timeout: timeout, onEvent: nil, retryDelay: 3600)
        }

        /// A store the tier refuses for good is kept as a removal of what is older after
        /// ``SharedTierWrites/FailedChanges/maximumResends`` resends (FailedChanges: "A store
        /// the tier refuses for good ... so leaves no older record behind it"), reconnections
        /// counted. A stream that keeps reconnecting (each `.all` or new stream calls
        /// `resendFailed()`) must not keep it a store for good, the other instances reading the
        /// older record: the first version of the reconnection's fresh start, which started
        /// this count again too, did (the test failed there).
        @Test func aStoreRefusedForGoodBecomesARemovalEvenWhileTheStreamKeepsReconnecting() async throws {
            let tier = RefusingStoresTier(inner: backing.tier(1), refused: "n")
            let queue = SharedTierWrites()
            let destination = destination(tier)
            _ = try await backing.tier(2).store(Self.record(at: 0), in: Self.slot, removingOtherVersions: false)
            queue.enqueue(Self.store("n", at: 10), to: destination)
            queue.waitUntilSent()
            #expect(queue.keptFailures == 1)
            for _ in 0..<(2 * SharedTierWrites.FailedChanges.maximumResends + 2) {
                queue.resendFailed(.reconnected)
                queue.waitUntilSent()
            }
            #expect(tier.refusedStores > SharedTierWrites.FailedChanges.maximumResends)
            #expect(
                backing.record(in: Self.slot) == nil,
                "the store refused \(tier.refusedStores) times was never sent as a removal of the older record")
        }

        /// The cost of the fresh start: a change the tier refuses for good, past its quick
        /// resends, cost one call per reconnection before it. Now each reconnection makes it
        /// quick again, and a store becomes a removal that is quick again too: at most
        /// 1 + 2 × maximumResends failing calls per reconnection for each such key (65,536 kept
        /// at most), each set off by a change that gets through. This pins that bound.
        @Test func aReconnectionCostsAtMostOneRoundOfQuickResendsForAKeyRefusedForGood() async throws {
            let queue = SharedTierWrites()
            let destination = destination()
            backing.failCalls(of: "n")
            queue.enqueue(Self.store("n", at: 10), to: destination)
            queue.waitUntilSent()
            func reachTheTier(_ times: Int) {
                for index in 0..<times {
                    queue.enqueue(Self.store("o\(index)", at: 10), to: destination)
                    queue.waitUntilSent()
                }
            }
            reachTheTier(10)
            let settled = backing.orderedCalls(of: "n")
            reachTheTier(10)
            #expect(backing.orderedCalls(of: "n") == settled, "past its quick resends")
            queue.resendFailed(.reconnected)
            queue.waitUntilSent()
            reachTheTier(20)
            let perReconnection = backing.orderedCalls(of: "n") - settled
            #expect(perReconnection <= 1 + 2 * SharedTierWrites.FailedChanges.maximumResends)
        }
    }
}

/// A tier that refuses every store of one key (throws) and takes everything else, removals
/// of that key included: a key whose record is too large for the tier's bound, say.
private final class RefusingStoresTier: SharedTier, Sendable {
    let inner: FakeSharedTier
    let refused: String
    private let count = Locked(0)

    init(inner: FakeSharedTier, refused: String) {
        self.inner = inner
        self.refused = refused
    }

    var refusedStores: Int { count.withLock { $0 } }

    var ordersChanges: Bool { true }

    private func check(_ name: String) throws {
        guard name == refused else { return }
        count.withLock { $0 += 1 }
        throw SharedBacking.Unavailable()
    }

    func record(in slot: SharedSlot) async throws -> SharedRecord? { try await inner.record(in: slot) }
    func store(_ record: SharedRecord, in slot: SharedSlot) async throws {
        try check(slot.name)
        try await inner.store(record, in: slot)
    }
    func storeRemovingOtherVersions(_ record: SharedRecord, in slot: SharedSlot) async throws {
        try check(slot.name)
        try await inner.storeRemovingOtherVersions(record, in: slot)
    }
    func store(_ record: SharedRecord, in slot: SharedSlot, removingOtherVersions: Bool) async throws
        -> SharedStoreOutcome
    {
        try check(slot.name)
        return try await inner.store(record, in: slot, removingOtherVersions: removingOtherVersions)
    }
    func removeRecords(named name: String) async throws { try await inner.removeRecords(named: name) }
    func removeRecords(named name: String, writtenBefore date: Date) async throws {
        try await inner.removeRecords(named: name, writtenBefore: date)
    }
    func removeAllRecords() async throws { try await inner.removeAllRecords() }
    func changes() -> AsyncStream<SharedChange> { inner.changes() }
}
