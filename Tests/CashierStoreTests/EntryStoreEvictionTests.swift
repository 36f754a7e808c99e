import CashierSQLite
import CashierStore
import CashierStoreSupport
import CashierTestSupport
import Foundation
import Testing

/// The store's eviction orders (issue 26): the frequency-aware one keeps what is read again
/// through a scan, never offers a locked entry, and keeps its state (frequencies, the ghost of
/// evicted keys) in the store, where a second process and the next launch find it.
@Suite struct EntryStoreEvictionTests {
    let folder = TemporaryFolder()
    let store: EntryStore

    init() throws {
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        store = try EntryStore(folder: folder.path)
    }

    private func write(_ key: String, size: Int = 10, at time: Int64, locked: Bool = false) throws {
        try store.upsert(
            StoreEntry(key: key, location: .row, size: size, lastUse: time, isLocked: locked), record: [1])
    }

    /// Writes a scan of `count` keys read once, sweeping to 90 bytes whenever the total passes 100.
    private func scan(_ count: Int, from time: Int64, order: StoreEvictionOrder) throws {
        for index in 0..<count {
            try write("scan-\(index)", size: 1, at: time + Int64(index))
            if try store.totalSize() > 100 { try store.evict(order: order, downTo: 90) }
        }
    }

    @Test func aOneTimeScanDoesNotEvictAFrequentlyReadEntry() throws {
        try write("avatar", size: 1, at: 1)
        for time in 2..<6 { try store.recordUses(["avatar"], at: Int64(time)) }
        try scan(1000, from: 10, order: .frequencyAware)
        #expect(try store.entry(for: "avatar")?.frequency == 4)
        #expect(try store.totalSize() <= 100)
    }

    @Test func aOneTimeScanEvictsAFrequentlyReadEntryUnderLeastRecentlyUsed() throws {
        try write("avatar", size: 1, at: 1)
        for time in 2..<6 { try store.recordUses(["avatar"], at: Int64(time)) }
        try scan(1000, from: 10, order: .leastRecentlyUsed)
        #expect(try store.entry(for: "avatar") == nil)
    }

    @Test(arguments: StoreEvictionOrder.allCases)
    func aLockedEntryIsNeverACandidate(_ order: StoreEvictionOrder) throws {
        try write("locked", at: 1, locked: true)
        for index in 0..<20 { try write("k\(index)", at: Int64(10 + index)) }
        try store.recordUses(["k3", "k4"], at: 50)
        let candidates = try store.evictionCandidates(order: order, limit: -1)
        #expect(candidates.count == 20)
        #expect(!candidates.contains { $0.key == "locked" })
        #expect(try store.evict(order: order, downTo: 0).count == 20)
        #expect(try store.keys() == ["locked"])
    }

    /// Rows go into the table's pages in id order, a new row last: a sweep that evicts all over
    /// the table (an order that keeps the rows read again, wherever they are) would leave
    /// pages partly empty for good, and a size limit that counts pages would hold fewer rows
    /// sweep after sweep. Sweeps move the oldest survivors to the end instead, so the oldest
    /// pages empty whole and the file keeps the size of its rows.
    @Test func sweepsThatEvictAllOverTheTableLeaveItsPagesFull() throws {
        let record = [UInt8](repeating: 7, count: 1000) // three rows a 4 KiB page
        func write(_ index: Int, at time: Int64) throws {
            try store.upsert(
                StoreEntry(key: "k\(index)", location: .row, size: record.count, lastUse: time), record: record)
        }
        func settledBytes() throws -> Int {
            try store.checkpoint()
            try store.reclaimSpace()
            return store.storeFileBytes()
        }
        for index in 0..<300 { try write(index, at: 1) }
        let full = try settledBytes()
        var next = 300
        for round in 0..<20 {
            let time = Int64(10 + round * 10)
            // Every third row is read again: the sweep (least recently used first) evicts the two
            // others of each page.
            try store.recordUses(try store.keys().enumerated().filter { $0.offset % 3 == 0 }.map(\.element), at: time)
            try store.evict(order: .leastRecentlyUsed, downTo: 200 * record.count)
            for _ in 0..<100 {
                try write(next, at: time + 1)
                next += 1
            }
        }
        #expect(try store.count() == 300)
        let settled = try settledBytes()
        // 1.11x with the moves, 1.23x without (SQLite 3.40: the indexes' pages fill less, too).
        #expect(settled <= full * 23 / 20, "\(settled) bytes, against \(full) for 300 rows written in a row")
    }

    @Test func leastRecentlyUsedIsTheIndexOrder() throws {
        for index in 0..<50 { try write("k\(index)", size: 10 + index % 3, at: Int64(index / 4)) }
        try store.recordUses(["k0", "k9"], at: 100)
        #expect(
            try store.evictionCandidates(order: .leastRecentlyUsed, limit: 30) == store.evictionCandidates(limit: 30))
    }

    @Test func newEntriesGoFirstExceptTheNewestShareThenReusedByLastUse() throws {
        // 20 entries of 10 bytes: the newest share is 10 bytes, the newest entry alone.
        for index in 0..<20 { try write(String(format: "k%02d", index), at: Int64(index + 1)) }
        try store.recordUses(["k03"], at: 30)
        let order = try store.evictionCandidates(order: .frequencyAware, limit: -1).map(\.key)
        let new = (0..<19).filter { $0 != 3 }.map { String(format: "k%02d", $0) }
        #expect(order == new + ["k03", "k19"])
        #expect(try store.evictionCandidates(order: .frequencyAware, limit: 3).map(\.key) == ["k00", "k01", "k02"])
    }

    @Test func aKeyEvictedNewComesBackReused() throws {
        for index in 0..<20 { try write("k\(index)", at: Int64(index + 1)) }
        #expect(try store.evict(order: .frequencyAware, downTo: 150).map(\.key) == ["k0", "k1", "k2", "k3", "k4"])
        try write("k0", at: 40)
        try write("fresh", at: 40)
        let order = try store.evictionCandidates(order: .frequencyAware, limit: -1).map(\.key)
        #expect(order.last == "k0")
        #expect(order.firstIndex(of: "fresh")! < order.firstIndex(of: "k0")!)
    }

    @Test func aRemovalThatIsNotAnEvictionIsNotRemembered() throws {
        for index in 0..<20 { try write("k\(index)", at: Int64(index + 1)) }
        try store.remove("k0")
        let k1 = try #require(try store.entry(for: "k1"))
        #expect(try store.remove(unchanged: [k1], evictedIn: .frequencyAware).removed.map(\.key) == ["k1"])
        try write("k0", at: 40)
        try write("k1", at: 40)
        let order = try store.evictionCandidates(order: .frequencyAware, limit: -1).map(\.key)
        // k1 (remembered) is reused, after the new entries but the newest; k0 is new again, the
        // newest (reused, it would come before k1: same last use, older row).
        #expect(order.suffix(2) == ["k1", "k0"])
    }

    @Test func aPlannedSweepLeavesWhatASweepInOneCallLeaves() throws {
        let other = TemporaryFolder()
        try FileManager.default.createDirectory(at: other.url, withIntermediateDirectories: true)
        let planned = try EntryStore(folder: other.path)
        for target in [store, planned] {
            for index in 0..<40 {
                try target.upsert(
                    StoreEntry(key: "k\(index)", location: .row, size: 5 + index % 4, lastUse: Int64(index)),
                    record: [1])
            }
            try target.recordUses(["k2", "k7", "k30"], at: 50)
        }
        for round in 0..<3 {
            let bytes = try store.totalSize() - 40
            let swept = try store.evict(order: .frequencyAware, downTo: bytes)
            // Plan from the candidates (as the cache does, outside its key barrier), then apply.
            var left = try planned.totalSize()
            let chosen = try planned.evictionCandidates(order: .frequencyAware, limit: -1).prefix { entry in
                defer { left -= entry.size }
                return left > bytes
            }
            let removed = try planned.remove(unchanged: Array(chosen), evictedIn: .frequencyAware).removed
            #expect(removed == swept)
            try planned.compact(afterRemoving: removed.count) // as the disk tier does after a sweep
            for target in [store, planned] {
                try target.upsert(StoreEntry(key: "k\(round)", location: .row, size: 6, lastUse: 60), record: [1])
            }
            #expect(
                try planned.evictionCandidates(order: .frequencyAware, limit: -1)
                    == store.evictionCandidates(order: .frequencyAware, limit: -1))
        }
    }

    @Test func theGhostKeepsHalfAsManyKeysAsEntriesAndAKeyLeavingPromotesItsNewEntry() throws {
        for index in 0..<20 { try write("k\(index)", at: Int64(index + 1)) }
        // 5 evicted, 15 left: room for 7 ghosts.
        try store.evict(order: .frequencyAware, downTo: 150)
        try write("k0", at: 30) // written again while remembered: reused in the order
        // 10 more evicted (k5 to k14), 5 left plus k0: the oldest ghosts go, k0's among them.
        try store.evict(order: .frequencyAware, downTo: 60)
        #expect(try store.entry(for: "k0")?.frequency == 1)
        #expect(try store.keys().contains("k0"))
    }

    /// A sweep that evicts more new entries than the ghost keeps remembers the last of them in key
    /// order (it numbers them so), newest first: the ghost holds what putting them all in and
    /// trimming the oldest left, whether the trim takes the older keys whole or some of them.
    @Test func aLargeEvictionRemembersTheNewestOfItsKeysAsTrimmingThemWould() throws {
        let raw = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadWrite)
        func ghost() throws -> String? {
            try raw.text("SELECT group_concat(key || ':' || id, ' ') FROM (SELECT key, id FROM ghost ORDER BY id)")
        }
        for index in 0..<20 { try write(String(format: "k%02d", index), at: Int64(index + 1)) }
        // 12 evicted (k00 to k11, numbered 1 to 12), 8 left: room for 4, the last 4.
        #expect(try store.evict(order: .frequencyAware, downTo: 80).count == 12)
        #expect(try ghost() == "k08:9 k09:10 k10:11 k11:12")
        // 2 more (k12, k13), 6 left: room for 3, of the 4 held and the 2 new the 3 newest.
        #expect(try store.evict(order: .frequencyAware, downTo: 60).count == 2)
        #expect(try ghost() == "k11:12 k12:13 k13:14")
        // Written again while remembered: reused, and not remembered twice when evicted.
        try write("k12", at: 40)
        #expect(try store.evict(order: .frequencyAware, downTo: 0).count == 7)
        #expect(try store.count() == 0)
        #expect(try raw.integer("SELECT count(*) FROM ghost") == 0)
    }

    /// The same with a key among the last that the ghost already holds (written again while
    /// remembered, never used, evicted again): it keeps no place, the key before it takes one,
    /// and the trim forgets its old place with the other older keys.
    @Test func aLargeEvictionRemembersAsManyNewKeysWhenTheGhostHeldOneOfThem() throws {
        let raw = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadWrite)
        try write("zz", at: 1)
        try write("y1", at: 2)
        try write("y2", at: 3)
        #expect(try store.evict(order: .frequencyAware, downTo: 20).map(\.key) == ["zz"])
        try write("zz", at: 10)
        let old = (0..<300).map { String(format: "o%03d", $0) }
        for (index, key) in old.enumerated() { try write(key, at: Int64(20 + index)) }
        // The newest 150 bytes are new entries of one byte: the newest share, never evicted here.
        for index in 0..<150 { try write(String(format: "n%03d", index), size: 1, at: Int64(400 + index)) }
        let evicted = try store.evict(order: .frequencyAware, downTo: 150)
        #expect(evicted.count == 303)
        #expect(evicted.last?.key == "zz")
        // 150 left: room for 75, the last 75 of the 302 keys new to the ghost.
        let remembered = Array((old + ["y1", "y2"]).sorted().suffix(75))
        let ghost = try raw.text("SELECT group_concat(key, ' ') FROM (SELECT key FROM ghost ORDER BY key)")
        #expect(ghost == remembered.joined(separator: " "))
    }

    @Test func theOrderSurvivesARelaunchAndIsSharedWithAnotherProcess() throws {
        for index in 0..<20 { try write(String(format: "k%02d", index), at: Int64(index + 1)) }
        try store.recordUses(["k03"], at: 30)
        // A second process opens the store afresh: it finds the uses this one recorded.
        let mine = try store.evictionCandidates(order: .frequencyAware, limit: -1).map(\.key)
        #expect(try Self.child(folder.path, "candidates") == mine)
        // It sweeps; this process, its store still open, finds what that sweep remembered.
        #expect(try Self.child(folder.path, "evict", "150") == ["k00", "k01", "k02", "k04", "k05"])
        #expect(try store.count() == 15)
        try write("k00", at: 40)
        try write("fresh", at: 40)
        let order = try store.evictionCandidates(order: .frequencyAware, limit: -1).map(\.key)
        #expect(order.suffix(2) == ["k03", "k00"])
        #expect(order.contains("fresh"))
        // A third launch reads the same order.
        #expect(try Self.child(folder.path, "candidates") == order)
    }

    @Test func aVersionTwoStoreKeepsItsRowsAndGainsTheGhost() throws {
        for index in 0..<20 { try write("k\(index)", at: Int64(index + 1)) }
        let raw = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadWrite)
        try raw.execute("DROP TABLE ghost")
        try raw.execute("DROP TABLE shape")
        try raw.execute("DROP INDEX entry_unshaped")
        try raw.execute("CREATE INDEX entry_files ON entry(location, size) WHERE location = 1")
        try raw.execute("PRAGMA user_version = 2")
        // Read-only, as `cashier-tool` opens it: the order works, the file is unchanged.
        var readOnly = EntryStore.Options()
        readOnly.readOnly = true
        let reader = try EntryStore(folder: folder.path, options: readOnly)
        #expect(try reader.evictionCandidates(order: .frequencyAware, limit: 2).map(\.key) == ["k0", "k1"])
        #expect(try raw.integer("PRAGMA user_version") == 2)
        let reopened = try EntryStore(folder: folder.path)
        #expect(reopened.setAsideAtOpen == nil)
        #expect(try raw.integer("PRAGMA user_version") == 5)
        #expect(try reopened.count() == 20)
        #expect(try reopened.evict(order: .frequencyAware, downTo: 150).count == 5)
        try reopened.upsert(StoreEntry(key: "k0", location: .row, size: 10, lastUse: 40), record: [1])
        #expect(try reopened.evictionCandidates(order: .frequencyAware, limit: -1).last?.key == "k0")
    }

    /// The frequency-aware order as one sorted query: the definition the three index walks of
    /// `EntryStore` must give back exactly (it read every row and sorted them).
    static let sortedFrequencyAwareOrder = """
        SELECT key FROM entry WHERE locked = 0 ORDER BY CASE \
        WHEN frequency > 0 THEN 1 \
        WHEN EXISTS (SELECT 1 FROM ghost WHERE ghost.key = entry.key) THEN 1 \
        WHEN (last_use, size, id) <= (SELECT last_use, size, id FROM (SELECT last_use, size, id, \
        sum(size) OVER (ORDER BY last_use DESC, size DESC, id DESC) AS newer FROM entry AS fresh \
        WHERE fresh.locked = 0 AND fresh.frequency = 0 \
        AND NOT EXISTS (SELECT 1 FROM ghost WHERE ghost.key = fresh.key)) \
        WHERE newer > (SELECT total(size) FROM entry) * 0.05 LIMIT 1) THEN 0 \
        ELSE 2 END, last_use, size, id
        """

    /// Random stores (ties in last use, sizes, locked entries, reused entries, keys in the ghost,
    /// new entries that fit the newest share or not): the walks give the sorted query's order.
    @Test(arguments: 0..<40)
    func theIndexWalksGiveTheSortedOrder(seed: Int) throws {
        var random = SplitMix64(seed: UInt64(seed))
        let count = Int.random(in: 1...120, using: &random)
        for index in 0..<count {
            try write(
                "k\(index)", size: Int.random(in: 1...(seed % 3 == 0 ? 400 : 20), using: &random),
                at: Int64.random(in: 0...30, using: &random), locked: Int.random(in: 0..<10, using: &random) == 0)
        }
        // Some evicted (into the ghost) and written again, some used.
        let evicted = try store.evict(order: .frequencyAware, downTo: try store.totalSize() * 3 / 4)
        for entry in evicted where Bool.random(using: &random) { try write(entry.key, at: 31) }
        let used = (0..<count).filter { _ in Int.random(in: 0..<4, using: &random) == 0 }.map { "k\($0)" }
        try store.recordUses(used, at: 32)
        let raw = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadOnly)
        let sorted = try raw.texts(Self.sortedFrequencyAwareOrder)
        #expect(try store.evictionCandidates(order: .frequencyAware, limit: -1).map(\.key) == sorted)
        var walked: [String] = []
        try store.forEachEvictionCandidate(order: .frequencyAware) { entry in
            walked.append(entry.key)
            return walked.count < 7
        }
        #expect(walked == Array(sorted.prefix(7)))
    }

    /// Runs `CashierStoreChild eviction FOLDER ARGUMENTS…` and returns the keys it printed.
    static func child(_ folder: String, _ arguments: String...) throws -> [String] {
        let child = Process()
        child.executableURL = try EntryStoreKillTests.writer()
        child.arguments = ["eviction", folder] + arguments
        let output = Pipe()
        child.standardOutput = output
        try child.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        child.waitUntilExit()
        #expect(child.terminationStatus == 0)
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }
}
