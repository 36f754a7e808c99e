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
        var configuration = folder.configuration(memoryCountLimit: 0)
        configuration.busyTimeout = 0.1
        weak var tier: DiskTier?
        do {
            let cache = Cache(configuration)
            #expect(cache.value(for: CacheKey<Data>("small")) == Data("small".utf8), "the read that opens the store")
            tier = cache.folderState.disk
            let disk = try #require(tier)
            #expect(disk.storeState.withLock { $0.importPending }, "the opening scheduled no import")
        }
        try FileManager.default.removeItem(at: folder.url)
        if fate == .replacedByAFile {
            // Listing it fails with ENOTDIR, not ENOENT.
            #expect(FileManager.default.createFile(atPath: folder.path, contents: Data("not a folder".utf8)))
        }
        defer { try? FileManager.default.removeItem(atPath: folder.path) }
        #expect(poll(seconds: 10) { tier == nil }, "the disk tier outlived its cache and its folder (\(fate))")
    }

    @Test("A cache released while its import waits for the store is released with it; the next opening imports")
    func aReleasedCacheEndsTheImportsRetries() throws {
        let folder = TemporaryFolder()
        let large = try Self.seedUnimportedFile(in: folder.path)
        let holder = try WriteLockHolder(storeIn: folder.path, mode: .write)
        var configuration = folder.configuration(memoryCountLimit: 0)
        configuration.busyTimeout = 0.1
        weak var tier: DiskTier?
        do {
            let cache = Cache(configuration)
            #expect(cache.value(for: CacheKey<Data>("small")) == Data("small".utf8), "the read that opens the store")
            tier = cache.folderState.disk
            let disk = try #require(tier)
            #expect(disk.storeState.withLock { $0.importPending }, "the opening scheduled no import")
        }
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
