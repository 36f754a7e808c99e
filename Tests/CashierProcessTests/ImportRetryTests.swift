import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// The import of a folder's large-entry files at the store's first opening retries every second
/// while it cannot finish (another process holds the store). Found by the full-volume suite: a
/// cache whose folder a test then removed went on retrying for good, its retry holding the disk
/// tier, so the removed store stayed open, and its room taken, for the rest of the process. The
/// review of the first fix found the same with the folder replaced by a file (ENOTDIR).
@Suite("The import's retries")
struct ImportRetryTests {
    enum FolderFate: String, CaseIterable, Sendable {
        case removed
        case replacedByAFile
    }

    /// A folder holding a store with one small row and one large entry's file without a row
    /// (what the next opening imports); the large value.
    static func seedUnimportedFile(in folder: String) throws -> Data {
        let source = TemporaryFolder()
        let large = Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        var seedingConfiguration = source.configuration(memoryCountLimit: 0)
        seedingConfiguration.location = .directory(URL(fileURLWithPath: folder))
        do {
            let writer = Cache(source.configuration(memoryCountLimit: 0))
            try writer.set(large, for: CacheKey<Data>("large"))
            writer.waitForBackgroundWork()
            let seeding = Cache(seedingConfiguration)
            try seeding.set(Data("small".utf8), for: CacheKey<Data>("small"))
            seeding.waitForBackgroundWork()
        }
        let name = DiskTier.fileName(for: "large")
        try FileManager.default.copyItem(atPath: source.path + "/" + name, toPath: folder + "/" + name)
        return large
    }

    /// A configuration whose calls wait little for the store another process holds.
    static func waitingConfiguration(_ folder: TemporaryFolder) -> Cache.Configuration {
        var configuration = folder.configuration(memoryCountLimit: 0)
        configuration.busyTimeout = 0.1
        return configuration
    }

    /// Opens a cache (its read opens the store and schedules the import), checks the import is
    /// pending, lets the cache go, and returns its disk tier, which the caller holds weakly.
    static func tierOfAReleasedCache(_ configuration: Cache.Configuration) throws -> DiskTier {
        let cache = Cache(configuration)
        #expect(cache.value(for: CacheKey<Data>("small")) == Data("small".utf8), "the read that opens the store")
        let disk = try #require(cache.folderState.disk)
        #expect(disk.storeState.withLock { $0.importPending }, "the opening scheduled no import")
        return disk
    }

    @Test(
        "A cache whose folder goes while its import waits for the store stops retrying and is released",
        arguments: FolderFate.allCases)
    func aFolderGoneEndsTheImportsRetries(fate: FolderFate) throws {
        let folder = TemporaryFolder()
        _ = try Self.seedUnimportedFile(in: folder.path)
        // Another process's write lock: the import's transaction waits its busy timeout, fails,
        // and is tried again a second later.
        let holder = try WriteLockHolder(storeIn: folder.path, mode: .write)
        defer { holder.release() }
        let configuration = Self.waitingConfiguration(folder)
        weak let tier = try Self.tierOfAReleasedCache(configuration)
        // At once: a retry running meanwhile would make the lock file again in a folder being
        // removed file by file, and the removal would fail.
        try folder.removeAtOnce()
        if fate == .replacedByAFile {
            // Listing it fails with ENOTDIR, not ENOENT.
            #expect(FileManager.default.createFile(atPath: folder.path, contents: Data("not a folder".utf8)))
        }
        defer { try? FileManager.default.removeItem(atPath: folder.path) }
        #expect(poll(seconds: 10) { tier == nil }, "the disk tier outlived its cache and its folder (\(fate))")
    }

    /// The folder removed and made again by another process while the import waits: the retry
    /// that finds the store replaced ends (it neither imports the new folder's files into the old
    /// store, nor makes anything in a folder being removed), and the next read of this process
    /// opens the new store. The other process's large value, written under a key the old store
    /// held as a row, reads whole in both processes (`EntryStoreTests` pins the reconcile that
    /// could have removed it).
    @Test("A folder made again by another process while the import waits: that process's files stay, and read here")
    func aFolderMadeAgainKeepsTheOtherProcesssFiles() throws {
        let folder = TemporaryFolder()
        _ = try Self.seedUnimportedFile(in: folder.path)
        let holder = try WriteLockHolder(storeIn: folder.path, mode: .write)
        let cache = Cache(Self.waitingConfiguration(folder))
        #expect(cache.value(for: CacheKey<Data>("small")) == Data("small".utf8), "the read that opens the store")
        // Gone at once (a rename away): the retries, every second, cannot meet it half removed.
        let away = folder.path + "-gone"
        try #require(rename(folder.path, away) == 0)
        defer { try? FileManager.default.removeItem(atPath: away) }
        // Another process makes the folder again and writes a large value under "small", which
        // the old store holds as a row.
        do {
            let other = try StressSession(folderPath: folder.path)
            #expect(other.ask("fill small 20000 7") == "ok")
            other.close()
        }
        holder.release() // the old store's lock: a retry now gets it
        usleep(1_500_000) // a retry at least (they come a second apart)
        cache.waitForBackgroundWork()
        let fresh = try StressSession(folderPath: folder.path)
        defer { fresh.exit() }
        #expect(fresh.ask("check small 20000 7") == "whole", "the other process's value is gone")
        let expected = StressSession.value(for: "small", bytes: 20_000, seed: 7)
        #expect(
            poll(seconds: 5) { cache.value(for: CacheKey<Data>("small")) == expected },
            "this process does not read the new folder's value")
    }

    @Test("A cache released while its import waits for the store is released with it; the next opening imports")
    func aReleasedCacheEndsTheImportsRetries() throws {
        let folder = TemporaryFolder()
        let large = try Self.seedUnimportedFile(in: folder.path)
        let holder = try WriteLockHolder(storeIn: folder.path, mode: .write)
        let configuration = Self.waitingConfiguration(folder)
        weak let tier = try Self.tierOfAReleasedCache(configuration)
        // Each retry held the tier, and with it the store's open files, for as long as the other
        // process held the store: a cache released then lived on, waking every second.
        #expect(poll(seconds: 10) { tier == nil }, "the disk tier outlived its cache while the import waited")
        holder.release()
        let cache = Cache(configuration)
        #expect(cache.value(for: CacheKey<Data>("large")) == large, "the read that opens the store again")
        cache.waitForBackgroundWork()
        #expect(cache.folderState.disk?.storeState.withLock { $0.importPending } == false, "the import did not finish")
    }
}
