import Cashier
import CashierTestSupport
import Foundation
import Testing

@testable import CashierCommands

/// `verify`, `prune` and `remove`, and the promise that read-only commands change nothing.
@Suite struct MaintenanceTests {
    let folder = TemporaryFolder()

    init() throws {
        _ = try makeFixture(folder)
    }

    @Test func verifyExits0WhenEverythingIsSound() {
        let result = cashier("verify", folder.path)
        #expect(result.status == .success)
        #expect(result.output == "5 entries checked, all sound.\n")
    }

    @Test func aDamagedFileMakesVerifyExit1AndNamesItWithWhy() throws {
        try damage("blob", in: folder)
        let result = cashier("verify", folder.path)
        #expect(result.status == .failure)
        #expect(result.status.rawValue == 1)
        #expect(
            result.output.contains("damaged: \(DiskTier.fileName(for: "blob")) (key \"blob\"): checksum mismatch\n"))
        #expect(result.output.contains("5 entries checked, 1 damaged."))

        let json = cashier("verify", folder.path, "--json")
        #expect(json.status == .failure)
        #expect(json.json["checked"] as? Int == 5)
        #expect(json.json["sound"] as? Int == 4)
        let damaged = try #require(json.json["damaged"] as? [[String: Any]])
        #expect(damaged.count == 1)
        #expect(damaged[0]["key"] as? String == "blob")
        #expect(damaged[0]["problem"] as? String == "checksum mismatch")
    }

    @Test func showOfADamagedEntryGivesItsHeaderAndWhyWithStatus1() throws {
        try damage("profile", in: folder)
        let result = cashier("show", folder.path, "profile")
        #expect(result.status == .failure)
        #expect(result.output.contains("key             profile\n"))
        #expect(result.output.hasSuffix("status          damaged: checksum mismatch\n"))
        let json = cashier("show", folder.path, "profile", "--json").json
        #expect(json["status"] as? String == "damaged")
        #expect(json["payload"] is NSNull)
    }

    @Test func aTruncatedFileIsDamagedAndListedByFileName() throws {
        let name = DiskTier.fileName(for: "profile")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: folder.path + "/" + name))
        folder.write(name, bytes.prefix(40))
        let list = cashier("list", folder.path)
        #expect(list.output.contains("[\(name)]"))
        let verify = cashier("verify", folder.path)
        #expect(verify.status == .failure)
        #expect(verify.output.contains("damaged: \(name): truncated"))
    }

    @Test func pruneDamagedRemovesOnlyTheDamagedFile() throws {
        try damage("blob", in: folder)
        let before = folder.snapshot()
        let result = cashier("prune", folder.path, "--damaged")
        #expect(result.status == .success)
        #expect(result.output.contains("removed  blob"))
        #expect(result.output.contains("Removed 1 entry ("))
        let after = folder.snapshot()
        #expect(Set(before.keys).subtracting(after.keys) == [DiskTier.fileName(for: "blob")])
        for (name, file) in after where name != DiskTier.lockFileName { #expect(before[name]?.bytes == file.bytes) }
        #expect(cashier("verify", folder.path).status == .success)
    }

    @Test func pruneExpiredRemovesExpiredEntriesAndReportsCountAndBytes() throws {
        let feedSize = folder.size(of: "feed")
        let result = cashier("prune", folder.path, "--expired", "--json")
        #expect(result.status == .success)
        #expect(result.json["count"] as? Int == 1)
        #expect(result.json["bytes"] as? Int == feedSize)
        #expect(result.json["dryRun"] as? Bool == false)
        let removed = try #require(result.json["removed"] as? [[String: Any]])
        #expect(removed.first?["key"] as? String == "feed")
        #expect(removed.first?["reason"] as? String == "expired")
        #expect(folder.entryFiles.count == 4)
    }

    @Test func lockedEntriesNeverExpireForPrune() {
        // Two days on, everything with a lifespan has run out, but the locked avatar has not.
        let result = cashier(["prune", folder.path, "--expired"], now: writtenAt.addingTimeInterval(2 * 86_400))
        #expect(result.output.contains("removed  feed"))
        #expect(result.output.contains("removed  profile"))
        #expect(!result.output.contains("avatar"))
        #expect(folder.entryFiles.contains(DiskTier.fileName(for: "avatar")))
    }

    @Test func pruneMaxSizeEvictsLeastRecentlyUsedAndKeepsLockedEntriesWhileItCan() throws {
        // Last uses, oldest first: note, profile, blob, feed, avatar (locked).
        let order = ["note", "profile", "blob", "feed", "avatar"]
        for (index, key) in order.enumerated() {
            let date = Date(timeIntervalSince1970: 1_700_000_000 + Double(index) * 60)
            try FileManager.default.setAttributes(
                [.modificationDate: date], ofItemAtPath: folder.path + "/" + DiskTier.fileName(for: key))
        }
        let limit = folder.size(of: "avatar") + folder.size(of: "feed")
        let result = cashier("prune", folder.path, "--max-size", "\(limit)", "--json")
        let removed = try #require(result.json["removed"] as? [[String: Any]])
        #expect(removed.map { $0["key"] as? String } == ["note", "profile", "blob"])
        #expect(removed.allSatisfy { $0["reason"] as? String == "evicted" })
        #expect(result.json["remainingBytes"] as? Int == limit)

        // Below what the locked entry alone takes, it goes too.
        let all = cashier("prune", folder.path, "--max-size", "1")
        #expect(all.output.contains("removed  feed"))
        #expect(all.output.contains("removed  avatar"))
        #expect(folder.entryFiles.isEmpty)
    }

    @Test func pruneDryRunReportsWithoutRemoving() {
        let before = folder.snapshot()
        let result = cashier("prune", folder.path, "--expired", "--max-size", "0", "--dry-run")
        #expect(result.status == .success)
        #expect(result.output.contains("would remove  feed"))
        #expect(result.output.contains("Would remove 5 entries"))
        #expect(folder.snapshot() == before)
    }

    @Test func removeDeletesOneEntryAndNothingElse() {
        let result = cashier("remove", folder.path, "note")
        #expect(result.status == .success)
        #expect(result.output.hasPrefix("Removed \"note\" ("))
        #expect(folder.entryFiles.count == 4)
        #expect(!folder.entryFiles.contains(DiskTier.fileName(for: "note")))
        let again = cashier("remove", folder.path, "note")
        #expect(again.status == .failure)
        #expect(again.error == "cashier-tool: no entry for key \"note\" in \(folder.path)\n")
    }

    @Test(arguments: [
        ["list"], ["list", "--json"], ["list", "--sort", "age"], ["show", "profile"], ["show", "blob", "--json"],
        ["show", "feed"], ["stats"], ["stats", "--json"], ["verify"], ["verify", "--json"],
        ["prune", "--damaged", "--expired", "--max-size", "0", "--dry-run"], ["show", "missing"],
        ["report"], ["report", "--size-limit", "1K"],
    ])
    func readOnlyCommandsLeaveTheFolderByteForByteUnchanged(command: [String]) throws {
        try damage("note", in: folder)
        let before = folder.snapshot()
        _ = cashier([command[0], folder.path] + command.dropFirst())
        let after = folder.snapshot()
        #expect(after.keys.sorted() == before.keys.sorted())
        for (name, file) in before {
            #expect(after[name]?.bytes == file.bytes, "\(name) changed")
            #expect(after[name]?.modified == file.modified, "\(name) modified")
            // Reading is not a use: the access times eviction goes by stay as they were.
            #expect(after[name]?.accessed == file.accessed, "\(name) accessed")
        }
    }

    @Test func theLibraryStillReadsWhatTheToolLeft() throws {
        _ = cashier("prune", folder.path, "--expired")
        _ = cashier("remove", folder.path, "blob")
        var configuration = Cache.Configuration(name: "check")
        configuration.location = .directory(folder.url)
        // A folder without a store (as 0.1.0 and SQLite's absence leave one): these tests read and
        // damage entry files; StoreRowsTests cover folders with a store.
        configuration.usesStore = false
        configuration.appVersion = "1.0"
        let cache = Cache(configuration)
        #expect(cache.keys == ["avatar", "note", "profile"])
        #expect(cache.string(forKey: "note") == "hello")
    }
}

@Suite struct DemoTests {
    let folder = TemporaryFolder()

    @Test func demoFillsTheFolderShowsTheUpdateAndEndsWithTheListTable() throws {
        let result = cashier(["demo", folder.path], now: Date())
        #expect(result.status == .success)
        #expect(result.error.isEmpty)
        #expect(result.output.hasPrefix("Cashier demo: a cache in \(folder.path)\n"))
        #expect(
            result.output.contains(".discarded(key: \"article.42\", reason: .schemaMismatch(stored: 1, expected: 2))"))
        #expect(result.output.contains(".migrated(key: \"settings\", from: 1, to: 2)"))
        #expect(result.output.contains(".appVersionMismatch(stored: \"1.0\", current: \"2.0\")"))

        // It ends with the very table `list` prints.
        let list = cashier(["list", folder.path], now: Date())
        let table = list.output.split(separator: "\n").first!
        #expect(result.output.contains(table))
        let rows = list.output.split(separator: "\n", omittingEmptySubsequences: false).dropFirst().prefix {
            !$0.isEmpty
        }
        #expect(rows.count == 7)
        #expect(rows.contains { $0.hasPrefix("user.avatar ") && $0.contains(" yes ") })
        #expect(rows.contains { $0.hasPrefix("weather.today ") && $0.contains(" expired ") })
        #expect(rows.contains { $0.hasPrefix("user.profile ") && ($0.contains(" in 59m ") || $0.contains(" in 1h ")) })
        #expect(cashier("verify", folder.path).status == .success)
    }

    @Test func demoRefusesAFolderOfOtherFiles() throws {
        try FileManager.default.createDirectory(atPath: folder.path, withIntermediateDirectories: true)
        folder.write("thesis.tex", Data("keep me".utf8))
        let result = cashier("demo", folder.path)
        #expect(result.status == .failure)
        #expect(result.error.contains("holds files that are not cache entries (thesis.tex)"))
        #expect(folder.fileNames == ["thesis.tex"])
    }
}

/// What the tool says where a user could mistake it: an empty folder, a locked entry, the demo's folder.
@Suite struct FirstUseTests {
    let folder = TemporaryFolder()

    @Test func verifyOfAFolderWithNoEntriesSaysItCheckedNothingInsteadOfAllSound() throws {
        try FileManager.default.createDirectory(atPath: folder.path, withIntermediateDirectories: true)
        let result = cashier("verify", folder.path)
        #expect(result.status == .success)
        #expect(result.output == "No cache entries in \(folder.path): nothing to verify.\n")
        #expect(!result.output.contains("sound"))
        #expect(cashier("verify", folder.path, "--json").json["checked"] as? Int == 0)

        // The parent of cache folders, a likely slip: it also asks whether it is a cache folder.
        try FileManager.default.createDirectory(atPath: folder.path + "/api", withIntermediateDirectories: true)
        let parent = cashier("verify", folder.path)
        #expect(parent.status == .success)
        #expect(parent.output.hasPrefix("No cache entries in"))
        #expect(parent.error.contains("is it a Cashier cache folder?"))
    }

    @Test func removeOfALockedEntryNeedsForceAndSaysWhy() throws {
        _ = try makeFixture(folder)
        let avatar = DiskTier.fileName(for: FixtureKeys.avatar)
        let refused = cashier("remove", folder.path, "avatar")
        #expect(refused.status == .failure)
        #expect(refused.output.isEmpty)
        #expect(
            refused.error
                == "cashier-tool: \"avatar\" is locked (the app pinned it, so it never expires); nothing removed. Remove it anyway with --force.\n"
        )
        #expect(folder.entryFiles.contains(avatar))

        let forced = cashier("remove", folder.path, "avatar", "--force")
        #expect(forced.status == .success)
        #expect(forced.output.hasPrefix("Removed \"avatar\" ("))
        #expect(forced.output.hasSuffix("), which was locked.\n"))
        #expect(!folder.entryFiles.contains(avatar))
        // An unlocked entry needs no --force, and --force on one changes nothing.
        #expect(cashier("remove", folder.path, "note").status == .success)
        let blob = cashier("remove", folder.path, "blob", "--force")
        #expect(blob.status == .success)
        #expect(!blob.output.contains("which was"))
    }

    @Test func listAndShowSpellATypeTheSameWay() throws {
        _ = try makeFixture(folder)
        let list = cashier("list", folder.path).output.split(separator: "\n").map(String.init)
        let showType = { (key: String) -> String? in
            cashier("show", folder.path, key).output.split(separator: "\n")
                .first { $0.hasPrefix("type ") }.map { $0.dropFirst(4).trimmingCharacters(in: .whitespaces) }
        }
        for key in ["feed", "blob", "profile"] {
            let row = try #require(list.first { $0.hasPrefix(key + " ") })
            let type = try #require(showType(key))
            #expect(row.split(separator: " ", omittingEmptySubsequences: true)[1] == type[...])
        }
        #expect(showType("feed") == "Array<String>")
        // `--json` spells it as the table does (issue 27: it said `Swift.Array<Swift.String>`).
        #expect(cashier("show", folder.path, "feed", "--json").json["type"] as? String == "Array<String>")
    }
}

@Suite struct DemoFolderTests {
    let folder = TemporaryFolder()

    @Test func demoWithoutAFolderUsesOneFixedFolderInTheUsersCacheFolder() {
        #expect(DemoCommand.defaultFolder.hasSuffix("/Cashier/demo"))
        #expect(Help.text(for: "demo").contains("Cashier/demo"))
    }

    @Test func aSecondDemoReusesTheFolderAndStartsAfresh() throws {
        let first = cashier(["demo", folder.path], now: Date())
        #expect(first.status == .success)
        // SQLite's -wal and -shm come and go with its connections, and the folder lock with housekeeping.
        func lasting() -> [String] {
            folder.fileNames.filter { !$0.hasPrefix(DiskTier.storeFileName + "-") && $0 != DiskTier.lockFileName }
        }
        let files = lasting()
        let second = cashier(["demo", folder.path], now: Date())
        #expect(second.status == .success)
        #expect(second.error.isEmpty)
        #expect(second.output.contains("(first removed the 7 entries a previous demo left there)\n"))
        // The same story as the first time: the discard and the migration happen again.
        #expect(
            second.output.contains(".discarded(key: \"article.42\", reason: .schemaMismatch(stored: 1, expected: 2))"))
        #expect(second.output.contains(".migrated(key: \"settings\", from: 1, to: 2)"))
        #expect(lasting() == files)
        #expect(DiskTier(folder: folder.path).totals().count == 7)
    }

    @Test func demoRefusesAFolderHoldingOtherKeysEntries() throws {
        _ = try makeFixture(folder)
        let before = folder.snapshot()
        let result = cashier("demo", folder.path)
        #expect(result.status == .failure)
        #expect(result.error.contains("holds entries the demo did not write (\"avatar\", \"blob\", \"feed\")"))
        #expect(folder.snapshot() == before)
    }
}
