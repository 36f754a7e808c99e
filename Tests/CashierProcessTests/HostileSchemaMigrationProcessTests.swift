import CashierPlatform
import CashierSQLite
import CashierStress
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Turns the store of `folder` into what a version 4 build left: `entry_files` in place of
/// `entry_unshaped`, user_version 4. Every connection is closed when it returns.
private func downgradeToVersionFour(_ folder: String) throws {
    let raw = try SQLiteConnection(path: folder + "/" + DiskTier.storeFileName, flags: SQLiteCode.openReadWrite)
    try raw.execute("DROP INDEX entry_unshaped")
    try raw.execute("CREATE INDEX entry_files ON entry(location, size) WHERE location = 1")
    try raw.execute("PRAGMA user_version = 4")
}

/// The store's `user_version` and index names.
private func storeSchema(_ folder: String) throws -> (version: Int64?, indexes: Set<String>) {
    let raw = try SQLiteConnection(path: folder + "/" + DiskTier.storeFileName, flags: SQLiteCode.openReadOnly)
    let indexes = Set(try raw.texts("SELECT name FROM sqlite_schema WHERE type = 'index'"))
    return (try raw.integer("PRAGMA user_version"), indexes)
}

/// Small values (rows) and large ones (files) written before the store is turned into version 4.
private let seeded: [(key: CacheKey<Data>, value: Data)] = (0..<40).map { index in
    let length = index % 10 == 0 ? 20 * 1024 : 1_500
    return (CacheKey<Data>("seed-\(index)"), Data((0..<length).map { UInt8(truncatingIfNeeded: $0 &+ index) }))
}

/// A hostile review of schema 5's migration where it runs: several processes opening a version 4
/// store at once, one of them migrating while the others read and write.
@Suite("Schema 5's migration, several processes at once")
struct HostileSchemaMigrationProcessTests {
    @Test(
        "Processes opening a version 4 store at once migrate it once, set nothing aside, and every value written before reads back"
    )
    func processesOpeningAVersionFourStoreAtOnceShareIt() throws {
        let folder = TemporaryFolder()
        do {
            let cache = Cache(folder.configuration())
            for (key, value) in seeded { try cache.set(value, for: key) }
            cache.waitForBackgroundWork()
        }
        try downgradeToVersionFour(folder.path)
        #expect(try storeSchema(folder.path).version == 4)

        // Three processes write, read and remove their own keys; this one lists and reads the
        // seeded ones meanwhile, through an instance of its own.
        let children = try (0..<3).map { index in
            try Child(["share", folder.path, String(index + 1), "300", String(64 << 20)])
        }
        let observer = Cache(folder.configuration())
        var missing = Set<String>()
        for _ in 0..<300 {
            let keys = Set(observer.keys)
            for (key, value) in seeded {
                if !keys.contains(key.name) || observer.value(for: key) != value { missing.insert(key.name) }
            }
        }
        for (index, child) in children.enumerated() {
            let done = child.readLine()
            #expect(done?.hasPrefix("done") == true, "process \(index): \(String(describing: done))")
            child.send("report")
            _ = child.readLine()
            #expect(child.wait() == 0, "process \(index) failed")
        }
        #expect(missing.isEmpty, "seeded keys missing or wrong while the processes ran: \(missing.sorted())")
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/" + DiskTier.storeFileName + ".damaged"))
        let (version, indexes) = try storeSchema(folder.path)
        #expect(version == 5)
        #expect(indexes.contains("entry_unshaped") && !indexes.contains("entry_files"), "\(indexes)")
        let fresh = Cache(folder.configuration())
        let listed = Set(fresh.keys)
        for (key, value) in seeded {
            #expect(listed.contains(key.name), "\(key.name) not listed")
            #expect(fresh.value(for: key) == value, "\(key.name) does not read back")
        }
    }
}

/// Schema 5's migration on a full volume: the store of a folder on a small volume that something
/// else filled. In `FullVolumeTests`, which is serialized: these fill the one small volume
/// (`CASHIER_FULL_VOLUME`, `.ci/full-volume.sh`) that its test fills too.
extension FullVolumeTests {
    /// Fills the volume holding `path` with a file of its own; returns the file's path.
    ///
    /// First waits (5 s at most) until the volume holds nothing but the files listed on it: a
    /// file an earlier test removed while a connection still had it open (a cache of that test
    /// closing its store on its background queue) takes its room until it is closed, and room
    /// coming back after the fill would let the next opening make a `-shm` after all (1 run in
    /// about 50 of the suite failed so).
    static func fillVolumeWithAFile(_ volume: String) -> String {
        _ = poll(seconds: 5) { FullVolume.unlistedBytes(volume) <= 4096 }
        let path = volume + "/filler-\(UUID().uuidString)"
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0xA5, count: 4096)
        while chunk.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        var byte: UInt8 = 1
        while write(fd, &byte, 1) > 0 {}
        return path
    }

    /// What a fresh instance on the full volume must still do: read, remove entries (their
    /// files' room comes back), then write; no failure on the way.
    static func checkFreshInstanceOnFullVolume(on folder: URL, volume: String) {
        let events = Locked<[String]>([])
        var configuration = Self.configuration(folder, memoryCountLimit: 0)
        configuration.onEvent = { event in
            if case .failure = event { events.withLock { $0.append("\(event)") } }
        }
        let cache = Cache(configuration)
        let freeWhenFull = FullVolume.freeBytes(volume)
        #expect(cache.value(for: seeded[1].key) == seeded[1].value, "a read on the full volume")
        for (key, value) in seeded where value.count > 10_000 { cache.removeValue(for: key) }
        cache.waitForBackgroundWork()
        #expect(cache.value(for: seeded[0].key) == nil, "a removed entry still reads")
        #expect(FullVolume.freeBytes(volume) > freeWhenFull, "removing the large entries freed nothing")
        let resumed = Data(repeating: 7, count: 1_000)
        #expect(throws: Never.self, "a write after the removals") {
            try cache.set(resumed, for: CacheKey<Data>("resumed"))
        }
        #expect(cache.value(for: CacheKey<Data>("resumed")) == resumed)
        #expect(cache.value(for: seeded[1].key) == seeded[1].value)
        let failures = events.withLock { $0 }
        #expect(
            failures.isEmpty,
            "\(failures.count) failures, the first: \(failures.first ?? ""); \(FullVolume.describe(folder))")
    }

    /// Writes ``seeded`` in `folder`, then turns its store into version 4 if asked.
    static func seed(_ folder: URL, versionFour: Bool) throws {
        let cache = Cache(Self.configuration(folder))
        for (key, value) in seeded { try cache.set(value, for: key) }
        cache.waitForBackgroundWork()
        if versionFour { try downgradeToVersionFour(folder.path) }
    }

    /// DESIGN: "A full volume is survivable: removing entries frees space and writes resume, in
    /// this process, a fresh one, and through the tool". Another connection (an extension, the
    /// tool, the build before an update) has the store open, so its `-shm` is in place. A
    /// version 4 store must first be migrated, which writes (the new index, log frames): on a
    /// full volume that failed, and the store stayed unopenable: every read, removal and write
    /// failed with "no space" until something else freed room. (Version 5: the control.)
    @Test(
        "On a full volume, a fresh instance on a store another connection holds open reads, removes and writes, whatever its schema",
        arguments: [false, true])
    func aStoreHeldOpenOnAFullVolumeServesAFreshInstance(versionFour: Bool) throws {
        let volume = try #require(FullVolume.folder)
        let folder = URL(fileURLWithPath: volume).appendingPathComponent("migration-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try Self.seed(folder, versionFour: versionFour)
        let holder = try SQLiteConnection(
            path: folder.path + "/" + DiskTier.storeFileName, flags: SQLiteCode.openReadWrite)
        #expect(try holder.integer("SELECT count(*) FROM entry") == Int64(seeded.count))
        let filler = Self.fillVolumeWithAFile(volume)
        defer { unlink(filler) }
        Self.checkFreshInstanceOnFullVolume(on: folder, volume: volume)
    }

    /// The same once every process has closed the store (a relaunch on a volume that filled):
    /// SQLite then has no `-shm` and cannot make one, and the store did not open, whatever its
    /// schema; the cache could not read, nor remove the entries that would make room. Found while
    /// attacking schema 5; it predated it. The store now opens in exclusive locking mode, without
    /// a `-shm` (``EntryStore``).
    @Test(
        "On a full volume, a fresh instance on a store no process has open reads, removes and writes",
        arguments: [false, true])
    func aStoreNoOneHoldsOnAFullVolumeServesAFreshInstance(versionFour: Bool) throws {
        let volume = try #require(FullVolume.folder)
        let folder = URL(fileURLWithPath: volume).appendingPathComponent("migration-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try Self.seed(folder, versionFour: versionFour)
        let filler = Self.fillVolumeWithAFile(volume)
        defer { unlink(filler) }
        Self.checkFreshInstanceOnFullVolume(on: folder, volume: volume)
    }

    /// While a store no process held is opened without a `-shm` on a full volume (exclusive locking
    /// mode, ``EntryStore``), its lock lasts one call: another process reads it between the
    /// holder's calls. Once the volume has room again, the next call of the instance opens the
    /// store as usual, without a relaunch, and the other process reads and writes.
    @Test(
        "On a full volume, a store opened without a -shm lets another process read between calls, and opens as usual once room is back"
    )
    func aStoreOpenWithoutSharedMemoryLetsOthersInOnceRoomIsBack() throws {
        let volume = try #require(FullVolume.folder)
        let folder = URL(fileURLWithPath: volume).appendingPathComponent("exclusive-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try Self.seed(folder, versionFour: false)
        let filler = Self.fillVolumeWithAFile(volume)
        var fillerRemoved = false
        defer { if !fillerRemoved { unlink(filler) } }
        let cache = Cache(Self.configuration(folder, memoryCountLimit: 0))
        #expect(cache.value(for: seeded[1].key) == seeded[1].value, "a read on the full volume")
        // A write that does not fit (a row, then a file) throws noSpace naming its key.
        for (name, length) in [("no-room-row", 4_000), ("no-room-file", 40 * 1024)] {
            do {
                try cache.set(Data(repeating: 3, count: length), for: CacheKey<Data>(name))
                Issue.record("\(name) was written on a full volume")
            } catch let error as CacheError {
                #expect(error.kind == .noSpace && error.key == name, "\(name): \(error)")
            }
        }

        let other = try StressSession(folderPath: folder.path)
        // The seeded value is not what `fill` writes: a read of it says "other", a miss "nil".
        #expect(
            other.ask("check \(seeded[1].key.name) 1500 1") == "other", "the other process, between the holder's calls")

        unlink(filler)
        fillerRemoved = true
        #expect(cache.value(for: seeded[1].key) == seeded[1].value, "a read once room is back")
        #expect(other.ask("fill other 1000 1") == "ok", "the other process could not write once room was back")
        #expect(other.ask("check other 1000 1") == "whole")
        other.close()
        #expect(cache.value(for: CacheKey<Data>("other")) == StressSession.value(for: "other", bytes: 1000, seed: 1))
        #expect(FileManager.default.fileExists(atPath: folder.path + "/" + DiskTier.storeFileName + "-shm"))
    }

    /// `cashier-tool prune` on a store no process has open, on a full volume: the tool's store
    /// opens without a `-shm` too (for its read-only look, then to remove), so it removes rows
    /// through the store, where it removed only the large entries' files and left their rows.
    @Test("On a full volume, cashier-tool prune removes the rows of a store no process has open")
    func aStoreNoOneHoldsOnAFullVolumeIsPruned() throws {
        let volume = try #require(FullVolume.folder)
        let folder = URL(fileURLWithPath: volume).appendingPathComponent("prune-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try Self.seed(folder, versionFour: false)
        let filler = Self.fillVolumeWithAFile(volume)
        defer { unlink(filler) }
        let freeWhenFull = FullVolume.freeBytes(volume)
        let tool = try ToolRun(["prune", "--max-size", String(40 * 1024), folder.path])
        #expect(tool.status == 0, "cashier-tool prune failed on a full volume: \(tool.output)")
        #expect(!tool.output.contains("cannot be read"), "\(tool.output)")
        #expect(FullVolume.freeBytes(volume) > freeWhenFull, "prune freed nothing: \(tool.output)")

        let cache = Cache(Self.configuration(folder, memoryCountLimit: 0))
        let rows = seeded.filter { $0.value.count < 10_000 }
        #expect(cache.keys.count < rows.count, "prune removed no row: \(cache.keys.count) keys remain")
        let resumed = Data(repeating: 9, count: 1_000)
        #expect(throws: Never.self, "a write after prune") { try cache.set(resumed, for: CacheKey<Data>("resumed")) }
        #expect(cache.value(for: CacheKey<Data>("resumed")) == resumed)
    }

    /// `removeAll(where:)` and `removeAll()` on a full volume, whether another connection holds
    /// the store open or none does (the store then opens without a `-shm`): every row goes.
    /// `removeAll(where:)` removed them all in one transaction, which needed more room in the log
    /// than the large entries' files gave back, and failed without a word, leaving every small entry.
    @Test(
        "On a full volume, removeAll(where:) and removeAll() remove every entry, whether or not another connection holds the store open",
        arguments: [false, true], [false, true])
    func removeAllEmptiesAStoreOnAFullVolume(held: Bool, everything: Bool) throws {
        let volume = try #require(FullVolume.folder)
        let folder = URL(fileURLWithPath: volume).appendingPathComponent("remove-all-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try Self.seed(folder, versionFour: false)
        let holder =
            held
            ? try SQLiteConnection(path: folder.path + "/" + DiskTier.storeFileName, flags: SQLiteCode.openReadWrite)
            : nil
        #expect(try holder?.integer("SELECT count(*) FROM entry") ?? Int64(seeded.count) == Int64(seeded.count))
        let filler = Self.fillVolumeWithAFile(volume)
        defer { unlink(filler) }
        let freeWhenFull = FullVolume.freeBytes(volume)
        let cache = Cache(Self.configuration(folder, memoryCountLimit: 0))
        if everything { cache.removeAll() } else { cache.removeAll(where: { $0.hasPrefix("seed-") }) }
        cache.waitForBackgroundWork()
        #expect(cache.keys.isEmpty, "\(cache.keys.count) keys remain; \(FullVolume.describe(folder))")
        #expect(cache.value(for: seeded[1].key) == nil, "a removed row still reads")
        #expect(FullVolume.freeBytes(volume) > freeWhenFull)
        let resumed = Data(repeating: 5, count: 1_000)
        #expect(throws: Never.self, "a write after the removals") {
            try cache.set(resumed, for: CacheKey<Data>("resumed"))
        }
        #expect(cache.value(for: CacheKey<Data>("resumed")) == resumed)
    }
}
