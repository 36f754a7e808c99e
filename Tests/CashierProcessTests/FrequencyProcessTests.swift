import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// The disk tier's frequency-aware order keeps its state in the folder's store (each entry's
/// uses, the ghost of keys evicted unused): what one launch read often, the next launch's
/// sweeps, in another process, still know.
@Suite("Eviction order across processes")
struct FrequencyProcessTests {
    /// The child's clock; the parent's runs a day later.
    static let start = 1_800_000_000.0

    /// Runs one launch (another process): "hot" read five times minutes apart, then 40 keys
    /// written once and never read. Returns the size of one entry's file.
    func launchThatReadsHotOften(_ folder: TemporaryFolder) throws -> Int {
        let child = try Child(["frequency", folder.path, "\(Int(Self.start))", "5", "40"])
        #expect(child.readLine() == "hot 5")
        #expect(child.wait() == 0)
        #expect(folder.entryFiles.count == 41)
        return folder.entryBytes / 41
    }

    /// The next launch: a cache whose limit holds about ten entries, with no memory tier,
    /// writes five more entries (each write past the limit schedules a sweep, which it lets
    /// finish before the next, as an app's fetches leave time for) and returns what was evicted.
    func nextLaunch(_ folder: TemporaryFolder, entrySize: Int, policy: EvictionPolicy) throws -> (
        evicted: [String], cache: Cache
    ) {
        var configuration = folder.configuration(sizeLimit: 12 * entrySize)
        configuration.memoryCountLimit = 0
        configuration.evictionPolicy = policy
        configuration.now = { Date(timeIntervalSince1970: Self.start + 86_400) }
        let evicted = Locked<[String]>([])
        configuration.onEvent = { event in
            if case .evicted(let key, _) = event { evicted.withLock { $0.append(key) } }
        }
        let cache = Cache(configuration)
        for index in 0..<5 {
            try cache.set(Data(repeating: 1, count: 16 * 1024), for: CacheKey<Data>("next-\(index)"))
            cache.waitForBackgroundWork()
        }
        return (evicted.withLock { $0 }, cache)
    }

    @Test("What one launch read often outlives another process's eviction of entries read once")
    func frequentReadsOfOneLaunchOutliveTheNextLaunchsSweeps() throws {
        let folder = TemporaryFolder()
        let entrySize = try launchThatReadsHotOften(folder)
        let (evicted, cache) = try nextLaunch(folder, entrySize: entrySize, policy: .frequencyAware)
        #expect(!evicted.contains("hot"))
        #expect(cache.value(for: CacheKey<Data>("hot")) == Data(repeating: 7, count: 16 * 1024))
        // Room was made from the entries read once, oldest first.
        #expect(evicted.count >= 30)
        #expect(evicted.allSatisfy { $0.hasPrefix("once-") || $0.hasPrefix("next-") })
        #expect(Array(evicted.prefix(10)) == (0..<10).map { "once-\($0)" })
        #expect(cache.count <= 12)
    }

    @Test("Under least recently used the same launches evict it first")
    func leastRecentlyUsedEvictsTheHotEntryFirst() throws {
        // What the test above guards against: by recency alone, "hot" (read before the 40
        // writes) is the oldest entry.
        let folder = TemporaryFolder()
        let entrySize = try launchThatReadsHotOften(folder)
        let (evicted, cache) = try nextLaunch(folder, entrySize: entrySize, policy: .leastRecentlyUsed)
        #expect(evicted.first == "hot")
        #expect(cache.value(for: CacheKey<Data>("hot")) == nil)
    }
}
