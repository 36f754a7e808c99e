import CashierEntryFormat
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

@Suite struct ExpiryTests {
    let folder = TemporaryFolder()
    let clock = TestClock()

    func cache(default lifespan: Lifespan = .never, returnsExpired: Bool = false, events: EventLog? = nil) -> Cache {
        var configuration = makeConfiguration(folder, clock: clock, events: events)
        configuration.defaultLifespan = lifespan
        configuration.returnsExpiredValues = returnsExpired
        return Cache(configuration)
    }

    @Test func secondsLifespanExpiresAfterItsDuration() throws {
        let cache = cache()
        let key = CacheKey<Int>("n", lifespan: .seconds(10))
        try cache.set(1, for: key)
        clock.advance(by: 9.9)
        #expect(cache.value(for: key) == 1)
        clock.advance(by: 0.2)
        #expect(cache.value(for: key) == nil)
        #expect(Cache(makeConfiguration(folder, clock: clock)).value(for: key) == nil)
    }

    @Test func argumentBeatsKeyBeatsCacheDefault() throws {
        let cache = cache(default: .seconds(100))
        try cache.set(1, for: CacheKey<Int>("arg", lifespan: .seconds(50)), lifespan: .seconds(10))
        try cache.set(2, for: CacheKey<Int>("key", lifespan: .seconds(50)))
        try cache.set(3, for: CacheKey<Int>("default"))
        #expect(cache.entry(for: CacheKey<Int>("arg"))?.expiresAt == clock.now.addingTimeInterval(10))
        #expect(cache.entry(for: CacheKey<Int>("key"))?.expiresAt == clock.now.addingTimeInterval(50))
        #expect(cache.entry(for: CacheKey<Int>("default"))?.expiresAt == clock.now.addingTimeInterval(100))
    }

    @Test func untilDateExpiresAtThatMoment() throws {
        let cache = cache()
        let key = CacheKey<Int>("n")
        try cache.set(1, for: key, lifespan: .until(clock.now.addingTimeInterval(30)))
        clock.advance(by: 29)
        #expect(cache.isValid(key))
        clock.advance(by: 1)
        #expect(!cache.isValid(key))
        #expect(cache.contains(key))
    }

    @Test func refreshRestartsTheLifespanFromNow() throws {
        let cache = cache()
        let key = CacheKey<Int>("n", lifespan: .seconds(10))
        try cache.set(1, for: key)
        clock.advance(by: 8)
        cache.refresh(key)
        clock.advance(by: 8)
        #expect(cache.value(for: key) == 1)
        #expect(Cache(makeConfiguration(folder, clock: clock)).value(for: key) == 1)
        let entry = try #require(cache.entry(for: key))
        #expect(entry.validatedAt == clock.now.addingTimeInterval(-8))
        #expect(entry.createdAt == clock.now.addingTimeInterval(-16))
    }

    @Test func expiredEntryIsReturnedWhenTheCacheReturnsExpiredValues() throws {
        let cache = cache(returnsExpired: true)
        let key = CacheKey<Int>("n", lifespan: .seconds(1))
        try cache.set(1, for: key)
        clock.advance(by: 5)
        #expect(cache.value(for: key) == 1)
        #expect(cache.entry(for: key)?.isExpired == true)
        #expect(!cache.isValid(key))
    }

    @Test func readingNeverDeletesAnExpiredEntry() throws {
        let cache = cache()
        let key = CacheKey<Int>("n", lifespan: .seconds(1))
        try cache.set(1, for: key)
        clock.advance(by: 5)
        #expect(cache.value(for: key) == nil)
        #expect(cache.count == 1)
        let entry = try #require(cache.entry(for: key))
        #expect(entry.isExpired)
        #expect(entry.value == 1)
    }

    @Test func removeExpiredDeletesOnlyExpiredEntries() throws {
        let events = EventLog()
        let cache = cache(events: events)
        try cache.set(1, for: CacheKey<Int>("short", lifespan: .seconds(1)))
        try cache.set(2, for: CacheKey<Int>("long", lifespan: .seconds(100)))
        clock.advance(by: 5)
        cache.removeExpired()
        #expect(cache.keys == ["long"])
        #expect(events.discards.map(\.0) == ["short"])
        #expect(events.discards.first?.1 == .expired)
        #expect(cache.entry(for: CacheKey<Int>("short")) == nil)
    }

    @Test func lockedEntryNeverExpiresUntilUnlocked() throws {
        let cache = cache()
        let key = CacheKey<Int>("n", lifespan: .seconds(1))
        try cache.set(1, for: key)
        cache.lock(key)
        clock.advance(by: 100)
        #expect(cache.value(for: key) == 1)
        cache.removeExpired()
        #expect(cache.value(for: key) == 1)
        let reopened = Cache(makeConfiguration(folder, clock: clock))
        #expect(reopened.entry(for: key)?.isLocked == true)
        #expect(reopened.value(for: key) == 1)
        cache.unlock(key)
        #expect(cache.value(for: key) == nil)
        #expect(Cache(makeConfiguration(folder, clock: clock)).value(for: key) == nil)
    }

    @Test func overwritingALockedEntryKeepsItLocked() throws {
        let cache = cache()
        let key = CacheKey<Int>("n")
        try cache.set(1, for: key)
        cache.lock(key)
        try Cache(makeConfiguration(folder, clock: clock)).set(2, for: key)
        #expect(cache.entry(for: key)?.isLocked == true)
    }

    @Test func removeAllUnlockedKeepsLockedEntries() throws {
        let cache = cache()
        try cache.set(1, for: CacheKey<Int>("a"))
        try cache.set(2, for: CacheKey<Int>("b"))
        cache.lock(CacheKey<Int>("b"))
        cache.removeAllUnlocked()
        #expect(cache.keys == ["b"])
        #expect(cache.value(for: CacheKey<Int>("a")) == nil)
        cache.removeAll()
        cache.waitForBackgroundWork()
        #expect(cache.keys.isEmpty)
        #expect(cache.count == 0)
        #expect(cache.totalSize <= TemporaryFolder.emptyStoreBytes)
    }
}

@Suite struct DamageTests {
    let folder = TemporaryFolder()
    let key = CacheKey<User>("profile", schemaVersion: 1)

    func writeEntry() throws -> URL {
        try Cache(makeConfiguration(folder, storage: .files)).set(User(name: "Ada", age: 36), for: key)
        return folder.url.appendingPathComponent(DiskTier.fileName(for: "profile"))
    }

    func expectCorruptMiss() {
        let events = EventLog()
        let cache = Cache(makeConfiguration(folder, events: events, storage: .files))
        #expect(cache.value(for: key) == nil)
        #expect(events.discards.count == 1)
        #expect(events.discards.first?.1 == .corrupt)
        #expect(folder.entryFiles.isEmpty)
    }

    @Test(arguments: [0, 3, 10, 40, 79, 85, 120])
    func flippedByteIsACorruptMiss(offset: Int) throws {
        let url = try writeEntry()
        var bytes = try Data(contentsOf: url)
        let index = min(offset, bytes.count - 1)
        bytes[index] ^= 0x5A
        try bytes.write(to: url)
        expectCorruptMiss()
    }

    @Test(arguments: [0, 1, 40, 79, 80, 100])
    func truncatedFileIsACorruptMiss(length: Int) throws {
        let url = try writeEntry()
        let bytes = try Data(contentsOf: url)
        try bytes.prefix(min(length, bytes.count - 1)).write(to: url)
        expectCorruptMiss()
    }

    @Test func extendedFileIsACorruptMiss() throws {
        let url = try writeEntry()
        var bytes = try Data(contentsOf: url)
        bytes.append(0)
        try bytes.write(to: url)
        expectCorruptMiss()
    }

    @Test func foreignFileUnderTheEntryNameIsACorruptMiss() throws {
        let url = try writeEntry()
        try Data("{\"name\":\"Ada\",\"age\":36}".utf8).write(to: url)
        expectCorruptMiss()
    }

    @Test func randomBytesNeverCrashARead() throws {
        var generator = SplitMix64(seed: 42)
        let url = try writeEntry()
        for _ in 0..<200 {
            let count = Int(generator.next() % 400)
            try Data((0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }).write(to: url)
            #expect(Cache(makeConfiguration(folder, storage: .files)).value(for: key) == nil)
        }
    }

    @Test func folderEntryInPlaceOfAFileIsAMissNotACrash() throws {
        try FileManager.default.createDirectory(
            at: folder.url.appendingPathComponent(DiskTier.fileName(for: "profile")), withIntermediateDirectories: true
        )
        let events = EventLog()
        #expect(Cache(makeConfiguration(folder, events: events, storage: .files)).value(for: key) == nil)
    }

    @Test func writeOverAFolderInTheEntrysPlaceThrowsAndLeavesNoTemporaryFile() throws {
        let blocker = folder.url.appendingPathComponent(DiskTier.fileName(for: "profile"))
        try FileManager.default.createDirectory(at: blocker, withIntermediateDirectories: true)
        #expect(throws: CacheError.self) {
            try Cache(makeConfiguration(folder, storage: .files)).set(User(name: "A", age: 1), for: key)
        }
        var isDirectory: ObjCBool = false
        #expect(
            FileManager.default.fileExists(atPath: blocker.path, isDirectory: &isDirectory) && isDirectory.boolValue)
        #expect(folder.fileNames.allSatisfy { !$0.hasPrefix(DiskTier.temporaryPrefix) })
    }

    @Test func entryOfAnotherKeyUnderTheSameFileIsAMissAndLeftAlone() throws {
        try Cache(makeConfiguration(folder, storage: .files)).set(
            User(name: "Other", age: 1), for: CacheKey<User>("other", schemaVersion: 1))
        let other = folder.url.appendingPathComponent(DiskTier.fileName(for: "other"))
        try FileManager.default.moveItem(
            at: other, to: folder.url.appendingPathComponent(DiskTier.fileName(for: "profile")))
        let events = EventLog()
        #expect(Cache(makeConfiguration(folder, events: events, storage: .files)).value(for: key) == nil)
        #expect(events.discards.isEmpty)
        #expect(folder.entryFiles.count == 1)
    }

    @Test func garbageCollectionRemovesDamagedFiles() throws {
        let url = try writeEntry()
        try Data("garbage".utf8).write(to: url)
        let events = EventLog()
        let cache = Cache(makeConfiguration(folder, events: events, storage: .files))
        cache.collectGarbage()
        #expect(folder.entryFiles.isEmpty)
        #expect(events.discards.first?.1 == .corrupt)
    }
}

@Suite struct PlatformNeutralityTests {
    let folder = TemporaryFolder()

    @Test func dataTypeNameIsTheSameOnEveryPlatform() {
        #expect(ValueCoding.typeName(of: Data.self) == "Foundation.Data")
        #expect(ValueCoding.typeName(of: [Data].self) == "Swift.Array<Foundation.Data>")
    }

    @Test func entriesNamedWithFoundationEssentialsStillRead() throws {
        let key = CacheKey<Data>("blob", schemaVersion: 1)
        let store = DiskTier(folder: folder.path)
        let payload = Data([1, 2, 3])
        let header = EntryHeader(
            key: "blob", typeName: "FoundationEssentials.Data", format: .raw, createdAt: 0, validatedAt: 0,
            lifespan: .never, schemaVersion: 1, appVersion: nil, isLocked: false, payloadLength: 3)
        _ = try store.write(
            DiskTier.fileName(for: "blob"), header: header, payload: payload,
            options: .init(
                filePermissions: 0o644, folderPermissions: 0o755, synchronize: false, completeProtection: false))
        #expect(Cache(makeConfiguration(folder, storage: .files)).value(for: key) == payload)
    }
}

@Suite struct LockedRemovalTests {
    let folder = TemporaryFolder()

    @Test func removeAllLockedKeepsUnlockedEntries() throws {
        let cache = Cache(makeConfiguration(folder))
        try cache.set(1, for: CacheKey<Int>("a"))
        try cache.set(2, for: CacheKey<Int>("b"))
        cache.lock(CacheKey<Int>("b"))
        cache.removeAllLocked()
        #expect(cache.keys == ["a"])
        #expect(cache.value(for: CacheKey<Int>("b")) == nil)
    }

    @Test func fetchRenewsAnExpiredEntryEvenWhenExpiredValuesAreReturned() async throws {
        let clock = TestClock()
        var configuration = makeConfiguration(folder, clock: clock)
        configuration.returnsExpiredValues = true
        let cache = Cache(configuration)
        let key = CacheKey<Int>("n", lifespan: .seconds(1))
        try cache.set(1, for: key)
        clock.advance(by: 5)
        #expect(cache.value(for: key) == 1)
        #expect(try await cache.value(for: key) { 2 } == 2)
    }
}
