import CashierSQLite
import CashierStore
import CashierStoreSupport
import CashierTestSupport
import Foundation
import Testing

/// A hostile review of 2808c42 on a real small volume: an eviction of more than
/// `EntryStore.movesPerSweep` rows gives the free pages back inside its own transaction
/// (`PRAGMA incremental_vacuum`) while the store does not know the volume is tight; a
/// transaction that finds the volume full is made again without the vacuum, then one row a
/// transaction. On a volume with little room the sweep must still remove exactly rows it chose
/// (each once), keep every other row, leave a sound store and not grow the folder.
///
/// Runs only when `CASHIER_FULL_VOLUME` names a folder on a volume of 6 to 64 MiB (its store
/// takes 1.7 MB: the 2 MiB of `.ci/full-volume.sh` skip it), e.g. an 8 MiB tmpfs:
/// `.ci/volume-tests.sh sweep-vacuum 8m CASHIER_FULL_VOLUME SweepVacuumFullVolume "sweep on a volume"`.
enum SmallVolume {
    static let folder: String? = {
        guard let named = ProcessInfo.processInfo.environment["CASHIER_FULL_VOLUME"], !named.isEmpty else {
            return nil
        }
        try? FileManager.default.createDirectory(atPath: named, withIntermediateDirectories: true)
        var info = statvfs()
        guard statvfs(named, &info) == 0, (6 << 20)...(64 << 20) ~= Int(info.f_blocks) * Int(info.f_frsize) else {
            return nil
        }
        return named
    }()

    static func freeBytes(_ path: String) -> Int {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return 0 }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }

    /// Fills the volume of `path` with a file of its own until under `left` bytes are free.
    static func fill(_ path: String, leaving left: Int) -> String {
        let filler = path + "/filler-\(UUID().uuidString)"
        let descriptor = open(filler, O_CREAT | O_WRONLY, 0o600)
        defer { close(descriptor) }
        var chunk = [UInt8](repeating: 1, count: 4 << 10)
        while freeBytes(path) > left {
            let wrote = chunk.withUnsafeMutableBytes { write(descriptor, $0.baseAddress, $0.count) }
            if wrote <= 0 { break }
        }
        return filler
    }
}

@Suite(
    .serialized,
    .enabled(if: SmallVolume.folder != nil, "CASHIER_FULL_VOLUME does not name a folder on a small volume: skipped"))
struct SweepVacuumSmallVolumeReviewTests {
    /// `count` rows of 1,000 bytes each (their records random, so not stored smaller), `r0` least
    /// recently used, in a store of a folder of its own on the small volume.
    static func rows(_ count: Int, in folder: String) throws -> EntryStore {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let store = try EntryStore(folder: folder)
        for index in 0..<count {
            try store.upsert(
                StoreEntry(key: "r\(index)", location: .row, size: 1_000, lastUse: Int64(index)),
                record: bytes(1_000, seed: index))
        }
        _ = try store.checkpoint()
        return store
    }

    /// A sweep of 600 of 1,200 rows, frequency-aware (the ghost remembers what it evicts new),
    /// with `left` bytes free on the volume and the store not knowing it is tight: whatever it
    /// removed is among what its walk chose, each once; every other row is there after a
    /// reopening, whole; the ghost holds only removed keys; the store is sound; and once the
    /// volume has room again the store files take no more than before the sweep. (Between about
    /// 660 and 860 KiB free on this store the first transaction finds the volume full and the
    /// retries run: the same outcome with the in-transaction vacuum as without it.)
    @Test(arguments: [0, 16 << 10, 64 << 10, 320 << 10, 760 << 10, 840 << 10, 1 << 20, 2 << 20])
    func aLargeSweepOnAVolumeWithLittleRoomRemovesOnlyWhatItChoseEachOnce(left: Int) throws {
        let volume = try #require(SmallVolume.folder)
        let folder = volume + "/sweep-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var store: EntryStore? = try Self.rows(1_200, in: folder)
        let before = try #require(store).storeFileBytes()
        let filler = SmallVolume.fill(volume, leaving: left)
        var fillerRemoved = false
        defer { if !fillerRemoved { unlink(filler) } }

        var chosen: [String] = []
        var leftBytes = try #require(store).totalSize()
        try #require(store).forEachEvictionCandidate(order: .frequencyAware) { entry in
            chosen.append(entry.key)
            leftBytes -= entry.size
            return leftBytes > 600_000
        }
        #expect(chosen.count == 600)
        let outcome = Result { () throws(StoreError) in try store!.evict(order: .frequencyAware, downTo: 600_000) }
        let removed = (try? outcome.get())?.map(\.key) ?? []
        let learnedTight = try #require(store).keepsLogSmall
        _ = try? store?.reclaimSpace()
        store = nil
        unlink(filler)
        fillerRemoved = true

        let reopened = try EntryStore(folder: folder)
        let keys = Set(try reopened.keys())
        print(
            "sweep on a volume with \(left) bytes free: \(removed.count) removed, threw \((try? outcome.get()) == nil), learned tight \(learnedTight)"
        )
        #expect(Set(removed).count == removed.count, "a row reported removed twice")
        #expect(Set(removed).isSubset(of: chosen), "removed a row the walk did not choose")
        let all = Set((0..<1_200).map { "r\($0)" })
        #expect(keys == all.subtracting(removed), "rows gone but not reported, or reported and back")
        for key in keys.prefix(50) {
            let index = Int(key.dropFirst())!
            #expect(try reopened.record(for: key)?.record == bytes(1_000, seed: index))
        }
        #expect(try reopened.structuralProblems().isEmpty)
        let ghost = try SQLiteConnection(path: reopened.path, flags: SQLiteCode.openReadOnly).texts(
            "SELECT key FROM ghost")
        #expect(Set(ghost).isSubset(of: Set(removed)), "the ghost remembers keys still stored")
        _ = try reopened.reclaimSpace()
        #expect(reopened.storeFileBytes() <= before, "the store files grew: \(before) -> \(reopened.storeFileBytes())")
    }
}
