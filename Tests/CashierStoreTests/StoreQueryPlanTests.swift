import CashierSQLite
import CashierTestSupport
import Foundation
import Testing

@testable import CashierStore

/// The listings that must not read every row use the index meant for them, on the store this
/// build creates and on a version 4 store (its `entry_files`) read as it is.
@Suite struct StoreQueryPlanTests {
    let folder = TemporaryFolder()

    init() throws { try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true) }

    /// The plan SQLite chooses for `statement`, its steps joined.
    private func plan(_ statement: StoreStatement, on connection: SQLiteConnection) throws -> String {
        try connection.run("EXPLAIN QUERY PLAN " + statement.sql) { query throws(SQLiteError) in
            var steps: [String] = []
            while try query.step() { steps.append(query.text(at: 3)) }
            return steps.joined(separator: "; ")
        }
    }

    @Test func listingsOfLargeAndUnshapedEntriesUseAPartialIndex() throws {
        let store = try EntryStore(folder: folder.path)
        let raw = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadWrite)
        for statement in [StoreStatement.fileBytes, .largeEntryKeys, .largeEntries, .unshapedKeys] {
            let steps = try plan(statement, on: raw)
            #expect(steps.contains("INDEX entry_unshaped") && !steps.contains("SCAN entry,"), "\(statement): \(steps)")
        }
        #expect(try plan(.keys, on: raw) == "SCAN entry USING COVERING INDEX entry_by_key")
        // A version 4 store's index of the large entries serves the same statements.
        try raw.execute("DROP INDEX entry_unshaped")
        try raw.execute("CREATE INDEX entry_files ON entry(location, size) WHERE location = 1")
        for statement in [StoreStatement.fileBytes, .largeEntryKeys, .largeEntries] {
            #expect(try plan(statement, on: raw).contains("INDEX entry_files"), "\(statement)")
        }
    }
}
