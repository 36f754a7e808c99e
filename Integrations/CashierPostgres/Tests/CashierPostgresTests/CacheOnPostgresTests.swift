import Cashier
import Foundation
import PostgresNIO
import Testing

@testable import CashierPostgres

/// Two `Cache` instances, each on a folder and a `PostgresSharedTier` of its own, on one
/// database: the wiring of the library's shared tier, end to end, as two servers of a fleet.
@Suite(
    .enabled(
        if: TestDatabase.isConfigured,
        "\(TestDatabase.variable) is not set: no PostgreSQL to test against (.ci/integrations.sh starts one)"))
struct CacheOnPostgresTests {
    struct Profile: Codable, Sendable, Equatable {
        var name: String
    }

    struct ProfileV2: Codable, Sendable, Equatable {
        var givenName: String
        var familyName: String
    }

    static let profile = CacheKey<Profile>("profile", schemaVersion: 1)
    static let profileV2 = CacheKey<ProfileV2>("profile", schemaVersion: 2)

    @Test func aValueSetOnOneInstanceIsReadByAnotherWithoutFetching() async throws {
        try await TestDatabase.withTiers(2) { tiers, _ in
            try await TestDatabase.waitUntilListening(tiers)
            try await withCaches(on: tiers) { a, b in
                try a.set(Profile(name: "Ada"), for: Self.profile)
                await settle(a)
                let entry = try await b.entry(for: Self.profile) { () -> Fetched<Profile> in
                    Issue.record("B fetched a value A had stored in the shared tier")
                    return Fetched(Profile(name: "origin"))
                }
                #expect(entry.origin == .shared)
                #expect(entry.value == Profile(name: "Ada"))
                let value = try await b.value(for: Self.profile) { Profile(name: "origin") }
                #expect(value == Profile(name: "Ada"))
            }
        }
    }

    @Test func aRemovalOnOneInstanceDropsTheOthersCopy() async throws {
        try await TestDatabase.withTiers(2) { tiers, _ in
            try await TestDatabase.waitUntilListening(tiers)
            try await withCaches(on: tiers) { a, b in
                try a.set(Profile(name: "Ada"), for: Self.profile)
                await settle(a)
                // A's write reaches B as a change too, maybe after B read the record and kept it:
                // read until B keeps its copy past that change.
                for _ in 0..<50 {
                    _ = try await b.value(for: Self.profile) { Profile(name: "origin") }
                    try await Task.sleep(for: .milliseconds(100))
                    if b.value(for: Self.profile) != nil { break }
                }
                #expect(b.value(for: Self.profile) == Profile(name: "Ada"))

                a.removeValue(for: Self.profile)
                await settle(a)
                try await eventually("B dropping its copy") { b.value(for: Self.profile) == nil }
                let entry = try await b.entry(for: Self.profile) { Fetched(Profile(name: "fetched")) }
                #expect(entry.origin == .fetch)
                #expect(entry.value == Profile(name: "fetched"))
            }
        }
    }

    @Test func aWriteOfOneSchemaVersionIsNotShadowedByTheOthersRecord() async throws {
        try await TestDatabase.withTiers(2) { tiers, _ in
            try await TestDatabase.waitUntilListening(tiers)
            try await withCaches(on: tiers) { old, new in
                try old.set(Profile(name: "Ada Lovelace"), for: Self.profile)
                await settle(old)
                _ = try await new.value(for: Self.profileV2) { ProfileV2(givenName: "Ada", familyName: "Lovelace") }
                await settle(new)
                // The old version's record is still right; the new version's write makes it wrong.
                try new.set(ProfileV2(givenName: "Ada", familyName: "King"), for: Self.profileV2)
                await settle(new)
                try await eventually("the old version dropping its copy") { old.value(for: Self.profile) == nil }
                let entry = try await old.entry(for: Self.profile) { Fetched(Profile(name: "Ada King")) }
                #expect(entry.origin == .fetch)
                #expect(entry.value == Profile(name: "Ada King"))
            }
        }
    }

    /// B's clock runs ahead: its write, made before A's, is the newer one. A's store is
    /// refused, tells no one, and A drops its own copy and reads B's value next; B keeps its copy.
    @Test func aWriteOlderThanTheTiersRecordIsRefusedAndItsWriterReadsTheNewerOne() async throws {
        try await TestDatabase.withTiers(2) { tiers, _ in
            try await TestDatabase.waitUntilListening(tiers)
            let ahead: @Sendable () -> Date = { Date().addingTimeInterval(60) }
            try await withCaches(on: tiers, clocks: [nil, ahead]) { a, b in
                try b.set(Profile(name: "newer"), for: Self.profile)
                await settle(b)
                try a.set(Profile(name: "older"), for: Self.profile)
                await settle(a)
                #expect(a.value(for: Self.profile) == nil)
                let entry = try await a.entry(for: Self.profile) { Fetched(Profile(name: "origin")) }
                #expect(entry.origin == .shared)
                #expect(entry.value == Profile(name: "newer"))
                #expect(b.value(for: Self.profile) == Profile(name: "newer"))
            }
        }
    }

    /// A cache made before its tier runs: its stream, asked for at once, stays open and silent
    /// (no pause-and-drop loop), hears `.all` once when the tier listens, then the other
    /// instance's changes; when `run()` returns the stream ends, the cache drops its entries
    /// once, and the stream it asks for next stays open without dropping them again.
    @Test func aTierNotYetRunningOrStoppedDropsLocalEntriesOnceEach() async throws {
        let options = TestDatabase.options()
        try await TestDatabase.withTiers(1, options: options) { tiers, _ in
            try await TestDatabase.waitUntilListening(tiers)
            let configuration = try #require(TestDatabase.configuration)
            let late = PostgresSharedTier(configuration: configuration, options: options)
            // A short timeout: the pause before a new stream is asked for is that long, doubling.
            try await withCaches(on: [tiers[0], late], timeout: 0.05) { a, b in
                let local = CacheKey<Int>("local", schemaVersion: 1)
                try b.set(1, for: local)
                try await Task.sleep(for: .seconds(1))
                #expect(b.value(for: local) == 1, "dropped while the tier was not running")

                let running = Task { try await late.run() }
                try await TestDatabase.waitUntilListening([late])
                try await eventually("B dropping its entries once the tier listens") { b.value(for: local) == nil }
                try b.set(2, for: local)
                try a.set(Profile(name: "Ada"), for: Self.profile)
                _ = try await b.value(for: Self.profile) { Profile(name: "origin") }
                a.removeValue(for: Self.profile)
                try await eventually("B hearing A's removal") { b.value(for: Self.profile) == nil }
                #expect(b.value(for: local) == 2, "dropped again while listening")

                running.cancel()
                try await running.value
                try await eventually("B dropping its entries once the stream ended") { b.value(for: local) == nil }
                try b.set(3, for: local)
                try await Task.sleep(for: .seconds(1))
                #expect(b.value(for: local) == 3, "dropped again after the tier stopped")
            }
        }
    }
}

/// Runs `body` with a cache per tier, each on a temporary folder of its own, removed afterwards;
/// a cache's clock is `clocks[i]` when given.
private func withCaches(
    on tiers: [PostgresSharedTier], timeout: TimeInterval = 2, clocks: [(@Sendable () -> Date)?] = [],
    _ body: (Cashier.Cache, Cashier.Cache) async throws -> Void
) async throws {
    let folders = tiers.map { _ in
        FileManager.default.temporaryDirectory.appendingPathComponent("cashier-postgres-\(UUID().uuidString)")
    }
    defer { for folder in folders { try? FileManager.default.removeItem(at: folder) } }
    let caches = zip(tiers, folders).enumerated().map { index, pair in
        let (tier, folder) = pair
        var configuration = Cashier.Cache.Configuration(name: "fleet-\(folder.lastPathComponent)")
        configuration.location = .directory(folder)
        configuration.sharedTier = tier
        configuration.sharedTierTimeout = timeout
        if index < clocks.count, let clock = clocks[index] { configuration.now = clock }
        return Cashier.Cache(configuration)
    }
    try await body(caches[0], caches[1])
    for cache in caches { await settle(cache) }
}

/// `cache.waitForBackgroundWork()` on a thread of its own: it blocks its thread until the
/// shared tier has answered, and the tier answers on the cooperative pool (two threads on a
/// machine of two cores), which two blocked tests would starve for seconds.
private func settle(_ cache: Cashier.Cache) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        Thread.detachNewThread {
            cache.waitForBackgroundWork()
            continuation.resume()
        }
    }
}

/// Waits until `condition` holds, failing after `seconds`: for what a change stream does,
/// which nothing announces.
private func eventually(
    _ what: String, seconds: Double = 10, sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () -> Bool
) async throws {
    let deadline = ContinuousClock.now.advanced(by: .seconds(seconds))
    while ContinuousClock.now < deadline {
        if condition() { return }
        try await Task.sleep(for: .milliseconds(5))
    }
    if !condition() { Issue.record("\(what) did not happen within \(seconds) s", sourceLocation: sourceLocation) }
}
