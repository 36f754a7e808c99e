import Cashier
import Foundation
import PostgresNIO
import Testing

@testable import CashierPostgres

/// A hostile review of the records a store's notification carries: what a notification this
/// instance cannot read does (a change all the same, and never a trap).
struct PostgresSharedTierHostileNoticeTests {
    /// A tier that is never run: `receive(_:)` is driven by hand.
    static func idleTier() -> PostgresSharedTier {
        PostgresSharedTier(
            configuration: PostgresClient.Configuration(
                host: "127.0.0.1", username: "nobody", password: nil, database: nil, tls: .disable))
    }

    /// Anyone allowed to connect may `NOTIFY` the channel: lengths whose sum overflows `Int`
    /// must not trap the listening process (`tail.count >= versionLength + nameLength`).
    @Test func aNoticeWhoseLengthsOverflowDoesNotTrap() async {
        await #expect(processExitsWith: .success) {
            _ = Notice(payload: "other r1.0 - 9223372036854775807 1 schema-1k")
        }
    }

    /// The same through the tier's own path, as its listening task would take it.
    @Test func receivingANoticeWhoseLengthsOverflowDoesNotTrap() async {
        await #expect(processExitsWith: .success) {
            let tier = PostgresSharedTierHostileNoticeTests.idleTier()
            tier.receive("other r1.0 - 1 9223372036854775807 schema-1k")
        }
    }

    /// A store's notification this version cannot read (damaged, or a later version's format):
    /// another instance changed the key all the same. Dropping the notification leaves this
    /// instance's local copies of the key in place, answered until they expire although the
    /// tier holds another value; the key's name, or every key, must go on.
    @Test(arguments: [
        "other r1.0 - 8 1 schema-1k!!!not base64", "other r1.0 sometime 8 1 schema-1kAAAA",
        "other rnot-a-time - 8 1 schema-1kAAAA",
    ])
    func aStoredNoticeThatCannotBeReadStillDropsTheKey(_ payload: String) async {
        let tier = Self.idleTier()
        let heard = tier.changes()
        tier.receive(payload)
        let change = await firstChange(of: heard, within: .seconds(1))
        #expect(change == .key("k") || change == .all, "\(payload) was dropped: \(String(describing: change))")
    }
}

@Suite(
    .enabled(
        if: TestDatabase.isConfigured,
        "\(TestDatabase.variable) is not set: no PostgreSQL to test against (.ci/integrations.sh starts one)"))
struct PostgresSharedTierHostileTests {
    static let slot = SharedSlot(name: "k", version: "schema-1")

    /// Pinned: a store refused as older than the row notifies no one, so nothing older is
    /// announced; the next notification the others hear is the next change.
    @Test func aRefusedStoreAnnouncesNothing() async throws {
        try await TestDatabase.withTiers(2) { tiers, _ in
            let (writer, reader) = (tiers[0], tiers[1])
            try await TestDatabase.waitUntilListening(tiers)
            let heard = reader.changes()
            let newer = record("newer", writtenAt: writtenAtStart + 5)
            try await writer.store(newer, in: Self.slot)
            #expect(await firstChange(of: heard) == .stored(Self.slot, newer))
            let outcome = try await writer.store(record("older"), in: Self.slot, removingOtherVersions: false)
            #expect(outcome == .superseded)
            let marker = SharedSlot(name: "marker", version: "schema-1")
            try await writer.store(record("m"), in: marker)
            #expect(await firstChange(of: heard) == .stored(marker, record("m")))
            // A refused write of the app's may tell of the tombstone it moved, by name only.
            let refused = try await writer.store(record("older"), in: Self.slot, removingOtherVersions: true)
            #expect(refused == .superseded)
            try await writer.store(record("m2"), in: marker)
            var change = await firstChange(of: heard)
            if change == .key("k") { change = await firstChange(of: heard) }
            #expect(change == .stored(marker, record("m2")))
        }
    }
}

/// A `Cache` on PostgreSQL hearing a store whose record is damaged (another instance's bug, or
/// anyone writing the table): the read is a miss with an event, then a fetch; nothing traps.
@Suite(
    .enabled(
        if: TestDatabase.isConfigured,
        "\(TestDatabase.variable) is not set: no PostgreSQL to test against (.ci/integrations.sh starts one)"))
struct CacheOnPostgresHostileTests {
    final class Events: @unchecked Sendable {
        private let lock = NSLock()
        private var events: [CacheEvent] = []
        func append(_ event: CacheEvent) { lock.withLock { events.append(event) } }
        var all: [CacheEvent] { lock.withLock { events } }
    }

    @Test func aDamagedRecordInANotificationIsAMissWithAnEvent() async throws {
        try await TestDatabase.withTiers(2) { tiers, _ in
            try await TestDatabase.waitUntilListening(tiers)
            let (writer, tier) = (tiers[0], tiers[1])
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cashier-hostile-\(UUID())")
            defer { try? FileManager.default.removeItem(at: folder) }
            let events = Events()
            var configuration = Cashier.Cache.Configuration(name: "hostile-\(UUID().uuidString)")
            configuration.location = .directory(folder)
            configuration.sharedTier = tier
            configuration.sharedTierTimeout = 2
            configuration.onEvent = { events.append($0) }
            let cache = Cashier.Cache(configuration)
            let key = CacheKey<Int>("n", schemaVersion: 1)
            let marker = CacheKey<Int>("marker", schemaVersion: 1)
            try cache.set(0, for: marker)
            // Bytes that are no entry, in the key's slot: the notification carries them.
            let damaged = SharedRecord(
                bytes: Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }), expiresAt: nil,
                writtenAt: Date())
            try await writer.store(damaged, in: SharedSlot(name: "n", version: "schema-1"))
            // Changes come in order: once the marker's copy goes, the damaged store was applied.
            try await writer.store(damaged, in: SharedSlot(name: "marker", version: "schema-1"))
            let deadline = ContinuousClock.now.advanced(by: .seconds(10))
            while cache.value(for: marker) != nil, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(cache.value(for: marker) == nil)
            #expect(try await cache.value(for: key) { 7 } == 7)
            #expect(events.all.contains(.discarded(key: "n", reason: .corrupt)))
        }
    }

    static func cache(on tier: PostgresSharedTier, _ folder: URL, events: Events? = nil) -> Cashier.Cache {
        var configuration = Cashier.Cache.Configuration(name: "hostile-\(UUID().uuidString)")
        configuration.location = .directory(folder)
        configuration.sharedTier = tier
        configuration.sharedTierTimeout = 2
        if let events { configuration.onEvent = { events.append($0) } }
        return Cashier.Cache(configuration)
    }

    static func settle(_ cache: Cashier.Cache) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                cache.waitForBackgroundWork()
                continuation.resume()
            }
        }
    }

    /// Two instances writing and reading one key at once, each hearing the other's stores with
    /// their records: once both are quiet and the notifications are in, each answers what the
    /// table holds (what a new instance reads), never an older record it kept.
    @Test func instancesWritingOneKeyAtOnceEndOnTheTablesValue() async throws {
        try await TestDatabase.withTiers(3) { tiers, _ in
            try await TestDatabase.waitUntilListening(tiers)
            let folders = (0..<3).map { _ in
                FileManager.default.temporaryDirectory.appendingPathComponent("cashier-hostile-\(UUID())")
            }
            defer { for folder in folders { try? FileManager.default.removeItem(at: folder) } }
            let (a, b) = (Self.cache(on: tiers[0], folders[0]), Self.cache(on: tiers[1], folders[1]))
            let key = CacheKey<Int>("n", schemaVersion: 1)
            for round in 0..<5 {
                await withTaskGroup(of: Void.self) { group in
                    for (index, cache) in [a, b].enumerated() {
                        group.addTask {
                            for i in 0..<40 {
                                if i % 3 == 2 {
                                    _ = try? await cache.value(for: key) { -1 }
                                } else {
                                    try? cache.set(round * 1000 + index * 100 + i, for: key)
                                }
                            }
                        }
                    }
                }
                await Self.settle(a)
                await Self.settle(b)
                try await Task.sleep(for: .milliseconds(500))
                let fresh = Self.cache(on: tiers[2], folders[2].appendingPathComponent("\(round)"))
                let table = try await fresh.value(for: key) { -2 }
                let fromA = try await a.value(for: key) { -3 }
                let fromB = try await b.value(for: key) { -4 }
                #expect(fromA == table && fromB == table, "round \(round): table \(table), A \(fromA), B \(fromB)")
            }
        }
    }
}
