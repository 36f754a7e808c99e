import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// The suite runs where apps run: every folder a test gets lies below a symbolic link, as an
/// iOS app's container does (`/var` is a link to `/private/var`) and every macOS temporary
/// folder (`/var/folders/…`).
@Suite struct TemporaryFolderBelowALinkTests {
    @Test func everyTemporaryFolderLiesBelowASymbolicLink() throws {
        let folder = TemporaryFolder()
        // Made here: a path that does not exist yet resolves to itself.
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        #expect(folder.url.resolvingSymlinksInPath().path != folder.path)
        // lstat finds the link among the folder's ancestors, spelled as the tests spell them.
        var ancestor = folder.url.deletingLastPathComponent()
        var links: [String] = []
        while ancestor.path != "/" {
            var info = stat()
            if lstat(ancestor.path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK { links.append(ancestor.path) }
            ancestor.deleteLastPathComponent()
        }
        #expect(links.contains(TemporaryFolder.base.path), "no symbolic link above \(folder.path)")
    }

    @Test func aCacheInATemporaryFolderIsSpelledThroughTheLink() throws {
        let folder = TemporaryFolder()
        var configuration = Cache.Configuration(name: "below-a-link")
        configuration.location = .directory(folder.url)
        #expect(Cache.folderPath(for: configuration) == folder.path)
    }
}

/// The store where apps run (issue 34): a folder deleted under an open instance, a FIFO in the
/// store's place, and "Clear cache" giving the space back.
@Suite struct StoreWhereAppsRunTests {
    let folder = TemporaryFolder()

    func configuration(memoryCountLimit: Int? = nil, sizeLimit: Int? = nil) -> Cache.Configuration {
        var configuration = Cache.Configuration(name: "where-apps-run")
        configuration.location = .directory(folder.url)
        configuration.appVersion = "1"
        configuration.memoryCountLimit = memoryCountLimit
        configuration.diskSizeLimit = sizeLimit
        return configuration
    }

    // MARK: A deleted folder (issue 34, item 8)

    @Test func aNewInstanceOnAFolderDeletedUnderAnOpenOneReadsNoneOfItsValues() throws {
        let first = Cache(configuration())
        let keys = (0..<20).map { CacheKey<String>("small-\($0)") }
        for key in keys { try first.set("value of \(key.name)", for: key) }
        let large = CacheKey<Data>("large")
        try first.set(Data(repeating: 7, count: 20_000), for: large)
        // The first instance stays open, its store's connections with it.
        #expect(first.value(for: keys[0]) == "value of small-0")

        try FileManager.default.removeItem(at: folder.url)
        let second = Cache(configuration(memoryCountLimit: 0))
        let found = keys.filter { second.value(for: $0) != nil }.map(\.name)
        #expect(found.isEmpty, "values of the deleted folder read again: \(found)")
        #expect(second.value(for: large) == nil)
        #expect(second.keys.isEmpty, "keys of the deleted folder: \(second.keys)")
        #expect(second.count == 0)
        withExtendedLifetime(first) {}
    }

    @Test func anInstanceWithoutAMemoryTierReadsNoneOfTheValuesOfItsDeletedFolder() throws {
        let cache = Cache(configuration(memoryCountLimit: 0))
        let key = CacheKey<String>("small")
        try cache.set("value", for: key)
        #expect(cache.value(for: key) == "value")
        try FileManager.default.removeItem(at: folder.url)
        // It notices (within the store's recheck interval, so polled), and not from its connection's unlinked file.
        var answers: [String] = []
        let noticed = poll {
            let read = cache.value(for: key)
            answers.append(read ?? "nil")
            return read == nil && cache.keys.isEmpty
        }
        #expect(noticed, "the deleted folder's value kept reading: \(Set(answers))")
        // And the next write makes the folder and its store again.
        try cache.set("again", for: key)
        #expect(Cache(configuration(memoryCountLimit: 0)).value(for: key) == "again")
    }

    // MARK: A FIFO in the store's place (issue 34, item 8)

    @Test func aFIFOInPlaceOfTheStoreBlocksNoReadAndIsSetAsideByAWrite() throws {
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        let store = folder.path + "/" + DiskTier.storeFileName
        #expect(mkfifo(store, 0o600) == 0)
        let cache = Cache(configuration(memoryCountLimit: 0))
        let key = CacheKey<String>("k")

        // Bounded, so that a read opening the FIFO fails this test instead of hanging the suite.
        let read = returns(within: 60) { cache.value(for: key) == nil }
        #expect(read == true, "a read with a FIFO in place of the store did not return")
        let keys = returns(within: 60) { cache.keys.isEmpty }
        #expect(keys == true)

        let write = returns(within: 60) { () -> String in
            do {
                try cache.set("value", for: key)
                return "ok"
            } catch {
                return "\(error)"
            }
        }
        #expect(write == "ok", "the write with a FIFO in place of the store threw: \(write ?? "it did not return")")
        #expect(cache.value(for: key) == "value")
        var info = stat()
        #expect(lstat(store, &info) == 0 && info.st_mode & S_IFMT == S_IFREG, "store.sqlite is not a regular file now")
        #expect(Cache(configuration(memoryCountLimit: 0)).value(for: key) == "value")
    }

    // MARK: "Clear cache" gives the space back (issue 34, item 7)

    enum Clearing: String, CaseIterable, Sendable {
        case removeAll
        case removeAllInLocation
    }

    @Test(arguments: Clearing.allCases)
    func clearingAFolderOfManySmallValuesLeavesAnEmptyStoresSize(_ clearing: Clearing) throws {
        let count = 20_000
        let cache = Cache(configuration(memoryCountLimit: 100, sizeLimit: 256 << 20))
        var random = SplitMix64(seed: 34)
        for index in 0..<count {
            let value = Data((0..<1_000).map { _ in UInt8(truncatingIfNeeded: random.next()) })
            try cache.set(value, for: CacheKey<Data>("value-\(index)"))
        }
        cache.waitForBackgroundWork()
        let full = folder.bytesOnDisk
        #expect(full > count * 1_000)

        switch clearing {
        case .removeAll: cache.removeAll()
        case .removeAllInLocation: Cache.removeAll(in: .directory(folder.url))
        }
        cache.waitForBackgroundWork()
        #expect(cache.count == 0)
        // What totalSize reports (the entries alone, or the folder with its store) is back to an empty store's at most.
        #expect(cache.totalSize < 256 * 1024, "totalSize \(cache.totalSize) after clearing")
        let cleared = folder.bytesOnDisk
        // An empty store is 36 KiB; its log and shared memory file are gone or emptied.
        #expect(cleared < 256 * 1024, "after clearing, the folder holds \(cleared) bytes (\(full) full): \(sizes())")
        // And a fresh instance at rest finds it so too.
        let fresh = Cache(configuration(memoryCountLimit: 0))
        fresh.waitForBackgroundWork()
        #expect(folder.bytesOnDisk < 256 * 1024, "\(sizes())")
    }

    func sizes() -> String {
        folder.fileNames.map { name in
            var info = stat()
            return "\(name) \(lstat(folder.path + "/" + name, &info) == 0 ? Int(info.st_size) : -1)"
        }.joined(separator: ", ")
    }
}

/// Runs `body` on a thread of its own and returns its result, or `nil` when it has not returned
/// after `seconds` (generous: it bounds a hang, it does not measure a speed; the thread is left).
func returns<T: Sendable>(within seconds: Double, _ body: @escaping @Sendable () -> T) -> T? {
    let result = Locked<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        let value = body()
        result.withLock { $0 = value }
        done.signal()
    }
    guard done.wait(timeout: .now() + seconds) == .success else { return nil }
    return result.withLock { $0 }
}
