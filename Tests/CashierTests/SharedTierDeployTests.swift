import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A rolling deploy: servers of two versions of an app (schema 1 and schema 2 of one model,
/// or two app versions for an unversioned key) share one tier at once.
extension SharedTierTests {
    @Suite struct Deploy {
        let backing = SharedBacking()
        let folderA = TemporaryFolder()
        let folderB = TemporaryFolder()
        let clock = TestClock()
        let eventsB = EventLog()

        struct UserV2: Codable, Sendable, Equatable {
            var fullName: String
            var age: Int
        }

        static let v1 = CacheKey<User>("profile", schemaVersion: 1)
        static let v2 = CacheKey<UserV2>("profile", schemaVersion: 2)
        static let v2Migrating = CacheKey<UserV2>(
            "profile", schemaVersion: 2,
            migrations: [.from(1, as: User.self) { UserV2(fullName: $0.name, age: $0.age) }])
        static let slot1 = SharedSlot(name: "profile", version: "schema-1")
        static let slot2 = SharedSlot(name: "profile", version: "schema-2")

        func server(_ server: Int, appVersion: String = "1.0") -> Cache {
            var configuration = makeConfiguration(
                server == 1 ? folderA : folderB, clock: clock, events: server == 1 ? nil : eventsB,
                appVersion: appVersion)
            configuration.sharedTier = backing.tier(server)
            configuration.sharedTierTimeout = 30
            return Cache(configuration)
        }

        @Test func twoSchemaVersionsKeepTwoRecordsAndNeverLoop() async throws {
            let (old, new) = (server(1), server(2))
            try old.set(User(name: "Ada", age: 36), for: Self.v1)
            await old.waitForSharedTierWork()
            // The new version has no migration: its slot is empty, it fetches and stores in its own.
            let fetched = try await new.value(for: Self.v2) { UserV2(fullName: "Ada L.", age: 36) }
            #expect(fetched == UserV2(fullName: "Ada L.", age: 36))
            await new.waitForSharedTierWork()
            #expect(backing.value(User.self, in: Self.slot1) == User(name: "Ada", age: 36))
            #expect(backing.value(UserV2.self, in: Self.slot2) == UserV2(fullName: "Ada L.", age: 36))

            // The new version's store told the old one its copy was stale; the old one reads its
            // own record back, and nothing is written again on either side.
            await eventually("the old server dropping its copy") { old.value(for: Self.v1) == nil }
            let read = try await old.entry(for: Self.v1) { Fetched(User(name: "origin", age: 0)) }
            #expect(read.value == User(name: "Ada", age: 36))
            #expect(read.origin == .shared)
            let again = try await new.value(for: Self.v2) { UserV2(fullName: "origin", age: 0) }
            #expect(again == UserV2(fullName: "Ada L.", age: 36))
            await old.waitForSharedTierWork()
            await new.waitForSharedTierWork()
            #expect(backing.stores(in: Self.slot1) == 1)
            #expect(backing.stores(in: Self.slot2) == 1)
            #expect(eventsB.discards.isEmpty)
        }

        @Test func aWriteRemovesTheOtherVersionsRecordAndAFetchDoesNot() async throws {
            let (old, new) = (server(1), server(2))
            try old.set(User(name: "Ada", age: 36), for: Self.v1)
            await old.waitForSharedTierWork()
            _ = try await new.value(for: Self.v2) { UserV2(fullName: "Ada", age: 36) }
            await new.waitForSharedTierWork()
            // A fetched value fills its own slot and leaves the other version's.
            #expect(backing.value(User.self, in: Self.slot1) == User(name: "Ada", age: 36))

            // The app writes through the new version: the old version's record held the value
            // it replaced, so it goes, and the old version fetches instead of serving it.
            try new.set(UserV2(fullName: "Ada K.", age: 37), for: Self.v2)
            await new.waitForSharedTierWork()
            #expect(backing.record(in: Self.slot1) == nil)
            #expect(backing.value(UserV2.self, in: Self.slot2) == UserV2(fullName: "Ada K.", age: 37))
            await eventually("the old server dropping its copy") { old.value(for: Self.v1) == nil }
            let read = try await old.entry(for: Self.v1) { Fetched(User(name: "Ada K.", age: 37)) }
            #expect(read.origin == .fetch)
            #expect(read.value == User(name: "Ada K.", age: 37))
            await old.waitForSharedTierWork()
            #expect(backing.removals.isEmpty)
        }

        @Test func aNewVersionMigratesTheOldVersionsRecord() async throws {
            let (old, new) = (server(1), server(2))
            try old.set(User(name: "Ada", age: 36), for: Self.v1)
            await old.waitForSharedTierWork()
            let entry = try await new.entry(for: Self.v2Migrating) { Fetched(UserV2(fullName: "origin", age: 0)) }
            #expect(entry.value == UserV2(fullName: "Ada", age: 36))
            #expect(entry.origin == .shared)
            #expect(entry.schemaVersion == 2)
            #expect(eventsB.migrations.contains { $0 == ("profile", 1, 2) })
            await new.waitForSharedTierWork()
            // Migrated once, into the new version's own slot; the old record is the old version's.
            #expect(backing.value(UserV2.self, in: Self.slot2) == UserV2(fullName: "Ada", age: 36))
            #expect(backing.stores(in: Self.slot2) == 1)
            #expect(backing.value(User.self, in: Self.slot1) == User(name: "Ada", age: 36))
            #expect(backing.stores(in: Self.slot1) == 1)
        }

        @Test func unversionedKeysKeepARecordPerAppVersion() async throws {
            let (old, new) = (server(1, appVersion: "1.0"), server(2, appVersion: "2.0"))
            let key = CacheKey<String>("banner")
            try old.set("old", for: key)
            await old.waitForSharedTierWork()
            let value = try await new.value(for: key) { "new" }
            #expect(value == "new")
            await new.waitForSharedTierWork()
            #expect(backing.value(String.self, in: SharedSlot(name: "banner", version: "app-1.0")) == "old")
            #expect(backing.value(String.self, in: SharedSlot(name: "banner", version: "app-2.0")) == "new")
        }

        @Test func aRecordOfAnotherAppVersionInTheSlotIsAMismatch() async throws {
            let new = server(2, appVersion: "2.0")
            // A record written by 1.0 where 2.0 reads (a tier that mixed slots up): judged, not trusted.
            let old = server(1, appVersion: "1.0")
            try old.set("old", for: CacheKey<String>("banner"))
            await old.waitForSharedTierWork()
            let record = try #require(backing.record(in: SharedSlot(name: "banner", version: "app-1.0")))
            try await backing.tier(3).store(record, in: SharedSlot(name: "banner", version: "app-2.0"))
            let value = try await new.value(for: CacheKey<String>("banner")) { "fetched" }
            #expect(value == "fetched")
            #expect(eventsB.discards.contains { $0 == ("banner", .appVersionMismatch(stored: "1.0", current: "2.0")) })
        }
    }
}
