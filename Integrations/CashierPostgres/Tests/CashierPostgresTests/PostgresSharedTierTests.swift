import Cashier
import Foundation
import PostgresNIO
import Testing

@testable import CashierPostgres

@Suite(
    .enabled(
        if: TestDatabase.isConfigured,
        "\(TestDatabase.variable) is not set: no PostgreSQL to test against (.ci/integrations.sh starts one)"))
struct PostgresSharedTierTests {
    @Test func storedRecordIsReadBack() async throws {
        try await TestDatabase.withTiers(1) { tiers, _ in
            let tier = tiers[0]
            let slot = SharedSlot(name: "profile", version: "schema-1")
            #expect(try await tier.record(in: slot) == nil)
            let expiresAt = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 3600).rounded())
            try await tier.store(record("one", expiresAt: expiresAt), in: slot)
            #expect(try await tier.record(in: slot) == record("one", expiresAt: expiresAt))
            try await tier.store(record("two"), in: slot)
            #expect(try await tier.record(in: slot) == record("two"))
        }
    }

    @Test func versionsOfAKeyKeepTheirOwnRecords() async throws {
        try await TestDatabase.withTiers(1) { tiers, _ in
            let tier = tiers[0]
            let old = SharedSlot(name: "profile", version: "schema-1")
            let new = SharedSlot(name: "profile", version: "schema-2")
            try await tier.store(record("old"), in: old)
            try await tier.store(record("new"), in: new)
            #expect(try await tier.record(in: old) == record("old"))
            #expect(try await tier.record(in: new) == record("new"))
        }
    }

    @Test func aStoreRemovingOtherVersionsLeavesOneRecordAndNotifiesOnce() async throws {
        try await TestDatabase.withTiers(2) { tiers, client in
            let (writer, reader) = (tiers[0], tiers[1])
            try await TestDatabase.waitUntilListening(tiers)
            let heard = reader.changes()
            let old = SharedSlot(name: "profile", version: "schema-1")
            let new = SharedSlot(name: "profile", version: "schema-2")
            try await writer.store(record("old"), in: old)
            try await writer.store(record("other"), in: SharedSlot(name: "other", version: "schema-1"))
            try await writer.storeRemovingOtherVersions(record("new"), in: new)
            #expect(try await writer.record(in: old) == nil)
            #expect(try await writer.record(in: new) == record("new"))
            // The two records, and the key's tombstone (the time of the write that removed "old").
            #expect(try await rowCount(writer, client) == 3)
            var changes: [SharedChange] = []
            for _ in 0..<3 { changes.append(await firstChange(of: heard) ?? .all) }
            // Each store carries its record; the one removing the other versions too, as it stored.
            #expect(
                changes == [
                    .stored(old, record("old")),
                    .stored(SharedSlot(name: "other", version: "schema-1"), record("other")),
                    .stored(new, record("new")),
                ])
        }
    }

    @Test func expiredRecordIsAMissAndSweptByTheServer() async throws {
        try await TestDatabase.withTiers(1) { tiers, client in
            let tier = tiers[0]
            let expired = SharedSlot(name: "expired", version: "schema-1")
            let live = SharedSlot(name: "live", version: "schema-1")
            try await tier.store(record("old", expiresAt: Date(timeIntervalSinceNow: -1)), in: expired)
            let later = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 3600).rounded())
            try await tier.store(record("new", expiresAt: later), in: live)
            #expect(try await tier.record(in: expired) == nil)
            #expect(try await tier.sweep() == 1)
            #expect(try await rowCount(tier, client) == 1)
            #expect(try await tier.record(in: live) == record("new", expiresAt: later))
        }
    }

    @Test func sweepDeletesInBatches() async throws {
        var options = TestDatabase.options()
        options.sweepBatchSize = 3
        try await TestDatabase.withTiers(1, options: options) { tiers, client in
            let tier = tiers[0]
            for index in 0..<10 {
                let slot = SharedSlot(name: "k\(index)", version: "schema-1")
                try await tier.store(record("v", expiresAt: Date(timeIntervalSinceNow: -1)), in: slot)
            }
            #expect(try await tier.sweep() == 10)
            #expect(try await rowCount(tier, client) == 0)
        }
    }

    @Test func removalsTakeEveryVersionOfANameThenEveryRecord() async throws {
        try await TestDatabase.withTiers(1) { tiers, client in
            let tier = tiers[0]
            for name in ["a", "b"] {
                for version in ["schema-1", "schema-2"] {
                    try await tier.store(record(name), in: SharedSlot(name: name, version: version))
                }
            }
            try await tier.removeRecords(named: "a")
            #expect(try await tier.record(in: SharedSlot(name: "a", version: "schema-1")) == nil)
            #expect(try await tier.record(in: SharedSlot(name: "a", version: "schema-2")) == nil)
            #expect(try await rowCount(tier, client) == 2)
            try await tier.removeAllRecords()
            #expect(try await rowCount(tier, client) == 0)
        }
    }

    @Test func sizeLimitEvictsTheOldestWrites() async throws {
        // Ten records of 100 bytes under a bound of 450: the five newest stay (four fit, and
        // the bound counts from the newest).
        try await TestDatabase.withTiers(1, options: TestDatabase.options(sizeLimit: 450)) { tiers, client in
            let tier = tiers[0]
            for index in 0..<10 {
                let slot = SharedSlot(name: "k\(index)", version: "schema-1")
                try await tier.store(SharedRecord(bytes: Data(repeating: 1, count: 100), expiresAt: nil), in: slot)
            }
            _ = try await tier.sweep()
            #expect(try await rowCount(tier, client) == 4)
            for index in 0..<10 {
                let found = try await tier.record(in: SharedSlot(name: "k\(index)", version: "schema-1")) != nil
                #expect(found == (index >= 6), "k\(index)")
            }
        }
    }

    @Test func anotherInstanceHearsOfWritesAndRemovalsButNotOfItsOwn() async throws {
        try await TestDatabase.withTiers(2) { tiers, _ in
            let (writer, reader) = (tiers[0], tiers[1])
            try await TestDatabase.waitUntilListening(tiers)
            let heardByReader = reader.changes()
            let heardByWriter = writer.changes()
            let profile = SharedSlot(name: "profile", version: "schema-1")
            try await writer.store(record("v"), in: profile)
            #expect(await firstChange(of: heardByReader) == .stored(profile, record("v")))
            try await writer.removeRecords(named: "feed")
            #expect(await firstChange(of: heardByReader) == .key("feed"))
            try await writer.removeAllRecords()
            #expect(await firstChange(of: heardByReader) == .all)
            // The writer's first change is the reader's write: its own three were skipped.
            let other = SharedSlot(name: "other", version: "schema-1")
            try await reader.store(record("w"), in: other)
            #expect(await firstChange(of: heardByWriter) == .stored(other, record("w")))
        }
    }

    @Test func lostConnectionYieldsWhatChangedMeanwhileOnceListeningAgain() async throws {
        try await TestDatabase.withTiers(2) { tiers, client in
            let (writer, reader) = (tiers[0], tiers[1])
            try await TestDatabase.waitUntilListening(tiers)
            let heard = reader.changes()
            // The server ends the backends listening on the channel, as a restart would. Nothing
            // changed: the reconnection names no key (and keeps every local entry).
            try await TestDatabase.endListening(of: reader, client: client)
            let reconnection = await firstChange(of: heard, within: .seconds(10))
            #expect(reconnection == .reconnected(changed: []))
            try await TestDatabase.waitUntilListening(tiers)
            let after = SharedSlot(name: "after", version: "schema-1")
            try await writer.store(record("v"), in: after)
            #expect(await firstChange(of: heard) == .stored(after, record("v")))
        }
    }

    @Test func tierOnTheApplicationsClientLeavesThePoolToIt() async throws {
        let options = TestDatabase.options()
        try await TestDatabase.withTiers(1, options: options) { _, client in
            // Not run: reads and writes need only the client, which the application runs.
            let tier = PostgresSharedTier(client: client, options: options)
            let slot = SharedSlot(name: "k", version: "app-1.0")
            try await tier.store(record("v"), in: slot)
            #expect(try await tier.record(in: slot) == record("v"))
        }
    }

    @Test func plugsIntoACachesConfiguration() async throws {
        try await TestDatabase.withTiers(1) { tiers, _ in
            var configuration = Cashier.Cache.Configuration(name: "shared")
            configuration.location = .memoryOnly
            configuration.sharedTier = tiers[0]
            #expect(configuration.sharedTier is PostgresSharedTier)
        }
    }

    @Test func instancesCreateTheTableAtOnce() async throws {
        try await TestDatabase.withTiers(4) { tiers, _ in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for tier in tiers { group.addTask { try await tier.prepare() } }
                try await group.waitForAll()
            }
        }
    }
}

/// Failure without a server: needs no PostgreSQL, so it always runs.
struct PostgresSharedTierFailureTests {
    @Test func unreachableServerFailsFastThenAtOnce() async throws {
        // A port nothing listens on: bound and closed by the kernel's choice.
        let configuration = PostgresClient.Configuration(
            host: "127.0.0.1", port: try closedPort(), username: "nobody", password: nil, database: nil,
            tls: .disable)
        var options = PostgresSharedTier.Options()
        options.operationTimeout = .milliseconds(500)
        options.retryDelay = .seconds(30)
        let tier = PostgresSharedTier(configuration: configuration, options: options)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await tier.run() }
            let slot = SharedSlot(name: "k", version: "schema-1")
            let clock = ContinuousClock()
            let first = await clock.measure {
                await #expect(throws: (any Error).self) { try await tier.record(in: slot) }
            }
            #expect(first < .seconds(3))
            let second = await clock.measure {
                await #expect(throws: PostgresSharedTierError.unreachable) {
                    try await tier.store(record("v"), in: slot)
                }
            }
            #expect(second < .milliseconds(100))
            group.cancelAll()
        }
    }

    @Test func deadlineEndsAWaitThatDoesNotEnd() async throws {
        let clock = ContinuousClock()
        let elapsed = await clock.measure {
            await #expect(throws: PostgresSharedTierError.timedOut(operation: "a test", after: .milliseconds(100))) {
                try await withDeadline(.milliseconds(100), operation: "a test") {
                    // Ignores cancellation, as a query on the wire does.
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        DispatchQueue.global().asyncAfter(deadline: .now() + 2) { continuation.resume() }
                    }
                }
            }
        }
        #expect(elapsed < .seconds(1))
    }

    @Test(arguments: ["cashier_entries", "T1", "_x"]) func validNames(_ name: String) {
        #expect(Table.isValidName(name))
    }

    @Test(arguments: ["", "1table", "a-b", "a\"b", "schema.table", String(repeating: "a", count: 49)])
    func invalidNames(_ name: String) {
        #expect(!Table.isValidName(name))
    }

    @Test func noticeRoundTrips() {
        for change in [SharedChange.key("profile"), .key("with space k"), .key(""), .all] {
            let notice = Notice(instance: "id", change: change)
            #expect(Notice(payload: notice.payload)?.change == change)
            #expect(Notice(payload: notice.payload)?.instance == "id")
        }
        let long = Notice(instance: "id", change: .key(String(repeating: "x", count: 8000)))
        #expect(Notice(payload: long.payload)?.change == .all)
    }

    @Test(arguments: [
        SharedSlot(name: "profile", version: "schema-1"), SharedSlot(name: "with space 3 k", version: "app-1.0 b"),
        SharedSlot(name: "é名", version: "app"), SharedSlot(name: "", version: ""),
    ])
    func aStoredNoticeCarriesItsRecord(_ slot: SharedSlot) {
        let records = [
            SharedRecord(bytes: Data([0, 1, 2, 255]), expiresAt: nil, writtenAt: Date(timeIntervalSince1970: 1.25)),
            SharedRecord(
                bytes: Data(), expiresAt: Date(timeIntervalSince1970: 1_800_000_000.123456),
                writtenAt: Date(timeIntervalSince1970: 1_764_000_000.987654)),
        ]
        for record in records {
            let notice = Notice(instance: "id", change: .stored(slot, record))
            #expect(Notice(payload: notice.payload)?.change == .stored(slot, record))
            #expect(Notice(payload: notice.payload)?.instance == "id")
        }
    }

    @Test func anotherInstancesStoreHeardBeforeThisOnesChangeOfTheKeyGoesOnWithoutItsRecord() async throws {
        let tier = PostgresSharedTier(
            configuration: PostgresClient.Configuration(
                host: "127.0.0.1", username: "nobody", password: nil, database: nil, tls: .disable))
        let heard = tier.changes()
        let slot = SharedSlot(name: "k", version: "schema-1")
        let others = Notice(instance: "other", change: .stored(slot, record("a"))).payload
        let own = Notice(instance: tier.instanceID.uuidString, change: .key("k")).payload
        try await tier.sendingOwnChange(own) {
            tier.receive(others) // while this instance's change is on its way
            return ((), true)
        }
        tier.receive(others) // before its notification came back: maybe older than it
        tier.receive(own)
        tier.receive(others) // after: newer
        #expect(await firstChange(of: heard) == .key("k"))
        #expect(await firstChange(of: heard) == .key("k"))
        #expect(await firstChange(of: heard) == .stored(slot, record("a")))
        // A change that notified no one (a refused store) is not waited for.
        try await tier.sendingOwnChange(own) { ((), false) }
        tier.receive(others)
        #expect(await firstChange(of: heard) == .stored(slot, record("a")))
    }

    @Test func aStoredNoticeTooLongCarriesTheKeysNameOnly() {
        let slot = SharedSlot(name: "big", version: "schema-1")
        let big = SharedRecord(bytes: Data(repeating: 7, count: 6000), expiresAt: nil, writtenAt: Date())
        #expect(Notice(payload: Notice(instance: "id", change: .stored(slot, big)).payload)?.change == .key("big"))
        let longName = SharedSlot(name: String(repeating: "x", count: 8000), version: "schema-1")
        let small = SharedRecord(bytes: Data([1]), expiresAt: nil, writtenAt: Date())
        #expect(Notice(payload: Notice(instance: "id", change: .stored(longName, small)).payload)?.change == .all)
        // A damaged payload is a change all the same: of its key when the name reads, else of every key.
        #expect(Notice(payload: "id r1.0 - 8 3 schema-1big!!!")?.change == .key("big"))
        #expect(Notice(payload: "id r1.0 - 80 3 schema-1big")?.change == .all)
    }
}

private func rowCount(_ tier: PostgresSharedTier, _ client: PostgresClient) async throws -> Int {
    let rows = try await client.query("SELECT count(*)::bigint FROM \(unescaped: "\"\(tier.options.tableName)\"")")
    var count = 0
    for try await rowCount in rows.decode(Int.self) { count = rowCount }
    return count
}

/// A loopback port nothing listens on (tcpmux, never served on a test machine): connecting is
/// refused at once.
private func closedPort() throws -> Int { 1 }
