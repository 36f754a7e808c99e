import Cashier
import CashierTestSupport
import Foundation
import Testing

@testable import CashierCommands

/// `list`, `show` and `stats` against a folder the library wrote.
@Suite struct InspectionTests {
    let folder = TemporaryFolder()

    init() throws {
        _ = try makeFixture(folder)
    }

    @Test func listPrintsOneRowPerEntrySortedByKey() {
        let result = cashier("list", folder.path)
        #expect(result.status == .success)
        #expect(result.error.isEmpty)
        let lines = result.output.split(separator: "\n").map(String.init)
        #expect(
            lines[0].split(separator: " ", omittingEmptySubsequences: true)
                == ["KEY", "TYPE", "CODEC", "SCHEMA", "APP", "SIZE", "AGE", "EXPIRES", "LOCKED", "STATUS"])
        let rows = lines[1...5].map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        #expect(rows.map(\.[0]) == ["avatar", "blob", "feed", "note", "profile"])
        #expect(
            rows[0] == [
                "avatar", "Data", "raw", "-", "1.0", "\(folder.size(of: "avatar"))", "B", "10m", "never", "yes",
                "valid",
            ])
        #expect(rows[2].suffix(4) == ["5m", "ago", "no", "expired"])
        #expect(
            rows[4] == [
                "profile", "CashierCommandsTests.TestUser", "json", "2", "1.0", "\(folder.size(of: "profile"))", "B",
                "10m", "in", "50m", "no", "valid",
            ])
        #expect(lines.last == "5 entries, \(Format.size(folder.totalSize))")
    }

    @Test(arguments: [
        (ListSort.size, ["blob", "avatar", "feed", "profile", "note"]),
        (.expiry, ["feed", "profile", "avatar", "blob", "note"]),
    ])
    func listSortsBySizeAndExpiry(sort: ListSort, keys: [String]) {
        let result = cashier("list", folder.path, "--sort", sort.rawValue)
        let rows = result.output.split(separator: "\n").dropFirst().prefix(5)
        #expect(rows.map { String($0.prefix { $0 != " " }) } == keys)
    }

    @Test func listJSONIsOneDocumentWithTheDocumentedFields() throws {
        let result = cashier("list", folder.path, "--json")
        #expect(result.status == .success)
        let json = result.json
        #expect(json["directory"] as? String == folder.path)
        #expect(json["count"] as? Int == 5)
        let entries = try #require(json["entries"] as? [[String: Any]])
        #expect(entries.map { $0["key"] as? String } == ["avatar", "blob", "feed", "note", "profile"])
        let fields: Set<String> = [
            "key", "file", "type", "codec", "schemaVersion", "appVersion", "size", "createdAt", "validatedAt",
            "expiresAt", "ageSeconds", "expiresInSeconds", "locked", "status", "problem", "location",
        ]
        for entry in entries { #expect(Set(entry.keys) == fields) }
        let profile = entries[4]
        #expect(profile["schemaVersion"] as? Int == 2)
        #expect(profile["ageSeconds"] as? Int == 600)
        #expect(profile["expiresInSeconds"] as? Int == 3000)
        #expect(profile["createdAt"] as? String == "2027-01-15T08:00:00Z")
        #expect(profile["status"] as? String == "valid")
        #expect(profile["problem"] is NSNull)
        #expect(entries[2]["status"] as? String == "expired")
        #expect(entries[0]["locked"] as? Bool == true)
        #expect(entries[0]["expiresAt"] is NSNull)
        // Sorted keys: the text is stable for diffing.
        #expect(result.output.range(of: "\"count\"")!.lowerBound < result.output.range(of: "\"directory\"")!.lowerBound)
    }

    @Test func showPrettyPrintsJSONAfterTheMetadata() {
        let result = cashier("show", folder.path, "profile")
        #expect(result.status == .success)
        #expect(result.output.contains("key             profile\n"))
        #expect(result.output.contains("schema version  2\n"))
        #expect(result.output.contains("expires         2027-01-15T09:00:00Z (in 50m)\n"))
        #expect(
            result.output.hasSuffix(
                """
                status          valid

                {
                  "age" : 36,
                  "name" : "Ada"
                }

                """))
    }

    @Test func showPrintsAPropertyListAsXML() {
        let result = cashier("show", folder.path, "feed")
        #expect(result.status == .success)
        #expect(result.output.contains("status          expired"))
        #expect(result.output.contains("<plist version=\"1.0\">"))
        #expect(result.output.contains("<string>two</string>"))
    }

    @Test func showDumpsTheFirst256RawBytesWithTheTotalLength() {
        let result = cashier("show", folder.path, "blob")
        #expect(result.output.contains("1000 bytes (1000 B), the first 256 shown:\n00000000  00 01 02 03"))
        #expect(result.output.contains("\n000000f0  f0 f1"))
        #expect(!result.output.contains("\n00000100"))
    }

    @Test func showGivesAPNGsDimensionsAndLength() {
        let result = cashier("show", folder.path, "avatar")
        #expect(result.output.hasSuffix("PNG image, 1 × 1 pixels, 70 bytes\n"))
        #expect(result.output.contains("locked          yes"))
    }

    @Test func showJSONCarriesThePayloadParsed() throws {
        let json = cashier("show", folder.path, "profile", "--json").json
        #expect(json["key"] as? String == "profile")
        let payload = try #require(json["payload"] as? [String: Any])
        #expect(Set(payload.keys) == ["format", "length", "value", "xml", "png", "hexPrefix"])
        let value = try #require(payload["value"] as? [String: Any])
        #expect(value["name"] as? String == "Ada")
        #expect(value["age"] as? Int == 36)
        let png = try #require(cashier("show", folder.path, "avatar", "--json").json["payload"] as? [String: Any])
        #expect((png["png"] as? [String: Any])?["width"] as? Int == 1)
        let raw = try #require(cashier("show", folder.path, "blob", "--json").json["payload"] as? [String: Any])
        #expect((raw["hexPrefix"] as? String)?.count == 512)
        #expect(raw["length"] as? Int == 1000)
    }

    @Test func showOfAMissingKeyExits1() {
        let result = cashier("show", folder.path, "nobody")
        #expect(result.status == .failure)
        #expect(result.error == "cashier-tool: no entry for key \"nobody\" in \(folder.path)\n")
    }

    @Test func statsCountsEntriesBytesExpiredLockedDamaged() throws {
        try damage("note", in: folder)
        let text = cashier("stats", folder.path)
        #expect(text.status == .success)
        #expect(text.output.contains("entries  5 (\(Format.size(folder.totalSize)))\n"))
        #expect(text.output.contains("expired  1 (\(folder.size(of: "feed")) B)\n"))
        #expect(text.output.contains("locked   1 (\(folder.size(of: "avatar")) B)\n"))
        #expect(text.output.contains("damaged  1 (\(folder.size(of: "note")) B)\n"))
        #expect(text.output.contains("largest  blob (1.1 KiB), avatar ("))
        #expect(text.output.contains("oldest   avatar (10m)\n"))
        let json = cashier("stats", folder.path, "--json").json
        #expect(json["count"] as? Int == 5)
        #expect(json["totalBytes"] as? Int == folder.totalSize)
        #expect((json["expired"] as? [String: Any])?["count"] as? Int == 1)
        #expect((json["locked"] as? [String: Any])?["bytes"] as? Int == folder.size(of: "avatar"))
        #expect((json["damaged"] as? [String: Any])?["count"] as? Int == 1)
        #expect((json["largest"] as? [[String: Any]])?.first?["key"] as? String == "blob")
        #expect((json["oldest"] as? [String: Any])?["ageSeconds"] as? Int == 600)
    }
}
