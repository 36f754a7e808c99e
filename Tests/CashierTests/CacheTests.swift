import CashierEntryFormat
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

@Suite struct CacheTests {
    let folder = TemporaryFolder()
    let profile = CacheKey<User>("profile", schemaVersion: 1)

    @Test func valueWrittenIsReadBackFromMemoryAndFromAFreshInstance() throws {
        let cache = Cache(makeConfiguration(folder))
        try cache.set(User(name: "Ada", age: 36), for: profile)
        #expect(cache.value(for: profile) == User(name: "Ada", age: 36))
        #expect(Cache(makeConfiguration(folder)).value(for: profile) == User(name: "Ada", age: 36))
    }

    @Test func missOnAnEmptyCacheIsNilAndCounted() {
        let events = EventLog()
        let cache = Cache(makeConfiguration(folder, events: events))
        #expect(cache.value(for: profile) == nil)
        #expect(cache.statistics.misses == 1)
        #expect(cache.statistics.hits == 0)
        guard case .miss(let key) = events.all.first else {
            Issue.record("no miss event")
            return
        }
        #expect(key == "profile")
    }

    @Test func subscriptStoresReadsAndRemovesWithNil() {
        let cache = Cache(makeConfiguration(folder))
        cache[profile] = User(name: "Bo", age: 2)
        #expect(cache[profile] == User(name: "Bo", age: 2))
        cache[profile] = nil
        #expect(cache[profile] == nil)
        #expect(folder.entryFiles.isEmpty)
    }

    @Test func overwriteReplacesTheValueInOneFile() throws {
        let cache = Cache(makeConfiguration(folder, storage: .files))
        try cache.set(User(name: "A", age: 1), for: profile)
        try cache.set(User(name: "B", age: 2), for: profile)
        #expect(cache.value(for: profile)?.name == "B")
        #expect(Cache(makeConfiguration(folder, storage: .files)).value(for: profile)?.name == "B")
        #expect(folder.entryFiles.count == 1)
    }

    @Test func removeValueDeletesFromMemoryAndDisk() throws {
        let cache = Cache(makeConfiguration(folder))
        try cache.set(User(name: "A", age: 1), for: profile)
        cache.removeValue(for: profile)
        #expect(cache.value(for: profile) == nil)
        #expect(!cache.contains(profile))
        #expect(folder.entryFiles.isEmpty)
    }

    @Test func entryReportsMetadata() throws {
        let clock = TestClock()
        let cache = Cache(makeConfiguration(folder, clock: clock, appVersion: "3.1", storage: .files))
        try cache.set(User(name: "A", age: 1), for: profile, lifespan: .seconds(60))
        clock.advance(by: 10)
        let entry = try #require(cache.entry(for: profile))
        #expect(entry.value.name == "A")
        #expect(entry.createdAt == clock.now.addingTimeInterval(-10))
        #expect(entry.validatedAt == entry.createdAt)
        #expect(entry.expiresAt == entry.createdAt.addingTimeInterval(60))
        #expect(!entry.isExpired)
        #expect(!entry.isLocked)
        #expect(entry.schemaVersion == 1)
        #expect(entry.appVersion == "3.1")
        #expect(
            entry.size
                == (try FileManager.default.attributesOfItem(atPath: folder.path + "/" + folder.entryFiles[0])[.size]
                    as? Int))
    }

    @Test func statisticsCountHitsMissesAndWrites() throws {
        let cache = Cache(makeConfiguration(folder))
        try cache.set(User(name: "A", age: 1), for: profile)
        _ = cache.value(for: profile)
        _ = cache.value(for: profile)
        _ = cache.value(for: CacheKey<User>("absent"))
        #expect(cache.statistics == CacheStatistics(hits: 2, misses: 1, writes: 1, evictions: 0, discards: 0))
    }

    @Test func writeEventCarriesTheBytesOnDisk() throws {
        let events = EventLog()
        let cache = Cache(makeConfiguration(folder, events: events))
        try cache.set(User(name: "A", age: 1), for: profile)
        guard case .write(let key, let bytes) = events.all.last else {
            Issue.record("no write event")
            return
        }
        #expect(key == "profile")
        #expect(bytes == (try folder.row(for: "profile"))?.size)
    }

    @Test func namedReturnsOneInstancePerName() {
        #expect(Cache.named("cashier-tests-named") === Cache.named("cashier-tests-named"))
        #expect(Cache.named("cashier-tests-named") !== Cache.named("cashier-tests-other"))
        #expect(Cache.default === Cache.named("default"))
        #expect(Cache.default.configuration.name == "default")
    }

    @Test func initNeverTouchesTheDisk() {
        _ = Cache(makeConfiguration(folder))
        #expect(!FileManager.default.fileExists(atPath: folder.path))
    }

    @Test func dataIsStoredRawSoAMebibyteTakesAboutAMebibyte() throws {
        let cache = Cache(makeConfiguration(folder))
        let blob = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try cache.set(blob, for: CacheKey<Data>("blob"))
        #expect(try #require(try folder.row(for: "blob")).size < (1 << 20) + 256)
        #expect(Cache(makeConfiguration(folder)).value(for: CacheKey<Data>("blob")) == blob)
    }

    @Test(arguments: [Codec.json, .propertyList])
    func bothCodecsRoundTrip(codec: Codec) throws {
        let key = CacheKey<[String: [Int]]>("map", codec: codec)
        try Cache(makeConfiguration(folder)).set(["a": [1, 2], "b": []], for: key)
        #expect(Cache(makeConfiguration(folder)).value(for: key) == ["a": [1, 2], "b": []])
    }

    @Test func propertyListKeyWritesABinaryPlist() throws {
        try Cache(makeConfiguration(folder, storage: .files)).set(
            [1, 2, 3], for: CacheKey<[Int]>("list", codec: .propertyList))
        let bytes = try Data(contentsOf: folder.url.appendingPathComponent(folder.entryFiles[0]))
        #expect(bytes.range(of: Data("bplist00".utf8)) != nil)
    }
}

@Suite struct CacheKeyTests {
    @Test func equalityIgnoresMigrations() {
        let plain = CacheKey<User>("u", schemaVersion: 2)
        let migrating = CacheKey<User>(
            "u", schemaVersion: 2, migrations: [.from(1, as: String.self) { User(name: $0, age: 0) }])
        #expect(plain == migrating)
        #expect(plain.hashValue == migrating.hashValue)
        #expect(plain != CacheKey<User>("u", schemaVersion: 3))
        #expect(plain != CacheKey<User>("u", schemaVersion: 2, codec: .propertyList))
        #expect(plain != CacheKey<User>("u", schemaVersion: 2, lifespan: .never))
    }

    @Test func lifespanHelpersConvertToSeconds() {
        #expect(Lifespan.minutes(2) == .seconds(120))
        #expect(Lifespan.hours(1.5) == .seconds(5400))
        #expect(Lifespan.days(1) == .seconds(86_400))
    }

    @Test func fileNamesAreStableHashesNeverTheKey() {
        // Pinned: changing the hash would orphan every cache on disk.
        #expect(DiskTier.fileName(for: "profile") == DiskTier.fileName(for: "profile"))
        #expect(DiskTier.fileName(for: "profile") != DiskTier.fileName(for: "profile "))
        #expect(DiskTier.isEntryFileName(DiskTier.fileName(for: "../../etc/passwd")))
        #expect(XXHash64.hash("") == 0xEF46_DB37_51D8_E999)
        #expect(XXHash64.hash("abc") == 0x44BC_2CF5_AD77_0999)
    }
}
