import CashierEntryFormat
import CashierSQLite
import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile review of store schema 5 (`entry_unshaped`, keys listed from the key index) and of
/// the cheaper cold read (file names built with loops, one key lock of a stripe's array).
@Suite struct HostileSchemaFiveTests {
    let folder = TemporaryFolder()

    // MARK: File names

    /// `DiskTier.fileName(for:)` as commit 3471613 wrote it (an array literal of the two words,
    /// `enumerated()` over the suffix): the names every folder written before holds.
    static func earlierFileName(for key: String) -> String {
        let key = DiskTier.canonicalSpelling(of: key)
        let high = XXHash64.hash(key)
        let low = XXHash64.hash(key, seed: 0x9E37_79B9_7F4A_7C15)
        return String(unsafeUninitializedCapacity: 38) { buffer in
            let digits: StaticString = "0123456789abcdef"
            digits.withUTF8Buffer { digits in
                for (word, start) in [(high, 0), (low, 16)] {
                    for i in 0..<16 { buffer[start + i] = digits[Int((word >> UInt64(60 - 4 * i)) & 0xF)] }
                }
            }
            for (i, byte) in ".cache".utf8.enumerated() { buffer[32 + i] = byte }
            return 38
        }
    }

    /// A random key: any scalar (combining marks, NUL, the edges of the planes, lone-looking
    /// halves of what would be surrogates as their scalars' neighbours), of any length up to 600.
    static func randomKey(_ random: inout SplitMix64) -> String {
        let pools: [ClosedRange<UInt32>] = [
            0x00...0x7F, 0x80...0x7FF, 0x300...0x36F, 0x800...0xD7FF, 0xE000...0xFFFF, 0x1_0000...0x10_FFFF,
        ]
        var scalars = String.UnicodeScalarView()
        for _ in 0..<Int(random.next() % 600) {
            let pool = pools[Int(random.next() % UInt64(pools.count))]
            let value = pool.lowerBound + UInt32(random.next() % UInt64(pool.count))
            if let scalar = Unicode.Scalar(value) { scalars.append(scalar) }
        }
        return String(scalars)
    }

    @Test func fileNamesAreByteForByteThoseOfEarlierBuildsForRandomKeys() {
        var random = SplitMix64(seed: 0x5eed_f11e)
        var keys = ["", "\u{0}", "caf\u{E9}", "cafe\u{301}", "👩‍👩‍👧‍👦", String(repeating: "é", count: 100_000)]
        for _ in 0..<5_000 { keys.append(Self.randomKey(&random)) }
        for key in keys {
            let name = DiskTier.fileName(for: key)
            #expect(Array(name.utf8) == Array(Self.earlierFileName(for: key).utf8), "key \(key.debugDescription)")
            #expect(DiskTier.isEntryFileName(name))
        }
    }

    /// Exact names: those of the 0.1.0 fixtures (`Fixtures/format-v2`: "profile", "blob", "feed",
    /// "pinned 📌/../key"), XXH64's of the empty string, and some that only Unicode normalization
    /// or a long key reaches.
    @Test(arguments: [
        ("profile", "3861c5f61d35793a5f655b457fa7a68b.cache"), ("blob", "000cb8e9a4e80966138b8730868894d2.cache"),
        ("feed", "8389830e1ddcc42f0baff648ad016d9b.cache"),
        ("pinned 📌/../key", "e675e0f349fa5e336a617887e32beedc.cache"),
        ("", "ef46db3751d8e999c4349fc93c010000.cache"), ("caf\u{E9}", "9a40a9b974d85a6af6121dffdddfdf97.cache"),
        ("cafe\u{301}", "9a40a9b974d85a6af6121dffdddfdf97.cache"), ("\u{0}", "e934a84adb052768126bb57a12364aa5.cache"),
        ("👩‍👩‍👧‍👦", "13f529e96340cc83260aafae62e88827.cache"),
    ])
    func fileNamesOfSomeKeysArePinned(_ key: String, _ name: String) {
        #expect(DiskTier.fileName(for: key) == name)
    }

    @Test func aLongKeysFileNameIsPinned() {
        let key = String(repeating: "\u{E9}", count: 100_000)
        #expect(DiskTier.fileName(for: key) == "125bf787aae71d378326f9ba1c0c3ac8.cache")
        #expect(DiskTier.fileName(for: String(repeating: "e\u{301}", count: 100_000)) == DiskTier.fileName(for: key))
    }

    // MARK: Keys listed from the key index

    /// How a row comes to name a shape the store does not hold: its shape's row is gone (a
    /// hand's edit, damage that SQLite reads without complaint), or its record names an id never
    /// given.
    enum MissingShape: String, CaseIterable, Sendable {
        case shapeRowDeleted
        case recordNamesAnUnknownID
    }

    /// A shaped row whose shape is missing reads as damaged (`value(for:)` discards it as
    /// `.corrupt`). Before schema 5, `keys` read its first bytes and left it out. Now, when every
    /// shape the store holds is accepted, the key index alone is listed, so the damaged row is
    /// listed until a read finds it damaged and removes it: accepted, as `keys` already listed a
    /// row whose payload fails its checksum (it reads headers, never checksums).
    @Test(arguments: MissingShape.allCases)
    func keysListARowWhoseShapeIsMissingUntilAReadFindsItDamaged(_ how: MissingShape) throws {
        let text = CacheKey<String>("text")
        let number = CacheKey<Int>("number")
        do {
            let cache = Cache(makeConfiguration(folder))
            try cache.set("a value", for: text)
            try cache.set(7, for: number)
            cache.waitForBackgroundWork()
        }
        let raw = try SQLiteConnection(path: folder.storePath, flags: SQLiteCode.openReadWrite)
        #expect(try raw.integer("SELECT count(*) FROM entry WHERE location = 4") == 2, "both rows are shaped")
        // A shape id below 128 is the record's first byte (LEB128).
        let shape = try #require(
            try raw.integer("SELECT unicode(CAST(substr(record, 1, 1) AS TEXT)) FROM entry WHERE key = 'text'"))
        switch how {
        case .shapeRowDeleted: try raw.execute("DELETE FROM shape WHERE id = \(shape)")
        case .recordNamesAnUnknownID:
            try raw.execute("UPDATE entry SET record = X'7F' || substr(record, 2) WHERE key = 'text'")
        }
        #expect(try raw.integer("SELECT count(*) FROM shape WHERE id = 127") == 0)

        let events = EventLog()
        let fresh = Cache(makeConfiguration(folder, events: events))
        let listed = fresh.keys
        let read = fresh.value(for: text)
        #expect(read == nil, "the row reads as damaged")
        #expect(events.all.contains(.discarded(key: "text", reason: .corrupt)))
        // Accepted: `keys` vouches for a row by its shape's id without reading it (as it lists a
        // row whose payload fails its checksum); the read that finds it damaged removes it.
        #expect(listed == ["number", "text"])
        #expect(fresh.keys == ["number"])
    }

    /// A shape damaged in the file (its header cut short) is refused, so `keys` reads the rows
    /// that name it, finds them damaged and leaves them out; the others are listed.
    @Test func keysDoNotListARowWhoseShapeIsDamaged() throws {
        do {
            let cache = Cache(makeConfiguration(folder))
            try cache.set("a value", for: CacheKey<String>("text"))
            try cache.set(7, for: CacheKey<Int>("number"))
            cache.waitForBackgroundWork()
        }
        let raw = try SQLiteConnection(path: folder.storePath, flags: SQLiteCode.openReadWrite)
        let shape = try #require(
            try raw.integer("SELECT unicode(CAST(substr(record, 1, 1) AS TEXT)) FROM entry WHERE key = 'text'"))
        try raw.execute("UPDATE shape SET header = substr(header, 1, 79) WHERE id = \(shape)")
        let fresh = Cache(makeConfiguration(folder))
        #expect(fresh.keys == ["number"])
        #expect(fresh.value(for: CacheKey<String>("text")) == nil)
        #expect(fresh.value(for: CacheKey<Int>("number")) == 7)
    }

    /// Two app versions share a folder: each lists its own unversioned keys and every versioned
    /// one, rows and large entries alike, never the other's unversioned keys (whose shapes it
    /// refuses: the listing that reads records), and after every entry of the other version is
    /// gone, the same as a store that never held one (the key index alone).
    @Test func keysOfTwoAppVersionsSharingAFolderAreEachTheirOwn() throws {
        let large = Data(repeating: 3, count: 20_000)
        let old = Cache(makeConfiguration(folder, appVersion: "1.0"))
        try old.set("u", for: CacheKey<String>("old-unversioned"))
        try old.set("v", for: CacheKey<String>("old-versioned", schemaVersion: 1))
        try old.set(large, for: CacheKey<Data>("old-large"))
        try old.set(large, for: CacheKey<Data>("old-large-versioned", schemaVersion: 1))
        old.waitForBackgroundWork()
        let new = Cache(makeConfiguration(folder, appVersion: "2.0"))
        try new.set("u", for: CacheKey<String>("new-unversioned"))
        try new.set(large, for: CacheKey<Data>("new-large"))
        new.waitForBackgroundWork()
        let versioned = ["old-large-versioned", "old-versioned"]
        #expect(
            Cache(makeConfiguration(folder, appVersion: "2.0")).keys
                == (["new-large", "new-unversioned"] + versioned).sorted())
        #expect(
            Cache(makeConfiguration(folder, appVersion: "1.0")).keys
                == (["old-large", "old-unversioned"] + versioned).sorted())
        old.removeAll()
        try new.set("u", for: CacheKey<String>("new-unversioned"))
        new.waitForBackgroundWork()
        #expect(Cache(makeConfiguration(folder, appVersion: "2.0")).keys == ["new-unversioned"])
    }

    /// A 0.1.0 folder (files, no store) opened by this build while another process holds the
    /// folder lock, so the import of its files waits: `keys` lists the old files, the rows
    /// written meanwhile (one over an old file's key) and the large entries, each once; the
    /// same after the import.
    @Test func keysWhileAnImportOfOldFilesWaitsListEveryEntryOnce() throws {
        do {
            let old = Cache(makeConfiguration(folder, storage: .filesWithoutStore))
            try old.set("a", for: CacheKey<String>("old-a"))
            try old.set("b", for: CacheKey<String>("old-b"))
            try old.set(Data(repeating: 1, count: 20_000), for: CacheKey<Data>("old-large"))
        }
        #expect(!folder.hasStore)
        let held = open(folder.path + "/" + DiskTier.lockFileName, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        try #require(held >= 0)
        try #require(flock(held, LOCK_EX) == 0)
        let cache = Cache(makeConfiguration(folder))
        try cache.set("new", for: CacheKey<String>("new-a"))
        try cache.set("b2", for: CacheKey<String>("old-b"))
        try cache.set(Data(repeating: 2, count: 20_000), for: CacheKey<Data>("new-large"))
        let expected = ["new-a", "new-large", "old-a", "old-b", "old-large"]
        #expect(cache.disk?.storeState.withLock { $0.importPending } == true, "the import is under way")
        #expect(Cache(makeConfiguration(folder)).keys == expected)
        #expect(cache.keys == expected)
        flock(held, LOCK_UN)
        close(held)
        cache.waitForBackgroundWork()
        #expect(Cache(makeConfiguration(folder)).keys == expected)
        #expect(cache.value(for: CacheKey<String>("old-b")) == "b2")
    }

    // MARK: Key locks

    /// Names that share one of ``KeyLocks``' 32 stripes in this process (as `withLock` picks
    /// them), with the two spellings of one key among them.
    static func namesSharingAStripe() -> [String] {
        func stripe(_ name: String) -> UInt { UInt(bitPattern: name.hashValue) % 32 }
        let target = stripe("caf\u{E9}")
        var names = ["caf\u{E9}", "cafe\u{301}"]
        var index = 0
        while names.count < 6 {
            if stripe("k\(index)") == target { names.append("k\(index)") }
            index += 1
        }
        return names
    }

    /// A stripe's held names are an array now: many threads on names of one stripe, the two
    /// spellings of one key among them, and a barrier now and then. A name is held by one
    /// thread at a time (its two spellings count as one), and the barrier's body runs with no
    /// name held.
    @Test func keyLocksOfOneStripeExcludeByNameAndTheBarrierExcludesThemAll() {
        let locks = KeyLocks()
        let names = Self.namesSharingAStripe()
        let holders = Holders()
        DispatchQueue.concurrentPerform(iterations: 6) { thread in
            var random = SplitMix64(seed: UInt64(thread + 1))
            for iteration in 0..<3_000 {
                if thread == 0, iteration % 20 == 0 {
                    locks.withEveryKeyLocked { holders.checkNoneHeld() }
                    continue
                }
                let name = names[Int(random.next() % UInt64(names.count))]
                locks.withLock(name) {
                    holders.enter(DiskTier.canonicalSpelling(of: name))
                    holders.leave(DiskTier.canonicalSpelling(of: name))
                }
            }
        }
        #expect(holders.violations == [])
        #expect(holders.entries == 6 * 3_000 - 150)
    }

    // MARK: The memory tier's misses

    /// The hits of a skewed trace whose popular keys move halfway, on a memory-only cache of
    /// 100 values under the frequency-aware order, each read through `read`; a miss stores the value.
    static func hitsOfAShiftingTrace(reading read: (Cache, CacheKey<Int>) -> Int?) throws -> Int {
        var configuration = Cache.Configuration(name: "hostile-misses")
        configuration.location = .memoryOnly
        configuration.memoryCountLimit = 100
        configuration.evictionPolicy = .frequencyAware
        let cache = Cache(configuration)
        var random = SplitMix64(seed: 42)
        let keys = 2_000
        var hits = 0
        for step in 0..<60_000 {
            let uniform = Double(random.next() % 1_000_000) / 1_000_000
            var index = Int(pow(Double(keys), uniform)) - 1
            if step >= 30_000 { index = (index + keys / 2) % keys }
            let key = CacheKey<Int>("k\(index)")
            if read(cache, key) != nil { hits += 1 } else { try cache.set(index, for: key) }
        }
        return hits
    }

    /// `value(for:)` after a memory miss asks memory again only under the key's lock; a cache
    /// without a folder takes no lock, so its frequency-aware order never learned the miss at
    /// all (CHANGELOG: "learns a read's miss once"), and its sketch and the miniature simulation
    /// choosing between S3-FIFO and W-TinyLFU saw only hits. `entry(for:)` learns it, as
    /// `value(for:)` did before: the same trace read either way must keep the same values.
    /// (Seen: 101,721 hits against 121,047 on a 200-value variant of this trace.)
    @Test func aMemoryOnlyCacheLearnsTheMissesOfValueForAsOfEntryFor() throws {
        let throughValue = try Self.hitsOfAShiftingTrace { cache, key in cache.value(for: key) }
        let throughEntry = try Self.hitsOfAShiftingTrace { cache, key in cache.entry(for: key)?.value }
        #expect(throughValue == throughEntry)
    }
}

/// Who holds which key now, for ``HostileSchemaFiveTests/keyLocksOfOneStripeExcludeByNameAndTheBarrierExcludesThemAll()``.
/// Invariant behind `@unchecked Sendable`: every field is read and written only while `lock` is held.
private final class Holders: @unchecked Sendable {
    private let lock = NSLock()
    private var held: [String: Int] = [:]
    private var entered = 0
    private var found: [String] = []

    func enter(_ name: String) {
        lock.withLock {
            entered += 1
            held[name, default: 0] += 1
            if held[name] != 1 { found.append("\(name) held \(held[name] ?? 0) times at once") }
        }
    }

    func leave(_ name: String) { lock.withLock { held[name, default: 0] -= 1 } }

    func checkNoneHeld() {
        lock.withLock {
            let busy = held.filter { $0.value != 0 }.keys.sorted()
            if !busy.isEmpty { found.append("the barrier ran while \(busy) were held") }
        }
    }

    var violations: [String] { lock.withLock { found } }
    var entries: Int { lock.withLock { entered } }
}
