import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Review of "a removed folder ends the import's retries" (8064c04): a folder reached through a
/// link that is briefly missing ended the import as done, so the files it had not yet given rows
/// were no longer read, and garbage collection removed them. Now a folder gone ends the retries
/// and leaves the import pending. (The review's other case, a folder replaced by a file, is one
/// of `ImportRetryTests`'s.)
@Suite("The import's retries, reviewed")
struct ImportRetryReviewTests {
    @Test(
        "A folder's link missing while the import waits leaves its unimported files readable, and collection keeps them"
    )
    func aFolderBrieflyMissingLeavesTheImportPending() throws {
        let parent = TemporaryFolder()
        let real = parent.path + "/real"
        let link = parent.path + "/link"
        try FileManager.default.createDirectory(atPath: real, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
        let large = try ImportRetryTests.seedUnimportedFile(in: link)
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
