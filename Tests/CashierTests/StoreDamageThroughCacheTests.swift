import CashierSQLite
import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Damage to the store and faults of the store, seen through the public `Cache` API: a read
/// is a miss or the exact value written, never a wrong value, a crash or a hang; damaged rows
/// are `.corrupt` discards; a store that is not SQLite is set aside and reported, and the cache
/// goes on writing.
@Suite struct StoreDamageThroughCacheTests {
    let folder = TemporaryFolder()
    let clock = TestClock()

    func cache(events: EventLog? = nil) -> Cache {
        Cache(makeConfiguration(folder, clock: clock, events: events))
    }

    static func value(_ index: Int) -> Data {
        Data((0..<(40 + index % 200)).map { UInt8(truncatingIfNeeded: $0 &+ index &* 7) })
    }

    /// Rewrites `key`'s row with its record changed by `change`, through a store of its own.
    func damageRecord(of key: String, _ change: (inout [UInt8]) -> Void) throws {
        let store = try EntryStore(folder: folder.path)
        let stored = try #require(try store.record(for: key))
        var record = stored.record
        change(&record)
        try store.upsert(stored.entry, record: record)
    }

    // MARK: A row's record

    @Test func everyFlippedByteOfARowsRecordIsACorruptMissNeverAWrongValue() throws {
        let key = CacheKey<Data>("row")
        let value = Data((0..<120).map { UInt8($0) })
        let events = EventLog()
        let cache = cache(events: events)
        try cache.set(value, for: key)
        let length = try #require(try EntryStore(folder: folder.path).record(for: key.name)).record.count
        #expect(length > 120)
        for offset in 0..<length {
            try cache.set(value, for: key)
            try damageRecord(of: key.name) { $0[offset] ^= 0x41 }
            cache.purgeMemory()
            events.clear()
            let read = cache.value(for: key)
            #expect(read == nil, "offset \(offset): a damaged record was read as \(String(describing: read))")
            #expect(
                events.discards.contains { $0.0 == key.name && $0.1 == .corrupt },
                "offset \(offset): no .corrupt discard, events \(events.all)")
            // The damaged row was removed with the discard.
            #expect(try EntryStore(folder: folder.path).record(for: key.name) == nil, "offset \(offset)")
        }
    }

    @Test(arguments: [0, 1, 79, 80, 100])
    func aRecordCutShortIsACorruptMiss(keeping length: Int) throws {
        let key = CacheKey<Data>("cut")
        let events = EventLog()
        let cache = cache(events: events)
        try cache.set(Self.value(3), for: key)
        try damageRecord(of: key.name) { $0 = Array($0.prefix(length)) }
        cache.purgeMemory()
        #expect(cache.value(for: key) == nil)
        #expect(events.discards.contains { $0.0 == key.name && $0.1 == .corrupt })
    }

    @Test func anotherKeysRecordInARowIsNeverReadAsThisKeysValue() throws {
        let mine = CacheKey<Data>("mine")
        let theirs = CacheKey<Data>("theirs")
        let cache = cache()
        try cache.set(Self.value(1), for: mine)
        try cache.set(Self.value(2), for: theirs)
        let store = try EntryStore(folder: folder.path)
        let their = try #require(try store.record(for: theirs.name))
        let my = try #require(try store.record(for: mine.name))
        // A row holding a whole, sound record of another key (checksum intact).
        try store.upsert(my.entry, record: their.record)
        cache.purgeMemory()
        #expect(cache.value(for: mine) == nil)
        #expect(cache.value(for: theirs) == Self.value(2))
    }

    /// Damage to the row's columns rather than its record, written with SQL as damage would.
    @Test(arguments: [
        "location = 1", "location = 2", "location = 3", "location = 4", "location = 9", "location = -1",
        "record = zeroblob(length(record))", "record = x''", "record = NULL", "size = 1", "size = -5",
    ])
    func aRowWithDamagedColumnsIsAMissOrItsValueNeverAnotherOne(_ assignment: String) throws {
        let key = CacheKey<Data>("columns")
        let value = Self.value(5)
        let cache = cache()
        try cache.set(value, for: key)
        try cache.set(Self.value(6), for: CacheKey<Data>("neighbour"))
        do {
            let connection = try SQLiteConnection(
                path: folder.storePath, flags: SQLiteCode.openReadWrite)
            // The cache writes its uses off the caller's thread: this damage waits its turn.
            try connection.setBusyTimeout(milliseconds: 5000)
            try connection.execute("UPDATE entry SET \(assignment) WHERE key = 'columns'")
        }
        cache.purgeMemory()
        let read = cache.value(for: key)
        #expect(read == nil || read == value)
        _ = cache.count
        _ = cache.totalSize
        _ = cache.keys
        cache.collectGarbage()
        #expect(cache.value(for: CacheKey<Data>("neighbour")) == Self.value(6))
        try cache.set(value, for: key)
        cache.purgeMemory()
        #expect(cache.value(for: key) == value)
    }

    /// Rows of one type share a shape (the type name and app version, kept once): damage to
    /// it is damage to each of its rows, a `.corrupt` miss that removes the row, never a wrong
    /// value; the next write of the type adds the shape again.
    @Test(arguments: ["DELETE FROM shape", "UPDATE shape SET header = zeroblob(80)", "UPDATE shape SET names = x'00'"])
    func aDamagedShapeIsACorruptMissForEachOfItsRows(_ damage: String) throws {
        let keys = (0..<3).map { CacheKey<Data>("shaped-\($0)") }
        do {
            let cache = cache()
            for (index, key) in keys.enumerated() { try cache.set(Self.value(index), for: key) }
            let connection = try SQLiteConnection(path: folder.storePath, flags: SQLiteCode.openReadWrite)
            try connection.setBusyTimeout(milliseconds: 5000)
            #expect(try connection.integer("SELECT count(*) FROM entry WHERE location = 4") == 3)
            try connection.execute(damage)
        }
        let events = EventLog()
        let cache = cache(events: events)
        for key in keys { #expect(cache.value(for: key) == nil) }
        #expect(Set(events.discards.filter { $0.1 == .corrupt }.map(\.0)) == Set(keys.map(\.name)))
        #expect(cache.count == 0)
        try cache.set(Self.value(7), for: keys[0])
        cache.purgeMemory()
        #expect(cache.value(for: keys[0]) == Self.value(7))
    }

    // MARK: The store file

    @Test func aStoreThatIsNotSQLiteIsSetAsideReportedAndTheCacheKeepsWriting() throws {
        let large = Data(repeating: 3, count: 30_000)
        do {
            let cache = cache()
            try cache.set(Self.value(1), for: CacheKey<Data>("small"))
            try cache.set(large, for: CacheKey<Data>("large"))
            cache.waitForBackgroundWork()
        }
        folder.removeStore()
        try Data(repeating: 0x41, count: 16_384).write(to: URL(fileURLWithPath: folder.storePath))

        let events = EventLog()
        let cache = cache(events: events)
        #expect(cache.value(for: CacheKey<Data>("small")) == nil)
        #expect(
            events.all.contains {
                if case .failure(nil, let error) = $0 { error.kind == .ioFailure } else { false }
            }, "no failure without a key: \(events.all)")
        #expect(FileManager.default.fileExists(atPath: folder.storePath + ".damaged"))
        // A large entry's file outlives its store: it is read, and indexed again.
        #expect(cache.value(for: CacheKey<Data>("large")) == large)
        cache.waitForBackgroundWork()
        #expect(try folder.row(for: "large")?.location == .file)

        try cache.set(Self.value(9), for: CacheKey<Data>("after"))
        #expect(try folder.row(for: "after")?.location == .row)
        cache.purgeMemory()
        #expect(cache.value(for: CacheKey<Data>("after")) == Self.value(9))
        #expect(cache.count == 2)
    }

    @Test(.timeLimit(.minutes(10)))
    func randomDamageToTheStoreFileIsNeverACrashAHangOrAWrongValue() throws {
        // CASHIER_CACHE_STORE_DAMAGE_ROUNDS and CASHIER_CACHE_STORE_DAMAGE_SEED make a longer or another run.
        let environment = ProcessInfo.processInfo.environment
        let rounds = environment["CASHIER_CACHE_STORE_DAMAGE_ROUNDS"].flatMap(Int.init) ?? 30
        let seed = environment["CASHIER_CACHE_STORE_DAMAGE_SEED"].flatMap(UInt64.init) ?? 0x5eed_c0de
        var generator = SplitMix64(seed: seed)
        let keys = (0..<80).map { CacheKey<Data>("key-\($0)") }
        var written: [String: Data] = [:]
        for (index, key) in keys.enumerated() {
            // Mostly rows; every tenth one a large entry's file.
            written[key.name] =
                index % 10 == 9 ? Data(repeating: UInt8(index), count: 9_000 + index) : Self.value(index)
        }
        for round in 0..<rounds {
            try? FileManager.default.removeItem(at: folder.url)
            do {
                let cache = cache()
                for key in keys { try cache.set(written[key.name]!, for: key) }
                // No store work of this cache's outlives it: the damage below is done to a file
                // no connection has open, as a process that exited leaves it.
                cache.waitForBackgroundWork()
            }
            // Every page in the main file, so damage to it is damage to the rows.
            _ = try EntryStore(folder: folder.path).checkpoint()
            folder.removeStore(keepingMainFile: true)
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: folder.storePath)))
            let damages = Int.random(in: 1...32, using: &generator)
            for _ in 0..<damages {
                // Half the time in the first pages (header, schema, roots), where damage hurts most.
                let range = Bool.random(using: &generator) ? 0..<min(bytes.count, 12_288) : 0..<bytes.count
                bytes[Int.random(in: range, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            try Data(bytes).write(to: URL(fileURLWithPath: folder.storePath))

            let events = EventLog()
            let cache = cache(events: events)
            for key in keys {
                let read = cache.value(for: key)
                #expect(read == nil || read == written[key.name], "round \(round): wrong value for \(key.name)")
            }
            _ = cache.count
            _ = cache.totalSize
            _ = cache.keys
            cache.collectGarbage()
            for key in keys.shuffled(using: &generator).prefix(20) {
                let read = cache.value(for: key)
                #expect(read == nil || read == written[key.name], "round \(round), after GC: \(key.name)")
            }
            // Whatever the damage did, the cache takes writes and reads them back.
            let after = CacheKey<Data>("after-\(round)")
            try cache.set(Self.value(round), for: after)
            cache.purgeMemory()
            #expect(cache.value(for: after) == Self.value(round), "round \(round): a write after damage was lost")
        }
    }

    // MARK: Faults

    /// Another process holding the store's write lock past the busy timeout (5 s): the write
    /// fails naming its key, and what was stored before is still read. (As root, a read-only
    /// mode does not stop writes; the lock is the fault this machine can make.)
    @Test(.timeLimit(.minutes(1)))
    func aWriteTheStoreRefusesThrowsNamingTheKeyAndKeepsTheOldValue() throws {
        let small = CacheKey<Data>("small")
        let growing = CacheKey<Data>("growing")
        let cache = cache()
        try cache.set(Self.value(1), for: small)
        try cache.set(Self.value(2), for: growing)
        // The cache's own work off the caller's thread (its uses) is done before the lock is taken.
        cache.waitForBackgroundWork()

        let holder = try SQLiteConnection(path: folder.storePath, flags: SQLiteCode.openReadWrite)
        try holder.execute("PRAGMA busy_timeout = 0")
        try holder.execute("BEGIN IMMEDIATE")
        do {
            try cache.set(Self.value(3), for: small)
            Issue.record("a write the store refused returned")
        } catch let error as CacheError {
            #expect(error.key == small.name)
        }
        // A large value: its file is written, the row is refused, and the file must not
        // shadow nor replace the old row's value.
        do {
            try cache.set(Data(repeating: 8, count: 20_000), for: growing)
            Issue.record("a write the store refused returned")
        } catch let error as CacheError {
            #expect(error.key == growing.name)
        }
        cache.purgeMemory()
        #expect(cache.value(for: small) == Self.value(1))
        #expect(cache.value(for: growing) == Self.value(2))
        #expect(!folder.hasEntryFile(for: growing.name))
        try holder.execute("ROLLBACK")

        try cache.set(Self.value(4), for: small)
        cache.purgeMemory()
        #expect(cache.value(for: small) == Self.value(4))
    }
}

extension TemporaryFolder {
    /// Removes the store's `-wal` and `-shm`, keeping the main file: after a checkpoint it holds everything.
    func removeStore(keepingMainFile: Bool) {
        guard keepingMainFile else { return removeStore() }
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: storePath + suffix) }
    }
}
