import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// The memory tier does not serve a value another connection to the folder's store (another
/// process; here a second `DiskTier`, which opens its own) has since replaced or removed.
@Suite struct MemoryCoherenceTests {
    let folder = TemporaryFolder()

    /// This process's cache, checking the store at every hit (`interval` 0) or as given.
    func cache(checkingEvery interval: UInt64 = 0) -> Cache {
        var configuration = Cache.Configuration(name: "coherence")
        configuration.location = .directory(folder.url)
        configuration.memoryCoherenceNanoseconds = interval
        return Cache(configuration)
    }

    /// Another process, as far as the store can tell: a folder of its own with its own SQLite connection.
    func otherProcess() -> Cache {
        var configuration = Cache.Configuration(name: "coherence")
        configuration.location = .directory(folder.url)
        configuration.fileSystem = POSIXFileSystem()
        return Cache(configuration)
    }

    let replaced = CacheKey<String>("replaced", schemaVersion: 1)
    let removed = CacheKey<String>("removed", schemaVersion: 1)

    @Test func anotherConnectionsOverwriteAndRemovalAreNotServedFromMemory() throws {
        let other = otherProcess()
        try other.set("first", for: CacheKey<String>("other", schemaVersion: 1))
        let cache = cache()
        try cache.set("mine", for: replaced)
        try cache.set("kept", for: removed)
        #expect(cache.entry(for: replaced)?.origin == .memory)
        // The uses those writes gathered go to the store off this thread: a check that meets
        // that write gives up its turn (a hit never waits), which is not what this test is about.
        cache.waitForBackgroundWork()

        try other.set("theirs", for: replaced)
        other.removeValue(for: removed)
        // Its uses, written off its thread, are one more commit of another connection's.
        other.waitForBackgroundWork()

        #expect(cache.value(for: replaced) == "theirs")
        #expect(cache.value(for: removed) == nil)
        #expect(!cache.contains(removed))
        #expect(cache.memory.coherenceDrops == 1)
        #expect(cache.entry(for: replaced)?.origin == .memory)
    }

    @Test func theFacadesReadsSeeAnotherConnectionsRemovalToo() throws {
        let other = otherProcess()
        try other.set("first", for: CacheKey<String>("other", schemaVersion: 1))
        let cache = cache()
        // Unversioned: what the string-keyed facade's reads (`metadata(named:)`) find in memory.
        let unversioned = CacheKey<String>("unversioned")
        try cache.set("kept", for: unversioned)
        #expect(cache.metadata(named: unversioned.name) != nil)
        #expect(cache.memory.peek(unversioned.name) != nil)
        // The uses written off this thread hold the store's writer a moment: a check meeting
        // them gives up its turn (a hit never waits), which is not what this test is about.
        cache.waitForBackgroundWork()
        other.removeValue(for: unversioned)
        other.waitForBackgroundWork()
        #expect(cache.metadata(named: unversioned.name) == nil)
    }

    @Test func thisProcesssOwnWritesAndReadsNeverEmptyTheTier() throws {
        try otherProcess().set("first", for: CacheKey<String>("other", schemaVersion: 1))
        let cache = cache()
        for index in 0..<20 { try cache.set("v\(index)", for: CacheKey<String>("k\(index)", schemaVersion: 1)) }
        for index in 0..<20 {
            let entry = cache.entry(for: CacheKey<String>("k\(index)", schemaVersion: 1))
            #expect(entry?.value == "v\(index)")
            #expect(entry?.origin == .memory)
        }
        cache.removeValue(for: CacheKey<String>("k0", schemaVersion: 1))
        cache.waitForBackgroundWork()
        #expect(cache.value(for: CacheKey<String>("k1", schemaVersion: 1)) == "v1")
        #expect(cache.memory.coherenceDrops == 0)
    }

    @Test func withinTheIntervalAHitDoesNotLookAtTheStore() throws {
        let other = otherProcess()
        try other.set("first", for: replaced)
        let cache = cache(checkingEvery: 3_600_000_000_000)
        #expect(cache.value(for: replaced) == "first")
        #expect(cache.value(for: replaced) == "first") // the first hit checked: the next is an hour away
        try other.set("theirs", for: replaced)
        // The staleness window the interval allows (10 ms by default): no check, no drop.
        #expect(cache.value(for: replaced) == "first")
        #expect(cache.memory.coherenceDrops == 0)
    }

    @Test func memoryOnlyCachesAndFoldersWithoutAStoreCheckNothing() {
        var memoryOnly = Cache.Configuration(name: "coherence")
        memoryOnly.location = .memoryOnly
        #expect(Cache(memoryOnly).memory.coherenceInterval == nil)
        // A file-system double turns the store off: files only, nothing to compare.
        var files = Cache.Configuration(name: "coherence")
        files.location = .directory(folder.url)
        files.fileSystem = RecordingFileSystem(root: folder.path)
        #expect(Cache(files).memory.coherenceInterval == nil)
        #expect(cache().memory.coherenceInterval == 0)
    }
}

/// The tier's side of coherence, with the clock and the versions given by hand.
@Suite struct MemoryTierCoherenceTests {
    func record(_ name: String, _ value: String) -> MemoryRecord {
        let metadata = EntryMetadata(
            createdAt: 0, validatedAt: 0, lifespan: .never, isLocked: false, schemaVersion: 1, appVersion: nil,
            size: 1)
        return TypedRecord(name: name, metadata: metadata, value: value, cost: 1)
    }

    @Test func aCheckIsClaimedOnceAnInterval() {
        var coherence = Coherence()
        var claims: [Bool] = []
        for (now, interval) in [(5, 10), (14, 10), (15, 10), (15, 0), (25, 0), (25, 0)] as [(UInt64, UInt64)] {
            claims.append(coherence.claimCheck(at: now, interval: interval))
        }
        // Due at 5 (then at 15), not at 14; at 15 again not (already claimed); interval 0: every time from then.
        #expect(claims == [true, false, true, false, true, true])
    }

    @Test func anotherVersionEmptiesTheTierAndTheSameOneDoesNot() {
        let tier = MemoryTier(limit: 10, coherenceInterval: 0)
        let first = StoreVersion.version(device: 1, inode: 2, dataVersion: 3)
        _ = tier.adoptBaseline(first)
        tier.insert(record("a", "1"))
        #expect(tier.adopt(first) == 0)
        #expect(tier.count == 1)
        #expect(tier.adopt(.version(device: 1, inode: 2, dataVersion: 4)) == 1)
        #expect(tier.count == 0)
        tier.insert(record("a", "1"))
        // A store made anew (another inode) counts from scratch: a change whatever its version.
        #expect(tier.adopt(.version(device: 1, inode: 9, dataVersion: 4)) == 1)
        tier.insert(record("a", "1"))
        // A store that cannot say (its folder removed) drops nothing, and is never current.
        #expect(tier.adopt(.unknown) == 0)
        #expect(tier.count == 1)
        #expect(!tier.isCurrent(.unknown))
        #expect(tier.coherenceDrops == 2)
    }

    @Test func theFirstStoreSeenIsABaselineNotAChange() {
        let tier = MemoryTier(limit: 10, coherenceInterval: 0)
        tier.insert(record("a", "1")) // read before the folder had a store
        #expect(tier.adopt(.none) == 0)
        #expect(tier.adopt(.version(device: 1, inode: 2, dataVersion: 3)) == 0)
        #expect(tier.count == 1)
        #expect(tier.adopt(.version(device: 1, inode: 2, dataVersion: 4)) == 1)
    }

    @Test func aValueFoundBeforeTheTierWasEmptiedIsNotStored() {
        let tier = MemoryTier(limit: 10, coherenceInterval: 0)
        let ticket = tier.adoptBaseline(.version(device: 1, inode: 2, dataVersion: 3))
        tier.insert(record("a", "old"), ticket: ticket)
        // A read started (ticket taken), another process wrote, a check emptied the tier...
        let started = tier.coherenceTicket()
        #expect(tier.adopt(.version(device: 1, inode: 2, dataVersion: 4)) == 1)
        // ...then the read finished with what it found before the other write: not kept.
        tier.insert(record("a", "old"), ticket: started)
        #expect(tier.peek("a") == nil)
        tier.insert(record("a", "new"), ticket: tier.coherenceTicket())
        #expect(tier.peek("a") != nil)
    }
}
