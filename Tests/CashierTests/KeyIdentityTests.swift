import CashierEntryFormat
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Keys equal as Swift strings are one key everywhere, on disk too.
@Suite struct KeyIdentityTests {
    let folder = TemporaryFolder()
    static let composed = "caf\u{E9}"
    static let decomposed = "cafe\u{301}"

    @Test func equalSpellingsShareOneFile() {
        #expect(Self.composed == Self.decomposed)
        #expect(DiskTier.fileName(for: Self.composed) == DiskTier.fileName(for: Self.decomposed))
    }

    @Test func asciiKeysKeepTheirFileNames() {
        // The XXH64 hashes of the raw UTF-8, as every version before wrote them.
        for key in ["profile", "", "user/42?x=1", String(repeating: "k", count: 300)] {
            let high = XXHash64.hash(key)
            let low = XXHash64.hash(key, seed: 0x9E37_79B9_7F4A_7C15)
            let expected = String(format: "%016llx%016llx.cache", high, low)
            #expect(DiskTier.fileName(for: key) == expected)
        }
    }

    @Test(arguments: [(composed, decomposed), (decomposed, composed)])
    func freshInstanceReadsUnderTheOtherSpelling(written: String, read: String) throws {
        try Cache(makeConfiguration(folder, storage: .files)).set("v", for: CacheKey<String>(written))
        #expect(Cache(makeConfiguration(folder, storage: .files)).value(for: CacheKey<String>(read)) == "v")
        #expect(folder.entryFiles.count == 1)
    }

    @Test func overwriteUnderTheOtherSpellingReplacesTheValue() throws {
        try Cache(makeConfiguration(folder, storage: .files)).set("old", for: CacheKey<String>(Self.composed))
        try Cache(makeConfiguration(folder, storage: .files)).set("new", for: CacheKey<String>(Self.decomposed))
        #expect(Cache(makeConfiguration(folder, storage: .files)).value(for: CacheKey<String>(Self.composed)) == "new")
        #expect(folder.entryFiles.count == 1)
    }

    @Test func removeUnderTheOtherSpellingRemovesTheEntry() throws {
        let cache = Cache(makeConfiguration(folder, storage: .files))
        try cache.set("v", for: CacheKey<String>(Self.composed))
        cache.removeValue(for: CacheKey<String>(Self.decomposed))
        #expect(cache.value(for: CacheKey<String>(Self.composed)) == nil)
        #expect(Cache(makeConfiguration(folder, storage: .files)).value(for: CacheKey<String>(Self.composed)) == nil)
        #expect(folder.entryFiles.isEmpty)
    }

    @Test func keysListsEqualSpellingsOnce() throws {
        let cache = Cache(makeConfiguration(folder, storage: .files))
        try cache.set("1", for: CacheKey<String>(Self.composed))
        try cache.set("2", for: CacheKey<String>(Self.decomposed))
        #expect(cache.keys.count == 1)
        #expect(cache.count == 1)
        cache.removeAll { $0 == Self.composed }
        #expect(cache.keys.isEmpty)
    }

    @Test func garbageCollectionReclaimsAFileNamedFromAnotherSpelling() throws {
        // As a version before NFC file names wrote a decomposed key.
        try Cache(makeConfiguration(folder, storage: .files)).set("old", for: CacheKey<String>(Self.decomposed))
        let file = try #require(folder.entryFiles.first)
        let high = XXHash64.hash(Self.decomposed)
        let low = XXHash64.hash(Self.decomposed, seed: 0x9E37_79B9_7F4A_7C15)
        let legacy = String(format: "%016llx%016llx.cache", high, low)
        try FileManager.default.moveItem(atPath: folder.path + "/" + file, toPath: folder.path + "/" + legacy)
        try Cache(makeConfiguration(folder, storage: .files)).set("new", for: CacheKey<String>(Self.composed))

        let cache = Cache(makeConfiguration(folder, storage: .files))
        cache.collectGarbage()
        #expect(folder.entryFiles == [DiskTier.fileName(for: Self.composed)])
        #expect(cache.keys.count == 1)
        #expect(cache.value(for: CacheKey<String>(Self.decomposed)) == "new")
    }

    @Test func memoryTierAndObserversTakeEitherSpelling() async throws {
        var configuration = makeConfiguration(folder, storage: .files)
        configuration.location = .memoryOnly
        let cache = Cache(configuration)
        var iterator = cache.updates(for: CacheKey<String>(Self.composed)).makeAsyncIterator()
        #expect(await iterator.next() == .some(nil))
        try cache.set("v", for: CacheKey<String>(Self.decomposed))
        #expect(cache.value(for: CacheKey<String>(Self.composed)) == "v")
        #expect(await iterator.next() == "v")
    }

    @Test func cacheNamesEqualAsStringsShareOneFolder() {
        #expect(Cache.folderName(for: Self.composed) == Cache.folderName(for: Self.decomposed))
        #expect(Cache.folderName(for: Self.composed) == "caf%C3%A9")
    }
}
