import CashierPlatform
import CashierSQLite
import CashierStress
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// From a hostile review of the free pages given back at rest and after a housekeeping pass that
/// removed nothing (`reclaimFreePages(beyondABatch:)`), on a full volume: the store opens in
/// exclusive locking mode for each call, `freePages()`'s reader is then the writer. The pages
/// stayed, even with the reserve kept, until a one-page vacuum step drew on the reserve.
extension FullVolumeTests {
    /// Rows, then all but the oldest `kept` deleted by another connection with no reclaim (as a
    /// killed process leaves them), the store closed; returns the bytes in use and free.
    static func freePagesAsAKilledProcessLeavesThem(
        _ folder: URL, rows: Int, keeping kept: Int, keepingReserve: Bool = false
    ) throws -> (
        inUse: Int, free: Int
    ) {
        do {
            let cache = Cache(Self.configuration(folder))
            for index in 0..<rows {
                try cache.set(Data(repeating: UInt8(index % 251), count: 900), for: CacheKey<Data>("k\(index)"))
            }
            cache.waitForBackgroundWork()
        }
        let shm = folder.path + "/" + DiskTier.storeFileName + "-shm"
        try #require(poll { !FileManager.default.fileExists(atPath: shm) }, "the store stayed open")
        let storePath = folder.path + "/" + DiskTier.storeFileName
        let result = try CashierTestSupport.freePagesAsAKilledProcessLeavesThem(store: storePath, keeping: kept)
        try #require(poll { !FileManager.default.fileExists(atPath: shm) }, "the store stayed open")
        if !keepingReserve { unlink(folder.path + "/" + DiskTier.storeFileName + "-reserve") }
        return result
    }

    /// No reserve and no byte free: a vacuum step of one page has no room for its log, so the
    /// free pages stay; nothing hangs and no row goes.
    @Test("FullVolume review (free pages): with no room and no reserve, no row goes and nothing hangs; the pages stay")
    func freePagesOnAFullVolumeWithoutAReserveStay() throws {
        try freePagesExclusively(keepingReserve: false)
    }

    /// With the store's reserve: the one-page steps draw on it (the free pages repay it) and
    /// every free page goes back.
    @Test("FullVolume review (free pages): with the store's reserve, exclusively, they go back and no row goes")
    func freePagesOnAFullVolumeWithAReserveGoBack() throws {
        try freePagesExclusively(keepingReserve: true)
    }

    func freePagesExclusively(keepingReserve: Bool) throws {
        let volume = try #require(FullVolume.folder)
        let folder = URL(fileURLWithPath: volume).appendingPathComponent("review-freepages-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let (inUse, free) = try Self.freePagesAsAKilledProcessLeavesThem(
            folder, rows: 400, keeping: 101, keepingReserve: keepingReserve)
        #expect(free >= 100_000, "only \(free) bytes of free pages")
        let storePath = folder.path + "/" + DiskTier.storeFileName
        let filler = Self.fillVolumeWithAFile(volume)
        var fillerRemoved = false
        defer { if !fillerRemoved { unlink(filler) } }

        var configuration = Self.configuration(folder, memoryCountLimit: 0)
        configuration.diskSizeLimit = inUse + 32_768 + free / 2
        let cache = Cache(configuration)
        #expect(cache.value(for: CacheKey<Data>("k1")) == Data(repeating: 1, count: 900))
        #expect(Self.lacksSharedMemory(folder), "the store opened with a -shm: the case did not arise")
        cache.waitForBackgroundWork()
        cache.collectGarbage()
        cache.waitForBackgroundWork()
        let lost = (0...100).filter {
            cache.value(for: CacheKey<Data>("k\($0)")) != Data(repeating: UInt8($0 % 251), count: 900)
        }
        #expect(lost.isEmpty, "rows lost: \(lost.prefix(10))")
        #expect(cache.count == 101)
        let volumeFree = FullVolume.freeBytes(volume)
        let described = FullVolume.describe(folder)
        unlink(filler)
        fillerRemoved = true
        let left = try SQLiteConnection(path: storePath, flags: SQLiteCode.openReadOnly).integer(
            "PRAGMA freelist_count")
        if keepingReserve {
            #expect(left == 0, "free pages stayed on the full volume: \(described); volume free \(volumeFree)")
        } else {
            #expect(left == Int64(free / 4096), "\(described); volume free \(volumeFree)")
        }
    }
}
