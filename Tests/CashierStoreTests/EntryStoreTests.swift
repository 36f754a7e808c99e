import CashierStore
import CashierStoreSupport
import CashierTestSupport
import Foundation
import Testing

@Suite struct EntryStoreTests {
    let folder = TemporaryFolder()
    let store: EntryStore

    init() throws {
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        store = try EntryStore(folder: folder.path)
    }

    private func entry(_ key: String, size: Int, lastUse: Int64 = 100, locked: Bool = false) -> StoreEntry {
        StoreEntry(key: key, location: .row, size: size, lastUse: lastUse, isLocked: locked)
    }

    @Test func aWrittenRecordReadsBackVerbatim() throws {
        let record: [UInt8] = Array(0..<200).map { UInt8($0 & 0xff) }
        try store.upsert(entry("user/1", size: record.count), record: record)
        let read = try #require(try store.record(for: "user/1"))
        #expect(read.record == record)
        #expect(read.entry == entry("user/1", size: record.count))
        #expect(try store.record(for: "user/2") == nil)
    }

    @Test(arguments: ["", "\u{0}", "a\u{0}b", "ключ", String(repeating: "k", count: 10_000), "🙂/../x"])
    func anyStringIsAKey(_ key: String) throws {
        try store.upsert(entry(key, size: 3), record: [1, 2, 3])
        #expect(try store.record(for: key)?.record == [1, 2, 3])
        #expect(try store.keys() == [key])
    }

    /// A folder removed and made again by another process holds another store at the path: what
    /// this store says of a file there (no row: an orphan) is not so, and removing it would lose
    /// the other process's entry. The reconcile (an import's, garbage collection's) removes
    /// nothing and throws; the caller tries again once the store is reopened.
    @Test func aReconcileAgainstAReplacedStoreRemovesNoFile() throws {
        try store.upsert(entry("small", size: 3), record: [1, 2, 3])
        let file = folder.path + "/another-process-file"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("large".utf8)))
        for suffix in ["", "-wal", "-shm"] { unlink(store.path + suffix) }
        let other = try EntryStore(folder: folder.path)
        try other.upsert(entry("other", size: 1), record: [1])
        #expect(throws: StoreError.self) { try store.reconcile(files: [(file, nil)], indexing: false) }
        #expect(FileManager.default.fileExists(atPath: file), "the reconcile removed a file of another store's folder")
    }

    /// The same for a sweep's or a collection's removal of planned rows: its rows are the old
    /// store's, but the file under a large entry's name is the other process's entry now.
    @Test func aRemovalOfPlannedRowsAgainstAReplacedStoreRemovesNoFile() throws {
        let large = StoreEntry(key: "image", location: .file, size: 5, lastUse: 1)
        try store.upsert(large, record: [])
        let file = folder.path + "/another-process-image"
        for suffix in ["", "-wal", "-shm"] { unlink(store.path + suffix) }
        let other = try EntryStore(folder: folder.path)
        try other.upsert(large, record: [])
        #expect(FileManager.default.createFile(atPath: file, contents: Data("image".utf8)))
        #expect(throws: StoreError.self) { try store.remove(unchanged: [large], filePath: { _ in file }) }
        #expect(FileManager.default.fileExists(atPath: file), "the removal took another store's file")
        #expect(try other.record(for: "image") != nil)
    }

    @Test func anEmptyRecordIsStoredAsEmpty() throws {
        try store.upsert(entry("empty", size: 0), record: [])
        #expect(try store.record(for: "empty")?.record == [])
    }

    @Test func overwriteReplacesRecordAndMetadata() throws {
        try store.upsert(entry("k", size: 3, lastUse: 1), record: [1, 2, 3])
        let replaced = try store.upsert(
            StoreEntry(key: "k", location: .row, size: 1, lastUse: 2, expiry: 50, isLocked: true), record: [9])
        #expect(replaced == nil)
        let read = try #require(try store.record(for: "k"))
        #expect(read.record == [9])
        #expect(read.entry.expiry == 50)
        #expect(read.entry.isLocked)
        #expect(try store.count() == 1)
        #expect(try store.totalSize() == 1)
    }

    @Test func aRowReplacingAFileEntryReturnsTheFileToRemove() throws {
        let large = StoreEntry(key: "image", location: .file, size: 5_000_000, lastUse: 1)
        try store.upsert(large, record: [1, 2, 3])
        let read = try #require(try store.record(for: "image"))
        #expect(read.record == []) // a file entry's row holds no record
        #expect(try store.totalSize() == 5_000_000)
        let replaced = try store.upsert(entry("image", size: 2), record: [7, 7])
        #expect(replaced == large)
    }

    @Test func removeReturnsWhatItRemoved() throws {
        for index in 0..<5 { try store.upsert(entry("k\(index)", size: 1), record: [UInt8(index)]) }
        #expect(try store.remove("k0")?.key == "k0")
        #expect(try store.remove("k0") == nil)
        let removed = try store.remove(["k1", "k2", "absent"])
        #expect(removed.map(\.key) == ["k1", "k2"])
        #expect(try store.keys() == ["k3", "k4"])
        #expect(try store.count() == 2)
    }

    @Test func countKeysAndTotalSizeReadTheIndex() throws {
        try store.upsert(entry("b", size: 10), record: Array(repeating: 1, count: 10))
        try store.upsert(entry("a", size: 20), record: Array(repeating: 2, count: 20))
        try store.upsert(StoreEntry(key: "c", location: .file, size: 1000, lastUse: 1))
        #expect(try store.count() == 3)
        #expect(try store.keys() == ["a", "b", "c"])
        #expect(try store.totalSize() == 1030)
        #expect(Set(try store.entries().map(\.key)) == ["a", "b", "c"])
    }

    @Test func evictionOrderIsLeastRecentlyUsedFirstAndSkipsLocked() throws {
        try store.upsert(entry("new", size: 1, lastUse: 300), record: [1])
        try store.upsert(entry("old", size: 1, lastUse: 100), record: [1])
        try store.upsert(entry("oldest-locked", size: 1, lastUse: 50, locked: true), record: [1])
        try store.upsert(entry("middle", size: 1, lastUse: 200), record: [1])
        #expect(try store.evictionCandidates(limit: 10).map(\.key) == ["old", "middle", "new"])
        #expect(try store.removeLeastRecentlyUsed(2).map(\.key) == ["old", "middle"])
        #expect(try store.keys() == ["new", "oldest-locked"])
        try store.upsert(entry("oldest-locked", size: 1, lastUse: 50), record: [1])
        #expect(try store.evictionCandidates(limit: 1).map(\.key) == ["oldest-locked"])
    }

    @Test func evictionRemovesExactlyTheRowsItReturnsTiesBrokenBySizeThenAge() throws {
        for index in 0..<300 {
            // Coarse last uses: many ties, broken by size, then by the older row.
            try store.upsert(
                entry("k\(index)", size: 300 - index % 7, lastUse: Int64(index / 10), locked: index % 11 == 0),
                record: [UInt8(index & 0xff)])
        }
        let expected = try store.evictionCandidates(limit: 120)
        let removed = try store.removeLeastRecentlyUsed(120)
        #expect(removed == expected)
        #expect(try store.count() == 180)
        let left = Set(try store.keys())
        #expect(removed.allSatisfy { !left.contains($0.key) && !$0.isLocked })
        #expect(try store.removeLeastRecentlyUsed(1000).count == 300 - 120 - 28)
        #expect(try store.keys().count == 28) // the locked ones
        #expect(try store.removeLeastRecentlyUsed(5).isEmpty)
    }

    @Test func usesMoveLastUseForwardAndCountFrequency() throws {
        try store.upsert(entry("k", size: 1, lastUse: 100), record: [1])
        try store.recordUses(["k", "k", "absent"], at: 500)
        try store.recordUses(["k"], at: 400) // older than the last use: neither moves it back nor counts
        let read = try #require(try store.entry(for: "k"))
        #expect(read.lastUse == 500)
        #expect(read.frequency == 2)
    }

    /// A use within the granularity of the row's last use writes nothing, except the first use
    /// of a row never used since written (a use at or after its write): the frequency-aware
    /// order's new entries are told apart by it.
    @Test func theFirstUseOfANewRowCountsWithinTheGranularity() throws {
        try store.upsert(entry("new", size: 1, lastUse: 100), record: [1])
        try store.upsert(entry("early", size: 1, lastUse: 100), record: [1])
        try store.recordUses([("new", 105)], granularity: 60)
        try store.recordUses([("early", 99)], granularity: 60) // before its write: no use of this row
        let used = try #require(try store.entry(for: "new"))
        #expect(used.lastUse == 105)
        #expect(used.frequency == 1)
        #expect(try store.entry(for: "early")?.frequency == 0)
        try store.recordUses([("new", 150)], granularity: 60) // a second use within the granularity
        #expect(try store.entry(for: "new") == used)
        try store.recordUses([("new", 165)], granularity: 60)
        #expect(try store.entry(for: "new")?.frequency == 2)
    }

    /// A first use a read gathered goes to the row the read found (never used, written in the
    /// second it saw), even in the write's own second; not to a row written since in its place.
    @Test func aFirstUseCountsForTheRowItsReadFoundOnly() throws {
        try store.upsert(entry("same", size: 1, lastUse: 100), record: [1])
        try store.upsert(entry("rewritten", size: 1, lastUse: 103), record: [1])
        try store.recordUses(
            [], granularity: 60,
            firstUses: [
                StoreFirstUse(key: "same", time: 100, written: 100),
                StoreFirstUse(key: "rewritten", time: 103, written: 100), // the read saw the row written at 100
            ])
        #expect(try store.entry(for: "same")?.frequency == 1)
        #expect(try store.entry(for: "rewritten")?.frequency == 0)
        try store.recordUses([], granularity: 60, firstUses: [StoreFirstUse(key: "same", time: 101, written: 100)])
        #expect(try store.entry(for: "same")?.frequency == 1) // a first use once
    }

    @Test func dataVersionChangesForAnotherConnectionsWriteOnly() throws {
        let other = try EntryStore(folder: folder.path)
        let start = try store.dataVersion()
        try store.upsert(entry("mine", size: 1), record: [1])
        #expect(try store.dataVersion() == start) // its own write
        try other.upsert(entry("theirs", size: 1), record: [2])
        let afterOther = try store.dataVersion()
        #expect(afterOther != start)
        #expect(try store.record(for: "theirs")?.record == [2])
        #expect(try store.dataVersion() == afterOther)
    }

    /// `removeAll` removes, inside its transaction, the entry files its caller lists besides the
    /// large entries': a file a killed write left behind a row must not outlive the rows (a
    /// kill right after the transaction, before any later cleanup, would leave it to the next
    /// import, which would give it a row again).
    @Test func removeAllRemovesLeftBehindFilesInsideItsTransaction() throws {
        try store.upsert(entry("small", size: 1), record: [1])
        let leftBehind = folder.path + "/left-behind.cache"
        let large = folder.path + "/large.cache"
        try Data([7]).write(to: URL(fileURLWithPath: leftBehind))
        try Data([8]).write(to: URL(fileURLWithPath: large))
        try store.upsert(StoreEntry(key: "large", location: .file, size: 1, lastUse: 1))
        var askedInside = false
        let removed = try store.removeAll(
            filePath: { [folder] key in folder.path + "/\(key).cache" },
            otherFiles: { [store] in
                // Inside the transaction: the rows are still there.
                askedInside = (try? store.count()) == 2
                return [leftBehind]
            })
        #expect(removed.removed.map(\.key) == ["large"])
        #expect(removed.awaitingRoom.isEmpty)
        #expect(askedInside)
        #expect(!FileManager.default.fileExists(atPath: leftBehind))
        #expect(!FileManager.default.fileExists(atPath: large))
        #expect(try store.count() == 0)
    }

    @Test func removalsGiveSpaceBackAfterReclaim() throws {
        let record = [UInt8](repeating: 7, count: 4000)
        for index in 0..<500 { try store.upsert(entry("k\(index)", size: record.count), record: record) }
        try store.checkpoint()
        let full = store.storeFileBytes()
        try store.removeLeastRecentlyUsed(250)
        #expect(try freePages() > 0)
        let freed = try store.reclaimSpace()
        #expect(freed > 0)
        #expect(store.storeFileBytes() < full * 3 / 4)
        #expect(try freePages() == 0)
        #expect(try store.count() == 250)
    }

    @Test func occupiedBytesCountTheStoreItsLogAndLargeEntriesFiles() throws {
        let record = [UInt8](repeating: 7, count: 1000)
        for index in 0..<100 { try store.upsert(entry("k\(index)", size: record.count), record: record) }
        try store.upsert(StoreEntry(key: "large", location: .file, size: 5_000_000, lastUse: 1))
        #expect(try store.occupiedBytes() == store.storeFileBytes() + 5_000_000)
        #expect(store.storeFileBytes() > 100 * record.count)
        try store.remove("large")
        #expect(try store.occupiedBytes() == store.storeFileBytes())
    }

    @Test func reclaimAfterEvictingHalfBringsOccupiedBytesDown() throws {
        let record = [UInt8](repeating: 7, count: 300)
        for index in 0..<2000 {
            try store.upsert(entry("k\(index)", size: record.count, lastUse: Int64(index)), record: record)
        }
        try store.checkpoint()
        let full = try store.occupiedBytes()
        try store.removeLeastRecentlyUsed(1000)
        try store.checkpoint()
        // Deleting frees pages inside the file, not on disk: only a reclaim gives them back.
        #expect(try store.occupiedBytes() >= full * 9 / 10)
        try store.reclaimSpace()
        #expect(try store.occupiedBytes() < full * 3 / 5)
        #expect(try store.count() == 1000)
        #expect(try store.record(for: "k1999")?.record == record)
    }

    @Test func hotStatementsAreFreshAfterTheStoreFileIsReplaced() throws {
        try store.upsert(entry("a", size: 1), record: [1])
        #expect(try store.record(for: "a")?.record == [1])
        // Another process sets the file aside; the next version check reopens a fresh store,
        // whose connections must prepare their statements anew (not run the old file's).
        try FileManager.default.moveItem(atPath: store.path, toPath: store.path + ".moved")
        _ = try store.dataVersion()
        #expect(try store.record(for: "a") == nil)
        try store.upsert(entry("b", size: 1), record: [2])
        #expect(try store.record(for: "b")?.record == [2])
        #expect(try store.count() == 1)
    }

    @Test func reclaimGivesBackAtMostThePagesAskedForInSteps() throws {
        let record = [UInt8](repeating: 7, count: 4000)
        for index in 0..<(EntryStore.reclaimStep + 200) {
            try store.upsert(entry("k\(index)", size: record.count, lastUse: Int64(index)), record: record)
        }
        try store.removeLeastRecentlyUsed(EntryStore.reclaimStep + 100)
        let free = try freePages()
        #expect(free > EntryStore.reclaimStep + 10)
        try store.reclaimSpace(pages: 10)
        #expect(try freePages() == free - 10)
        try store.reclaimSpace() // more than one step
        #expect(try freePages() == 0)
        #expect(try store.record(for: "k\(EntryStore.reclaimStep + 199)")?.record == record)
    }

    @Test func filesAreOwnerOnlyByDefault() throws {
        try store.upsert(entry("k", size: 1), record: [1])
        for suffix in ["", "-wal", "-shm"] {
            let attributes = try FileManager.default.attributesOfItem(atPath: store.path + suffix)
            #expect((attributes[.posixPermissions] as? Int) == 0o600, "\(suffix)")
        }
    }

    @Test func aGivenModeIsKeptWhateverTheUmask() throws {
        let shared = folder.path + "/shared"
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
        var options = EntryStore.Options()
        options.permissions = 0o660 // the usual umask, 022, would take the group's write away
        let store = try EntryStore(folder: shared, options: options)
        try store.upsert(entry("k", size: 1), record: [1])
        for suffix in ["", "-wal", "-shm"] {
            let attributes = try FileManager.default.attributesOfItem(atPath: store.path + suffix)
            #expect((attributes[.posixPermissions] as? Int) == 0o660, "\(suffix)")
        }
    }

    /// A link in place of the store is never followed: it is set aside like a damaged store
    /// (the link itself moves, its target is untouched) and a fresh store takes its place.
    @Test(arguments: ["link", "fifo", "folder"])
    func somethingNotARegularFileInPlaceOfTheStoreIsSetAsideNotFollowed(_ kind: String) throws {
        let elsewhere = folder.path + "/elsewhere.sqlite"
        try Data("keep".utf8).write(to: URL(fileURLWithPath: elsewhere))
        let linked = folder.path + "/linked"
        try FileManager.default.createDirectory(atPath: linked, withIntermediateDirectories: true)
        switch kind {
        case "link":
            try FileManager.default.createSymbolicLink(atPath: linked + "/store.sqlite", withDestinationPath: elsewhere)
        case "fifo": #expect(mkfifo(linked + "/store.sqlite", 0o600) == 0)
        default:
            try FileManager.default.createDirectory(
                atPath: linked + "/store.sqlite", withIntermediateDirectories: false)
        }
        let store = try EntryStore(folder: linked)
        #expect(store.setAsideAtOpen != nil)
        var info = stat()
        #expect(lstat(linked + "/store.sqlite", &info) == 0 && info.st_mode & S_IFMT == S_IFREG)
        try store.upsert(entry("k", size: 1), record: [1])
        #expect(try store.record(for: "k")?.record == [1])
        #expect(try Data(contentsOf: URL(fileURLWithPath: elsewhere)) == Data("keep".utf8))
    }

    /// Every iOS app's folders lie below `/var`, a link to `/private/var`, and every macOS
    /// temporary folder below `/var/folders`: a link among the folder's ancestors is followed.
    @Test func aStoreBelowASymbolicLinkOpensAndWrites() throws {
        let real = folder.path + "/private/var"
        try FileManager.default.createDirectory(atPath: real + "/cache", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/var", withDestinationPath: real)
        let store = try EntryStore(folder: folder.path + "/var/cache")
        try store.upsert(entry("k", size: 1), record: [1])
        #expect(try store.record(for: "k")?.record == [1])
        #expect(FileManager.default.fileExists(atPath: real + "/cache/store.sqlite"))
    }

    /// A store that cannot be opened leaves no empty file behind (the next open would take an
    /// empty file for a store).
    @Test func anOpenThatFailsLeavesNoStoreFile() throws {
        let missing = folder.path + "/no-such-folder"
        #expect(throws: StoreError.self) { _ = try EntryStore(folder: missing) }
        try FileManager.default.createDirectory(atPath: folder.path + "/read-only", withIntermediateDirectories: true)
        chmod(folder.path + "/read-only", 0o500)
        defer { chmod(folder.path + "/read-only", 0o700) }
        if geteuid() != 0 {
            #expect(throws: StoreError.self) { _ = try EntryStore(folder: folder.path + "/read-only") }
            #expect(!FileManager.default.fileExists(atPath: folder.path + "/read-only/store.sqlite"))
        }
    }
    private func freePages() throws -> Int { try storeFreePages(store.path) }
}

@Suite struct EntryStoreSharingTests {
    let folder = TemporaryFolder()

    init() throws { try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true) }

    /// Four connections writing, reading and evicting at once: every key whose write returned is
    /// stored unless a sweep removed it. Two connections may plan the same victim; it goes once, so
    /// the keys left are those written less those the sweeps report removed, not a fixed count.
    @Test func connectionsWritingAtOnceLoseNothing() async throws {
        let path = folder.path
        // Each store is its own SQLite connection, locking as separate processes would.
        let stores = try (0..<4).map { _ in try EntryStore(folder: path) }
        let removedByWriter = await withTaskGroup(of: [String].self) { group in
            for (writer, store) in stores.enumerated() {
                group.addTask {
                    var removed: [String] = []
                    for index in 0..<100 {
                        let key = "w\(writer)-\(index)"
                        do {
                            try store.upsert(
                                StoreEntry(key: key, location: .row, size: 1, lastUse: Int64(index)), record: [1])
                        } catch {
                            Issue.record("a write waiting for another connection failed: \(error)")
                        }
                        if index % 10 == 0 {
                            do {
                                removed += try store.removeLeastRecentlyUsed(1).map(\.key)
                            } catch {
                                Issue.record("a sweep waiting for another connection failed: \(error)")
                            }
                        }
                        _ = try? store.record(for: key)
                    }
                    return removed
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        let written = Set((0..<4).flatMap { writer in (0..<100).map { "w\(writer)-\($0)" } })
        #expect(Set(removedByWriter).count == removedByWriter.count, "a key was reported removed twice")
        #expect(!removedByWriter.isEmpty)
        #expect(try Set(stores[0].keys()) == written.subtracting(removedByWriter))
        #expect(try stores[0].count() == written.count - removedByWriter.count)
    }

    @Test func aStoreSetAsideByAnotherProcessIsReopenedAtTheNextVersionCheck() throws {
        let first = try EntryStore(folder: folder.path)
        try first.upsert(StoreEntry(key: "old", location: .row, size: 1, lastUse: 1), record: [1])
        let second = try EntryStore(folder: folder.path)
        // What another process's set-aside does: the file moves away and a fresh one takes its name.
        #expect(rename(first.path, first.path + ".damaged") == 0)
        #expect(rename(first.path + "-wal", first.path + ".damaged-wal") == 0)
        #expect(unlink(first.path + "-shm") == 0)
        let fresh = try EntryStore(folder: folder.path)
        try fresh.upsert(StoreEntry(key: "new", location: .row, size: 1, lastUse: 1), record: [2])
        _ = try second.dataVersion()
        #expect(try second.keys() == ["new"])
    }
}

@Suite struct EntryStoreReadOnlyTests {
    let folder = TemporaryFolder()

    init() throws { try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true) }

    private var readOnly: EntryStore.Options {
        var options = EntryStore.Options()
        options.readOnly = true
        return options
    }

    @Test func readOnlyCreatesNothing() throws {
        #expect(throws: StoreError.self) { _ = try EntryStore(folder: folder.path, options: readOnly) }
        #expect(folder.fileNames.isEmpty)
    }

    @Test func readOnlyReadsAndRefusesWrites() throws {
        let writer = try EntryStore(folder: folder.path)
        try writer.upsert(StoreEntry(key: "k", location: .row, size: 1, lastUse: 5), record: [1])
        let reader = try EntryStore(folder: folder.path, options: readOnly)
        #expect(try reader.record(for: "k")?.record == [1])
        #expect(try reader.structuralProblems() == [])
        #expect(throws: StoreError.self) { try reader.recordUses(["k"], at: 10) }
        #expect(try writer.entry(for: "k")?.lastUse == 5)
    }

    @Test func readOnlyNeverSetsADamagedFileAside() throws {
        try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: folder.path + "/store.sqlite"))
        #expect(throws: StoreError.self) { _ = try EntryStore(folder: folder.path, options: readOnly) }
        #expect(folder.fileNames == ["store.sqlite"])
    }
}
