import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// The import of a folder's large-entry files at the store's first opening retries every second
/// while it cannot finish (another process holds the store). Found by the full-volume suite: a
/// cache whose folder a test then removed went on retrying for good, its retry holding the disk
/// tier, so the removed store stayed open, and its room taken, for the rest of the process.
@Suite("The import's retries")
struct ImportRetryTests {
    @Test("A cache whose folder is removed while its import waits for the store stops retrying and is released")
    func aRemovedFolderEndsTheImportsRetries() throws {
        let folder = TemporaryFolder()
        let source = TemporaryFolder()
        let large = Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        do {
            let writer = Cache(source.configuration(memoryCountLimit: 0))
            try writer.set(large, for: CacheKey<Data>("large"))
            writer.waitForBackgroundWork()
            let seeding = Cache(folder.configuration(memoryCountLimit: 0))
            try seeding.set(Data("small".utf8), for: CacheKey<Data>("small"))
            seeding.waitForBackgroundWork()
        }
        // A large entry's file the folder's store has no row of: the next opening imports it.
        let name = DiskTier.fileName(for: "large")
        try FileManager.default.copyItem(atPath: source.path + "/" + name, toPath: folder.path + "/" + name)

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
        #expect(poll(seconds: 10) { tier == nil }, "the disk tier outlived its cache and its folder")
    }
}
