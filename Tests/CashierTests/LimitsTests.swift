import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

#if canImport(Glibc)
import Glibc
#endif

/// Size limits as the file design keeps them (a folder without a store: when SQLite is
/// unavailable), to the byte with 1 KiB entries; the store's limits are StoreIntegrationTests'.
@Suite struct LimitsTests {
    let folder = TemporaryFolder()
    let clock = TestClock()

    func cache(
        diskLimit: Int? = nil, memoryLimit: Int? = nil, events: EventLog? = nil,
        evictionPolicy: EvictionPolicy = .frequencyAware
    ) -> Cache {
        makeLimitedCache(
            folder, clock: clock, diskLimit: diskLimit, memoryLimit: memoryLimit, events: events,
            evictionPolicy: evictionPolicy, storage: .filesWithoutStore)
    }

    /// Writes `count` 1 KiB entries named k0, k1, … and returns one entry's size on disk.
    func fill(_ cache: Cache, count: Int, from start: Int = 0) throws -> Int {
        for i in start..<start + count {
            try cache.set(Data(repeating: UInt8(i % 251), count: 1024), for: CacheKey<Data>("k\(i)"))
        }
        return cache.entry(for: CacheKey<Data>("k\(start)"))?.size ?? 0
    }

    @Test func totalSizeAndCountAreExactFileLengths() throws {
        let cache = cache()
        _ = try fill(cache, count: 5)
        let lengths = try folder.entryFiles.map {
            try FileManager.default.attributesOfItem(atPath: folder.path + "/" + $0)[.size] as! Int
        }
        #expect(cache.totalSize == lengths.reduce(0, +))
        #expect(cache.count == 5)
        let fresh = Cache(makeConfiguration(folder, storage: .filesWithoutStore))
        #expect(fresh.totalSize == lengths.reduce(0, +))
        #expect(fresh.count == 5)
    }

    @Test func diskSizeLimitEvictsLeastRecentlyUsedOffTheCallersThread() throws {
        let events = EventLog()
        let cache = cache(diskLimit: 10 * 1100, events: events)
        _ = try fill(cache, count: 8)
        // Touch k0 so that k1 is the least recently used.
        _ = Cache(makeConfiguration(folder, storage: .filesWithoutStore)).value(for: CacheKey<Data>("k0"))
        _ = cache.value(for: CacheKey<Data>("k0"))
        cache.removeValue(for: CacheKey<Data>("unrelated"))
        _ = try fill(cache, count: 4, from: 8)
        cache.waitForBackgroundWork()
        #expect(cache.totalSize <= 10 * 1100)
        #expect(!events.evictions.isEmpty)
        #expect(!events.evictions.contains("k11"))
        #expect(events.evictions.first == "k1")
        #expect(cache.statistics.evictions == events.evictions.count)
        for key in events.evictions { #expect(cache.value(for: CacheKey<Data>(key)) == nil) }
    }

    @Test func lockedEntriesAreEvictedLast() throws {
        let events = EventLog()
        let cache = cache(diskLimit: 4 * 1100, events: events)
        _ = try fill(cache, count: 3)
        cache.lock(CacheKey<Data>("k0"))
        _ = try fill(cache, count: 3, from: 3)
        cache.waitForBackgroundWork()
        cache.collectGarbage()
        #expect(cache.value(for: CacheKey<Data>("k0")) != nil)
        #expect(!events.evictions.contains("k0"))
        #expect(cache.totalSize <= 4 * 1100)
    }

    /// Locked entries are never evicted, also when nothing else could make room: the folder
    /// stays over its limit (as a folder with a store does, DiskEvictionOrderTests).
    @Test func lockedEntriesStayWhenNothingElseCanMakeRoom() throws {
        let cache = cache()
        _ = try fill(cache, count: 3)
        for i in 0..<2 { cache.lock(CacheKey<Data>("k\(i)")) }
        var configuration = makeConfiguration(folder, clock: clock, storage: .filesWithoutStore)
        configuration.diskSizeLimit = 1200
        let limited = Cache(configuration)
        limited.collectGarbage()
        #expect(limited.value(for: CacheKey<Data>("k0")) != nil)
        #expect(limited.value(for: CacheKey<Data>("k1")) != nil)
        #expect(limited.value(for: CacheKey<Data>("k2")) == nil)
        #expect(limited.count == 2)
        #expect(limited.totalSize > 1200)
    }

    @Test func collectGarbageRemovesExpiredThenTrimsToTheLimit() throws {
        let events = EventLog()
        let cache = cache(events: events)
        try cache.set(Data(count: 10), for: CacheKey<Data>("old"), lifespan: .seconds(1))
        _ = try fill(cache, count: 4)
        clock.advance(by: 2)
        var configuration = makeConfiguration(folder, clock: clock, events: events, storage: .filesWithoutStore)
        configuration.diskSizeLimit = 2 * 1200
        Cache(configuration).collectGarbage()
        #expect(events.discards.map(\.0) == ["old"])
        #expect(Cache(makeConfiguration(folder, storage: .filesWithoutStore)).count == 2)
        #expect(Cache(makeConfiguration(folder, storage: .filesWithoutStore)).totalSize <= 2 * 1200)
    }

    @Test func minimumFreeDiskSpaceEvictsUntilTheVolumeHasRoom() throws {
        var configuration = makeConfiguration(folder, clock: clock, storage: .filesWithoutStore)
        configuration.fileSystem = SpaceReportingFileSystem(capacity: 10_000, folder: folder.path)
        configuration.minimumFreeDiskSpace = 7_000
        let cache = Cache(configuration)
        _ = try fill(cache, count: 6)
        cache.lock(CacheKey<Data>("k0"))
        cache.collectGarbage()
        let free = try #require(
            SpaceReportingFileSystem(capacity: 10_000, folder: folder.path).availableCapacity(folder.path))
        #expect(free >= 7_000)
        #expect(cache.value(for: CacheKey<Data>("k0")) != nil)
        #expect(cache.value(for: CacheKey<Data>("k5")) != nil)
        #expect(cache.value(for: CacheKey<Data>("k1")) == nil)
    }

    @Test func memoryCountLimitKeepsTheMostRecentlyUsed() throws {
        let cache = cache(memoryLimit: 2, evictionPolicy: .leastRecentlyUsed)
        try cache.set(1, for: CacheKey<Int>("a"))
        try cache.set(2, for: CacheKey<Int>("b"))
        _ = cache.value(for: CacheKey<Int>("a"))
        try cache.set(3, for: CacheKey<Int>("c"))
        #expect(cache.memory.count == 2)
        #expect(cache.memory.peek("a") != nil)
        #expect(cache.memory.peek("b") == nil)
        // Evicted from memory only: still on disk.
        #expect(cache.value(for: CacheKey<Int>("b")) == 2)
    }

    @Test func memoryHitDoesNoIO() throws {
        let cache = cache()
        try cache.set(User(name: "A", age: 1), for: CacheKey<User>("u"))
        try FileManager.default.removeItem(at: folder.url)
        #expect(cache.value(for: CacheKey<User>("u")) == User(name: "A", age: 1))
    }

    @Test func zeroMemoryLimitReadsFromDiskEveryTime() throws {
        let cache = cache(memoryLimit: 0)
        try cache.set(1, for: CacheKey<Int>("a"))
        #expect(cache.memory.count == 0)
        #expect(cache.value(for: CacheKey<Int>("a")) == 1)
    }

    @Test func garbageCollectionIntervalRunsCollectionInTheBackground() async throws {
        var configuration = makeConfiguration(folder, clock: clock, storage: .filesWithoutStore)
        configuration.garbageCollectionInterval = 0.05
        let events = EventLog()
        configuration.onEvent = events.handler
        let cache = Cache(configuration)
        try cache.set(1, for: CacheKey<Int>("short"), lifespan: .seconds(1))
        clock.advance(by: 5)
        // Resumed by the scheduled collection's own event; bounded so a broken timer fails instead of hanging.
        await events.wait(for: "the scheduled collection's discard of \"short\"") { event in
            if case .discarded(key: "short", _) = event { true } else { false }
        }
        #expect(events.discards.contains { $0.0 == "short" && $0.1 == .expired })
    }
}

@Suite struct MemoryOnlyTests {
    func cache(limit: Int? = nil, events: EventLog? = nil, clock: TestClock = TestClock()) -> Cache {
        var configuration = Cache.Configuration(name: "memory")
        configuration.location = .memoryOnly
        configuration.memoryCountLimit = limit
        configuration.onEvent = events?.handler
        configuration.now = clock.function
        return Cache(configuration)
    }

    @Test func memoryOnlyCacheNeverTouchesTheDisk() throws {
        let cache = cache()
        #expect(cache.folder == nil)
        try cache.set(User(name: "A", age: 1), for: CacheKey<User>("u"))
        #expect(cache.value(for: CacheKey<User>("u"))?.name == "A")
        #expect(cache.totalSize == 0)
        #expect(cache.count == 1)
        #expect(cache.entry(for: CacheKey<User>("u"))?.size == 0)
        #expect(cache.keys == ["u"])
    }

    @Test func memoryOnlyEvictionIsReported() throws {
        let events = EventLog()
        let cache = cache(limit: 2, events: events)
        for i in 0..<3 { try cache.set(i, for: CacheKey<Int>("k\(i)")) }
        #expect(events.evictions == ["k0"])
        #expect(cache.count == 2)
    }

    @Test func memoryOnlyExpiryLockAndRefreshWork() throws {
        let clock = TestClock()
        let cache = cache(clock: clock)
        let key = CacheKey<Int>("k", lifespan: .seconds(10))
        try cache.set(1, for: key)
        clock.advance(by: 8)
        cache.refresh(key)
        clock.advance(by: 8)
        #expect(cache.value(for: key) == 1)
        cache.lock(key)
        clock.advance(by: 100)
        #expect(cache.value(for: key) == 1)
        cache.unlock(key)
        #expect(cache.value(for: key) == nil)
        cache.removeExpired()
        #expect(cache.count == 0)
    }
}

@Suite struct LocationTests {
    @Test func cachesAndPersistentFollowTheXDGConventions() {
        let environment = ProcessInfo.processInfo.environment
        let home = environment["HOME"] ?? NSHomeDirectory()
        let caches = Cache.folderPath(for: Cache.Configuration(name: "api"))!
        var persistentConfiguration = Cache.Configuration(name: "api")
        persistentConfiguration.location = .persistent
        let persistent = Cache.folderPath(for: persistentConfiguration)!
        #if canImport(Darwin)
        #expect(caches.contains("/Library/Caches/Cashier/api"))
        #expect(persistent.contains("/Library/Application Support/Cashier/api"))
        #else
        let cacheBase = environment["XDG_CACHE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.cache"
        let dataBase = environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.local/share"
        #expect(caches == cacheBase + "/Cashier/api")
        #expect(persistent == dataBase + "/Cashier/api")
        #endif
    }

    @Test func directoryLocationIsExactlyThatFolder() {
        var configuration = Cache.Configuration(name: "ignored")
        configuration.location = .directory(URL(fileURLWithPath: "/tmp/somewhere/else"))
        #expect(Cache.folderPath(for: configuration) == "/tmp/somewhere/else")
        configuration.location = .memoryOnly
        #expect(Cache.folderPath(for: configuration) == nil)
    }
}

@Suite struct FacadeTests {
    let folder = TemporaryFolder()
    static let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]) + Data("IHDR".utf8)

    @Test func typedAccessorsRoundTripThroughDisk() throws {
        let cache = Cache(makeConfiguration(folder))
        try cache.setString("hello", forKey: "s")
        try cache.setData(Data([1, 2, 3]), forKey: "d")
        try cache.setDictionary(["a": 1], forKey: "dict")
        try cache.setArray(["x", "y"], forKey: "arr")
        try cache.setImage(pngData: Self.png, forKey: "img")
        try cache.setObject(User(name: "A", age: 1), forKey: "obj")
        let fresh = Cache(makeConfiguration(folder))
        #expect(fresh.string(forKey: "s") == "hello")
        #expect(fresh.data(forKey: "d") == Data([1, 2, 3]))
        #expect(fresh.dictionary(forKey: "dict") == ["a": 1])
        #expect(fresh.array(forKey: "arr") == ["x", "y"])
        #expect(fresh.imageData(forKey: "img") == Self.png)
        #expect(fresh.object(forKey: "obj", as: User.self) == User(name: "A", age: 1))
        #expect(fresh.keys == ["arr", "d", "dict", "img", "obj", "s"])
    }

    @Test func setImageRefusesBytesThatAreNotAPNG() {
        let cache = Cache(makeConfiguration(folder))
        #expect {
            try cache.setImage(pngData: Data("GIF89a".utf8), forKey: "img")
        } throws: { error in
            (error as? CacheError)?.kind == .invalidValue && (error as? CacheError)?.key == "img"
        }
        #expect(cache.imageData(forKey: "img") == nil)
        #expect(folder.entryFiles.isEmpty)
    }

    @Test func facadeReadOfAnotherTypeIsAMiss() throws {
        let cache = Cache(makeConfiguration(folder))
        try cache.setString("hello", forKey: "s")
        #expect(cache.object(forKey: "s", as: Int.self) == nil)
    }

    @Test func removeIsValidAndRefreshWorkWhateverTheType() throws {
        let clock = TestClock()
        var configuration = makeConfiguration(folder, clock: clock)
        configuration.defaultLifespan = .seconds(10)
        let cache = Cache(configuration)
        try cache.setArray([1, 2], forKey: "a")
        clock.advance(by: 8)
        #expect(cache.isValid(forKey: "a"))
        cache.refreshValidation(forKey: "a")
        clock.advance(by: 8)
        #expect(cache.isValid(forKey: "a"))
        #expect(Cache(configuration).isValid(forKey: "a"))
        clock.advance(by: 3)
        #expect(!cache.isValid(forKey: "a"))
        cache.removeObject(forKey: "a")
        #expect(!cache.isValid(forKey: "missing"))
        #expect(folder.entryFiles.isEmpty)
    }
}

#if os(Linux)
@Suite struct AccessTimeTests {
    let folder = TemporaryFolder()

    func accessTime(_ name: String) throws -> Date {
        var st = stat()
        #expect(stat(folder.path + "/" + name, &st) == 0)
        return Date(timeIntervalSince1970: Double(st.st_atim.tv_sec) + Double(st.st_atim.tv_nsec) / 1e9)
    }

    /// Listing never makes an entry look used; a read does, by the cache's clock, not the kernel's.
    @Test func listingLeavesAccessTimesAloneAndReadingSetsThemByTheCachesClock() throws {
        let clock = TestClock()
        let cache = Cache(makeConfiguration(folder, clock: clock, storage: .filesWithoutStore))
        try cache.set(1, for: CacheKey<Int>("k"))
        let file = folder.entryFiles[0]
        // An access time far in the past that relatime would otherwise update.
        let omit = (1 << 30) - 2 // UTIME_OMIT: leave the modification time as it is
        var times = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 0, tv_nsec: omit)]
        #expect(utimensat(AT_FDCWD, folder.path + "/" + file, &times, 0) == 0)
        let before = try accessTime(file)
        var configuration = makeConfiguration(folder, clock: clock, storage: .filesWithoutStore)
        configuration.memoryCountLimit = 0
        let reader = Cache(configuration)
        #expect(reader.keys == ["k"])
        #expect(try accessTime(file) == before)
        #expect(reader.value(for: CacheKey<Int>("k")) == 1)
        #expect(try accessTime(file) == clock.now)
    }
}
#endif
