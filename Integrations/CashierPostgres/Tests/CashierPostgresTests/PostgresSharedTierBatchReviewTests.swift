import Cashier
import Foundation
import PostgresNIO
import Testing

@testable import CashierPostgres

/// A hostile review of `apply(_:)`: the batch statement against the single statements, case by
/// case, and the bookkeeping of this instance's own unheard changes for a batch.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs CASHIER_POSTGRES_URL"))
struct PostgresSharedTierBatchReviewTests {
    static func slot(_ name: String, _ version: String = "schema-1") -> SharedSlot {
        SharedSlot(name: name, version: version)
    }

    static func at(_ seconds: TimeInterval) -> Date { writtenAtStart.addingTimeInterval(seconds) }

    /// The rows of `table` but the times set by the server (`updated_at`, a tombstone's expiry).
    static func rows(of table: String, _ client: PostgresClient) async throws -> [String] {
        var rows: [String] = []
        let query: PostgresQuery = """
            SELECT name, version, encode(bytes, 'hex'), size, \
            CASE WHEN version = '*removed' THEN 'tomb' ELSE coalesce(expires_at::text, 'null') END, \
            written_at::text FROM \(unescaped: "\"\(table)\"") ORDER BY name, version
            """
        for try await (name, version, bytes, size, expires, written) in try await client.query(query).decode(
            (String, String, String, Int, String, String).self)
        {
            rows.append(
                "\(name.prefix(40))|\(name.utf8.count)|\(version)|\(bytes.prefix(40))|\(size)|\(expires)|\(written)")
        }
        return rows
    }

    static let long = String(repeating: "ü", count: 1000) // 2,000 bytes
    static let odd = "é名 '\"\\;\n%_*"

    /// What is there before the changes, the same on both tables.
    static func setUp(_ tier: PostgresSharedTier) async throws {
        _ = try await tier.store(record("eq0", writtenAt: at(1)), in: slot("equal"), removingOtherVersions: false)
        _ = try await tier.store(record("new", writtenAt: at(2)), in: slot("older"), removingOtherVersions: false)
        try await tier.removeRecords(named: "tombNewer", writtenBefore: at(2))
        try await tier.removeRecords(named: "tombEqual", writtenBefore: at(1))
        try await tier.removeRecords(named: "tombOlder", writtenBefore: at(0))
        _ = try await tier.store(record("v1", writtenAt: at(0)), in: slot("others", "v1"), removingOtherVersions: false)
        _ = try await tier.store(record("v3", writtenAt: at(2)), in: slot("others", "v3"), removingOtherVersions: false)
        _ = try await tier.store(
            record("o1", writtenAt: at(0)), in: slot("othersRefused", "v1"), removingOtherVersions: false)
        _ = try await tier.store(
            record("o2", writtenAt: at(2)), in: slot("othersRefused", "v2"), removingOtherVersions: false)
        try await tier.removeRecords(named: "removeOlderThanTomb", writtenBefore: at(2))
        _ = try await tier.store(
            record("r0", writtenAt: at(0)), in: slot("removeSome", "v1"), removingOtherVersions: false)
        _ = try await tier.store(
            record("r2", writtenAt: at(2)), in: slot("removeSome", "v2"), removingOtherVersions: false)
        _ = try await tier.store(record("e0", writtenAt: at(1)), in: slot("removeEqual"), removingOtherVersions: false)
    }

    static let changes: [SharedTierChange] = {
        let expiring = SharedRecord(
            bytes: Data("x".utf8), expiresAt: Date(timeIntervalSince1970: 1_900_000_000.5), writtenAt: at(1))
        let big = SharedRecord(bytes: Data(repeating: 7, count: 7000), expiresAt: nil, writtenAt: at(1))
        return [
            .store(record("eq1", writtenAt: at(1)), in: slot("equal"), removingOtherVersions: false),
            .store(record("old", writtenAt: at(1)), in: slot("older"), removingOtherVersions: false),
            .store(record("tn", writtenAt: at(1)), in: slot("tombNewer"), removingOtherVersions: false),
            .store(record("te", writtenAt: at(1)), in: slot("tombEqual"), removingOtherVersions: false),
            .store(record("to", writtenAt: at(1)), in: slot("tombOlder"), removingOtherVersions: false),
            .store(record("v2", writtenAt: at(1)), in: slot("others", "v2"), removingOtherVersions: true),
            .store(record("o2'", writtenAt: at(1)), in: slot("othersRefused", "v2"), removingOtherVersions: true),
            .removal(named: "removeNone", writtenBefore: at(1)),
            .removal(named: "removeOlderThanTomb", writtenBefore: at(1)),
            .removal(named: "removeSome", writtenBefore: at(1)),
            .removal(named: "removeEqual", writtenBefore: at(1)),
            .store(expiring, in: slot("expiring"), removingOtherVersions: false),
            .store(big, in: slot("big"), removingOtherVersions: false),
            .store(record("empty"), in: slot(""), removingOtherVersions: false),
            .store(record("long"), in: slot(long), removingOtherVersions: true),
            .store(record("odd"), in: slot(odd, "app-é"), removingOtherVersions: false),
        ]
    }()

    /// Pinned: for every case (equal times, a tombstone newer, equal or older, other versions
    /// older and newer, a removal of a key with no rows, expiry set or not, a record too long
    /// for its notice, names "", of 2,000 bytes and of odd characters), the batch leaves the
    /// rows and answers the outcomes the calls one after another do.
    @Test func aBatchLeavesTheRowsAndOutcomesOfItsCallsOneAfterAnother() async throws {
        try await TestDatabase.withTiers(1) { singles, client in
            try await TestDatabase.withTiers(1) { batches, _ in
                let (single, batch) = (singles[0], batches[0])
                try await Self.setUp(single)
                try await Self.setUp(batch)
                var one: [SharedStoreOutcome] = []
                for change in Self.changes { one += try await single.apply([change]) }
                let all = try await batch.apply(Self.changes)
                #expect(all == one)
                #expect(one.contains(.superseded) && one.contains(.stored))
                let (a, b) = (
                    try await Self.rows(of: single.options.tableName, client),
                    try await Self.rows(of: batch.options.tableName, client)
                )
                #expect(a.count > 15)
                #expect(a == b, "one by one:\n\(a.joined(separator: "\n"))\nbatch:\n\(b.joined(separator: "\n"))")
            }
        }
    }

    /// Pins: this instance's own removal of every record stays unheard until its notification
    /// comes back (another instance's store heard meanwhile goes on as its key's name, without
    /// its record, which may be older than the removal). A batched store of a name too long for
    /// its notice notifies `*` (``Notice``), which this instance counts as hearing a removal of
    /// every record, while the batch counted the store under its name: hearing it ends the
    /// removal's wait early (and the name stays unheard for good). One store at a time counts
    /// it as a change of every key, and the removal stays unheard.
    /// (`batched: false`, the two stores one after another, passes: the control.)
    @Test(arguments: [false, true])
    func aBatchedNameTooLongForItsNoticeDoesNotEndTheWaitForARemovalOfEveryRecord(batched: Bool) async throws {
        try await TestDatabase.withTiers(2) { tiers, _ in
            let (tier, other) = (tiers[0], tiers[1])
            try await TestDatabase.waitUntilListening(tiers)
            let heard = tier.changes()
            let removal = Notice(instance: tier.instanceID.uuidString, change: .all).payload
            let long = String(repeating: "x", count: 8000)
            try await tier.sendingOwnChange(removal) {
                // The removal of every record is on its way; a batch goes meanwhile.
                let changes: [SharedTierChange] = [
                    .store(record("l"), in: Self.slot(long), removingOtherVersions: false),
                    .store(record("b"), in: Self.slot("b"), removingOtherVersions: false),
                ]
                if batched {
                    _ = try await tier.apply(changes)
                } else {
                    for change in changes { _ = try await tier.apply([change]) }
                }
                // Heard after the batch's notifications: this instance's removal is still unheard.
                try await other.store(record("m"), in: Self.slot("marker"))
                let change = await firstChange(of: heard)
                #expect(change == .key("marker"), "heard with its record: \(String(describing: change))")
                return ((), true)
            }
        }
    }

    /// Pins: a change PostgreSQL refuses for good (a name with a NUL byte; a name longer than
    /// the primary key's index takes) fails its whole statement: the batch throws and applies
    /// nothing, so no change of it is half made. (The review found Cashier then resent them
    /// together, for good; it now sends each change of a call that threw again alone, at once:
    /// `SharedTierTests.Batch` and `SharedTierTests.BatchReview` pin that.) Alone, the other
    /// change lands.
    @Test(arguments: ["a NUL byte", "4,000 random bytes"])
    func aChangePostgresRefusesDoesNotFailTheOthersOfItsBatch(_ kind: String) async throws {
        let poison =
            kind == "a NUL byte"
            ? "nul\u{0}name" : String((0..<4000).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement()! })
        try await TestDatabase.withTiers(1) { tiers, _ in
            let tier = tiers[0]
            try await tier.prepare()
            await #expect(throws: (any Error).self, "refused alone too") {
                try await tier.store(record("p"), in: Self.slot(poison), removingOtherVersions: false)
            }
            await #expect(throws: (any Error).self, "the statement fails whole") {
                try await tier.apply([
                    .store(record("p"), in: Self.slot(poison), removingOtherVersions: false),
                    .store(record("g"), in: Self.slot("good"), removingOtherVersions: false),
                ])
            }
            #expect(try await tier.record(in: Self.slot("good")) == nil, "nothing of the batch applied")
            _ = try await tier.apply([.store(record("g"), in: Self.slot("good"), removingOtherVersions: false)])
            #expect(try await tier.record(in: Self.slot("good")) == record("g"))
        }
    }
}
