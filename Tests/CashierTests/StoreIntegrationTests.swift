import CashierPlatform
import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// The disk tier with its store, through the public `Cache` API: where an entry lives (a row
/// up to ``DiskTier/rowSizeLimit``, a file and a row above it), that an entry has exactly one
/// copy whatever it was before, and what becomes of a folder Cashier 0.1.0 wrote (files only).
@Suite struct StoreIntegrationTests {
    let folder = TemporaryFolder()
    let clock = TestClock()

    static let small = Data(repeating: 0x5A, count: 200)
    /// Over 8 KiB with its header: a file.
    static let large = Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })

    func cache(rowSizeLimit: Int? = nil, events: EventLog? = nil) -> Cache {
        var configuration = makeConfiguration(folder, clock: clock, events: events)
        configuration.rowSizeLimit = rowSizeLimit
        return Cache(configuration)
    }

    // MARK: Where an entry lives

    @Test func aSmallValueIsARowNotAFileAndReadsBackInAFreshInstance() throws {
        let key = CacheKey<Data>("small")
        do {
            let cache = cache()
            try cache.set(Self.small, for: key)
        }
        #expect(folder.hasStore)
        #expect(!folder.hasEntryFile(for: key.name))
        #expect(folder.entryFiles.isEmpty)
        #expect(try folder.row(for: key.name)?.location == .row)
        let fresh = cache()
        #expect(fresh.value(for: key) == Self.small)
        #expect(fresh.count == 1)
        #expect(fresh.keys == [key.name])
    }

    @Test func aValueOverTheRowLimitIsAFileWithARowOfItsOwn() throws {
        let key = CacheKey<Data>("large")
        do {
            let cache = cache()
            try cache.set(Self.large, for: key)
        }
        #expect(folder.hasEntryFile(for: key.name))
        let row = try #require(try folder.row(for: key.name))
        #expect(row.location == .file)
        #expect(row.size > DiskTier.rowSizeLimit)
        let fresh = cache()
        #expect(fresh.value(for: key) == Self.large)
        #expect(fresh.count == 1)
        // What the folder occupies: the large entry's file, and the store beside it.
        fresh.waitForBackgroundWork()
        #expect(fresh.totalSize == folder.occupiedBytes)
        #expect(fresh.totalSize > row.size)
    }

    @Test func overwritingSmallWithLargeAndBackLeavesExactlyOneCopy() throws {
        let key = CacheKey<Data>("moving")
        let cache = cache()
        try cache.set(Self.small, for: key)
        #expect(!folder.hasEntryFile(for: key.name))

        try cache.set(Self.large, for: key)
        #expect(folder.hasEntryFile(for: key.name))
        #expect(try folder.row(for: key.name)?.location == .file)
        #expect(cache.count == 1)

        let smaller = Data(repeating: 7, count: 300)
        try cache.set(smaller, for: key)
        // It became a row: its file is gone, not left beside the row.
        #expect(!folder.hasEntryFile(for: key.name))
        #expect(folder.entryFiles.isEmpty)
        #expect(try folder.row(for: key.name)?.location == .row)
        #expect(cache.count == 1)
        #expect(Cache(makeConfiguration(folder, clock: clock)).value(for: key) == smaller)
    }

    /// A write of a row finds a stored lock in its own statement (it reads nothing first): the
    /// lock is kept in the row's column and in its record's header, over a locked file or row.
    @Test func overwritingALockedEntryWithARowKeepsTheLockInTheRowAndItsRecord() throws {
        let key = CacheKey<Data>("pinned")
        do {
            let first = cache()
            try first.set(Self.large, for: key)
            first.lock(key)
        }
        try cache().set(Self.small, for: key)
        #expect(try folder.row(for: key.name)?.location == .row)
        #expect(try folder.row(for: key.name)?.isLocked == true)
        #expect(!folder.hasEntryFile(for: key.name))
        let changed = Self.small + Data([1])
        try cache().set(changed, for: key)
        #expect(try folder.row(for: key.name)?.isLocked == true)
        let fresh = cache()
        #expect(fresh.entry(for: key)?.isLocked == true)
        #expect(fresh.value(for: key) == changed)
        fresh.unlock(key)
        try cache().set(Self.small, for: key)
        #expect(try folder.row(for: key.name)?.isLocked == false)
        #expect(cache().entry(for: key)?.isLocked == false)
    }

    /// Row writes judge the folder and the store file at most once per recheck interval, but
    /// a new instance judges them at its first write: a store deleted under a running cache is
    /// made again by it, however long the interval.
    @Test func aNewInstanceJudgesTheStoreFileAnewAtItsFirstWriteWhateverTheInterval() throws {
        var configuration = makeConfiguration(folder, clock: clock)
        configuration.folderRecheckNanoseconds = 3_600_000_000_000
        // No memory tier: its coherence check (`data_version`) would find the store gone too.
        configuration.memoryCountLimit = 0
        let first = Cache(configuration)
        try first.set(Self.small, for: CacheKey<Data>("a"))
        try first.set(Self.small, for: CacheKey<Data>("b"))
        folder.removeStore()
        #expect(!folder.hasStore)
        let second = Cache(configuration)
        try second.set(Self.small, for: CacheKey<Data>("c"))
        #expect(folder.hasStore)
        #expect(try folder.row(for: "c")?.location == .row)
        #expect(Cache(makeConfiguration(folder, clock: clock)).value(for: CacheKey<Data>("c")) == Self.small)
        withExtendedLifetime(first) {}
    }

    @Test func removingAValueRemovesItsRowAndItsFile() throws {
        let cache = cache()
        try cache.set(Self.small, for: CacheKey<Data>("small"))
        try cache.set(Self.large, for: CacheKey<Data>("large"))
        cache.removeValue(for: CacheKey<Data>("small"))
        cache.removeValue(for: CacheKey<Data>("large"))
        #expect(folder.entryFiles.isEmpty)
        #expect(try folder.row(for: "small") == nil)
        #expect(try folder.row(for: "large") == nil)
        #expect(cache.count == 0)
        // The reclaim removals schedule changes the log's size meanwhile: compared at rest.
        cache.waitForBackgroundWork()
        #expect(cache.totalSize == folder.occupiedBytes)
    }

    // MARK: Folders written by 0.1.0

    /// Copies the checked-in entries of format `version` (FormatFixtureTests) into the folder:
    /// files only, no store, as Cashier 0.1.0 left them.
    func copyFixtures(version: Int) throws -> Cache.Configuration {
        try FileManager.default.copyItem(at: FormatFixtureTests.fixtures(version: version), to: folder.url)
        var configuration = makeConfiguration(folder, clock: clock, appVersion: "1.0 (7)")
        configuration.now = { FormatFixtureTests.written.addingTimeInterval(60) }
        return configuration
    }

    func fixtureFileBytes() -> Int {
        folder.entryFiles.reduce(0) { $0 + fileSize($1) }
    }

    func fileSize(_ name: String) -> Int {
        var info = stat()
        return stat(folder.path + "/" + name, &info) == 0 ? Int(info.st_size) : 0
    }

    @Test(arguments: [1, 2])
    func aFolderOf010FilesIsReadAndIndexedWhenTheStoreIsMade(version: Int) throws {
        let configuration = try copyFixtures(version: version)
        let fileBytes = fixtureFileBytes()
        let expectedKeys = ["blob", "feed", "pinned 📌/../key", "profile"]
        let events = EventLog()
        var withEvents = configuration
        withEvents.onEvent = events.handler
        let cache = Cache(withEvents)

        // Before any write: read as files, and no store is made by reading.
        #expect(cache.value(for: FormatFixtureTests.Keys.feed) == [3, 1, 4, 1, 5])
        #expect(cache.count == 4)
        #expect(cache.keys == expectedKeys)
        #expect(cache.totalSize == fileBytes)
        #expect(!folder.hasStore)

        // The first write makes the store; the folder's files get rows in the background.
        let extra = CacheKey<String>("extra")
        try cache.set("new", for: extra)
        cache.waitForBackgroundWork()
        #expect(folder.hasStore)
        let extraSize = try #require(try folder.row(for: "extra")).size
        #expect(cache.count == 5)
        #expect(cache.keys == (expectedKeys + ["extra"]).sorted())
        cache.waitForBackgroundWork()
        #expect(cache.totalSize == folder.occupiedBytes)
        #expect(cache.totalSize >= fileBytes + extraSize)
        for key in expectedKeys { #expect(try folder.row(for: key)?.location == .file, "\(key)'s row") }

        // A fresh instance reads every old entry back, from the files the rows point to.
        let fresh = Cache(configuration)
        #expect(fresh.value(for: FormatFixtureTests.Keys.profile)?.name == "Ada")
        #expect(fresh.value(for: FormatFixtureTests.Keys.feed) == [3, 1, 4, 1, 5])
        #expect(fresh.value(for: FormatFixtureTests.Keys.blob) == FormatFixtureTests.blob)
        #expect(fresh.entry(for: FormatFixtureTests.Keys.pinned)?.isLocked == true)
        #expect(fresh.value(for: extra) == "new")

        // A small write of an old key moves it into the store: its file goes.
        try fresh.set([2, 7], for: FormatFixtureTests.Keys.feed)
        #expect(!folder.hasEntryFile(for: "feed"))
        #expect(try folder.row(for: "feed")?.location == .row)
        #expect(fresh.count == 5)
        #expect(Cache(configuration).value(for: FormatFixtureTests.Keys.feed) == [2, 7])
        #expect(events.discards.isEmpty)
    }

    @Test func aFolderOfManyFilesWithoutAStoreIsIndexedWhole() throws {
        // Every entry a file (rowSizeLimit 0), then the store removed: a folder as 0.1.0 wrote it.
        var written: [String: Data] = [:]
        do {
            let old = cache(rowSizeLimit: 0)
            for index in 0..<60 {
                let value = Data(repeating: UInt8(index), count: 50 + index * 13)
                try old.set(value, for: CacheKey<Data>("old-\(index)"))
                written["old-\(index)"] = value
            }
            old.waitForBackgroundWork()
        }
        folder.removeStore()
        #expect(folder.entryFiles.count == 60)
        let fileBytes = fixtureFileBytes()

        let cache = cache()
        try cache.set(Data([1]), for: CacheKey<Data>("first"))
        cache.waitForBackgroundWork()
        let firstSize = try #require(try folder.row(for: "first")).size
        #expect(cache.count == 61)
        cache.waitForBackgroundWork()
        #expect(cache.totalSize == folder.occupiedBytes)
        #expect(cache.totalSize >= fileBytes + firstSize)
        #expect(cache.keys == (Array(written.keys) + ["first"]).sorted())
        for (key, value) in written { #expect(cache.value(for: CacheKey<Data>(key)) == value, "\(key)") }

        // Each small write of an old key leaves its value in a row and no file behind.
        for index in 0..<10 { try cache.set(Data([UInt8(index)]), for: CacheKey<Data>("old-\(index)")) }
        #expect(folder.entryFiles.count == 50)
        #expect(cache.count == 61)
    }

    /// The first write to a 0.1.0 folder makes the store; when it is a small write of a key
    /// that has a file, that file must go too (the import that follows finds the key's row and
    /// leaves the file alone), or the old value comes back once the row is evicted or expires.
    @Test
    func theWriteThatMakesTheStoreRemovesTheFileOfTheKeyItWrites() throws {
        let configuration = try copyFixtures(version: 2)
        let cache = Cache(configuration)
        try writeBeforeTheImport(cache) {
            try cache.set(Data([9, 9]), for: FormatFixtureTests.Keys.blob, lifespan: .seconds(10))
        }
        #expect(!folder.hasEntryFile(for: "blob"), "the 0.1.0 file of a key now in a row is left in the folder")
        #expect(cache.value(for: FormatFixtureTests.Keys.blob) == Data([9, 9]))
    }

    @Test func anOverwrittenValueNeverComesBackWhenItsRowExpires() throws {
        var configuration = try copyFixtures(version: 2)
        let now = Locked(FormatFixtureTests.written.addingTimeInterval(60))
        configuration.now = { now.withLock { $0 } }
        let cache = Cache(configuration)
        try writeBeforeTheImport(cache) {
            try cache.set(Data([9, 9]), for: FormatFixtureTests.Keys.blob, lifespan: .seconds(10))
        }
        #expect(cache.count == 4)
        now.withLock { $0 = $0.addingTimeInterval(3600) }
        cache.removeExpired()
        cache.purgeMemory()
        // The 0.1.0 value was replaced: it must not be read again.
        #expect(cache.value(for: FormatFixtureTests.Keys.blob) == nil, "the value written before the store came back")
    }

    /// Runs `write` (the folder's first write, which makes the store) with the sweep queue held,
    /// so the import of the folder's files that the write schedules runs after it, not before:
    /// the order a busy queue gives, made certain. Then waits for the import.
    func writeBeforeTheImport(_ cache: Cache, _ write: () throws -> Void) throws {
        let disk = try #require(cache.disk)
        let held = DispatchSemaphore(value: 0)
        let holding = DispatchSemaphore(value: 0)
        disk.sweepQueue.async {
            holding.signal()
            held.wait()
        }
        holding.wait()
        defer {
            held.signal()
            cache.waitForBackgroundWork()
        }
        try write()
    }

    // MARK: Rows and large entries' files (the ordering that is Cashier's, not SQLite's)

    /// Once the store has indexed the folder's older files, a file without a row is no entry
    /// (a write cut between its file and its row, before its commit): no read returns it, and
    /// garbage collection removes it, under the store's lock.
    @Test func aLargeEntrysFileWithoutARowIsNotReadOnceImportedAndGarbageCollectionRemovesIt() throws {
        let key = CacheKey<Data>("large")
        let cache = cache()
        try cache.set(Self.small, for: CacheKey<Data>("other"))
        try cache.set(Self.large, for: key)
        // The store's import of older files runs in the background at its first open: let it finish.
        cache.waitForBackgroundWork()
        // Its row goes by hand, as a kill inside the write's transaction would leave a new key.
        try EntryStore(folder: folder.path).remove(key.name)
        cache.purgeMemory()
        #expect(cache.count == 1)
        #expect(cache.value(for: key) == nil)
        #expect(cache.keys == ["other"])
        cache.collectGarbage()
        #expect(!folder.hasEntryFile(for: key.name))
        #expect(cache.count == 1)
        #expect(Cache(makeConfiguration(folder, clock: clock)).value(for: key) == nil)
    }

    /// A file older than the store (an earlier version's, or written before a kill cut its
    /// row) is read, and indexed, by the import each process starts at its first open.
    @Test func theImportAtAProcesssFirstOpenIndexesAFileWithoutARow() throws {
        let key = CacheKey<Data>("large")
        do {
            let cache = cache()
            try cache.set(Self.small, for: CacheKey<Data>("other"))
            try cache.set(Self.large, for: key)
            cache.waitForBackgroundWork()
        }
        try EntryStore(folder: folder.path).remove(key.name)
        let next = Cache(makeConfiguration(folder, clock: clock))
        _ = next.count // opens the store: the import starts
        next.waitForBackgroundWork()
        #expect(try folder.row(for: key.name)?.location == .file)
        #expect(next.value(for: key) == Self.large)
        #expect(next.keys == ["large", "other"])
    }

    @Test func aFileRowWhoseFileIsGoneIsAMissAndItsRowGoes() throws {
        let key = CacheKey<Data>("large")
        let cache = cache()
        try cache.set(Self.small, for: CacheKey<Data>("other"))
        try cache.set(Self.large, for: key)
        #expect(cache.count == 2)
        try FileManager.default.removeItem(atPath: folder.path + "/" + DiskTier.fileName(for: key.name))
        cache.purgeMemory()

        #expect(cache.value(for: key) == nil)
        #expect(try folder.row(for: key.name) == nil)
        #expect(cache.count == 1)
        #expect(cache.keys == ["other"])
    }

    @Test func garbageCollectionRemovesTheRowOfAFileThatIsGone() throws {
        let cache = cache()
        try cache.set(Self.large, for: CacheKey<Data>("large"))
        try FileManager.default.removeItem(atPath: folder.path + "/" + DiskTier.fileName(for: "large"))
        cache.collectGarbage()
        #expect(try folder.row(for: "large") == nil)
        #expect(cache.count == 0)
        cache.waitForBackgroundWork()
        #expect(cache.totalSize == folder.occupiedBytes)
    }

    @Test
    func garbageCollectionRemovesAFileShadowedByARowOfTheSameKey() throws {
        let key = CacheKey<Data>("shadowed")
        let cache = cache()
        try cache.set(Self.large, for: key)
        let file = folder.path + "/" + DiskTier.fileName(for: key.name)
        let stale = try #require(FileManager.default.contents(atPath: file))
        try cache.set(Self.small, for: key)
        #expect(!folder.hasEntryFile(for: key.name))
        // An older write's file put back beside the row (a 0.1.0 file the store never indexed).
        #expect(FileManager.default.createFile(atPath: file, contents: stale))
        cache.purgeMemory()
        #expect(cache.value(for: key) == Self.small)

        cache.collectGarbage()
        #expect(!folder.hasEntryFile(for: key.name), "garbage collection left a file its key's row shadows")
        #expect(cache.value(for: key) == Self.small)
        #expect(cache.count == 1)
    }

    // MARK: What keys lists

    @Test(
        "keys lists the rows of this app version and the versioned keys of any, never an unversioned key of another",
        arguments: [3, 300])
    func keysLeaveOutUnversionedEntriesOfAnotherAppVersion(olderEntries: Int) throws {
        let older = Cache(makeConfiguration(folder, clock: clock, appVersion: "1.0"))
        for index in 0..<olderEntries { try older.set(index, for: CacheKey<Int>("older-\(index)")) }
        try older.set(1, for: CacheKey<Int>("versioned", schemaVersion: 1))
        try older.set(Self.large, for: CacheKey<Data>("older-large"))
        older.waitForBackgroundWork()
        let current = Cache(makeConfiguration(folder, clock: clock, appVersion: "2.0"))
        try current.set(2, for: CacheKey<Int>("current"))
        try current.set("text", for: CacheKey<String>("current-text"))
        try current.set(Self.large, for: CacheKey<Data>("current-large"))
        let expected = ["current", "current-large", "current-text", "versioned"]
        #expect(current.keys == expected)
        #expect(Cache(makeConfiguration(folder, clock: clock, appVersion: "2.0")).keys == expected)
        #expect(Cache(makeConfiguration(folder, clock: clock, appVersion: "1.0")).keys.count == olderEntries + 2)
    }
}
