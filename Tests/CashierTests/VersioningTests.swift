import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A type whose name is `User`'s less its last letter: under app version `"r"` its records'
/// names are the bytes of `User`'s without one.
struct Use: Codable, Sendable, Equatable {
    var name: String
}

/// A type whose name is `User`'s and a `1`: under app version `".0"` its records' names are
/// the bytes of `User`'s under `"1.0"`.
struct User1: Codable, Sendable, Equatable {
    var name: String
}

struct UserV2: Codable, Sendable, Equatable {
    var fullName: String
    var email: String
}

@Suite struct VersioningTests {
    let folder = TemporaryFolder()

    @Test func versionedEntrySurvivesAnAppUpdate() throws {
        let key = CacheKey<User>("profile", schemaVersion: 1)
        try Cache(makeConfiguration(folder, appVersion: "1.0")).set(User(name: "A", age: 1), for: key)
        #expect(Cache(makeConfiguration(folder, appVersion: "2.0")).value(for: key) == User(name: "A", age: 1))
    }

    /// ``Cache/keys`` lists a row from the index when its type's shape says it was written
    /// under the reader's app version, `nil` included (a server or tool has no bundle version):
    /// each of these keys is listed by the cache that can read it, and only by it.
    @Test(arguments: [nil, "1.0"] as [String?])
    func keysListWhatEachAppVersionCanRead(appVersion: String?) throws {
        let other = appVersion == nil ? "2.0" : nil
        let writer = Cache(makeConfiguration(folder, appVersion: appVersion))
        let stranger = Cache(makeConfiguration(folder, appVersion: other))
        for index in 0..<300 {
            try writer.set(User(name: "v", age: index), for: CacheKey<User>("versioned-\(index)", schemaVersion: 1))
            try writer.set(User(name: "u", age: index), for: CacheKey<User>("mine-\(index)"))
            try stranger.set(User(name: "s", age: index), for: CacheKey<User>("theirs-\(index)"))
        }
        let versioned = (0..<300).map { "versioned-\($0)" }
        let fresh = Cache(makeConfiguration(folder, appVersion: appVersion))
        #expect(fresh.keys == (versioned + (0..<300).map { "mine-\($0)" }).sorted())
        #expect(
            Cache(makeConfiguration(folder, appVersion: other)).keys
                == (versioned + (0..<300).map { "theirs-\($0)" }).sorted())
    }

    /// A shape is found by its names, the type name and app version bytes run together, so
    /// records that split them otherwise (`User` under `""`, `Use` under `"r"`) meet the shape
    /// an unversioned writer made for `User`: a cache without an app version must not vouch for
    /// their rows by that shape, as no read of it returns them.
    @Test func keysOmitRowsWhoseNamesMatchAnotherAppVersionsShape() throws {
        let mine = Cache(makeConfiguration(folder, appVersion: nil))
        try mine.set(User(name: "m", age: 1), for: CacheKey<User>("mine"))
        try Cache(makeConfiguration(folder, appVersion: "")).set(User(name: "b", age: 2), for: CacheKey<User>("blank"))
        try Cache(makeConfiguration(folder, appVersion: "r")).set(Use(name: "s"), for: CacheKey<Use>("split"))
        let fresh = Cache(makeConfiguration(folder, appVersion: nil))
        #expect(fresh.keys == ["mine"])
        // What the keys above must agree with (a read discards what it cannot return).
        #expect(fresh.value(for: CacheKey<User>("blank")) == nil)
        #expect(fresh.value(for: CacheKey<Use>("split")) == nil)
    }

    /// The same under an app version: `User1` under `".0"` runs its names together as `User`
    /// under `"1.0"` does.
    @Test func keysUnderAnAppVersionOmitRowsWhoseNamesMatchAnotherVersionsShape() throws {
        try Cache(makeConfiguration(folder, appVersion: "1.0")).set(
            User(name: "m", age: 1), for: CacheKey<User>("mine"))
        try Cache(makeConfiguration(folder, appVersion: ".0")).set(User1(name: "s"), for: CacheKey<User1>("split"))
        let fresh = Cache(makeConfiguration(folder, appVersion: "1.0"))
        #expect(fresh.keys == ["mine"])
        #expect(fresh.value(for: CacheKey<User1>("split")) == nil)
    }

    @Test func schemaMismatchIsDiscarded() throws {
        try Cache(makeConfiguration(folder)).set(
            User(name: "A", age: 1), for: CacheKey<User>("profile", schemaVersion: 1))
        let events = EventLog()
        let cache = Cache(makeConfiguration(folder, events: events))
        #expect(cache.value(for: CacheKey<User>("profile", schemaVersion: 2)) == nil)
        #expect(events.discards.first?.1 == .schemaMismatch(stored: 1, expected: 2))
        #expect(folder.entryFiles.isEmpty)
        #expect(cache.statistics.discards == 1)
    }

    @Test func versionedKeyDoesNotReadAnUnversionedEntry() throws {
        try Cache(makeConfiguration(folder)).set(User(name: "A", age: 1), for: CacheKey<User>("profile"))
        let events = EventLog()
        #expect(
            Cache(makeConfiguration(folder, events: events)).value(for: CacheKey<User>("profile", schemaVersion: 1))
                == nil)
        #expect(events.discards.first?.1 == .schemaMismatch(stored: nil, expected: 1))
    }

    @Test func unversionedEntryIsDiscardedWhenTheAppVersionChanges() throws {
        let key = CacheKey<User>("profile")
        try Cache(makeConfiguration(folder, appVersion: "1.0")).set(User(name: "A", age: 1), for: key)
        #expect(Cache(makeConfiguration(folder, appVersion: "1.0")).value(for: key) != nil)
        let events = EventLog()
        #expect(Cache(makeConfiguration(folder, events: events, appVersion: "1.1")).value(for: key) == nil)
        #expect(events.discards.first?.1 == .appVersionMismatch(stored: "1.0", current: "1.1"))
        #expect(folder.entryFiles.isEmpty)
    }

    @Test func anotherStoredTypeIsATypeMismatch() throws {
        try Cache(makeConfiguration(folder)).set("text", for: CacheKey<String>("thing", schemaVersion: 1))
        let events = EventLog()
        #expect(
            Cache(makeConfiguration(folder, events: events)).value(for: CacheKey<Int>("thing", schemaVersion: 1)) == nil
        )
        #expect(events.discards.first?.1 == .typeMismatch(stored: "Swift.String", expected: "Swift.Int"))
    }

    @Test func renamedTypeIsATypeMismatch() throws {
        try Cache(makeConfiguration(folder)).set(
            User(name: "A", age: 1), for: CacheKey<User>("profile", schemaVersion: 1))
        let events = EventLog()
        #expect(
            Cache(makeConfiguration(folder, events: events)).value(
                for: CacheKey<Renamed.User>("profile", schemaVersion: 1)) == nil)
        #expect(
            events.discards.first?.1
                == .typeMismatch(stored: String(reflecting: User.self), expected: String(reflecting: Renamed.User.self))
        )
    }

    @Test func payloadThatNoLongerDecodesIsUndecodable() throws {
        try Cache(makeConfiguration(folder)).set(
            User(name: "A", age: 1), for: CacheKey<User>("profile", schemaVersion: 1))
        // Same type name, new shape, schema version not bumped: the mistake versioning cannot see.
        try rewriteTypeName(of: "profile", to: String(reflecting: Renamed.User.self))
        let events = EventLog()
        #expect(
            Cache(makeConfiguration(folder, events: events)).value(
                for: CacheKey<Renamed.User>("profile", schemaVersion: 1)) == nil)
        #expect(events.discards.first?.1 == .undecodable)
        #expect(folder.entryFiles.isEmpty)
    }

    @Test func checksAreMadeInTheDocumentedOrder() throws {
        // Schema is checked before type, type before app version.
        try Cache(makeConfiguration(folder, appVersion: "1")).set("x", for: CacheKey<String>("k", schemaVersion: 1))
        let events = EventLog()
        _ = Cache(makeConfiguration(folder, events: events, appVersion: "2")).value(
            for: CacheKey<Int>("k", schemaVersion: 2))
        #expect(events.discards.first?.1 == .schemaMismatch(stored: 1, expected: 2))

        try Cache(makeConfiguration(folder, appVersion: "1")).set("x", for: CacheKey<String>("k"))
        events.clear()
        _ = Cache(makeConfiguration(folder, events: events, appVersion: "2")).value(for: CacheKey<Int>("k"))
        #expect(events.discards.first?.1 == .typeMismatch(stored: "Swift.String", expected: "Swift.Int"))
    }

    @Test func memoryTierHonoursVersionsOfOtherKeysWithTheSameName() throws {
        let cache = Cache(makeConfiguration(folder, storage: .files))
        try cache.set(User(name: "A", age: 1), for: CacheKey<User>("profile", schemaVersion: 1))
        #expect(cache.value(for: CacheKey<User>("profile", schemaVersion: 2)) == nil)
        #expect(cache.value(for: CacheKey<String>("profile", schemaVersion: 1)) == nil)
    }

    /// Rewrites an entry's type name in place, recomputing the checksum, to simulate a model change.
    private func rewriteTypeName(of key: String, to typeName: String) throws {
        let store = DiskTier(folder: folder.path)
        guard case .entry(var header, let payload, _) = store.read(key: key) else {
            Issue.record("entry missing")
            return
        }
        header.typeName = typeName
        _ = try store.write(
            DiskTier.fileName(for: key), header: header, payload: payload,
            options: .init(
                filePermissions: 0o644, folderPermissions: 0o755, synchronize: false, completeProtection: false))
    }
}

enum Renamed {
    struct User: Codable, Sendable, Equatable {
        var fullName: String
        var email: String
    }
}

@Suite struct MigrationTests {
    let folder = TemporaryFolder()

    @Test func olderEntryIsMigratedRewrittenAndReported() throws {
        try Cache(makeConfiguration(folder)).set(
            User(name: "Ada", age: 36), for: CacheKey<User>("profile", schemaVersion: 1))
        let key = CacheKey<UserV2>(
            "profile", schemaVersion: 2,
            migrations: [
                .from(1, as: User.self) { UserV2(fullName: $0.name, email: "\($0.age)@example.com") }
            ])
        let events = EventLog()
        let cache = Cache(makeConfiguration(folder, events: events))
        #expect(cache.value(for: key) == UserV2(fullName: "Ada", email: "36@example.com"))
        #expect(events.migrations.count == 1)
        #expect(events.migrations.first?.1 == 1)
        #expect(events.migrations.first?.2 == 2)
        // Rewritten: a reader without the migration now finds version 2.
        let plain = Cache(makeConfiguration(folder))
        #expect(plain.entry(for: CacheKey<UserV2>("profile", schemaVersion: 2))?.schemaVersion == 2)
    }

    @Test func migrationKeepsTimestampsLockAndLifespan() throws {
        let clock = TestClock()
        let writer = Cache(makeConfiguration(folder, clock: clock))
        let old = CacheKey<User>("profile", schemaVersion: 1)
        try writer.set(User(name: "A", age: 1), for: old, lifespan: .seconds(100))
        writer.lock(old)
        clock.advance(by: 5)
        let key = CacheKey<UserV2>(
            "profile", schemaVersion: 2, migrations: [.from(1, as: User.self) { UserV2(fullName: $0.name, email: "") }])
        let entry = try #require(Cache(makeConfiguration(folder, clock: clock)).entry(for: key))
        #expect(entry.createdAt == clock.now.addingTimeInterval(-5))
        #expect(entry.isLocked)
        #expect(entry.expiresAt == entry.validatedAt.addingTimeInterval(100))
    }

    @Test func throwingMigrationDiscardsWithMigrationFailed() throws {
        struct Refused: Error {}
        try Cache(makeConfiguration(folder)).set(
            User(name: "A", age: 1), for: CacheKey<User>("profile", schemaVersion: 1))
        let key = CacheKey<UserV2>(
            "profile", schemaVersion: 2, migrations: [.from(1, as: User.self) { _ in throw Refused() }])
        let events = EventLog()
        #expect(Cache(makeConfiguration(folder, events: events)).value(for: key) == nil)
        #expect(events.discards.first?.1 == .migrationFailed)
        #expect(folder.entryFiles.isEmpty)
    }

    @Test func oldPayloadThatDoesNotDecodeAsOldIsMigrationFailed() throws {
        try Cache(makeConfiguration(folder)).set("not a user", for: CacheKey<String>("profile", schemaVersion: 1))
        let key = CacheKey<UserV2>(
            "profile", schemaVersion: 2, migrations: [.from(1, as: User.self) { UserV2(fullName: $0.name, email: "") }])
        let events = EventLog()
        #expect(Cache(makeConfiguration(folder, events: events)).value(for: key) == nil)
        #expect(events.discards.first?.1 == .migrationFailed)
    }

    @Test func noMigrationFromTheStoredVersionDiscardsAsSchemaMismatch() throws {
        try Cache(makeConfiguration(folder)).set(
            User(name: "A", age: 1), for: CacheKey<User>("profile", schemaVersion: 1))
        let key = CacheKey<UserV2>(
            "profile", schemaVersion: 3, migrations: [.from(2, as: User.self) { UserV2(fullName: $0.name, email: "") }])
        let events = EventLog()
        #expect(Cache(makeConfiguration(folder, events: events)).value(for: key) == nil)
        #expect(events.discards.first?.1 == .schemaMismatch(stored: 1, expected: 3))
    }

    @Test func migrationDecodesWithTheStoredCodec() throws {
        try Cache(makeConfiguration(folder)).set(
            [1, 2], for: CacheKey<[Int]>("list", schemaVersion: 1, codec: .propertyList))
        let key = CacheKey<[String]>(
            "list", schemaVersion: 2, migrations: [.from(1, as: [Int].self) { $0.map(String.init) }])
        #expect(Cache(makeConfiguration(folder)).value(for: key) == ["1", "2"])
    }

    @Test func concurrentFirstReadsMigrateOnce() async throws {
        try Cache(makeConfiguration(folder)).set(
            User(name: "A", age: 1), for: CacheKey<User>("profile", schemaVersion: 1))
        let conversions = Locked(0)
        let key = CacheKey<UserV2>(
            "profile", schemaVersion: 2,
            migrations: [
                .from(1, as: User.self) { old in
                    conversions.withLock { $0 += 1 }
                    return UserV2(fullName: old.name, email: "")
                }
            ])
        let events = EventLog()
        let cache = Cache(makeConfiguration(folder, events: events))
        await withTaskGroup(of: UserV2?.self) { group in
            for _ in 0..<16 { group.addTask { cache.value(for: key) } }
            for await value in group { #expect(value?.fullName == "A") }
        }
        #expect(conversions.withLock { $0 } == 1)
        #expect(events.migrations.count == 1)
    }
}
