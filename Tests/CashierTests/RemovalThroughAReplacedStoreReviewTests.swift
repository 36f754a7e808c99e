import CashierPlatform
import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile review of removals through a store another process replaced (4cc4ef5: they reach
/// the folder's store now). Found and fixed: `removeAll(where:)`, `removeAllUnlocked()` and
/// `removeAllLocked()` planned from the old store (now judged anew before every plan), and a
/// removal whose replacing store could not be opened was dropped without a word (now it
/// reports the failure). What held is pinned too.
@Suite struct RemovalThroughAReplacedStoreReviewTests: ReplacedFolderSuite {
    let folder = TemporaryFolder()
    let other = TemporaryFolder()
    let clock = TestClock()
    let events = EventLog()

    // MARK: Findings

    /// `removeAll(where:)` (and `removeAllUnlocked`/`removeAllLocked`, which share its path:
    /// `planRemovals`, `StoreIndex.removeRows`, `EntryStore.remove(unchanged:…)`) within the
    /// re-check interval after another process replaced the folder went through the old store
    /// (failed on 4cc4ef5): a small key's row went from it and the replacing store's stayed, a
    /// large key's removal was refused (ESTALE) unreported; either read again after a relaunch.
    @Test(arguments: [false, true])
    func removeAllWhereReachesTheStoreThatReplacedTheOldOne(large: Bool) throws {
        let key = CacheKey<Data>("k")
        let value = large ? Self.large : Self.small
        let cache = cache()
        try cache.set(value, for: key)
        #expect(cache.value(for: key) == value)
        try replaceTheFolder(writing: [key], value: value)
        cache.removeAll(where: { $0 == "k" })
        #expect(try folder.row(for: key.name) == nil, "the replacing store's row stayed")
        #expect(relaunched().value(for: key) == nil, "a removed value read again")
        if large {
            #expect(
                !events.failures.isEmpty || !folder.hasEntryFile(for: key.name),
                "nothing removed and nothing reported")
        }
    }

    /// The same for `removeAllUnlocked()` (failed on 4cc4ef5).
    @Test func removeAllUnlockedReachesTheStoreThatReplacedTheOldOne() throws {
        let key = CacheKey<Data>("k")
        let cache = cache()
        try cache.set(Self.small, for: key)
        #expect(cache.value(for: key) == Self.small)
        try replaceTheFolder(writing: [key], value: Self.small)
        cache.removeAllUnlocked()
        #expect(relaunched().value(for: key) == nil, "a removed value read again")
    }

    /// With the memory tier on and the default re-check interval (10 ms, long past by the time
    /// the replacement is made here), `removeAll(where:)` reaches the new store (it did on
    /// 4cc4ef5 too: `indexForReading` noticed).
    @Test func removeAllWhereWithTheMemoryTierOnReachesTheReplacingStore() throws {
        let key = CacheKey<Data>("k")
        var configuration = makeConfiguration(folder, clock: clock, events: events)
        configuration.folderRecheckNanoseconds = DiskTier.defaultRecheckInterval
        let cache = Cache(configuration)
        try cache.set(Self.small, for: key)
        try replaceTheFolder(writing: [key], value: Self.small)
        cache.removeAll(where: { $0 == "k" })
        #expect(relaunched().value(for: key) == nil, "a removed value read again")
        #expect(cache.value(for: key) == nil, "a removed value read again by the remover")
    }

    // MARK: What held

    /// The folder removed and not made again. `removeValue` reports no failure (nothing
    /// was there to remove), makes no folder, and a later write makes the folder and store again.
    @Test(arguments: [false, true])
    func aRemovalWithTheFolderGoneReportsNothingAndALaterWriteLands(large: Bool) throws {
        let key = CacheKey<Data>("k")
        let value = large ? Self.large : Self.small
        let cache = cache()
        try cache.set(value, for: key)
        #expect(cache.value(for: key) == value)
        try FileManager.default.removeItem(at: folder.url)
        cache.removeValue(for: key)
        #expect(events.failures.isEmpty, "\(events.failures)")
        #expect(!FileManager.default.fileExists(atPath: folder.path), "a removal made the folder again")
        #expect(cache.value(for: key) == nil)
        try cache.set(value, for: CacheKey<Data>("later"))
        #expect(relaunched().value(for: CacheKey<Data>("later")) == value)
        #expect(relaunched().value(for: key) == nil)
        // And a removal after that reaches the new store.
        cache.removeValue(for: CacheKey<Data>("later"))
        #expect(relaunched().value(for: CacheKey<Data>("later")) == nil)
        #expect(events.failures.isEmpty, "\(events.failures)")
    }

    /// `removeAll()` with the folder gone and not made again reports nothing and makes no folder.
    @Test func removeAllWithTheFolderGoneReportsNothing() throws {
        let cache = cache()
        try cache.set(Self.small, for: CacheKey<Data>("a"))
        #expect(cache.value(for: CacheKey<Data>("a")) == Self.small)
        try FileManager.default.removeItem(at: folder.url)
        cache.removeAll()
        #expect(events.failures.isEmpty, "\(events.failures)")
        #expect(!FileManager.default.fileExists(atPath: folder.path))
        try cache.set(Self.small, for: CacheKey<Data>("b"))
        #expect(relaunched().value(for: CacheKey<Data>("b")) == Self.small)
    }

    /// A regular file in place of the folder: the removal neither crashes nor touches the
    /// file, reads miss, and a later write throws a CacheError.
    @Test func aRemovalWithAFileInPlaceOfTheFolder() throws {
        let key = CacheKey<Data>("k")
        let cache = cache()
        try cache.set(Self.large, for: key)
        #expect(cache.value(for: key) == Self.large)
        try FileManager.default.removeItem(at: folder.url)
        try Data("not a folder".utf8).write(to: folder.url)
        cache.removeValue(for: key)
        cache.removeAll()
        #expect(try Data(contentsOf: folder.url) == Data("not a folder".utf8))
        #expect(cache.value(for: key) == nil)
        #expect(throws: CacheError.self) { try cache.set(Self.small, for: key) }
    }

    /// The store deleted (with its log and shared memory), the folder and a large entry's
    /// file kept: the removal reopens a fresh store and takes the file; nothing reads again.
    @Test func aRemovalWithTheStoreDeletedButTheFolderKept() throws {
        let key = CacheKey<Data>("k")
        let cache = cache()
        try cache.set(Self.large, for: key)
        #expect(cache.value(for: key) == Self.large)
        for suffix in ["", "-wal", "-shm"] { unlink(folder.path + "/" + DiskTier.storeFileName + suffix) }
        #expect(folder.hasEntryFile(for: key.name))
        cache.removeValue(for: key)
        #expect(events.failures.isEmpty, "\(events.failures)")
        #expect(!folder.hasEntryFile(for: key.name))
        #expect(relaunched().value(for: key) == nil)
    }

    /// Another process set the store aside (as damaged) and made a fresh one, into which
    /// it wrote the key again: the removal reaches the fresh store.
    @Test(arguments: [false, true])
    func aRemovalThroughAStoreSetAside(large: Bool) throws {
        let key = CacheKey<Data>("k")
        let value = large ? Self.large : Self.small
        let cache = cache()
        try cache.set(value, for: key)
        #expect(cache.value(for: key) == value)
        let store = folder.path + "/" + DiskTier.storeFileName
        for suffix in ["", "-wal", "-shm"] { rename(store + suffix, store + ".damaged" + suffix) }
        do {
            let writer = relaunched()
            try writer.set(value, for: key)
            writer.waitForBackgroundWork()
        }
        #expect(try folder.row(for: key.name) != nil)
        cache.removeValue(for: key)
        #expect(events.failures.isEmpty, "\(events.failures)")
        #expect(try folder.row(for: key.name) == nil)
        #expect(relaunched().value(for: key) == nil)
    }

    /// Nothing escapes the folder. The cache is given its folder through a link (as every
    /// TemporaryFolder is), and the link is pointed at another cache's folder holding the same
    /// large key: the removal does not unlink that folder's file (before 4cc4ef5 it did).
    /// The removal reports a failure instead, naming the key (ESTALE).
    @Test func aRemovalAfterTheFolderLinkMovedLeavesTheOtherFolderAlone() throws {
        let key = CacheKey<Data>("k")
        let real = TemporaryFolder("real")
        let elsewhere = TemporaryFolder("elsewhere")
        let link = TemporaryFolder("link")
        try FileManager.default.createDirectory(at: real.url, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: real.path)
        var configuration = makeConfiguration(link, clock: clock, events: events)
        configuration.folderRecheckNanoseconds = 3_600_000_000_000
        configuration.memoryCountLimit = 0
        let cache = Cache(configuration)
        try cache.set(Self.large, for: key)
        do {
            let writer = Cache(makeConfiguration(elsewhere, clock: clock))
            try writer.set(Self.large, for: key)
            writer.waitForBackgroundWork()
        }
        #expect(elsewhere.hasEntryFile(for: key.name))
        unlink(link.path)
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: elsewhere.path)
        cache.removeValue(for: key)
        #expect(elsewhere.hasEntryFile(for: key.name), "a removal unlinked another folder's file")
        #expect(try elsewhere.row(for: key.name) != nil)
    }
}
