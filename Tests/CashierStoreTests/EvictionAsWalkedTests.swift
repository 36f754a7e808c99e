import CashierSQLite
import CashierStore
import CashierStoreSupport
import CashierTestSupport
import Foundation
import Testing

/// A sweep's removal of the rows its walk chose (`EntryStore.remove(unchanged:evictedIn:filePath:asWalked:)`):
/// by the walk's row ids when nothing was committed since the walk began, in any process;
/// otherwise each row is checked as before, and a row written or used since stays.
@Suite struct EvictionAsWalkedTests {
    let folder = TemporaryFolder()
    let store: EntryStore

    init() throws {
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        store = try EntryStore(folder: folder.path)
    }

    /// Ten rows `k0`…`k9`, `k0` least recently used; then the walk's first `count` victims.
    private func walkOldest(_ count: Int) throws -> (victims: [StoreEntry], rowIDs: [Int64], walked: StoreSnapshot) {
        try store.fillTen("k")
        return try store.walkOldest(count)
    }

    @Test func withNothingCommittedSinceTheWalkTheRowsGoByItsIDs() throws {
        let (victims, rowIDs, walked) = try walkOldest(3)
        // The ids of `k7`…`k9`: trusted as the walk's, they are what goes.
        let otherIDs = rowIDs.map { $0 + 7 }
        let removed = try store.remove(unchanged: victims, evictedIn: .leastRecentlyUsed, asWalked: (otherIDs, walked))
        #expect(removed.removed.map(\.key) == ["k0", "k1", "k2"])
        #expect(try store.keys().sorted() == ["k0", "k1", "k2", "k3", "k4", "k5", "k6"])
    }

    @Test func aWriteOfThisProcessSinceTheWalkHasEveryRowChecked() throws {
        let (victims, rowIDs, walked) = try walkOldest(3)
        try store.upsert(StoreEntry(key: "k1", location: .row, size: 20, lastUse: 50), record: [2, 2])
        let removed = try store.remove(unchanged: victims, evictedIn: .leastRecentlyUsed, asWalked: (rowIDs, walked))
        #expect(removed.removed.map(\.key) == ["k0", "k2"])
        #expect(try store.entry(for: "k1")?.size == 20)
    }

    @Test func aUseSinceTheWalkHasEveryRowChecked() throws {
        let (victims, rowIDs, walked) = try walkOldest(3)
        try store.recordUses(["k2"], at: 60)
        let removed = try store.remove(unchanged: victims, evictedIn: .leastRecentlyUsed, asWalked: (rowIDs, walked))
        #expect(removed.removed.map(\.key) == ["k0", "k1"])
        #expect(try store.entry(for: "k2")?.lastUse == 60)
    }

    @Test func aWriteOfAnotherProcessSinceTheWalkHasEveryRowChecked() throws {
        let (victims, rowIDs, walked) = try walkOldest(3)
        let child = Process()
        child.executableURL = try EntryStoreKillTests.writer()
        child.arguments = ["write", folder.path, "k0", "30", "70"]
        try child.run()
        child.waitUntilExit()
        try #require(child.terminationStatus == 0)
        let removed = try store.remove(unchanged: victims, evictedIn: .leastRecentlyUsed, asWalked: (rowIDs, walked))
        #expect(removed.removed.map(\.key) == ["k1", "k2"])
        #expect(try store.entry(for: "k0")?.size == 30)
    }

    @Test func aWalkedRowThatIsGoneHasEveryRowChecked() throws {
        let (victims, rowIDs, walked) = try walkOldest(3)
        // Not expected with the store unchanged: the deletes by id are undone, then each row checked.
        let removed = try store.remove(
            unchanged: victims, evictedIn: .leastRecentlyUsed, asWalked: ([rowIDs[0], rowIDs[1], Int64.max], walked))
        #expect(removed.removed.map(\.key).sorted() == ["k0", "k1", "k2"])
        #expect(try store.keys().sorted() == (3..<10).map { "k\($0)" })
    }

    @Test func aLargeEntryAmongTheWalkedGoesWithItsFile() throws {
        let file = folder.path + "/image-file"
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: file))
        try store.upsert(StoreEntry(key: "image", location: .file, size: 3, lastUse: 0))
        var (victims, rowIDs): ([StoreEntry], [Int64]) = ([], [])
        for index in 1..<4 {
            try store.upsert(StoreEntry(key: "k\(index)", location: .row, size: 10, lastUse: Int64(index)), record: [1])
        }
        let walked = try #require(
            try store.walkEvictionOrder(.leastRecentlyUsed) { entry, rowID in
                victims.append(entry)
                rowIDs.append(rowID)
                return victims.count < 3
            })
        #expect(victims.map(\.key) == ["image", "k1", "k2"])
        let removed = try store.remove(
            unchanged: victims, evictedIn: .leastRecentlyUsed, filePath: { $0 == "image" ? file : nil },
            asWalked: (rowIDs, walked))
        #expect(Set(removed.removed.map(\.key)) == ["image", "k1", "k2"])
        #expect(!FileManager.default.fileExists(atPath: file))
        #expect(try store.keys() == ["k3"])
    }

    /// Random stores swept by the walk's ids and by each row's check end alike: the same rows
    /// left, the same ghost (keys and their order), the same frequencies.
    @Test(arguments: 0..<12)
    func aSweepByIDsLeavesWhatASweepCheckingEachRowLeaves(seed: Int) throws {
        let other = TemporaryFolder()
        try FileManager.default.createDirectory(at: other.url, withIntermediateDirectories: true)
        let checked = try EntryStore(folder: other.path)
        for store in [store, checked] {
            var random = SplitMix64(seed: UInt64(seed))
            for index in 0..<Int.random(in: 20...200, using: &random) {
                try store.upsert(
                    StoreEntry(
                        key: "k\(index)", location: .row, size: Int.random(in: 1...50, using: &random),
                        lastUse: Int64.random(in: 0...40, using: &random),
                        isLocked: Int.random(in: 0..<12, using: &random) == 0), record: [1])
            }
            let used = (0..<200).filter { _ in Int.random(in: 0..<3, using: &random) == 0 }.map { "k\($0)" }
            try store.recordUses(used, at: 41)
        }
        for round in 0..<3 {
            let target = try store.totalSize() * (3 - round) / 5
            try store.evict(order: .frequencyAware, downTo: target)
            var victims: [StoreEntry] = []
            var left = try checked.totalSize()
            try checked.forEachEvictionCandidate(order: .frequencyAware) { entry in
                victims.append(entry)
                left -= entry.size
                return left > target
            }
            try checked.remove(unchanged: victims, evictedIn: .frequencyAware)
            for index in 0..<5 {
                for store in [store, checked] {
                    try store.upsert(
                        StoreEntry(key: "new-\(round)-\(index)", location: .row, size: 5, lastUse: 42), record: [1])
                }
            }
        }
        #expect(try store.keys().sorted() == checked.keys().sorted())
        let candidates = try store.evictionCandidates(order: .frequencyAware, limit: -1)
        #expect(try candidates == checked.evictionCandidates(order: .frequencyAware, limit: -1))
        let ghost = "SELECT key FROM ghost ORDER BY id"
        let swept = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadOnly).texts(ghost)
        #expect(!swept.isEmpty)
        #expect(swept == (try SQLiteConnection(path: checked.path, flags: SQLiteCode.openReadOnly).texts(ghost)))
    }
}

extension EntryStore {
    /// Ten rows `prefix0`…`prefix9` of 10 bytes, `prefix0` least recently used.
    func fillTen(_ prefix: String) throws {
        for index in 0..<10 {
            try upsert(
                StoreEntry(key: "\(prefix)\(index)", location: .row, size: 10, lastUse: Int64(index)), record: [1])
        }
    }

    /// The least-recently-used walk's first `count` victims, with their row ids and its snapshot.
    func walkOldest(_ count: Int) throws -> (victims: [StoreEntry], rowIDs: [Int64], walked: StoreSnapshot) {
        var (victims, rowIDs): ([StoreEntry], [Int64]) = ([], [])
        let walked = try walkEvictionOrder(.leastRecentlyUsed) { entry, rowID in
            victims.append(entry)
            rowIDs.append(rowID)
            return victims.count < count
        }
        return (victims, rowIDs, try #require(walked))
    }
}
