import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Background housekeeping never waits for the folder lock another process holds: on iOS a
/// suspended app that holds (or waits on) a file lock in an App Group container is ended.
@Suite struct FolderLockTests {
    let folder = TemporaryFolder()

    /// Holds the folder's `.lock` through an open file description of its own, as another
    /// process would (flock locks belong to the open file description).
    private func holdLock() throws -> Int32 {
        let fd = open(folder.path + "/" + DiskTier.lockFileName, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        try #require(flock(fd, LOCK_EX) == 0)
        return fd
    }

    @Test func tryLockAnswersNilWhileAnotherHolderHasTheLock() throws {
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        let held = try holdLock()
        let path = folder.path + "/" + DiskTier.lockFileName
        #expect(try POSIXFileSystem().tryLockExclusively(path) == nil)
        flock(held, LOCK_UN)
        close(held)
        let token = try #require(try POSIXFileSystem().tryLockExclusively(path))
        POSIXFileSystem().unlock(token)
    }

    @Test func backgroundCollectionSkipsARoundWhileTheLockIsHeldAndCollectsAfter() throws {
        let clock = TestClock()
        let cache = Cache(makeConfiguration(folder, clock: clock, storage: .files))
        let key = CacheKey<String>("soon", lifespan: .seconds(10))
        try cache.set("x", for: key)
        clock.advance(by: 60)
        let held = try holdLock()
        cache.collectGarbage(waiting: false) // returns at once instead of blocking
        #expect(folder.fileNames.contains(DiskTier.fileName(for: key.name)))
        flock(held, LOCK_UN)
        close(held)
        cache.collectGarbage(waiting: false)
        #expect(!folder.fileNames.contains(DiskTier.fileName(for: key.name)))
    }

    @Test func waitForBackgroundWorkWaitsForASweepRetriedAfterTheLockWasHeld() throws {
        // A limit of 1,000 bytes is below what a store's own pages take: without a store, the
        // first write stays under it and only the second is over (the retry is the same code).
        var configuration = makeConfiguration(folder, clock: TestClock(), storage: .filesWithoutStore)
        configuration.diskSizeLimit = 1_000
        let cache = Cache(configuration)
        try cache.set("first", for: CacheKey<String>("first"))
        let held = try holdLock()
        try cache.set(String(repeating: "x", count: 2_000), for: CacheKey<String>("big"))
        cache.disk!.drainSweepQueue() // the first attempt found the lock held; a retry is due in a second
        #expect(folder.fileNames.filter(DiskTier.isEntryFileName).count == 2)
        flock(held, LOCK_UN)
        close(held)
        cache.waitForBackgroundWork()
        #expect(folder.fileNames.filter(DiskTier.isEntryFileName).count < 2)
    }
}
