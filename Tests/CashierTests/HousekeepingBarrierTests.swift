import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Housekeeping decides with no key lock held and only unlinks under the barrier of every
/// key: reading headers and asking for free space never make writes of other keys wait.
@Suite struct HousekeepingBarrierTests {
    let folder = TemporaryFolder()
    let files = BarrierWatchingFileSystem()
    let events = EventLog()
    let payload = String(repeating: "x", count: 200)

    func cache(diskLimit: Int? = nil, minimumFreeSpace: Int? = nil) -> Cache {
        var configuration = makeConfiguration(folder, events: events, storage: .filesWithoutStore)
        configuration.fileSystem = files
        configuration.diskSizeLimit = diskLimit
        configuration.minimumFreeDiskSpace = minimumFreeSpace
        let cache = Cache(configuration)
        files.watch(cache.folderState.keyLocks)
        return cache
    }

    /// The calls made under the barrier other than unlinks.
    var callsUnderTheBarrierOtherThanUnlinks: [BarrierWatchingFileSystem.Call] {
        files.calls.filter { $0.underBarrier && $0.operation != "removeFile" }
    }

    @Test func sizeSweepReadsHeadersOutsideTheBarrier() throws {
        let cache = cache(diskLimit: 2_000)
        for i in 0..<20 { try cache.set(payload, for: CacheKey<String>("k\(i)")) }
        cache.waitForBackgroundWork()
        #expect(!events.evictions.isEmpty)
        #expect(files.calls.contains { $0.underBarrier && $0.operation == "removeFile" })
        #expect(callsUnderTheBarrierOtherThanUnlinks == [])
        #expect(cache.totalSize <= 2_000)
    }

    @Test func collectionAsksForFreeSpaceOutsideTheBarrier() throws {
        let cache = cache()
        for i in 0..<10 { try cache.set(payload, for: CacheKey<String>("k\(i)")) }
        // More free space than any volume has: every entry goes, after one question.
        let demanding = self.cache(minimumFreeSpace: Int.max / 2)
        files.clearCalls()
        demanding.collectGarbage()
        #expect(events.evictions.count == 10)
        #expect(files.calls.filter { $0.operation == "availableCapacity" }.count == 1)
        #expect(callsUnderTheBarrierOtherThanUnlinks == [])
        #expect(demanding.value(for: CacheKey<String>("k0")) == nil)
        #expect(folder.entryFiles.isEmpty)
    }

    @Test func removalsByKeyReadHeadersOutsideTheBarrier() throws {
        let cache = cache()
        for i in 0..<10 { try cache.set(payload, for: CacheKey<String>("k\(i)")) }
        files.clearCalls()
        cache.removeAll { $0.hasSuffix("1") || $0.hasSuffix("2") }
        cache.removeExpired()
        #expect(callsUnderTheBarrierOtherThanUnlinks == [])
        #expect(cache.keys.count == 8)
    }
}
