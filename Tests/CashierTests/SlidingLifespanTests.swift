import CashierEntryFormat
import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

#if canImport(Glibc)
import Glibc
#endif

/// `Lifespan.sinceLastUse`: valid until that long passes without a use (SPTPersistentCache's
/// default expiry), by the cache's clock, in memory, on disk and across relaunches.
@Suite struct SlidingLifespanTests {
    let folder = TemporaryFolder()
    let clock = TestClock()
    /// The test clock's start: the write of most tests.
    let start = TestClock().now.timeIntervalSince1970
    static let key = CacheKey<String>("session", lifespan: .sinceLastUse(100))

    /// A cache on the test folder. With `relaunched`, it has a disk index of its own too, as
    /// the next launch would: all it knows of earlier uses is what the entry files keep.
    func cache(
        relaunched: Bool = false, events: EventLog? = nil, _ change: (inout Cache.Configuration) -> Void = { _ in }
    ) -> Cache {
        // The file design's sliding lifespans: access times carry the last use to the next launch.
        var configuration = makeConfiguration(folder, clock: clock, events: events, storage: .filesWithoutStore)
        if relaunched { configuration.fileSystem = POSIXFileSystem() }
        change(&configuration)
        return Cache(configuration)
    }

    /// Moves the test clock to `seconds` after ``start``.
    func at(_ seconds: Double) {
        clock.advance(by: start + seconds - clock.now.timeIntervalSince1970)
    }

    func date(_ seconds: Double) -> Date { Date(timeIntervalSince1970: start + seconds) }

    /// The access time of `key`'s file, in seconds after ``start`` (read by `stat`, which is no use).
    func accessTime(of key: String = SlidingLifespanTests.key.name) -> Double? {
        var st = stat()
        guard stat(folder.path + "/" + DiskTier.fileName(for: key), &st) == 0 else { return nil }
        return FileInfo(st).accessedAt - start
    }

    // MARK: In one instance

    @Test func aReadKeepsTheEntryAlivePastItsLifespanFromTheWrite() throws {
        let cache = cache()
        try cache.set("token", for: Self.key)
        try cache.set("token", for: CacheKey<String>("fixed", lifespan: .seconds(100)))
        for moment in stride(from: 90.0, through: 450, by: 90) {
            at(moment)
            #expect(cache.value(for: Self.key) == "token", "read at \(moment)")
        }
        #expect(cache.value(for: CacheKey<String>("fixed", lifespan: .seconds(100))) == nil)
        #expect(cache.entry(for: Self.key)?.expiresAt == date(550))
    }

    @Test func withoutAUseItExpiresItsLifespanAfterTheLastOne() throws {
        let cache = cache()
        try cache.set("token", for: Self.key)
        at(50)
        #expect(cache.value(for: Self.key) == "token")
        at(149.5)
        #expect(cache.entry(for: Self.key)?.isExpired == false) // a use: now valid until 249.5
        at(249.5)
        #expect(cache.value(for: Self.key) == nil)
        #expect(cache.isValid(Self.key) == false)
    }

    @Test func theEntryAnswersTheExpiryTheReadMovedItTo() throws {
        let cache = cache()
        try cache.set("token", for: Self.key)
        #expect(cache.entry(for: Self.key)?.expiresAt == date(100))
        at(30)
        let entry = try #require(cache.entry(for: Self.key))
        #expect(entry.expiresAt == date(130))
        #expect(entry.validatedAt == date(0)) // a read is a use, not a validation
        #expect(!entry.isExpired)
    }

    @Test(arguments: ["value", "entry", "contains", "isValid", "subscript"])
    func everyKindOfReadCounts(_ read: String) throws {
        let cache = cache()
        try cache.set("token", for: Self.key)
        at(90)
        switch read {
        case "value": _ = cache.value(for: Self.key)
        case "entry": _ = cache.entry(for: Self.key)
        case "contains": _ = cache.contains(Self.key)
        case "isValid": _ = cache.isValid(Self.key)
        default: _ = cache[Self.key]
        }
        at(180)
        #expect(cache.entry(for: Self.key)?.isExpired == false)
    }

    @Test func aReadFromDiskCountsAsMuchAsAMemoryHit() throws {
        let cache = cache { $0.memoryCountLimit = 0 }
        try cache.set("token", for: Self.key)
        at(90)
        #expect(cache.value(for: Self.key) == "token")
        at(180)
        #expect(cache.value(for: Self.key) == "token")
        at(281)
        #expect(cache.value(for: Self.key) == nil)
    }

    @Test func writesAndRefreshesCountAsUses() throws {
        let cache = cache()
        try cache.set("token", for: Self.key)
        at(150)
        #expect(cache.value(for: Self.key) == nil)
        cache.refresh(Self.key)
        #expect(cache.value(for: Self.key) == "token")
        at(300)
        try cache.set("new", for: Self.key)
        at(399)
        #expect(cache.value(for: Self.key) == "new")
    }

    @Test func aReadOfAnExpiredEntryDoesNotBringItBack() throws {
        let cache = cache { $0.returnsExpiredValues = true }
        try cache.set("token", for: Self.key)
        at(100)
        #expect(cache.value(for: Self.key) == "token") // returned stale: no use
        #expect(cache.entry(for: Self.key)?.isExpired == true)
        #expect(cache.contains(Self.key))
        at(101)
        #expect(cache.entry(for: Self.key)?.isExpired == true)
        #expect(cache.isValid(Self.key) == false)
        cache.waitForBackgroundWork() // hands the memory hits to the disk: they must not count there either
        #expect(accessTime(of: Self.key.name) == 0)
        #expect(self.cache(relaunched: true).entry(for: Self.key)?.isExpired == true)
    }

    @Test func aLockedEntryNeverExpiresAndUnlockingCountsAsAUse() throws {
        let events = EventLog()
        let cache = cache(events: events)
        try cache.set("token", for: Self.key)
        cache.lock(Self.key)
        at(1000)
        #expect(cache.value(for: Self.key) == "token")
        #expect(cache.entry(for: Self.key)?.isExpired == false)
        cache.removeExpired()
        cache.collectGarbage()
        #expect(self.cache(relaunched: true).value(for: Self.key) == "token")
        at(2000)
        cache.unlock(Self.key)
        at(2099)
        #expect(accessTime() == 2000)
        #expect(self.cache(relaunched: true).value(for: Self.key) == "token") // from the unlock's rewrite
        #expect(accessTime() == 2099)
        at(2198)
        #expect(self.cache(relaunched: true).value(for: Self.key) == "token") // used at 2099
        at(2300)
        #expect(self.cache(relaunched: true).value(for: Self.key) == nil)
        #expect(events.discards.isEmpty)
    }

    // MARK: Housekeeping

    @Test func removeExpiredTakesTheIdleEntryAndKeepsTheOneRecentlyRead() throws {
        let events = EventLog()
        let cache = cache(events: events)
        let idle = CacheKey<String>("idle", lifespan: .sinceLastUse(100))
        try cache.set("token", for: Self.key)
        try cache.set("idle", for: idle)
        at(50) // within the granularity: only the memory tier knows of this read
        #expect(cache.value(for: Self.key) == "token")
        at(140)
        cache.removeExpired()
        #expect(events.discards.map(\.0) == ["idle"])
        #expect(events.discards.first?.1 == .expired)
        #expect(cache.value(for: Self.key) == "token")
        #expect(self.cache(relaunched: true).keys == [Self.key.name])
    }

    @Test func garbageCollectionOfTheNextLaunchTakesTheIdleEntryAndKeepsTheOneRecentlyRead() throws {
        let idle = CacheKey<String>("idle", lifespan: .sinceLastUse(100))
        do {
            let cache = cache()
            try cache.set("token", for: Self.key)
            try cache.set("idle", for: idle)
            at(90)
            #expect(cache.value(for: Self.key) == "token")
        }
        at(150)
        let events = EventLog()
        let next = cache(relaunched: true, events: events)
        next.collectGarbage()
        #expect(events.discards.map(\.0) == ["idle"])
        #expect(next.keys == [Self.key.name])
    }

    @Test func aMemoryOnlyCacheSlidesAndRemovesExpiredEntriesToo() throws {
        let cache = cache { $0.location = .memoryOnly }
        let idle = CacheKey<String>("idle", lifespan: .sinceLastUse(100))
        try cache.set("token", for: Self.key)
        try cache.set("idle", for: idle)
        at(90)
        #expect(cache.value(for: Self.key) == "token")
        at(150)
        cache.removeExpired()
        #expect(cache.keys == [Self.key.name])
        #expect(cache.value(for: Self.key) == "token")
    }

    // MARK: Across relaunches, at the granularity

    @Test func theLifespanSlidesAcrossARelaunch() throws {
        do {
            let first = cache()
            try first.set("token", for: Self.key)
            at(90)
            #expect(first.value(for: Self.key) == "token") // a memory hit
        }
        at(180)
        #expect(self.cache(relaunched: true).value(for: Self.key) == "token") // from disk: a use at 180
        at(279)
        #expect(self.cache(relaunched: true).value(for: Self.key) == "token")
        at(380)
        #expect(self.cache(relaunched: true).value(for: Self.key) == nil)
    }

    @Test func aMemoryHitAMinuteAfterTheFileLastSawAUseIsWrittenToItAtOnce() throws {
        // So a launch that ends without any other disk work (killed, say) loses at most a minute of uses.
        let cache = cache()
        try cache.set("token", for: Self.key)
        at(59)
        #expect(cache.value(for: Self.key) == "token")
        #expect(accessTime() == 0)
        at(60)
        #expect(cache.value(for: Self.key) == "token")
        #expect(accessTime() == 60)
        at(119)
        _ = cache.value(for: Self.key)
        #expect(accessTime() == 60)
        at(120)
        _ = cache.value(for: Self.key)
        #expect(accessTime() == 120)
    }

    /// The granularity's effect, pinned: the file keeps a use only once it is a minute past
    /// the one it keeps, so another launch may see the entry expire up to a minute early.
    @Test func anotherLaunchMaySeeTheEntryExpireUpToAMinuteEarlyNeverLate() throws {
        let cache = cache()
        try cache.set("token", for: Self.key)
        at(59)
        #expect(cache.value(for: Self.key) == "token")
        cache.waitForBackgroundWork()
        #expect(accessTime() == 0)
        at(100)
        #expect(self.cache(relaunched: true).value(for: Self.key) == nil) // last use 0 as the file says: 59 s early
        #expect(cache.value(for: Self.key) == "token") // this instance knows of the use at 59
        at(158)
        #expect(self.cache(relaunched: true).value(for: Self.key) == "token") // the read at 100 was written
    }

    @Test func aStaleReadOfTheNextLaunchLeavesTheFileAsItWas() throws {
        try cache().set("token", for: Self.key)
        at(200)
        let next = cache(relaunched: true) { $0.returnsExpiredValues = true }
        #expect(next.value(for: Self.key) == "token")
        #expect(next.entry(for: Self.key)?.isExpired == true)
        next.waitForBackgroundWork()
        #expect(accessTime() == 0)
    }

    // MARK: The facade and fetching

    @Test func theFacadeJudgesBySinceLastUseToo() throws {
        let cache = cache { $0.defaultLifespan = .sinceLastUse(100) }
        try cache.setObject([1, 2], forKey: "numbers")
        at(90)
        #expect(cache.object(forKey: "numbers", as: [Int].self) == [1, 2])
        at(180)
        #expect(cache.isValid(forKey: "numbers"))
        #expect(self.cache(relaunched: true).isValid(forKey: "numbers"))
        at(191)
        #expect(!cache.isValid(forKey: "numbers"))
        cache.refreshValidation(forKey: "numbers")
        #expect(cache.isValid(forKey: "numbers"))
    }

    @Test func aFetchHitCountsAsAUse() async throws {
        let cache = cache()
        let calls = Locked(0)
        let fetch: @Sendable () async throws -> Fetched<String> = {
            calls.withLock { $0 += 1 }
            return Fetched("fetched", lifespan: .sinceLastUse(100))
        }
        let key = CacheKey<String>("n")
        #expect(try await cache.entry(for: key, fetch: fetch).origin == .fetch)
        for moment in [90.0, 180, 270] {
            at(moment)
            #expect(try await cache.entry(for: key, fetch: fetch).origin == .memory)
        }
        at(371)
        #expect(try await cache.entry(for: key, fetch: fetch).origin == .fetch)
        #expect(calls.withLock { $0 } == 2)
    }

    /// Issue 19's "the read-sliding lifespan across a relaunch", for a lifespan a fetch decided.
    @Test func aFetchedSinceLastUseLifespanSlidesAcrossARelaunch() async throws {
        let calls = Locked(0)
        let fetch: @Sendable () async throws -> Fetched<String> = {
            calls.withLock { $0 += 1 }
            return Fetched("fetched", lifespan: .sinceLastUse(100))
        }
        let key = CacheKey<String>("n", lifespan: .hours(1))
        #expect(try await cache().entry(for: key, fetch: fetch).origin == .fetch)
        at(90)
        #expect(try await cache(relaunched: true).entry(for: key, fetch: fetch).origin == .disk)
        at(180)
        let entry = try await cache(relaunched: true).entry(for: key, fetch: fetch)
        #expect(entry.origin == .disk)
        #expect(entry.expiresAt == date(280))
        at(281)
        #expect(try await cache(relaunched: true).entry(for: key, fetch: fetch).origin == .fetch)
        #expect(calls.withLock { $0 } == 2)
    }

    @Test(.timeLimit(.minutes(1)))
    func staleWhileRevalidateAnswersTheIdleEntryAndStoresTheFetchedSlidingLifespan() async throws {
        let cache = cache()
        let key = CacheKey<String>("n", lifespan: .hours(1))
        try cache.set("old", for: key, lifespan: .sinceLastUse(100))
        at(150)
        let stale = try await cache.entry(for: key, policy: .staleWhileRevalidate) {
            Fetched("new", lifespan: .sinceLastUse(30))
        }
        #expect(stale.value == "old")
        #expect(stale.isExpired)
        #expect(stale.origin == .memory)
        while cache.value(for: key) != "new" { await Task.yield() }
        let fresh = try #require(self.cache(relaunched: true).entry(for: key))
        #expect(fresh.expiresAt == date(180))
        #expect(!fresh.isExpired)
    }

    // MARK: Storing the lifespan

    @Test(arguments: [
        (Lifespan.sinceLastUse(.infinity), Lifespan.never),
        (Lifespan.sinceLastUse(-.infinity), Lifespan.until(.distantPast)),
        (Lifespan.sinceLastUse(30), Lifespan.sinceLastUse(30)),
    ])
    func aSinceLastUseLifespanIsStoredFinite(_ given: Lifespan, _ stored: Lifespan) throws {
        #expect(try given.storable(forKey: "k") == stored)
        try cache().set("token", for: Self.key, lifespan: given)
        let header = try #require(DiskTier(folder: folder.path).scanHeaders().entries.first?.header)
        #expect(header.lifespan == stored)
    }

    @Test func aNaNSinceLastUseLifespanIsRefused() throws {
        #expect(throws: CacheError.self) { try cache().set("token", for: Self.key, lifespan: .sinceLastUse(.nan)) }
        #expect(folder.entryFiles.isEmpty)
    }

    static func decode(_ bytes: [UInt8]) -> Result<EntryHeader, EntryFormatError> {
        bytes.withUnsafeBytes { raw in
            Result { () throws(EntryFormatError) in try EntryHeader.decode(file: raw).header }
        }
    }

    static let header = EntryHeader(
        key: "k", typeName: "String", format: .json, createdAt: 1, validatedAt: 2, lifespan: .sinceLastUse(42.5),
        schemaVersion: nil, appVersion: nil, isLocked: false, payloadLength: 3)

    @Test func theHeaderStoresKindThreeWithItsSeconds() throws {
        let bytes = HeaderPropertyTests.file(Self.header, Array("\"a\"".utf8))
        #expect(bytes[13] == 3)
        #expect(
            bytes.withUnsafeBytes {
                Double(bitPattern: UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 32, as: UInt64.self)))
            } == 42.5)
        let decoded = try Self.decode(bytes).get()
        #expect(decoded.lifespan == .sinceLastUse(42.5))
        #expect(decoded.expiresAt(lastUsedAt: nil) == 44.5)
        #expect(decoded.expiresAt(lastUsedAt: 10) == 52.5)
        #expect(decoded.expiresAt(lastUsedAt: 1) == 44.5) // never before "validated at"
    }

    /// What a build from before kind 3 does with it, as it does with any kind it does not know:
    /// a bad field, so the entry is a `.corrupt` miss there and removed.
    @Test func aLifespanKindThisBuildDoesNotKnowIsDamage() throws {
        var bytes = HeaderPropertyTests.file(Self.header, Array("\"a\"".utf8))
        bytes[13] = 4
        #expect(throws: EntryFormatError.badField("lifespan")) { try Self.decode(bytes).get() }
    }
}
