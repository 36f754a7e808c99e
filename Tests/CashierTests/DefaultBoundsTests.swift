import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

@Suite struct DefaultBoundsTests {
    let folder = TemporaryFolder()

    @Test func aCachesLocationIsBoundedAndCollectedByDefault() {
        let configuration = Cache.Configuration(name: "x")
        #expect(configuration.location == .caches)
        #expect(configuration.diskSizeLimit == 150 * 1024 * 1024)
        #expect(configuration.diskSizeLimit == Cache.Configuration.defaultDiskSizeLimit)
        #expect(configuration.garbageCollectionInterval == TimeInterval(30 * 60))
        #expect(configuration.garbageCollectionInterval == Cache.Configuration.defaultGarbageCollectionInterval)
    }

    @Test(arguments: ["persistent", "directory", "memoryOnly"])
    func otherLocationsAreUnboundedByDefault(location: String) {
        var configuration = Cache.Configuration(name: "x")
        switch location {
        case "persistent": configuration.location = .persistent
        case "directory": configuration.location = .directory(folder.url)
        default: configuration.location = .memoryOnly
        }
        #expect(configuration.diskSizeLimit == nil)
        #expect(configuration.garbageCollectionInterval == nil)
        #expect(Cache(configuration).configuration.diskSizeLimit == nil)
    }

    @Test func anExplicitNilKeepsACachesLocationUnbounded() {
        var configuration = Cache.Configuration(name: "x")
        configuration.diskSizeLimit = nil
        configuration.garbageCollectionInterval = nil
        #expect(configuration.diskSizeLimit == nil)
        #expect(configuration.garbageCollectionInterval == nil)
        configuration.location = .persistent
        configuration.location = .caches
        #expect(configuration.diskSizeLimit == nil)
        #expect(configuration.garbageCollectionInterval == nil)
    }

    @Test func aLimitSetBeforeMovingToAnotherLocationIsKept() {
        var configuration = Cache.Configuration(name: "x")
        configuration.diskSizeLimit = 1 << 20
        configuration.garbageCollectionInterval = 60
        configuration.location = .persistent
        #expect(configuration.diskSizeLimit == 1 << 20)
        #expect(configuration.garbageCollectionInterval == 60)
    }

    @Test func namedCachesHaveTheDefaults() {
        let cache = Cache.named("cashier-tests-bounded-\(UUID().uuidString)")
        #expect(cache.configuration.diskSizeLimit == Cache.Configuration.defaultDiskSizeLimit)
        #expect(cache.configuration.garbageCollectionInterval == Cache.Configuration.defaultGarbageCollectionInterval)
    }

    @Test func namedWithADiskSizeLimitUsesIt() {
        let name = "cashier-tests-limit-\(UUID().uuidString)"
        let small = Cache.named(name, diskSizeLimit: 1 << 20)
        #expect(small.configuration.diskSizeLimit == 1 << 20)
        #expect(small.configuration.garbageCollectionInterval == Cache.Configuration.defaultGarbageCollectionInterval)
        #expect(Cache.named(name, diskSizeLimit: 1 << 20) === small)
        let unbounded = Cache.named(name, diskSizeLimit: nil)
        #expect(unbounded.configuration.diskSizeLimit == nil)
        #expect(unbounded !== small)
        #expect(Cache.named(name, diskSizeLimit: Cache.Configuration.defaultDiskSizeLimit) === Cache.named(name))
        let versioned = Cache.named(name, appVersion: "3.0", diskSizeLimit: 2 << 20)
        #expect(versioned.configuration.appVersion == "3.0")
        #expect(versioned.configuration.diskSizeLimit == 2 << 20)
    }
}

@Suite struct AllCachesTests {
    let base = TemporaryFolder()

    func cache(_ name: String) -> Cache {
        var configuration = Cache.Configuration(name: name)
        configuration.location = .directory(base.url.appendingPathComponent(name, isDirectory: true))
        return Cache(configuration)
    }

    @Test func cacheFoldersAreTheSubfoldersOnly() throws {
        try cache("a").set("1", for: CacheKey<String>("k"))
        try cache("b").set("2", for: CacheKey<String>("k"))
        #expect(FileManager.default.createFile(atPath: base.path + "/note.txt", contents: Data("x".utf8)))
        #expect(Cache.cacheFolders(under: base.path) == [base.path + "/a", base.path + "/b"])
        #expect(Cache.cacheFolders(under: base.path + "/missing").isEmpty)
    }

    @Test func removeAllInFoldersClearsEveryCacheAndItsOpenInstances() throws {
        let key = CacheKey<String>("k")
        let first = cache("a")
        let second = cache("b")
        try first.set("1", for: key)
        try second.set("2", for: key)
        first.lock(key)
        let folders = Cache.cacheFolders(under: base.path)
        #expect(Cache.totalSize(ofFolders: folders) == first.totalSize + second.totalSize)
        #expect(Cache.totalSize(ofFolders: folders) > 0)

        Cache.removeAll(inFolders: folders)

        #expect(first.value(for: key) == nil)
        #expect(second.value(for: key) == nil)
        // The call returns once each store has given its pages back, before this thread's
        // reads and flushes of uses can hold the writer that giving them back does not wait
        // for: each folder is an empty store again.
        #expect(first.count == 0 && first.totalSize <= TemporaryFolder.emptyStoreBytes)
        #expect(second.count == 0 && second.totalSize <= TemporaryFolder.emptyStoreBytes)
        #expect(Cache.totalSize(ofFolders: folders) <= 2 * TemporaryFolder.emptyStoreBytes)
        #expect(FileManager.default.fileExists(atPath: base.path + "/a"))
    }

    @Test func removeAllInADirectoryClearsThatCache() throws {
        let cache = cache("a")
        try cache.set("1", for: CacheKey<String>("k"))
        Cache.removeAll(in: .directory(base.url.appendingPathComponent("a", isDirectory: true)))
        #expect(cache.count == 0)
        #expect(Cache.totalSize(in: .memoryOnly) == 0)
    }
}
