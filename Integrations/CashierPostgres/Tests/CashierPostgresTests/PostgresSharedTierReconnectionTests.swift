import Cashier
import Foundation
import PostgresNIO
import Testing

@testable import CashierPostgres

/// After its listening connection was lost, a tier says which keys changed meanwhile
/// (`SharedChange.reconnected(changed:)`), from the log of changes its table keeps, instead of
/// `.all`: the instances keep their other local entries. It says `.all` when the log cannot
/// tell: every record removed, more keys than ``PostgresSharedTier/Options/reconnectionKeyLimit``,
/// or a last mark older than the log reaches.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs CASHIER_POSTGRES_URL"))
struct PostgresSharedTierReconnectionTests {
    static func slot(_ name: String) -> SharedSlot { SharedSlot(name: name, version: "schema-1") }

    /// A mark of where a listening connection would have heard to, taken on a connection of
    /// `client`, and what the log says changed from it on, taken the same way.
    static func mark(_ tier: PostgresSharedTier, _ client: PostgresClient) async throws
        -> PostgresSharedTier.ListeningMark
    {
        try await client.withConnection { try await tier.listeningMark(on: $0, notifying: "test") }
    }

    static func missed(
        _ tier: PostgresSharedTier, _ client: PostgresClient, since previous: PostgresSharedTier.ListeningMark?
    ) async throws -> SharedChange {
        try await client.withConnection { connection in
            let now = try await tier.listeningMark(on: connection, notifying: "test")
            return try await tier.missedChanges(since: previous, until: now, on: connection)
        }
    }

    static func names(_ change: SharedChange) -> Set<String>? {
        if case .reconnected(let names) = change { names } else { nil }
    }

    @Test func everyChangeCommittedAfterTheMarkIsNamedAndAStoreRefusedAsOlderIsNot() async throws {
        try await TestDatabase.withTiers(1) { tiers, client in
            let tier = tiers[0]
            try await tier.prepare()
            let late = writtenAtStart.addingTimeInterval(100)
            _ = try await tier.store(
                record("r", writtenAt: late), in: Self.slot("refused"), removingOtherVersions: false)
            _ = try await tier.store(record("u"), in: Self.slot("removed unordered"), removingOtherVersions: false)
            let mark = try await Self.mark(tier, client)

            _ = try await tier.store(record("a"), in: Self.slot("stored"), removingOtherVersions: false)
            _ = try await tier.store(record("b"), in: Self.slot("replaced"), removingOtherVersions: true)
            try await tier.removeRecords(named: "removed", writtenBefore: late)
            try await tier.removeRecords(named: "removed unordered")
            // Older than the record there: refused, nothing changed, nothing logged.
            let outcome = try await tier.store(record("old"), in: Self.slot("refused"), removingOtherVersions: false)
            #expect(outcome == .superseded)

            let names = try #require(Self.names(try await Self.missed(tier, client, since: mark)))
            #expect(names.isSuperset(of: ["stored", "replaced", "removed", "removed unordered"]))
            let query: PostgresQuery = """
                SELECT count(*)::bigint FROM \(unescaped: "\"\(tier.options.tableName)_changes\"")
                WHERE name = 'refused'
                """
            var logged = 0
            for try await value in try await client.query(query).decode(Int.self) { logged = value }
            #expect(logged == 1, "only the store that landed is logged")
        }
    }

    @Test func aRemovalOfEveryRecordSinceTheMarkIsAll() async throws {
        try await TestDatabase.withTiers(1) { tiers, client in
            let tier = tiers[0]
            try await tier.prepare()
            let mark = try await Self.mark(tier, client)
            _ = try await tier.store(record("a"), in: Self.slot("a"), removingOtherVersions: false)
            try await tier.removeAllRecords()
            #expect(try await Self.missed(tier, client, since: mark) == .all)
        }
    }

    @Test func moreKeysThanTheLimitIsAll() async throws {
        var options = TestDatabase.options()
        options.reconnectionKeyLimit = 2
        try await TestDatabase.withTiers(1, options: options) { tiers, client in
            let tier = tiers[0]
            try await tier.prepare()
            let mark = try await Self.mark(tier, client)
            for name in ["a", "b"] {
                _ = try await tier.store(record(name), in: Self.slot(name), removingOtherVersions: false)
            }
            // Two changes of one key count once.
            _ = try await tier.store(record("a2", writtenAt: writtenAtStart + 1), in: Self.slot("a"))
            #expect(try await Self.missed(tier, client, since: mark) == .reconnected(changed: ["a", "b"]))
            _ = try await tier.store(record("c"), in: Self.slot("c"), removingOtherVersions: false)
            #expect(try await Self.missed(tier, client, since: mark) == .all)
        }
    }

    @Test func aMarkOlderThanTheLogReachesIsAllAndNoMarkIsAll() async throws {
        try await TestDatabase.withTiers(1) { tiers, client in
            let tier = tiers[0]
            try await tier.prepare()
            let mark = try await Self.mark(tier, client)
            #expect(try await Self.missed(tier, client, since: mark) == .reconnected(changed: []))
            // The log reaches back its lifetime, less a minute spared for the server's clock.
            let lifetime = tier.options.changeLogLifetime.secondsForTests
            var older = mark
            older.at -= lifetime - 62
            #expect(try await Self.missed(tier, client, since: older) == .reconnected(changed: []))
            older.at = mark.at - (lifetime - 60)
            #expect(try await Self.missed(tier, client, since: older) == .all)
            #expect(try await Self.missed(tier, client, since: nil) == .all)
        }
    }

    @Test func theSweepDeletesTheLogOlderThanItsLifetime() async throws {
        var options = TestDatabase.options()
        options.changeLogLifetime = .zero
        try await TestDatabase.withTiers(1, options: options) { tiers, client in
            let tier = tiers[0]
            _ = try await tier.store(record("a"), in: Self.slot("a"), removingOtherVersions: false)
            func logged() async throws -> Int {
                let query: PostgresQuery =
                    "SELECT count(*)::bigint FROM \(unescaped: "\"\(tier.options.tableName)_changes\"")"
                var count = 0
                for try await value in try await client.query(query).decode(Int.self) { count = value }
                return count
            }
            #expect(try await logged() == 1)
            // A transaction of another test running across the sweep's mark keeps the row until
            // a sweep after it: sweep until it goes, a bounded number of times, 10 ms apart.
            for _ in 0..<500 where try await logged() > 0 {
                try await tier.sweep()
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(try await logged() == 0)
        }
    }

    /// End to end: the server ends the reader's listening backend while a writer changes keys.
    /// Each change is heard, either as it commits (the reader listening again already) or named
    /// in the reconnection, which is not `.all`.
    @Test func aLostConnectionNamesWhatChangedWhileItWasAway() async throws {
        try await TestDatabase.withTiers(2) { tiers, client in
            let (writer, reader) = (tiers[0], tiers[1])
            try await TestDatabase.waitUntilListening(tiers)
            let heard = reader.changes()
            try await TestDatabase.endListening(of: reader, client: client)
            let changed = ["x", "y", "z"]
            for name in changed {
                _ = try await writer.store(record(name), in: Self.slot(name), removingOtherVersions: false)
            }
            var unheard = Set(changed)
            var reconnection: SharedChange?
            while reconnection == nil || !unheard.isEmpty {
                guard let change = await firstChange(of: heard, within: .seconds(10)) else { break }
                switch change {
                case .reconnected(let names):
                    reconnection = change
                    unheard.subtract(names)
                case .stored(let slot, _): unheard.remove(slot.name)
                case .key(let name): unheard.remove(name)
                case .all: reconnection = change
                }
            }
            #expect(unheard.isEmpty, "changes made while the reader was away were lost")
            #expect(
                reconnection.flatMap(Self.names) != nil,
                "\(String(describing: reconnection)) is not a reconnection naming keys")
        }
    }
}

extension Duration {
    fileprivate var secondsForTests: Double {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
    }
}
