import Cashier
import Foundation
import Logging
import PostgresNIO
import Testing

@testable import CashierPostgres

/// The PostgreSQL the tests use: `CASHIER_POSTGRES_URL`, as
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`. Unset, the tests that need a server are
/// skipped (CI starts one: `.ci/integrations.sh`).
enum TestDatabase {
    static let variable = "CASHIER_POSTGRES_URL"

    static let configuration: PostgresClient.Configuration? = {
        guard let text = ProcessInfo.processInfo.environment[variable], !text.isEmpty else { return nil }
        guard let url = URLComponents(string: text), let host = url.host, let user = url.user else {
            fatalError("\(variable) is not postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE: \(text)")
        }
        let database = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        return PostgresClient.Configuration(
            host: host, port: url.port ?? 5432, username: user, password: url.password,
            database: database.isEmpty ? nil : database, tls: .disable)
    }()

    static var isConfigured: Bool { configuration != nil }

    /// Options for a table of the test's own, with short waits.
    static func options(sizeLimit: Int? = nil) -> PostgresSharedTier.Options {
        var options = PostgresSharedTier.Options()
        options.tableName = "cashier_test_\(UInt32.random(in: 0...UInt32.max))"
        options.sizeLimit = sizeLimit
        options.retryDelay = .milliseconds(200)
        // Creating a table, its log and the log's trigger takes nine statements, which several
        // tests run at once: on a loaded machine 2 s was not always enough.
        options.operationTimeout = .seconds(10)
        options.sweepInterval = .seconds(3600)
        return options
    }

    /// Runs `count` tiers on one table of their own, each in its own pool as instances of a fleet
    /// would be, and `body` with them and a client of its own; drops the table afterwards.
    static func withTiers<R: Sendable>(
        _ count: Int, options: PostgresSharedTier.Options = options(),
        _ body: @Sendable ([PostgresSharedTier], PostgresClient) async throws -> R
    ) async throws -> R {
        let configuration = try #require(configuration)
        let tiers = (0..<count).map { _ in PostgresSharedTier(configuration: configuration, options: options) }
        let client = PostgresClient(configuration: configuration, backgroundLogger: PostgresSharedTier.defaultLogger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            for tier in tiers { group.addTask { try await tier.run() } }
            let result: Result<R, any Error>
            do { result = .success(try await body(tiers, client)) } catch { result = .failure(error) }
            let table = options.tableName
            try await client.query(
                """
                DROP TABLE IF EXISTS \(unescaped: "\"\(table)\", \"\(table)_changes\", \"\(table)_changes_cut\"")
                """)
            try await client.query("DROP FUNCTION IF EXISTS \(unescaped: "\"\(table)_log_change\"")()")
            group.cancelAll()
            return try result.get()
        }
    }

    /// Waits until every tier listens to its channel and a mark of where it heard to holds (a
    /// connection lost before then says `.all` at its reconnection).
    static func waitUntilListening(_ tiers: [PostgresSharedTier]) async throws {
        // The table and its log first: a reconnection that cannot read the log says `.all`.
        for tier in tiers { try await tier.prepare() }
        func isReady(_ tier: PostgresSharedTier) -> Bool { tier.isListening && tier.heardTo != nil }
        for _ in 0..<200 where !tiers.allSatisfy(isReady) {
            try await Task.sleep(for: .milliseconds(25))
        }
        let isListening = tiers.allSatisfy(isReady)
        try #require(isListening)
    }
}

extension TestDatabase {
    /// Ends the backend `tier` listens through, as a restart of the server would: the one whose
    /// last statement was one of its marks of where it heard to, which name the channel and the
    /// instance (``waitUntilListening(_:)`` waits for one).
    static func endListening(of tier: PostgresSharedTier, client: PostgresClient) async throws {
        let marker = "cashier listening on \(tier.options.effectiveChannel) as \(tier.instanceID.uuidString) */"
        try await client.query(
            """
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE position(\(marker) IN query) > 0 AND pid <> pg_backend_pid()
            """)
    }
}

/// The first change `stream` yields within `timeout`, or `nil`.
func firstChange(of stream: AsyncStream<SharedChange>, within timeout: Duration = .seconds(5)) async -> SharedChange? {
    await withTaskGroup(of: SharedChange?.self) { group in
        group.addTask {
            var changes = stream.makeAsyncIterator()
            return await changes.next()
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

func record(_ text: String, expiresAt: Date? = nil, writtenAt: Date = writtenAtStart) -> SharedRecord {
    SharedRecord(bytes: Data(text.utf8), expiresAt: expiresAt, writtenAt: writtenAt)
}

/// The write time of ``record(_:expiresAt:writtenAt:)`` unless told: a whole second, which the
/// table's microseconds keep exactly (a record read back equals the one stored).
let writtenAtStart = Date(timeIntervalSince1970: 1_800_000_000)
