import CashierSQLite
import CashierStore
import CashierStoreSupport
import CashierTestSupport
import Foundation
import Testing

/// Store files that are damaged, truncated, not SQLite or not Cashier's: never a crash, a hang
/// or a wrong value. A read gives the bytes written, a record whose checksum fails (the
/// caller's `.corrupt` miss), a miss, or an error after which the store was set aside.
@Suite struct EntryStoreDamageTests {
    let folder = TemporaryFolder()
    var path: String { folder.path + "/store.sqlite" }

    init() throws { try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true) }

    /// A record as Cashier's would be: the key and payload under a checksum of both. With a
    /// `header`, 72 filler bytes put the key at offset 80, where an entry file has it: such a
    /// row is stored without its key, and a sparse header without its zero bytes (`location`
    /// 2 and 3); the read puts them back.
    static func record(key: String, payload: [UInt8], header: [UInt8]? = nil) -> [UInt8] {
        let body = (header ?? []) + Array(key.utf8) + [0] + payload
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in body { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return withUnsafeBytes(of: hash.littleEndian) { Array($0) } + body
    }

    /// The key a record names (up to its first zero byte after the checksum).
    static func key(of record: [UInt8]) -> String? {
        let start = record.count > 80 && fillers.contains(Array(record[8..<80])) ? 80 : 8
        guard record.count > start, let end = record[start...].firstIndex(of: 0) else { return nil }
        return String(decoding: record[start..<end], as: UTF8.self)
    }

    /// Headers' filler: dense (stored without the key) and sparse (stored compact too).
    static let fillers: [[UInt8]] = [
        [UInt8](repeating: 0xEE, count: 72), (0..<72).map { $0 % 9 == 0 ? 0xEE : 0 },
    ]

    static func checksumHolds(_ record: [UInt8]) -> Bool {
        guard record.count >= 8 else { return false }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in record[8...] { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return withUnsafeBytes(of: hash.littleEndian) { Array($0) } == Array(record[..<8])
    }

    /// Fills a store with `count` entries and checkpoints it, so every page is in the main file.
    private func fill(count: Int, seed: UInt64) throws -> [String: [UInt8]] {
        var generator = SplitMix64(seed: seed)
        var written: [String: [UInt8]] = [:]
        let store = try EntryStore(folder: folder.path)
        for index in 0..<count {
            let payload = (0..<Int.random(in: 10...3000, using: &generator)).map { _ in
                UInt8.random(in: 0...255, using: &generator)
            }
            let key = "key-\(index)"
            let record = Self.record(
                key: key, payload: payload, header: [nil, Self.fillers[0], Self.fillers[1]][index % 3])
            try store.upsert(
                StoreEntry(key: key, location: .row, size: record.count, lastUse: Int64(index)), record: record)
            written[key] = record
        }
        try store.checkpoint()
        return written
    }

    /// Opens the store (a set-aside at open is fine) and reads everything through every operation.
    private func readEverything(_ written: [String: [UInt8]]) {
        let store: EntryStore
        do { store = try EntryStore(folder: folder.path) } catch {
            Issue.record("a damaged store must be set aside, not fail to open: \(error)")
            return
        }
        for (key, record) in written {
            do {
                guard let read = try store.record(for: key) else { continue }
                #expect(read.entry.key == key)
                // As Cashier's reader does: a sound checksum and the key in the record, else a miss.
                if Self.checksumHolds(read.record), Self.key(of: read.record) == key {
                    #expect(read.record == record, "wrong value for \(key)")
                }
            } catch StoreError.setAside, StoreError.failed {
                continue
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
        _ = try? store.count()
        _ = try? store.keys()
        _ = try? store.totalSize()
        _ = try? store.evictionCandidates(limit: 100)
        _ = try? store.removeLeastRecentlyUsed(3)
        _ = try? store.evictionCandidates(order: .frequencyAware, limit: 100)
        _ = try? store.evict(order: .frequencyAware, downTo: max(0, ((try? store.totalSize()) ?? 0) - 300))
        _ = try? store.upsert(StoreEntry(key: "after", location: .row, size: 1, lastUse: 1), record: [1])
        _ = try? store.reclaimSpace()
        // Whatever happened, the store still takes writes and reads them back.
        do {
            try store.upsert(StoreEntry(key: "final", location: .row, size: 2, lastUse: 1), record: [4, 2])
            #expect(try store.record(for: "final")?.record == [4, 2])
        } catch StoreError.setAside {
            // Damage found only now: the store was set aside again and the next write lands.
            #expect(
                (try? store.upsert(StoreEntry(key: "final", location: .row, size: 1, lastUse: 1), record: [1])) != nil)
        } catch {
            Issue.record("the store must work after damage: \(error)")
        }
    }

    @Test(.timeLimit(.minutes(10)))
    func randomByteDamageIsNeverACrashAHangOrAWrongValue() throws {
        // CASHIER_STORE_DAMAGE_ROUNDS and CASHIER_STORE_DAMAGE_SEED make a longer or another run.
        let environment = ProcessInfo.processInfo.environment
        let rounds = environment["CASHIER_STORE_DAMAGE_ROUNDS"].flatMap(Int.init) ?? 40
        let seed = environment["CASHIER_STORE_DAMAGE_SEED"].flatMap(UInt64.init) ?? 0x5eed_0025
        var generator = SplitMix64(seed: seed)
        for round in 0..<rounds {
            try? FileManager.default.removeItem(at: folder.url)
            try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
            let written = try fill(count: 60, seed: UInt64(round))
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            let damages = Int.random(in: 1...24, using: &generator)
            for _ in 0..<damages {
                // Half the time in the first pages (header, schema, root pages), where damage hurts most.
                let range = Bool.random(using: &generator) ? 0..<min(bytes.count, 12_288) : 0..<bytes.count
                bytes[Int.random(in: range, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            readEverything(written)
        }
    }

    @Test(.timeLimit(.minutes(1)), arguments: [0, 1, 100, 4096, 4097, 20_000])
    func aTruncatedStoreIsSetAsideOrReadCorrectly(_ length: Int) throws {
        let written = try fill(count: 40, seed: 7)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: UInt64(length))
        try handle.close()
        readEverything(written)
    }

    @Test func aFileThatIsNotSQLiteIsSetAside() throws {
        try Data(repeating: 0x41, count: 10_000).write(to: URL(fileURLWithPath: path))
        let store = try EntryStore(folder: folder.path)
        let setAside = try #require(store.setAsideAtOpen)
        // The store is opened (and set aside) by its folder's resolved path, as below a link.
        #expect(setAside.movedTo == store.path + ".damaged")
        #expect(store.path == URL(fileURLWithPath: path).resolvingSymlinksInPath().path)
        #expect(FileManager.default.fileExists(atPath: path + ".damaged"))
        #expect(try store.count() == 0)
        try store.upsert(StoreEntry(key: "k", location: .row, size: 1, lastUse: 1), record: [1])
        #expect(try store.record(for: "k")?.record == [1])
    }

    @Test func anotherApplicationsDatabaseIsSetAside() throws {
        let foreign = try SQLiteConnection(path: path, flags: SQLiteCode.openReadWrite | SQLiteCode.openCreate)
        try foreign.execute("CREATE TABLE entry(id INTEGER PRIMARY KEY, secret TEXT)")
        try foreign.execute("INSERT INTO entry VALUES(1, 'theirs')")
        let store = try EntryStore(folder: folder.path)
        #expect(store.setAsideAtOpen != nil)
        #expect(try store.count() == 0)
    }

    @Test(arguments: [0, 6, 99])
    func aStoreOfAnotherSchemaVersionIsSetAsideNotReadAsOurs(_ version: Int) throws {
        let old = try EntryStore(folder: folder.path)
        try old.upsert(StoreEntry(key: "k", location: .row, size: 1, lastUse: 1), record: [1])
        // What another build (an older schema, or a newer one after a downgrade) leaves behind.
        let other = try SQLiteConnection(path: path, flags: SQLiteCode.openReadWrite)
        try other.execute("PRAGMA user_version = \(version)")
        let store = try EntryStore(folder: folder.path)
        #expect(store.setAsideAtOpen?.reason.contains("schema version") == true)
        #expect(try store.count() == 0)
        try store.upsert(StoreEntry(key: "k", location: .row, size: 1, lastUse: 2), record: [2])
        #expect(try store.record(for: "k")?.record == [2])
    }

    @Test func aStoreCarryingATriggerIsSetAside() throws {
        _ = try EntryStore(folder: folder.path)
        // What a hostile writer could add without defensive mode: a trigger that runs on our writes.
        let hostile = try SQLiteConnection(path: path, flags: SQLiteCode.openReadWrite)
        try hostile.execute(
            "CREATE TRIGGER spy AFTER INSERT ON entry BEGIN DELETE FROM entry; END")
        let store = try EntryStore(folder: folder.path)
        #expect(store.setAsideAtOpen?.reason.contains("trigger spy") == true)
        try store.upsert(StoreEntry(key: "k", location: .row, size: 1, lastUse: 1), record: [1])
        #expect(try store.count() == 1)
    }

    @Test func damageFoundAfterOpeningSetsTheStoreAsideAndStartsFresh() throws {
        let written = try fill(count: 200, seed: 3)
        let store = try EntryStore(folder: folder.path)
        // Overwrite every page after the schema's root pages with garbage, under the open store.
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        for index in 8192..<bytes.count { bytes[index] = UInt8(truncatingIfNeeded: index &* 31) }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.write(contentsOf: Data(bytes))
        try handle.close()
        func setAside(_ call: () throws -> Void) -> Bool {
            do { try call() } catch { if case StoreError.setAside = error { return true } }
            return false
        }
        var sawSetAside = false
        for key in written.keys.sorted() where setAside({ _ = try store.record(for: key) }) { sawSetAside = true }
        if setAside({ _ = try store.keys() }) { sawSetAside = true }
        if setAside({ _ = try store.totalSize() }) { sawSetAside = true }
        let remaining = (try? store.count()) ?? 0
        #expect(sawSetAside || remaining <= written.count)
        try store.upsert(StoreEntry(key: "new", location: .row, size: 1, lastUse: 1), record: [5])
        #expect(try store.record(for: "new")?.record == [5])
    }
}
