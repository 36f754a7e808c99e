import CashierTestSupport
import Foundation
import Testing
@testable import Cashier

/// Entries written by format version 1, committed under `Fixtures/format-v1`.
///
/// These files must stay readable by every future release: a change to the
/// format that breaks existing caches fails here. Regenerate them only when
/// adding a new format version's fixtures beside these, never to make this pass.
@Suite struct FormatFixtureTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/format-v1", isDirectory: true)
    static let written = Date(timeIntervalSince1970: 1_795_000_000)

    struct Profile: Codable, Sendable, Equatable {
        var name: String
        var tags: [String]
    }

    enum Keys {
        static let profile = CacheKey<Profile>("profile", schemaVersion: 3, lifespan: .hours(1))
        static let feed = CacheKey<[Int]>("feed", schemaVersion: 1, codec: .propertyList)
        static let blob = CacheKey<Data>("blob")
        static let pinned = CacheKey<String>("pinned 📌/../key", schemaVersion: 1)
    }

    static let blob = Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) })

    func configuration(_ folder: URL, now: Date) -> Cache.Configuration {
        var configuration = Cache.Configuration(name: "fixtures")
        configuration.location = .directory(folder)
        configuration.appVersion = "1.0 (7)"
        configuration.now = { now }
        return configuration
    }

    @Test func formatVersion1EntriesStayReadable() throws {
        let folder = TemporaryFolder()
        try FileManager.default.copyItem(at: Self.fixtures, to: folder.url)
        let cache = Cache(configuration(folder.url, now: Self.written.addingTimeInterval(60)))

        let profile = try #require(cache.entry(for: Keys.profile))
        #expect(profile.value == Profile(name: "Ada", tags: ["math", "engines"]))
        #expect(profile.createdAt == Self.written)
        #expect(profile.expiresAt == Self.written.addingTimeInterval(3600))
        #expect(profile.schemaVersion == 3)
        #expect(profile.appVersion == "1.0 (7)")
        #expect(cache.value(for: Keys.feed) == [3, 1, 4, 1, 5])
        #expect(cache.value(for: Keys.blob) == Self.blob)
        let pinned = try #require(cache.entry(for: Keys.pinned))
        #expect(pinned.isLocked)
        #expect(pinned.value == "kept")
        #expect(cache.keys == ["blob", "feed", "pinned 📌/../key", "profile"])
        #expect(cache.statistics.discards == 0)
        #expect(DiskStore(folder: folder.path).scanHeaders().damaged.isEmpty)
    }

    @Test func fixtureFileNamesAreTheKeysHashes() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.fixtures.path).sorted()
        let expected = ["blob", "feed", "pinned 📌/../key", "profile"].map(DiskStore.fileName(for:)).sorted()
        #expect(names == expected)
    }

    /// Writes the fixtures; run once with CASHIER_WRITE_FIXTURES=1 when a format version is added.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["CASHIER_WRITE_FIXTURES"] == "1"))
    func writeFixtures() throws {
        try? FileManager.default.removeItem(at: Self.fixtures)
        let cache = Cache(configuration(Self.fixtures, now: Self.written))
        try cache.set(Profile(name: "Ada", tags: ["math", "engines"]), for: Keys.profile)
        try cache.set([3, 1, 4, 1, 5], for: Keys.feed)
        try cache.set(Self.blob, for: Keys.blob)
        try cache.set("kept", for: Keys.pinned, lifespan: .seconds(1))
        cache.lock(Keys.pinned)
        try? FileManager.default.removeItem(at: Self.fixtures.appendingPathComponent(DiskStore.lockFileName))
    }
}
