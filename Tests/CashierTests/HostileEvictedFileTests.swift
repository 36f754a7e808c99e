import CashierPlatform
import CashierSQLite
import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile review of commit 2088311's file side: a sweep's eviction choices now carry no file
/// name (`DiskTier.Choice.fileName` nil), so an evicted large entry's file must go with its row by
/// the key's name (`StoreIndex.removeRows`), and the folder listing that decides which names to
/// unlink now answers nil at once when it found no entry file.
@Suite(.serialized) struct HostileEvictedFileTests {
    let folder = TemporaryFolder()

    static func large(_ seed: Int) -> Data { Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed) }) }

    /// Every entry file has a row saying so and every such row its file: nothing evicted is left
    /// behind, nothing kept lost its file.
    func expectFilesMatchRows(_ keys: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        for key in keys {
            let row = try folder.row(for: key)
            let hasFile = folder.hasEntryFile(for: key)
            #expect(
                hasFile == (row?.location == .file), "\(key): file \(hasFile), row \(String(describing: row))",
                sourceLocation: sourceLocation)
        }
    }

    /// Large entries, rows and (with `shadowed`) rows written over large entries whose old files
    /// a kill left behind, then a garbage collection under a limit that evicts most of them in
    /// one sweep (past `DiskTier.unlinksWithoutListing`, so the folder is listed), with expired
    /// entries removed in the transaction before the evictions. No evicted key's file stays, in
    /// either order, and a fresh process reads none of them back.
    @Test(arguments: [EvictionPolicy.frequencyAware, .leastRecentlyUsed], [0, 3, 40])
    func aSweepRemovesEveryEvictedLargeEntrysFileWithItsRow(policy: EvictionPolicy, large: Int) throws {
        let clock = TestClock()
        let events = EventLog()
        var keys: [String] = []
        var configuration = makeConfiguration(folder, clock: clock, events: events)
        configuration.memoryCountLimit = 0
        configuration.evictionPolicy = policy
        do {
            let cache = Cache(configuration)
            for index in 0..<large {
                clock.advance(by: 1)
                try cache.set(Self.large(index), for: CacheKey<Data>("large-\(index)"))
                keys.append("large-\(index)")
            }
            for index in 0..<200 {
                clock.advance(by: 1)
                try cache.set(Data(repeating: UInt8(index), count: 300), for: CacheKey<Data>("row-\(index)"))
                keys.append("row-\(index)")
            }
            for index in 0..<10 {
                try cache.set(Self.large(index), for: CacheKey<Data>("expiring-\(index)"), lifespan: .seconds(5))
                keys.append("expiring-\(index)")
            }
            // Rows over large entries whose files were left behind (a kill between the write's two transactions).
            for index in 0..<(large / 2) {
                let key = "shadowed-\(index)"
                let path = folder.path + "/" + DiskTier.fileName(for: key)
                clock.advance(by: 1)
                try cache.set(Self.large(index), for: CacheKey<Data>(key))
                cache.waitForBackgroundWork()
                #expect(link(path, path + "-side") == 0)
                try cache.set(Data("small".utf8), for: CacheKey<Data>(key))
                cache.waitForBackgroundWork()
                #expect(rename(path + "-side", path) == 0)
                keys.append(key)
            }
            cache.waitForBackgroundWork()
        }
        clock.advance(by: 60)
        configuration.diskSizeLimit = TemporaryFolder.emptyStoreBytes + 10_000
        let limited = Cache(configuration)
        limited.collectGarbage()
        limited.waitForBackgroundWork()
        let evicted = events.all.compactMap { event -> String? in
            if case .evicted(let key, _) = event { key } else { nil }
        }
        #expect(evicted.count > DiskTier.unlinksWithoutListing, "one sweep did not evict enough to list the folder")
        try expectFilesMatchRows(keys)
        for key in keys where try key.hasPrefix("shadowed-") && folder.row(for: key) == nil {
            #expect(!folder.hasEntryFile(for: key), "\(key): evicted, its left-behind file stays")
        }
        #expect(folder.entryFiles.count <= 1, "entry files left: \(folder.entryFiles.count)")
        // A fresh process reads back nothing the sweep removed.
        var fresh = makeConfiguration(folder, clock: clock)
        fresh.memoryCountLimit = 0
        let reader = Cache(fresh)
        for key in evicted { #expect(reader.value(for: CacheKey<Data>(key)) == nil, "\(key) read back") }
        reader.waitForBackgroundWork()
        for key in evicted { #expect(reader.value(for: CacheKey<Data>(key)) == nil, "\(key) read back after import") }
    }
}
