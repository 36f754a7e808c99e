import Cashier
import Foundation
import PostgresNIO
import Testing

@testable import CashierPostgres

/// `apply(_:)` applies a batch of changes of distinct keys in one statement, as the calls they
/// stand for would one after another: the same rows, the same outcomes, one notification per
/// key that changed and none for one that did not.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs CASHIER_POSTGRES_URL"))
struct PostgresSharedTierBatchTests {
    static func slot(_ name: String, _ version: String = "schema-1") -> SharedSlot {
        SharedSlot(name: name, version: version)
    }

    func at(_ seconds: TimeInterval) -> Date { writtenAtStart.addingTimeInterval(seconds) }

    @Test func aBatchEndsAsItsCallsOneAfterAnotherWouldAndNotifiesEachKeyThatChangedOnce() async throws {
        try await TestDatabase.withTiers(2) { tiers, _ in
            let (writer, other) = (tiers[0], tiers[1])
            try await TestDatabase.waitUntilListening(tiers)
            let heard = other.changes()
            // Before the batch: a newer record of "refused", an old version of "replaced", a
            // record of "removed" and of "kept removed" (written after the removal's time).
            _ = try await writer.store(record("newer", writtenAt: at(9)), in: Self.slot("refused"))
            _ = try await writer.store(record("v1", writtenAt: at(0)), in: Self.slot("replaced", "schema-1"))
            _ = try await writer.store(record("r", writtenAt: at(0)), in: Self.slot("removed"))
            _ = try await writer.store(record("later", writtenAt: at(5)), in: Self.slot("kept"))
            // The notifications of what came before, heard to the last.
            try await writer.store(record("s"), in: Self.slot("setup"))
            while let change = await firstChange(of: heard), change != .stored(Self.slot("setup"), record("s")) {}

            let expiring = SharedRecord(
                bytes: Data("e".utf8),
                expiresAt: Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 3600).rounded()),
                writtenAt: at(1))
            let outcomes = try await writer.apply([
                .store(record("a", writtenAt: at(1)), in: Self.slot("stored"), removingOtherVersions: false),
                .store(expiring, in: Self.slot("expiring"), removingOtherVersions: false),
                .store(record("old", writtenAt: at(1)), in: Self.slot("refused"), removingOtherVersions: false),
                .store(
                    record("v2", writtenAt: at(1)), in: Self.slot("replaced", "schema-2"), removingOtherVersions: true),
                .removal(named: "removed", writtenBefore: at(1)),
                .removal(named: "kept", writtenBefore: at(1)),
            ])
            #expect(outcomes == [.stored, .stored, .superseded, .stored, .stored, .stored])
            #expect(try await writer.record(in: Self.slot("stored")) == record("a", writtenAt: at(1)))
            #expect(try await writer.record(in: Self.slot("expiring")) == expiring)
            #expect(try await writer.record(in: Self.slot("refused")) == record("newer", writtenAt: at(9)))
            #expect(try await writer.record(in: Self.slot("replaced", "schema-2")) == record("v2", writtenAt: at(1)))
            #expect(try await writer.record(in: Self.slot("replaced", "schema-1")) == nil)
            #expect(try await writer.record(in: Self.slot("removed")) == nil)
            #expect(try await writer.record(in: Self.slot("kept")) == record("later", writtenAt: at(5)))
            // A removal written after a batch's older store of the key keeps it out.
            let late = try await writer.store(
                record("late", writtenAt: at(0.5)), in: Self.slot("removed"), removingOtherVersions: false)
            #expect(late == .superseded)

            // One notification per key that changed: the refused store notifies no one; "kept"
            // gained a tombstone (a change of the key) though its newer record stayed.
            var names: [String] = []
            var carried: [SharedSlot: SharedRecord] = [:]
            for _ in 0..<5 {
                switch await firstChange(of: heard) {
                case .stored(let slot, let record):
                    names.append(slot.name)
                    carried[slot] = record
                case .key(let name): names.append(name)
                default: Issue.record("a change that is not a key's")
                }
            }
            #expect(Set(names) == ["stored", "expiring", "replaced", "removed", "kept"])
            #expect(names.count == 5, "each key once: \(names)")
            #expect(carried[Self.slot("stored")] == record("a", writtenAt: at(1)))
            #expect(carried[Self.slot("replaced", "schema-2")] == record("v2", writtenAt: at(1)))
            try await writer.store(record("m"), in: Self.slot("marker"))
            let next = await firstChange(of: heard)
            #expect(
                next == .stored(Self.slot("marker"), record("m")), "no other notification: \(String(describing: next))")
        }
    }

    @Test func aBatchWithTwoChangesOfOneKeyGoesOneByOne() async throws {
        try await TestDatabase.withTiers(1) { tiers, _ in
            let tier = tiers[0]
            let outcomes = try await tier.apply([
                .store(record("a", writtenAt: at(1)), in: Self.slot("k"), removingOtherVersions: false),
                .store(record("b", writtenAt: at(2)), in: Self.slot("k", "schema-2"), removingOtherVersions: true),
            ])
            #expect(outcomes == [.stored, .stored])
            #expect(try await tier.record(in: Self.slot("k")) == nil)
            #expect(try await tier.record(in: Self.slot("k", "schema-2")) == record("b", writtenAt: at(2)))
        }
    }

    @Test func aBatchIsLoggedForReconnections() async throws {
        try await TestDatabase.withTiers(1) { tiers, client in
            let tier = tiers[0]
            try await tier.prepare()
            let mark = try await PostgresSharedTierReconnectionTests.mark(tier, client)
            _ = try await tier.apply([
                .store(record("a"), in: Self.slot("a"), removingOtherVersions: false),
                .removal(named: "b", writtenBefore: at(1)),
            ])
            let change = try await PostgresSharedTierReconnectionTests.missed(tier, client, since: mark)
            #expect(change == .reconnected(changed: ["a", "b"]))
        }
    }
}
