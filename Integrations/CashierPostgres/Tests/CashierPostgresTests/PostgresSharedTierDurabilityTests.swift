import Cashier
import Foundation
import PostgresNIO
import Testing

@testable import CashierPostgres

/// ``PostgresSharedTier/Options/durableCommits``: each statement that changes what other
/// instances read commits with `synchronous_commit` at least `local`, whatever the server says.
/// Each statement runs here inside a transaction of the test's own, so the setting it leaves
/// for its commit can be read before that commit.
@Suite(
    .enabled(
        if: TestDatabase.isConfigured,
        "\(TestDatabase.variable) is not set: no PostgreSQL to test against (.ci/integrations.sh starts one)"))
struct PostgresSharedTierDurabilityTests {
    /// The statements of the tier that change rows, each given something to change in `table`.
    static func changingStatements(_ table: Table) throws -> [(name: String, query: PostgresQuery)] {
        let slot = SharedSlot(name: "profile", version: "schema-1")
        let later = Date(timeIntervalSince1970: writtenAtStart.timeIntervalSince1970 + 10)
        return [
            ("store", try table.orderedUpsert(record("one"), in: slot, notifying: "n")),
            (
                "store removing the other versions",
                try table.orderedUpsertRemovingOthers(
                    record("two", writtenAt: later), in: SharedSlot(name: "profile", version: "schema-2"),
                    tombstoneLifetime: 60, notifying: "n", orElse: "k")
            ),
            (
                "ordered removal",
                table.orderedDelete(
                    named: "profile", before: later.addingTimeInterval(1), tombstoneLifetime: 60, notifying: "n")
            ),
            ("removal of a key", table.delete(named: "profile", notifying: "n")),
            ("removal of every key", table.deleteAll(notifying: "n")),
        ]
    }

    /// `synchronous_commit` as each changing statement leaves it for its transaction's commit,
    /// the session's own being `sessionSetting`.
    static func settingsAtCommit(durableCommits: Bool, sessionSetting: String) async throws -> [String: String] {
        var options = TestDatabase.options()
        options.durableCommits = durableCommits
        let table = Table(name: options.tableName, channel: options.effectiveChannel, durableCommits: durableCommits)
        return try await TestDatabase.withTiers(1, options: options) { tiers, client in
            // The tier makes its table as it starts: its first store waits for it.
            try await tiers[0].store(record("zero"), in: SharedSlot(name: "other", version: "schema-1"))
            var settings: [String: String] = [:]
            for (name, statement) in try changingStatements(table) {
                settings[name] = try await client.withConnection { connection in
                    try await connection.query("SET synchronous_commit = \(unescaped: sessionSetting)", logger: logger)
                    try await connection.query("BEGIN", logger: logger)
                    var answered = 0
                    for try await _ in try await connection.query(statement, logger: logger) { answered += 1 }
                    let rows = try await connection.query(
                        "SELECT current_setting('synchronous_commit')", logger: logger)
                    var setting = ""
                    for try await value in rows.decode(String.self) { setting = value }
                    try await connection.query("COMMIT", logger: logger)
                    try await connection.query("RESET synchronous_commit", logger: logger)
                    // Each statement changed something here: the durable item is joined only then.
                    #expect(answered == 1, "\(name) answered \(answered) rows")
                    return setting
                }
            }
            return settings
        }
    }

    @Test func changesCommitDurablyWhereTheServerSaysOff() async throws {
        let settings = try await Self.settingsAtCommit(durableCommits: true, sessionSetting: "off")
        #expect(settings.count == 5)
        for (name, setting) in settings { #expect(setting == "local", "\(name)") }
    }

    @Test func aStrongerSettingIsKept() async throws {
        let settings = try await Self.settingsAtCommit(durableCommits: true, sessionSetting: "remote_apply")
        #expect(settings.count == 5)
        for (name, setting) in settings { #expect(setting == "remote_apply", "\(name)") }
    }

    @Test func withoutDurableCommitsTheServersSettingDecides() async throws {
        let settings = try await Self.settingsAtCommit(durableCommits: false, sessionSetting: "off")
        #expect(settings.count == 5)
        for (name, setting) in settings { #expect(setting == "off", "\(name)") }
    }
}

private let logger = PostgresSharedTier.defaultLogger
