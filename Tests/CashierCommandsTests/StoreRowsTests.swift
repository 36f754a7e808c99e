import Cashier
import CashierSQLite
import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import CashierCommands

/// A folder with a store: the fixture's small entries as rows (their records the very bytes
/// an entry file holds), `blob` a large entry (a file with an index row), `avatar` a file of
/// 0.1.0 with no row. Laid out by hand, whichever of the two the library wrote each entry as.
func makeStoreFixture(_ folder: TemporaryFolder) throws {
    _ = try makeFixture(folder)
    let store = try EntryStore(folder: folder.path)
    for key in ["feed", "note", "profile"] {
        try upsertRow(key, try record(of: key, in: folder, store), into: store)
        try? FileManager.default.removeItem(atPath: folder.path + "/" + DiskTier.fileName(for: key))
    }
    for key in ["avatar", "blob"] {
        folder.write(DiskTier.fileName(for: key), Data(try record(of: key, in: folder, store)))
        try store.remove(key)
    }
    let blob = StoreEntry(
        key: "blob", location: .file, size: folder.size(of: "blob"), lastUse: Int64(writtenAt.timeIntervalSince1970))
    try store.upsert(blob)
}

/// The record of `key`: its file's bytes, or its row's record.
func record(of key: String, in folder: TemporaryFolder, _ store: EntryStore) throws -> [UInt8] {
    let path = folder.path + "/" + DiskTier.fileName(for: key)
    if FileManager.default.fileExists(atPath: path) { return try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) }
    return try #require(try store.record(for: key)).record
}

/// The fixture as Cashier 0.1.0 wrote it: five entry files and no store, whichever the
/// library wrote each entry as.
func makeFilesOnlyFixture(_ folder: TemporaryFolder) throws {
    _ = try makeFixture(folder)
    guard FolderStore.exists(in: folder.path) else { return }
    do {
        let store = try EntryStore(folder: folder.path)
        for key in ["avatar", "blob", "feed", "note", "profile"] {
            folder.write(DiskTier.fileName(for: key), Data(try record(of: key, in: folder, store)))
        }
    }
    for name in folder.fileNames where FolderStore.fileNames.contains(name) {
        try FileManager.default.removeItem(atPath: folder.path + "/" + name)
    }
}

/// Writes the record of `key`'s row as its file too: what a write that moved the value into
/// the store and was killed before removing the file leaves.
func leaveFile(of key: String, in folder: TemporaryFolder) throws {
    let store = try EntryStore(folder: folder.path)
    folder.write(DiskTier.fileName(for: key), Data(try #require(try store.record(for: key)).record))
}

/// Writes `record` as the row of `key`, as the cache's disk tier would.
func upsertRow(_ key: String, _ record: [UInt8], into store: EntryStore) throws {
    let entry = StoreEntry(
        key: key, location: .row, size: record.count, lastUse: Int64(writtenAt.timeIntervalSince1970))
    try store.upsert(entry, record: record)
}

/// The store's path in `folder`.
func storePath(_ folder: TemporaryFolder) -> String { folder.path + "/" + FolderStore.fileName }

/// The store file's bytes and modification time (not its access time: reading a file sets
/// that, and the store keeps recency in its rows).
func storeFile(_ folder: TemporaryFolder) -> [String?] {
    let snapshot = folder.snapshot()[FolderStore.fileName]
    return [snapshot.map { $0.bytes.base64EncodedString() }, snapshot?.modified.map { "\($0.timeIntervalSince1970)" }]
}

/// `list`, `show`, `stats`, `verify`, `report`, `remove` and `prune` in a folder whose small
/// entries are rows of its store (`store.sqlite`).
@Suite struct StoreRowsTests {
    let folder = TemporaryFolder()

    init() throws {
        try makeStoreFixture(folder)
    }

    @Test func listShowsEveryRowAndFileOnceWithItsLocation() throws {
        let json = cashier("list", folder.path, "--json")
        #expect(json.status == .success)
        let entries = try #require(json.json["entries"] as? [[String: Any]])
        #expect(entries.map { $0["key"] as? String } == ["avatar", "blob", "feed", "note", "profile"])
        #expect(entries.map { $0["location"] as? String } == ["file", "file", "row", "row", "row"])
        #expect(entries[4]["file"] is NSNull)
        #expect(entries[1]["file"] as? String == DiskTier.fileName(for: "blob"))
        #expect(entries.map { $0["status"] as? String } == ["valid", "valid", "expired", "valid", "valid"])
        let store = try #require(json.json["store"] as? [String: Any])
        #expect(store["status"] as? String == "sound")
        #expect(store["rows"] as? Int == 3)
        #expect(store["files"] as? Int == 2)
        #expect((store["bytes"] as? Int ?? 0) > 0)

        let table = cashier("list", folder.path)
        let lines = table.output.split(separator: "\n").map(String.init)
        #expect(lines[0].split(separator: " ").last == "LOCATION")
        #expect(lines[5].hasPrefix("profile") && lines[5].hasSuffix("  row"))
        #expect(lines.last?.hasSuffix("(3 rows, 2 files)") == true)
        #expect(table.error.isEmpty)
    }

    @Test func aRowsLeftOverFileOfTheSameKeyIsNotListedTwice() throws {
        for key in ["feed", "note", "profile"] { try leaveFile(of: key, in: folder) }
        let json = cashier("list", folder.path, "--json").json
        let entries = try #require(json["entries"] as? [[String: Any]])
        #expect(entries.map { $0["key"] as? String } == ["avatar", "blob", "feed", "note", "profile"])
        #expect(entries.map { $0["location"] as? String } == ["file", "file", "row", "row", "row"])
    }

    @Test func showReadsARowsRecordAndPayloadAndSaysItIsARow() throws {
        let result = cashier("show", folder.path, "profile")
        #expect(result.status == .success)
        #expect(result.output.contains("row             in store.sqlite\n"))
        #expect(result.output.contains("\"name\" : \"Ada\""))
        let json = cashier("show", folder.path, "profile", "--json").json
        #expect(json["location"] as? String == "row")
        #expect(json["file"] is NSNull)
        let payload = try #require(json["payload"] as? [String: Any])
        #expect((payload["value"] as? [String: Any])?["age"] as? Int == 36)
        // A large entry is its file, its index row beside it.
        let blob = cashier("show", folder.path, "blob", "--json").json
        #expect(blob["location"] as? String == "file")
        #expect(blob["file"] as? String == DiskTier.fileName(for: "blob"))
    }

    @Test func showSuggestsARowsKey() {
        let result = cashier("show", folder.path, "profil")
        #expect(result.status == .failure)
        #expect(result.error.contains("did you mean \"profile\"?"))
    }

    @Test func readOnlyCommandsLeaveTheStoreFileBytesAndTimesUnchanged() throws {
        let before = storeFile(folder)
        #expect(before[0] != nil)
        let entryFiles = folder.entryFiles
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("report-\(UUID()).html").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        for arguments in [
            ["list", folder.path], ["list", folder.path, "--json"], ["show", folder.path, "profile"],
            ["show", folder.path, "blob"], ["stats", folder.path, "--json"], ["verify", folder.path],
            ["report", folder.path, "--output", output], ["prune", folder.path, "--expired", "--dry-run"],
            ["show", folder.path, "missing"],
        ] {
            _ = cashier(arguments)
            #expect(storeFile(folder) == before, "\(arguments[0]) changed the store")
        }
        #expect(folder.entryFiles == entryFiles)
        // SQLite's own `-wal` a read-only connection may open beside a store that had none: empty.
        #expect(folder.snapshot()[FolderStore.fileName + "-wal"].map(\.bytes.isEmpty) != false)
        // No use was recorded: the rows' last uses are as written.
        let store = try EntryStore(folder: folder.path)
        #expect(try store.entries().map(\.lastUse).allSatisfy { $0 == Int64(writtenAt.timeIntervalSince1970) })
        #expect(try store.entries().map(\.frequency).allSatisfy { $0 == 0 })
    }

    @Test func verifyChecksEveryRowsRecordAndTheStoresStructure() {
        let result = cashier("verify", folder.path)
        #expect(result.status == .success)
        #expect(result.output == "5 entries checked, all sound.\n")
        let json = cashier("verify", folder.path, "--json").json
        #expect(json["checked"] as? Int == 5)
        #expect((json["storeProblems"] as? [Any])?.isEmpty == true)
    }

    @Test func aRowWhoseRecordFailsItsChecksumIsDamagedByKeyAndVerifyExits1() throws {
        let store = try EntryStore(folder: folder.path)
        var record = try #require(try store.record(for: "note")).record
        record[record.count - 1] ^= 0xFF
        try upsertRow("note", record, into: store)

        let result = cashier("verify", folder.path)
        #expect(result.status == .failure)
        #expect(result.output.contains("damaged: row in store.sqlite (key \"note\"): checksum mismatch\n"))
        #expect(result.output.contains("5 entries checked, 1 damaged."))
        let json = cashier("verify", folder.path, "--json")
        let damaged = try #require(json.json["damaged"] as? [[String: Any]])
        #expect(damaged.count == 1)
        #expect(damaged.first?["key"] as? String == "note")
        #expect(damaged.first?["location"] as? String == "row")
        #expect(cashier("show", folder.path, "note").status == .failure)

        let prune = cashier("prune", folder.path, "--damaged", "--json")
        #expect(prune.status == .success)
        #expect((prune.json["removed"] as? [[String: Any]])?.map { $0["key"] as? String } == ["note"])
        #expect(try store.entry(for: "note") == nil)
        #expect(cashier("verify", folder.path).status == .success)
    }

    @Test func aRowHoldingAnotherKeysRecordIsDamaged() throws {
        let store = try EntryStore(folder: folder.path)
        let record = try #require(try store.record(for: "note")).record
        try upsertRow("stranger", record, into: store)
        let result = cashier("verify", folder.path)
        #expect(result.status == .failure)
        #expect(result.output.contains("(key \"stranger\"): the row of \"stranger\" holds another key's record"))
    }

    @Test func aLargeEntrysRowWhoseFileIsMissingIsDamagedAndPruneDamagedRemovesTheRow() throws {
        try FileManager.default.removeItem(atPath: folder.path + "/" + DiskTier.fileName(for: "blob"))
        let verify = cashier("verify", folder.path)
        #expect(verify.status == .failure)
        #expect(verify.output.contains("(key \"blob\"): its row names a file that is missing"))
        #expect(cashier("prune", folder.path, "--damaged").status == .success)
        #expect(try EntryStore(folder: folder.path).entry(for: "blob") == nil)
        #expect(cashier("verify", folder.path).status == .success)
    }

    @Test func statsAndReportSayHowMuchIsInRowsAndInFiles() throws {
        let stats = cashier("stats", folder.path)
        #expect(stats.output.contains("in rows   3 ("))
        #expect(stats.output.contains("in files  2 ("))
        #expect(stats.output.contains("store     store.sqlite, "))
        let json = cashier("stats", folder.path, "--json").json
        let store = try #require(json["store"] as? [String: Any])
        #expect(store["rows"] as? Int == 3)
        #expect(store["fileBytes"] as? Int == folder.size(of: "avatar") + folder.size(of: "blob"))
        #expect((store["rowBytes"] as? Int ?? 0) + (store["fileBytes"] as? Int ?? 0) == json["totalBytes"] as? Int)

        let report = cashier("report", folder.path)
        #expect(report.status == .success)
        #expect(report.output.contains("id=\"summary-rows\" data-value=\"3\""))
        #expect(report.output.contains("id=\"summary-files\" data-value=\"2\""))
        #expect(report.output.contains("id=\"summary-store\""))
    }

    @Test func reportShowsAPNGRowsThumbnail() throws {
        let store = try EntryStore(folder: folder.path)
        try upsertRow("avatar", try record(of: "avatar", in: folder, store), into: store)
        try FileManager.default.removeItem(atPath: folder.path + "/" + DiskTier.fileName(for: "avatar"))
        let report = cashier("report", folder.path)
        #expect(report.status == .success)
        #expect(report.output.contains("<img src=\"data:image/png;base64,\(onePixelPNG.base64EncodedString())\""))
    }

    @Test func aLockTheStoreRecordsForARowIsTheEntrysLock() throws {
        // Locked as a row records it: the `locked` column (the tool reads the index, not the header).
        try SQLiteConnection(path: EntryStore(folder: folder.path).path, flags: SQLiteCode.openReadWrite)
            .execute("UPDATE entry SET locked = 1 WHERE key = 'note'")
        let entries = try #require(cashier("list", folder.path, "--json").json["entries"] as? [[String: Any]])
        #expect(entries.first { $0["key"] as? String == "note" }?["locked"] as? Bool == true)
        let remove = cashier("remove", folder.path, "note")
        #expect(remove.status == .failure)
        #expect(remove.error.contains("\"note\" is locked"))
        #expect(cashier("remove", folder.path, "note", "--force").status == .success)
    }

    @Test func removeDeletesARowAndALargeEntrysRowWithItsFile() throws {
        let profile = cashier("remove", folder.path, "profile")
        #expect(profile.status == .success, "\(profile.error)")
        let blob = cashier("remove", folder.path, "blob")
        #expect(blob.status == .success, "\(blob.error)")
        let store = try EntryStore(folder: folder.path)
        #expect(try store.entry(for: "profile") == nil)
        #expect(try store.entry(for: "blob") == nil)
        #expect(!folder.entryFiles.contains(DiskTier.fileName(for: "blob")))
        #expect(try store.keys() == ["feed", "note"])
    }

    @Test func removeOfARowTakesItsLeftOverFileToo() throws {
        try leaveFile(of: "note", in: folder)
        #expect(folder.entryFiles.contains(DiskTier.fileName(for: "note")))
        #expect(cashier("remove", folder.path, "note").status == .success)
        #expect(!folder.entryFiles.contains(DiskTier.fileName(for: "note")))
        #expect(try EntryStore(folder: folder.path).entry(for: "note") == nil)
        #expect(cashier("show", folder.path, "note").status == .failure)
    }

    @Test func pruneExpiredRemovesAnExpiredRow() throws {
        let dryRun = cashier("prune", folder.path, "--expired", "--dry-run")
        #expect(dryRun.output.contains("would remove  feed"))
        #expect(try EntryStore(folder: folder.path).entry(for: "feed") != nil)
        let result = cashier("prune", folder.path, "--expired", "--json")
        #expect(result.status == .success)
        let removed = try #require(result.json["removed"] as? [[String: Any]])
        #expect(removed.map { $0["key"] as? String } == ["feed"])
        #expect(removed.first?["location"] as? String == "row")
        #expect(try EntryStore(folder: folder.path).entry(for: "feed") == nil)
    }

    @Test func pruneToASizeEvictsRowsAndFilesAlike() throws {
        let result = cashier("prune", folder.path, "--max-size", "0", "--json")
        #expect(result.status == .success, "\(result.error)")
        #expect(result.json["remainingCount"] as? Int == 0)
        let store = try EntryStore(folder: folder.path)
        #expect(try store.count() == 0)
        #expect(folder.entryFiles.isEmpty)
    }
}

/// A store file that does not open, and folders without a store.
@Suite struct StoreDamageTests {
    let folder = TemporaryFolder()

    @Test func aStoreFileThatIsNotSQLiteIsReportedAndTheFilesStillListed() throws {
        try makeStoreFixture(folder)
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: storePath(folder)))
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: storePath(folder) + suffix) }
        let before = storeFile(folder)
        #expect(before[0] != nil)

        let list = cashier("list", folder.path, "--json")
        #expect(list.status == .success)
        #expect(list.json["count"] as? Int == 2)
        #expect((list.json["store"] as? [String: Any])?["status"] as? String == "damaged")
        #expect(list.error.contains("the store store.sqlite in \(folder.path) is damaged"))
        #expect(cashier("show", folder.path, "avatar").status == .success)
        #expect(cashier("stats", folder.path).output.contains("store     store.sqlite damaged: "))

        let verify = cashier("verify", folder.path)
        #expect(verify.status == .failure)
        #expect(verify.output.contains("damaged: the store store.sqlite: "))
        #expect(storeFile(folder) == before)

        // `prune --damaged` sets it aside, as the cache would on its next open.
        let prune = cashier("prune", folder.path, "--damaged")
        #expect(prune.status == .success, "\(prune.error)")
        #expect(prune.output.contains("Set the damaged store store.sqlite aside to store.sqlite.damaged"))
        #expect(prune.error.isEmpty)
        #expect(FileManager.default.fileExists(atPath: storePath(folder) + ".damaged"))
        #expect(cashier("verify", folder.path).status == .success)
    }

    @Test func pruneWithoutDamagedLeavesADamagedStoreAlone() throws {
        try makeStoreFixture(folder)
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: storePath(folder)))
        let before = storeFile(folder)
        #expect(before[0] != nil)
        _ = cashier("prune", folder.path, "--expired")
        #expect(storeFile(folder) == before)
        #expect(!FileManager.default.fileExists(atPath: storePath(folder) + ".damaged"))
    }

    @Test func anEmptyStoreFileAWriterHasJustMadeHoldsNoRowsAndIsNotDamage() throws {
        try makeFilesOnlyFixture(folder)
        folder.write(FolderStore.fileName, Data())
        let verify = cashier("verify", folder.path)
        #expect(verify.status == .success, "\(verify.output)")
        #expect(cashier("list", folder.path).error.isEmpty)
        // Its length by `stat`: `Data(contentsOf:)` of an empty file leaks its 4 KiB buffer
        // (FoundationEssentials' readBytesFromFile, seen by LeakSanitizer).
        #expect(try FileManager.default.attributesOfItem(atPath: storePath(folder))[.size] as? Int == 0)
    }

    @Test func readOnlyCommandsAndPruneCreateNoStoreInAFolderWithoutOne() throws {
        try makeFilesOnlyFixture(folder)
        for arguments in [
            ["list", folder.path], ["show", folder.path, "profile"], ["stats", folder.path], ["verify", folder.path],
            ["report", folder.path], ["prune", folder.path, "--expired"], ["remove", folder.path, "note"],
        ] {
            _ = cashier(arguments)
            #expect(!FileManager.default.fileExists(atPath: storePath(folder)), "\(arguments[0]) made a store")
        }
        let list = cashier("list", folder.path, "--json")
        #expect((list.json["store"] as? [String: Any])?["status"] as? String == "absent")
        #expect(!cashier("list", folder.path).output.contains("LOCATION"))
    }
}

/// `demo` in a folder whose entries a previous demo left as rows.
@Suite struct StoreDemoTests {
    let folder = TemporaryFolder()

    @Test func aSecondDemoRemovesTheRowsThePreviousOneLeftAndListsEachEntryOnce() throws {
        #expect(cashier(["demo", folder.path], now: Date()).status == .success)
        // Every entry the first demo wrote becomes a row, as a cache with a store writes them.
        do {
            let store = try EntryStore(folder: folder.path)
            for name in folder.entryFiles {
                let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: folder.path + "/" + name)))
                guard let key = Inventory.readEntry(folder.path, name, keepPayload: false)?.header?.key else {
                    continue
                }
                try upsertRow(key, bytes, into: store)
                try FileManager.default.removeItem(atPath: folder.path + "/" + name)
            }
            #expect(try store.count() == 7)
        }
        let second = cashier(["demo", folder.path], now: Date())
        #expect(second.status == .success, "\(second.error)")
        #expect(second.output.contains("(first removed the 7 entries a previous demo left there)\n"))
        #expect(second.output.contains("(small entries are rows of the store: store.sqlite, "))
        let entries = try #require(cashier("list", folder.path, "--json").json["entries"] as? [[String: Any]])
        #expect(entries.count == 7)
        #expect(Set(entries.compactMap { $0["key"] as? String }).count == 7)
    }
}
