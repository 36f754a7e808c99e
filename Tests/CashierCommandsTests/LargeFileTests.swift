import Cashier
import CashierTestSupport
import Foundation
import Testing

@testable import CashierCommands

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The tool reads entries through the library's reader: a file of any size is judged by a
/// bounded prefix, and `show` pretty-prints only what is small enough to.
@Suite struct LargeFileTests {
    let folder = TemporaryFolder()

    init() throws {
        _ = try makeFixture(folder)
    }

    /// Makes `key`'s entry file a sparse 40 GB file (`truncate -s 40G`).
    private func plantFortyGigabytes(at key: String) throws -> String {
        let name = DiskTier.fileName(for: key)
        let path = folder.path + "/" + name
        try #require(truncate(path, off_t(40) << 30) == 0)
        return name
    }

    @Test func verifyReportsAFortyGigabyteFileAsDamagedAndExits1() throws {
        let name = try plantFortyGigabytes(at: FixtureKeys.note)
        let result = cashier("verify", folder.path)
        #expect(result.status == .failure)
        #expect(result.output.contains("damaged: \(name): too large: \(Int64(40) << 30) bytes"))
        #expect(result.output.contains("5 entries checked, 1 damaged."))
    }

    @Test func listShowsAFortyGigabyteFileAsADamagedRow() throws {
        _ = try plantFortyGigabytes(at: FixtureKeys.note)
        let result = cashier("list", folder.path, "--json")
        #expect(result.status == .success)
        let entries = try #require(result.json["entries"] as? [[String: Any]])
        let damaged = entries.filter { $0["status"] as? String == "damaged" }
        #expect(damaged.count == 1)
        #expect(damaged.first?["size"] as? Int == 40 << 30)
        #expect((damaged.first?["problem"] as? String)?.hasPrefix("too large") == true)
    }

    @Test func showOfAFortyGigabyteFileSaysItIsDamaged() throws {
        _ = try plantFortyGigabytes(at: FixtureKeys.note)
        let result = cashier("show", folder.path, FixtureKeys.note)
        #expect(result.status == .failure)
        #expect(result.output.contains("status  damaged: too large"))
    }

    /// A JSON payload over 1 MiB is described and its first bytes dumped, not parsed and
    /// pretty-printed whole (entries go up to 1 GiB).
    @Test func showDoesNotPrettyPrintAPayloadOverTheLimit() throws {
        var configuration = Cache.Configuration(name: "fixture")
        configuration.location = .directory(folder.url)
        // A folder without a store (as 0.1.0 and SQLite's absence leave one): these tests read and
        // damage entry files; StoreRowsTests cover folders with a store.
        configuration.usesStore = false
        configuration.appVersion = "1.0"
        let cache = Cache(configuration)
        let words = [String](repeating: "word", count: Payload.prettyPrintLimit / 6)
        try cache.set(words, for: CacheKey<[String]>("words"))

        let text = cashier("show", folder.path, "words")
        #expect(text.status == .success)
        #expect(text.output.contains("bytes of JSON, too large to pretty-print (over 1.0 MiB)"))
        #expect(text.output.count < 4_000)

        let json = cashier("show", folder.path, "words", "--json")
        let payload = try #require(json.json["payload"] as? [String: Any])
        #expect(payload["value"] is NSNull)
        #expect((payload["hexPrefix"] as? String)?.count == 2 * Payload.dumpLength)
        #expect(json.output.count < 4_000)
    }
}
