import Cashier
import Foundation
import Logging
import PostgresNIO
import Testing

@testable import CashierPostgres

/// A hostile review of `SharedChange.reconnected(changed:)` from the change log.
///
/// The claim under review: every change committed after the listening connection's last mark
/// is either heard live or named by the reconnection. Each test pins one way a change can commit
/// after the mark and still be missing from the names, or one way the claim holds. The four
/// "holes" below failed on the first version (the log written by the tier's own statements,
/// the mark trusted across servers, each instance's lifetime trusted for the shared log,
/// `limit + 1` unchecked); the log is now written by a trigger, a mark ahead of the server
/// says `.all`, sweeps note their cut in the database, and the limit is clamped.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs CASHIER_POSTGRES_URL"))
struct PostgresSharedTierReconnectionReviewTests {
    typealias Helpers = PostgresSharedTierReconnectionTests
    static let logger = Logger(label: "review")

    /// Whether `change` tells an instance that `name` may have changed.
    static func covers(_ change: SharedChange, _ name: String) -> Bool {
        switch change {
        case .all: true
        case .reconnected(let names): names.contains(name)
        case .key(let key): key == name
        case .stored(let slot, _): slot.name == name
        }
    }

    static func logged(_ tier: PostgresSharedTier, _ client: PostgresClient, _ name: String) async throws -> Int {
        let query: PostgresQuery = """
            SELECT count(*)::bigint FROM \(unescaped: "\"\(tier.options.tableName)_changes\"") WHERE name = \(name)
            """
        var count = 0
        for try await value in try await client.query(query).decode(Int.self) { count = value }
        return count
    }

    // MARK: Holes

    /// Pins: a store made by an instance of the previous build (its statement, which changes the
    /// record and notifies but logs nothing) while this instance's listener was away is named
    /// at the reconnection, or the reconnection says `.all`.

    @Test func aStoreByAnEarlierBuildWhileAwayIsNamedOrAll() async throws {
        try await TestDatabase.withTiers(1) { tiers, client in
            let tier = tiers[0]
            try await tier.prepare()
            let mark = try await Helpers.mark(tier, client)
            // What a build before the log runs for a store: the row and the notification, no log.
            let table = tier.options.tableName
            try await client.query(
                """
                INSERT INTO \(unescaped: "\"\(table)\"") (name, version, bytes, size, written_at)
                VALUES ('old build', 'schema-1', '\\x01'::bytea, 1, now())
                ON CONFLICT (name, version) DO UPDATE SET bytes = excluded.bytes, written_at = excluded.written_at
                """)
            let change = try await Helpers.missed(tier, client, since: mark)
            #expect(Self.covers(change, "old build"), "\(change) misses a store an earlier build made")
        }
    }

    /// Pins: a change made on the server the tier reconnects to is named even when that
    /// server's transaction ids are behind the last mark's: a failover to an asynchronous
    /// replica that had not replayed the primary's last transactions, a restore, or a new
    /// cluster behind the same address (the very events that end a listening connection).
    /// The mark here is the current one with its `xmin` a million ahead, as such a mark from the
    /// old primary is.

    @Test func aMarkAheadOfTheServersTransactionIdsIsAll() async throws {
        try await TestDatabase.withTiers(1) { tiers, client in
            let tier = tiers[0]
            try await tier.prepare()
            var previous = try await Helpers.mark(tier, client)
            previous.xmin += 1_000_000
            _ = try await tier.store(record("a"), in: Helpers.slot("after failover"), removingOtherVersions: false)
            let change = try await Helpers.missed(tier, client, since: previous)
            #expect(Self.covers(change, "after failover"), "\(change) misses a change made on the new server")
        }
    }

    /// Pins: the sweep of an instance whose `changeLogLifetime` is shorter (another service on
    /// the same table, a configuration rolled out gradually) leaves the rows an instance with
    /// the default lifetime still needs: its reconnection within its lifetime names what changed.

    @Test func aSweepWithAShorterLifetimeKeepsWhatAnotherInstanceNeeds() async throws {
        try await TestDatabase.withTiers(1) { tiers, client in
            let reader = tiers[0]
            try await reader.prepare()
            var shorter = reader.options
            shorter.changeLogLifetime = .zero
            let sweeper = PostgresSharedTier(client: client, options: shorter)
            let mark = try await Helpers.mark(reader, client)
            _ = try await sweeper.store(record("a"), in: Helpers.slot("changed"), removingOtherVersions: false)
            // Another test's transaction across a sweep's mark keeps the row one sweep more.
            for _ in 0..<50 where try await Self.logged(reader, client, "changed") > 0 { try await sweeper.sweep() }
            let change = try await Helpers.missed(reader, client, since: mark)
            #expect(Self.covers(change, "changed"), "\(change) misses a change another instance's sweep forgot")
        }
    }

    /// Pins: `reconnectionKeyLimit = .max` (a plausible "no limit") does not stop the process
    /// (the first version spliced `limit + 1`, which trapped). Called in this process: a trap
    /// fails the whole run, which is as loud. (An exit test here made the test process hang at
    /// its exit now and then, beside the two of the hostile suite.)
    @Test func aKeyLimitOfIntMaxDoesNotTrap() {
        _ = Table(name: "t", channel: "t").missedChanges(since: 0, limit: .max)
    }

    // MARK: What held

    /// Pins: a transaction that got its id before the mark and commits after it (a statement
    /// still running, or waiting for a row lock, when the mark is taken) is named.
    @Test func aTransactionRunningAcrossTheMarkIsNamed() async throws {
        try await TestDatabase.withTiers(1) { tiers, client in
            let tier = tiers[0]
            try await tier.prepare()
            let log = "\"\(tier.options.tableName)_changes\""
            let mark = try await client.withConnection { connection in
                try await connection.query("BEGIN", logger: Self.logger)
                try await connection.query(
                    "INSERT INTO \(unescaped: log) (xid, name) VALUES (pg_current_xact_id(), 'slow')",
                    logger: Self.logger)
                let mark = try await Helpers.mark(tier, client)
                try await connection.query("COMMIT", logger: Self.logger)
                return mark
            }
            let change = try await Helpers.missed(tier, client, since: mark)
            #expect(change == .reconnected(changed: ["slow"]))
        }
    }

    /// Pins: names PostgreSQL's `text` holds whatever they are (empty, spaces, quotes,
    /// non-ASCII, 2,000 bytes) come back as they were written.
    @Test func oddNamesComeBackAsWritten() async throws {
        try await TestDatabase.withTiers(1) { tiers, client in
            let tier = tiers[0]
            try await tier.prepare()
            let mark = try await Helpers.mark(tier, client)
            let names: Set<String> = ["", " ", "it's \"quoted\"", "é☃︎", String(repeating: "n", count: 2000)]
            for name in names {
                _ = try await tier.store(record("v"), in: Helpers.slot(name), removingOtherVersions: false)
            }
            #expect(try await Helpers.missed(tier, client, since: mark) == .reconnected(changed: names))
        }
    }

    /// Pins: a removal of every record after a change of one key says `.all`, whichever comes
    /// first in the log and whatever the limit.
    @Test func aRemovalOfEveryRecordIsAllEvenPastTheKeyLimit() async throws {
        var options = TestDatabase.options()
        options.reconnectionKeyLimit = 0
        try await TestDatabase.withTiers(1, options: options) { tiers, client in
            let tier = tiers[0]
            try await tier.prepare()
            let mark = try await Helpers.mark(tier, client)
            #expect(try await Helpers.missed(tier, client, since: mark) == .reconnected(changed: []))
            try await tier.removeAllRecords()
            #expect(try await Helpers.missed(tier, client, since: mark) == .all)
        }
    }
}
