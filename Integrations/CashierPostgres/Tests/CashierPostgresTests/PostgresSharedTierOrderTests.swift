import Cashier
import Foundation
import PostgresNIO
import Testing

@testable import CashierPostgres

/// The newest change wins in the table, whatever order instances' changes arrive in: by
/// ``SharedRecord/writtenAt`` and the removals' times, with tombstones that keep a late, older
/// write from bringing a removed key back (issue 37).
@Suite(
    .enabled(
        if: TestDatabase.isConfigured,
        "\(TestDatabase.variable) is not set: no PostgreSQL to test against (.ci/integrations.sh starts one)"))
struct PostgresSharedTierOrderTests {
    static let slot = SharedSlot(name: "k", version: "schema-1")

    func at(_ seconds: TimeInterval) -> Date { writtenAtStart.addingTimeInterval(seconds) }

    @Test func anOlderStoreArrivingLaterIsRefusedAndNotifiesNoOne() async throws {
        try await TestDatabase.withTiers(2) { tiers, _ in
            let (writer, other) = (tiers[0], tiers[1])
            try await TestDatabase.waitUntilListening(tiers)
            let heard = other.changes()
            let newer = try await writer.store(
                record("new", writtenAt: at(2)), in: Self.slot, removingOtherVersions: false)
            let older = try await writer.store(
                record("old", writtenAt: at(1)), in: Self.slot, removingOtherVersions: false)
            #expect(newer == .stored)
            #expect(older == .superseded)
            #expect(try await writer.record(in: Self.slot) == record("new", writtenAt: at(2)))
            // The same time lands: the later arrival of one instance's own changes is the later change.
            let same = try await writer.store(
                record("same", writtenAt: at(2)), in: Self.slot, removingOtherVersions: false)
            #expect(same == .stored)
            // Notifications go out in commit order: the refused store's would come before this one.
            try await writer.store(record("m"), in: SharedSlot(name: "marker", version: "schema-1"))
            var changes: [SharedChange] = []
            for _ in 0..<3 { changes.append(await firstChange(of: heard) ?? .all) }
            #expect(
                changes == [
                    .stored(Self.slot, record("new", writtenAt: at(2))),
                    .stored(Self.slot, record("same", writtenAt: at(2))),
                    .stored(SharedSlot(name: "marker", version: "schema-1"), record("m")),
                ])
        }
    }

    @Test func aStoreOlderThanARemovalDoesNotBringTheKeyBack() async throws {
        try await TestDatabase.withTiers(1) { tiers, _ in
            let tier = tiers[0]
            _ = try await tier.store(record("first", writtenAt: at(0)), in: Self.slot, removingOtherVersions: false)
            try await tier.removeRecords(named: "k", writtenBefore: at(2))
            #expect(try await tier.record(in: Self.slot) == nil)
            let late = try await tier.store(
                record("late", writtenAt: at(1)), in: Self.slot, removingOtherVersions: true)
            #expect(late == .superseded)
            #expect(try await tier.record(in: Self.slot) == nil)
            let newer = try await tier.store(
                record("new", writtenAt: at(3)), in: Self.slot, removingOtherVersions: false)
            #expect(newer == .stored)
            #expect(try await tier.record(in: Self.slot) == record("new", writtenAt: at(3)))
        }
    }

    @Test func aRemovalLeavesTheRecordsWrittenAfterIt() async throws {
        try await TestDatabase.withTiers(1) { tiers, _ in
            let tier = tiers[0]
            _ = try await tier.store(record("v", writtenAt: at(5)), in: Self.slot, removingOtherVersions: false)
            try await tier.removeRecords(named: "k", writtenBefore: at(4))
            #expect(try await tier.record(in: Self.slot) == record("v", writtenAt: at(5)))
            // An older removal arriving after a newer one leaves the newer tombstone.
            try await tier.removeRecords(named: "k", writtenBefore: at(6))
            try await tier.removeRecords(named: "k", writtenBefore: at(5.5))
            let between = try await tier.store(
                record("x", writtenAt: at(5.8)), in: Self.slot, removingOtherVersions: false)
            #expect(between == .superseded)
        }
    }

    @Test func aWriteRemovesOnlyTheOlderRecordsOfOtherVersions() async throws {
        try await TestDatabase.withTiers(1) { tiers, _ in
            let tier = tiers[0]
            let old = SharedSlot(name: "k", version: "schema-1")
            let new = SharedSlot(name: "k", version: "schema-2")
            // A value fetched by the old version after the new version's write was made.
            _ = try await tier.store(record("fetched", writtenAt: at(3)), in: old, removingOtherVersions: false)
            let write = try await tier.store(record("written", writtenAt: at(2)), in: new, removingOtherVersions: true)
            #expect(write == .stored)
            #expect(try await tier.record(in: old) == record("fetched", writtenAt: at(3)))
            let later = try await tier.store(record("later", writtenAt: at(4)), in: new, removingOtherVersions: true)
            #expect(later == .stored)
            #expect(try await tier.record(in: old) == nil)
        }
    }

    /// A store whose statement ran beside a newer removal (its snapshot older than the
    /// tombstone) may still insert its row: reads skip it, and the sweep deletes it.
    @Test func aRowWrittenBeforeItsKeysTombstoneIsNotReadAndIsSwept() async throws {
        try await TestDatabase.withTiers(1) { tiers, client in
            let tier = tiers[0]
            try await tier.removeRecords(named: "k", writtenBefore: at(2))
            let table = "\"\(tier.options.tableName)\""
            try await client.query(
                """
                INSERT INTO \(unescaped: table) (name, version, bytes, size, written_at)
                VALUES ('k', 'schema-1', '\\x00'::bytea, 1, \(at(1)))
                """)
            #expect(try await tier.record(in: Self.slot) == nil)
            #expect(try await tier.sweep() == 1)
        }
    }

    @Test func tombstonesGoWithTheSweepOnceTheirLifetimeIsOver() async throws {
        var options = TestDatabase.options()
        options.tombstoneLifetime = .zero
        try await TestDatabase.withTiers(1, options: options) { tiers, client in
            let tier = tiers[0]
            try await tier.removeRecords(named: "k", writtenBefore: at(2))
            #expect(try await rows(of: tier, client) == 1)
            #expect(try await tier.sweep() == 1)
            #expect(try await rows(of: tier, client) == 0)
        }
    }

    /// A table made by the previous version (no `written_at`) gains the column when a tier of
    /// this version starts (or at its first call); its rows count as written before anything
    /// this version writes.
    @Test func aTableOfThePreviousVersionGainsTheWriteTime() async throws {
        let options = TestDatabase.options()
        // The old table first, then a tier of this version, which prepares it as it starts.
        try await TestDatabase.withTiers(0, options: options) { _, client in
            let table = "\"\(options.tableName)\""
            try await client.query(
                """
                CREATE TABLE \(unescaped: table) (
                    name text NOT NULL, version text NOT NULL, bytes bytea NOT NULL, size integer NOT NULL,
                    expires_at timestamptz, updated_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (name, version))
                """)
            try await client.query(
                "INSERT INTO \(unescaped: table) (name, version, bytes, size) VALUES ('k', 'schema-1', 'old'::bytea, 3)"
            )
            try await TestDatabase.withTiers(1, options: options) { tiers, _ in
                let tier = tiers[0]
                try await tier.prepare()
                #expect(try await tier.record(in: Self.slot)?.bytes == Data("old".utf8))
                let outcome = try await tier.store(
                    record("new", writtenAt: Date(timeIntervalSince1970: 0)), in: Self.slot,
                    removingOtherVersions: false)
                #expect(outcome == .stored)
                #expect(try await tier.record(in: Self.slot)?.bytes == Data("new".utf8))
            }
        }
    }
}

private func rows(of tier: PostgresSharedTier, _ client: PostgresClient) async throws -> Int {
    let rows = try await client.query("SELECT count(*)::bigint FROM \(unescaped: "\"\(tier.options.tableName)\"")")
    var count = 0
    for try await rowCount in rows.decode(Int.self) { count = rowCount }
    return count
}
