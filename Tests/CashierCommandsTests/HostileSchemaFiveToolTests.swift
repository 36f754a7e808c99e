import CashierSQLite
import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import CashierCommands

/// A hostile review of schema 5 through `cashier-tool`: a store a version 4 build left.
@Suite struct HostileSchemaFiveToolTests {
    let folder = TemporaryFolder()

    /// The store fixture, then turned into what a version 4 build left: `entry_files` in place
    /// of `entry_unshaped`, user_version 4.
    init() throws {
        try makeStoreFixture(folder)
        let raw = try SQLiteConnection(path: storePath(folder), flags: SQLiteCode.openReadWrite)
        try raw.execute("DROP INDEX entry_unshaped")
        try raw.execute("CREATE INDEX entry_files ON entry(location, size) WHERE location = 1")
        try raw.execute("PRAGMA user_version = 4")
    }

    private func schema() throws -> (version: Int64?, unshaped: Int64?) {
        let raw = try SQLiteConnection(path: storePath(folder), flags: SQLiteCode.openReadOnly)
        return (
            try raw.integer("PRAGMA user_version"),
            try raw.integer("SELECT count(*) FROM sqlite_schema WHERE name = 'entry_unshaped'")
        )
    }

    /// Read-only commands read the version 4 store as it is (every row and file once, the store
    /// sound) and leave it a version 4 store; `remove` writes, which migrates it, and the
    /// listing after is the same but the removed key.
    @Test func theToolReadsAVersionFourStoreAsItIsAndMigratesItWhenItWrites() throws {
        let before = storeFile(folder)
        let json = cashier("list", folder.path, "--json")
        #expect(json.status == .success)
        let entries = try #require(json.json["entries"] as? [[String: Any]])
        #expect(entries.map { $0["key"] as? String } == ["avatar", "blob", "feed", "note", "profile"])
        #expect(entries.map { $0["location"] as? String } == ["file", "file", "row", "row", "row"])
        #expect((json.json["store"] as? [String: Any])?["status"] as? String == "sound")
        #expect(cashier("verify", folder.path).output == "5 entries checked, all sound.\n")
        #expect(cashier("stats", folder.path, "--json").status == .success)
        #expect(storeFile(folder) == before, "a read-only command changed the store")
        #expect(try schema() == (4, 0))

        #expect(cashier("remove", folder.path, "note").status == .success)
        #expect(try schema() == (5, 1))
        let after = try #require(cashier("list", folder.path, "--json").json["entries"] as? [[String: Any]])
        #expect(after.map { $0["key"] as? String } == ["avatar", "blob", "feed", "profile"])
        #expect(cashier("verify", folder.path).output == "4 entries checked, all sound.\n")
    }
}
