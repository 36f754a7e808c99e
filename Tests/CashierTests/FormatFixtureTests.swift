import CashierEntryFormat
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Entries written by each format version, committed under `Fixtures/format-v1`,
/// `Fixtures/format-v2`, ….
///
/// These files must stay readable by every future release: a change to the
/// format that breaks existing caches fails here. Write a folder only when adding a
/// new format version's fixtures beside the others, never to make this pass.
@Suite struct FormatFixtureTests {
    static func fixtures(version: Int) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/format-v\(version)", isDirectory: true)
    }
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
        try expectFixturesRead(version: 1, checksum: { XXHash64.hash($0, seed: $1) })
    }

    @Test func formatVersion2EntriesStayReadable() throws {
        try expectFixturesRead(version: 2, checksum: { XXH3.hash($0, seed: $1) })
    }

    /// The fixtures of `version` are entries of that version, sealed with the hash it names, and read back.
    func expectFixturesRead(version: Int, checksum hash: (UnsafeRawBufferPointer, UInt64) -> UInt64) throws {
        let fixtures = Self.fixtures(version: version)
        for name in try FileManager.default.contentsOfDirectory(atPath: fixtures.path) {
            let file = [UInt8](try Data(contentsOf: fixtures.appendingPathComponent(name)))
            #expect(file[4] == UInt8(version) && file[5] == 0, "\(name) is not of format version \(version)")
            file.withUnsafeBytes { bytes in
                let headerLength = Int(bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self).littleEndian)
                let a = hash(UnsafeRawBufferPointer(rebasing: bytes[0..<72]), 0)
                let b = hash(UnsafeRawBufferPointer(rebasing: bytes[80..<headerLength]), a)
                let sum = hash(UnsafeRawBufferPointer(rebasing: bytes[headerLength...]), b)
                #expect(
                    bytes.loadUnaligned(fromByteOffset: 72, as: UInt64.self).littleEndian == sum, "\(name)'s checksum")
            }
        }
        let folder = TemporaryFolder()
        try FileManager.default.copyItem(at: fixtures, to: folder.url)
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
        #expect(DiskTier(folder: folder.path).scanHeaders().damaged.isEmpty)
    }

    @Test(arguments: [1, 2]) func fixtureFileNamesAreTheKeysHashes(version: Int) throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.fixtures(version: version).path).sorted()
        let expected = ["blob", "feed", "pinned 📌/../key", "profile"].map(DiskTier.fileName(for:)).sorted()
        #expect(names == expected)
    }

    /// Writes the fixtures of the version this build writes, into a folder of their own beside
    /// the older ones; run once with CASHIER_WRITE_FIXTURES=1 when a format version is added.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["CASHIER_WRITE_FIXTURES"] == "1"))
    func writeFixtures() throws {
        let fixtures = Self.fixtures(version: Int(EntryHeader.formatVersion))
        try? FileManager.default.removeItem(at: fixtures)
        let cache = Cache(configuration(fixtures, now: Self.written))
        try cache.set(Profile(name: "Ada", tags: ["math", "engines"]), for: Keys.profile)
        try cache.set([3, 1, 4, 1, 5], for: Keys.feed)
        try cache.set(Self.blob, for: Keys.blob)
        try cache.set("kept", for: Keys.pinned, lifespan: .seconds(1))
        cache.lock(Keys.pinned)
        try? FileManager.default.removeItem(at: fixtures.appendingPathComponent(DiskTier.lockFileName))
    }
}
