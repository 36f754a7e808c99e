import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Two servers, each a `Cache` on a folder of its own, sharing one ``SharedBacking``: what one
/// writes or removes the other reads, in order, and two schema versions keep apart.
///
/// Serialized, with the suites nested in it (`Deploy`, `Failures`): `waitForBackgroundWork()`
/// blocks a thread until the queued writes reach the fake tier, whose calls need another thread
/// of the pool (two on a two-core machine); one such test at a time always leaves them one.
@Suite(.serialized) struct SharedTierTests {
    let backing = SharedBacking()
    let folderA = TemporaryFolder()
    let folderB = TemporaryFolder()
    let clock = TestClock()
    let eventsA = EventLog()
    let eventsB = EventLog()

    /// Server `server` (1 or 2) on its folder, reaching the backing through its own tier.
    func server(
        _ server: Int, appVersion: String = "1.0", _ change: (inout Cache.Configuration) -> Void = { _ in }
    ) -> Cache {
        var configuration = makeConfiguration(
            server == 1 ? folderA : folderB, clock: clock, events: server == 1 ? eventsA : eventsB,
            appVersion: appVersion)
        configuration.sharedTier = backing.tier(server)
        // Generous: these tests pin what a working tier does, on a loaded machine and under TSan.
        configuration.sharedTierTimeout = 30
        change(&configuration)
        return Cache(configuration)
    }

    /// A fetch that counts its calls.
    final class Fetches: Sendable {
        private let count = Locked(0)
        var calls: Int { count.withLock { $0 } }
        func fetch<V: Sendable>(_ value: V) -> @Sendable () async throws -> V {
            { [count] in
                count.withLock { $0 += 1 }
                return value
            }
        }
    }

    static let profile = CacheKey<User>("profile", schemaVersion: 1)
    static let slot = SharedSlot(name: "profile", version: "schema-1")

    // MARK: Reads

    @Test func aValueSetOnOneServerIsReadOnAnotherWithoutFetching() async throws {
        let (a, b) = (server(1), server(2))
        try a.set(User(name: "Ada", age: 36), for: Self.profile)
        await a.waitForSharedTierWork()
        #expect(backing.value(User.self, in: Self.slot) == User(name: "Ada", age: 36))

        let fetches = Fetches()
        let entry = try await b.entry(for: Self.profile) {
            Fetched(try await fetches.fetch(User(name: "origin", age: 0))())
        }
        #expect(entry.value == User(name: "Ada", age: 36))
        #expect(entry.origin == .shared)
        #expect(fetches.calls == 0)
        // Kept in B's memory and disk: a second read is local, and B's folder alone answers it.
        #expect(b.entry(for: Self.profile)?.origin == .memory)
        #expect(backing.reads(in: Self.slot) == 1)
        await b.waitForSharedTierWork()
        var offline = makeConfiguration(folderB, clock: clock)
        offline.memoryCountLimit = 0
        #expect(Cache(offline).entry(for: Self.profile)?.origin == .disk)
        #expect(Cache(offline).value(for: Self.profile) == User(name: "Ada", age: 36))
        // Reading stored nothing back.
        #expect(backing.stores(in: Self.slot) == 1)
    }

    @Test func theRecordInTheTierIsTheDiskTiersRecord() async throws {
        let a = server(1) { $0.rowSizeLimit = 0 } // every entry a file, to compare bytes
        try a.set(User(name: "Ada", age: 36), for: Self.profile)
        await a.waitForSharedTierWork()
        let file = try #require(folderA.entryFiles.first)
        let onDisk = try Data(contentsOf: folderA.url.appendingPathComponent(file))
        #expect(backing.record(in: Self.slot)?.bytes == onDisk)
    }

    @Test func aRecordExpiresWithItsEntry() async throws {
        let a = server(1)
        try a.set(User(name: "Ada", age: 36), for: Self.profile, lifespan: .seconds(60))
        try a.set(1, for: CacheKey<Int>("forever", schemaVersion: 1))
        await a.waitForSharedTierWork()
        #expect(backing.record(in: Self.slot)?.expiresAt == clock.now.addingTimeInterval(60))
        #expect(backing.record(in: SharedSlot(name: "forever", version: "schema-1"))?.expiresAt == nil)
    }

    @Test func concurrentMissesAskTheSharedTierOnce() async throws {
        let (a, b) = (server(1), server(2))
        try a.set(User(name: "Ada", age: 36), for: Self.profile)
        await a.waitForSharedTierWork()
        let fetches = Fetches()
        let values = await withTaskGroup(of: User?.self) { group in
            for _ in 0..<16 {
                group.addTask { try? await b.value(for: Self.profile, fetch: fetches.fetch(User(name: "x", age: 0))) }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(values.allSatisfy { $0 == User(name: "Ada", age: 36) })
        #expect(backing.reads(in: Self.slot) == 1)
        #expect(fetches.calls == 0)
    }

    @Test func aSyncReadStaysLocal() async throws {
        let (a, b) = (server(1), server(2))
        try a.set(User(name: "Ada", age: 36), for: Self.profile)
        await a.waitForSharedTierWork()
        #expect(b.value(for: Self.profile) == nil)
        #expect(b.entry(for: Self.profile) == nil)
        #expect(backing.reads(in: Self.slot) == 0)
    }

    @Test func aDamagedRecordIsADiscardedMissThenFetched() async throws {
        let (a, b) = (server(1), server(2))
        try a.set(User(name: "Ada", age: 36), for: Self.profile)
        await a.waitForSharedTierWork()
        backing.damage(Self.slot)
        let fetches = Fetches()
        let value = try await b.value(for: Self.profile, fetch: fetches.fetch(User(name: "fetched", age: 1)))
        #expect(value == User(name: "fetched", age: 1))
        #expect(fetches.calls == 1)
        #expect(eventsB.discards.contains { $0 == ("profile", .corrupt) })
        // The fetched value replaces the damaged record.
        await b.waitForSharedTierWork()
        #expect(backing.value(User.self, in: Self.slot) == User(name: "fetched", age: 1))
    }

    @Test func aRecordOfAnotherTypeIsATypeMismatch() async throws {
        let (a, b) = (server(1), server(2))
        try a.set("not a user", for: CacheKey<String>("profile", schemaVersion: 1))
        await a.waitForSharedTierWork()
        let fetches = Fetches()
        _ = try await b.value(for: Self.profile, fetch: fetches.fetch(User(name: "fetched", age: 1)))
        #expect(fetches.calls == 1)
        #expect(eventsB.discards.contains { if case .typeMismatch = $0.1 { true } else { false } })
    }

    @Test func aValueFetchedOnOneServerIsSharedWithTheOther() async throws {
        let (a, b) = (server(1), server(2))
        let fetches = Fetches()
        _ = try await a.value(for: Self.profile, fetch: fetches.fetch(User(name: "Ada", age: 36)))
        await a.waitForSharedTierWork()
        let value = try await b.value(for: Self.profile, fetch: fetches.fetch(User(name: "again", age: 0)))
        #expect(value == User(name: "Ada", age: 36))
        #expect(fetches.calls == 1)
    }

    @Test func theRefreshPolicyFetchesWithoutAskingTheTier() async throws {
        let (a, b) = (server(1), server(2))
        try a.set(User(name: "Ada", age: 36), for: Self.profile)
        await a.waitForSharedTierWork()
        let fetches = Fetches()
        let value = try await b.value(
            for: Self.profile, policy: .refresh, fetch: fetches.fetch(User(name: "fresh", age: 1)))
        #expect(value == User(name: "fresh", age: 1))
        #expect(backing.reads(in: Self.slot) == 0)
    }

    // MARK: Writes and removals

    @Test func writesOfOneKeyReachTheTierInOrder() async throws {
        let a = server(1)
        let key = CacheKey<Int>("n", schemaVersion: 1)
        let slot = SharedSlot(name: "n", version: "schema-1")
        backing.closeGate()
        try a.set(0, for: key)
        await eventually("the first store reaching the gate") { backing.storesAtGate == 1 }
        for n in 1...20 { try a.set(n, for: key) }
        backing.openGate()
        await a.waitForSharedTierWork()
        #expect(backing.value(Int.self, in: slot) == 20)
        // The first, held at the gate, and the last: the ones between were superseded unsent.
        #expect(backing.stores(in: slot) == 2)
    }

    @Test func aRemovalReachesTheTierAndTheOtherServersCopy() async throws {
        let (a, b) = (server(1), server(2))
        try a.set(User(name: "Ada", age: 36), for: Self.profile)
        await a.waitForSharedTierWork()
        let fetches = Fetches()
        _ = try await b.value(for: Self.profile, fetch: fetches.fetch(User(name: "x", age: 0)))
        #expect(b.value(for: Self.profile) != nil)

        a.removeValue(for: Self.profile)
        await a.waitForSharedTierWork()
        #expect(backing.record(in: Self.slot) == nil)
        #expect(backing.removals == ["profile"])
        await eventually("B dropping its copy") { b.value(for: Self.profile) == nil }
        var offline = makeConfiguration(folderB, clock: clock)
        offline.memoryCountLimit = 0
        #expect(Cache(offline).value(for: Self.profile) == nil)
        // B's drop is not sent back as a removal of its own.
        await b.waitForSharedTierWork()
        #expect(backing.removals == ["profile"])
        let value = try await b.value(for: Self.profile, fetch: fetches.fetch(User(name: "fetched", age: 1)))
        #expect(value == User(name: "fetched", age: 1))
    }

    @Test func aRemovalIsNotUndoneByARecordStillInTheTier() async throws {
        let (a, b) = (server(1), server(2))
        try b.set(User(name: "old", age: 1), for: Self.profile)
        await b.waitForSharedTierWork()
        // A's removal waits behind its write, which the gate holds: B's record is still there.
        backing.closeGate()
        try a.set(User(name: "new", age: 2), for: Self.profile)
        await eventually("A's write reaching the gate") { backing.storesAtGate == 1 }
        a.removeValue(for: Self.profile)
        let fetches = Fetches()
        let value = try await a.value(for: Self.profile, fetch: fetches.fetch(User(name: "fetched", age: 3)))
        #expect(value == User(name: "fetched", age: 3))
        #expect(backing.reads(in: Self.slot) == 0)
        backing.openGate()
        await a.waitForSharedTierWork()
    }

    @Test func removeAllAndRemoveAllWhereReachTheTier() async throws {
        let a = server(1)
        for name in ["user42.a", "user42.b", "other"] { try a.set(1, for: CacheKey<Int>(name, schemaVersion: 1)) }
        a.removeAll { $0.hasPrefix("user42.") }
        await a.waitForSharedTierWork()
        #expect(Set(backing.removals) == ["user42.a", "user42.b"])
        #expect(backing.record(in: SharedSlot(name: "other", version: "schema-1")) != nil)
        a.removeAll()
        await a.waitForSharedTierWork()
        #expect(backing.removalsOfAll == 1)
        #expect(backing.record(in: SharedSlot(name: "other", version: "schema-1")) == nil)
    }

    @Test func expiredRemovalsStayLocal() async throws {
        let a = server(1)
        try a.set(1, for: CacheKey<Int>("short", schemaVersion: 1), lifespan: .seconds(1))
        clock.advance(by: 2)
        a.removeExpired()
        a.collectGarbage()
        await a.waitForSharedTierWork()
        #expect(backing.removals.isEmpty)
    }

    // MARK: Changes from elsewhere

    @Test func aChangedKeyIsDroppedLocallyWithoutEcho() async throws {
        let b = server(2)
        try b.set(1, for: CacheKey<Int>("n", schemaVersion: 1))
        try b.set(2, for: CacheKey<Int>("m", schemaVersion: 1))
        await b.waitForSharedTierWork()
        backing.send(.key("n"), to: 2)
        await eventually("B dropping n") { b.value(for: CacheKey<Int>("n", schemaVersion: 1)) == nil }
        #expect(b.value(for: CacheKey<Int>("m", schemaVersion: 1)) == 2)
        await b.waitForSharedTierWork()
        #expect(backing.removals.isEmpty)
    }

    @Test func allDropsEveryLocalEntry() async throws {
        let b = server(2)
        for n in 0..<5 { try b.set(n, for: CacheKey<Int>("n\(n)", schemaVersion: 1)) }
        await b.waitForSharedTierWork()
        backing.send(.all, to: 2)
        // The files go, then the memory tier, in one step of B's that `count` does not wait
        // for: wait for both.
        await eventually("B dropping everything") {
            b.count == 0 && (0..<5).allSatisfy { b.value(for: CacheKey<Int>("n\($0)", schemaVersion: 1)) == nil }
        }
        await b.waitForSharedTierWork()
        #expect(backing.removalsOfAll == 0)
        #expect(backing.stores(in: SharedSlot(name: "n0", version: "schema-1")) == 1)
    }

    @Test func observersSeeADroppedKeyGo() async throws {
        let b = server(2)
        let key = CacheKey<Int>("n", schemaVersion: 1)
        try b.set(1, for: key)
        let seen = Locked<[Int?]>([])
        let watching = Task {
            for await value in b.updates(for: key) { seen.withLock { $0.append(value) } }
        }
        defer { watching.cancel() }
        await eventually("the observer seeing the value") { seen.withLock { $0 == [1] } }
        backing.send(.key("n"), to: 2)
        await eventually("the observer seeing the key go") { seen.withLock { $0 == [1, nil] } }
    }
}
