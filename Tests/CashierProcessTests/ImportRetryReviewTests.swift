import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Review of "a removed folder ends the import's retries" (8064c04): the import's other ways to
/// find its folder unlistable. A folder replaced by a file still retried for good, holding the
/// disk tier; a folder reached through a link that is briefly missing ended the import as done,
/// so the files it had not yet given rows were no longer read, and garbage collection removed
/// them. Now a folder gone ends the retries and leaves the import pending.
@Suite("The import's retries, reviewed")
struct ImportRetryReviewTests {
    /// A folder holding a store with one small row and one large entry's file without a row
    /// (what the next opening imports); the large value.
    private static func seedUnimportedFile(in folder: String) throws -> Data {
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
        "A cache whose folder is replaced by a file while its import waits for the store stops retrying and is released"
    )
    func aFolderReplacedByAFileEndsTheImportsRetries() throws {
        let folder = TemporaryFolder()
        _ = try Self.seedUnimportedFile(in: folder.path)
        // Another process's write lock: the import fails its busy timeout and retries a second later.
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
        // The folder's path now names a file: listing it fails with ENOTDIR, not ENOENT.
        try FileManager.default.removeItem(at: folder.url)
        #expect(FileManager.default.createFile(atPath: folder.path, contents: Data("not a folder".utf8)))
        defer { try? FileManager.default.removeItem(atPath: folder.path) }
        #expect(poll(seconds: 10) { tier == nil }, "the disk tier outlived its cache, its folder now a file")
    }

    @Test(
        "A folder's link missing while the import waits leaves its unimported files readable, and collection keeps them"
    )
    func aFolderBrieflyMissingLeavesTheImportPending() throws {
        let parent = TemporaryFolder()
        let real = parent.path + "/real"
        let link = parent.path + "/link"
        try FileManager.default.createDirectory(atPath: real, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
        let large = try Self.seedUnimportedFile(in: link)
        var configuration = parent.configuration(memoryCountLimit: 0)
        configuration.location = .directory(URL(fileURLWithPath: link))
        configuration.busyTimeout = 0.1
        let cache = Cache(configuration)
        let disk = try #require(cache.folderState.disk)
        do {
            // The import waits for another process's write lock, retrying every second.
            let holder = try WriteLockHolder(storeIn: real, mode: .write)
            defer { holder.release() }
            #expect(cache.value(for: CacheKey<Data>("small")) == Data("small".utf8), "the read that opens the store")
            #expect(disk.storeState.withLock { $0.importPending }, "the opening scheduled no import")
            // The link goes (replaced by another, say, with `rm` and `ln`): the next retry finds
            // no folder, and the import's chain ends.
            try FileManager.default.removeItem(atPath: link)
            disk.waitForSweeps()
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
        }
        // The review found 8064c04 ended the import as done here (`importPending` false): the
        // file was no longer read, and garbage collection removed it as an orphan. The retries
        // end, and the import stays pending. The same folder, the same store: the large entry's
        // file still has no row.
        #expect(
            cache.value(for: CacheKey<Data>("large")) == large, "the file the import had not reached no longer reads")
        cache.collectGarbage()
        #expect(
            FileManager.default.fileExists(atPath: real + "/" + DiskTier.fileName(for: "large")),
            "garbage collection removed the file as an orphan")
        #expect(cache.value(for: CacheKey<Data>("large")) == large, "the value is lost after garbage collection")
    }
}
