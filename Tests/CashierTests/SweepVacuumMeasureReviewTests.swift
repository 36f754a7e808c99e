import CashierEntryFormat
import CashierPlatform
import CashierSQLite
import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile review of how a sweep measures the folder. A sweep of more than
/// `EntryStore.movesPerSweep` rows gives its free pages back inside its own transaction, so its
/// commit leaves no free page, but the store file keeps its length until a checkpoint copies the
/// log back, and a reader (any process) holding a snapshot from before the sweep keeps every
/// checkpoint from getting there. A sweep now measures in its walk's own read transaction, by
/// the store's page count there (`EntryStore.walkEvictionOrder(_:measuring:_:)`).
@Suite struct SweepVacuumMeasureReviewTests {
    let folder = TemporaryFolder()

    static let options = DiskTier.WriteOptions(
        filePermissions: 0o644, folderPermissions: 0o755, synchronize: false, completeProtection: false)

    /// A row of `bytes` (900) bytes of payload under `key`.
    static func write(_ key: String, _ disk: DiskTier, bytes: Int = 900) throws {
        let payload = Data((0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ key.count) })
        let header = EntryHeader(
            key: key, typeName: "Foundation.Data", format: .raw, createdAt: 0, validatedAt: 0, lifespan: .never,
            schemaVersion: nil, appVersion: nil, isLocked: false, payloadLength: payload.count)
        _ = try disk.write(DiskTier.fileName(for: key), header: header, payload: payload, options: options)
    }

    /// 2,000 rows; a reader of the store holds a read transaction begun before the sweeps. The
    /// first sweep to a limit of 700 kB (about a third) evicts well over 256 rows; a second sweep to the same
    /// limit, right after it, must choose nothing: the folder is within the limit.
    ///
    /// Measured by the store file's length, as before, the second sweep found the file as long
    /// as before the first (its pages went back in the commit, the file is cut only at a
    /// checkpoint the reader holds off) with no free page to subtract, and chose all 441 rows
    /// left: a reader of another process that stays emptied the cache, sweep after sweep.
    @Test func aSecondSweepRightAfterALargeOneChoosesNothingWhileAReaderHoldsTheLog() throws {
        let disk = DiskTier(folder: folder.path, recheckInterval: 0)
        for index in 0..<2_000 { try Self.write("k\(index)", disk) }
        let reader = try SQLiteConnection(
            path: folder.path + "/" + DiskTier.storeFileName, flags: SQLiteCode.openReadOnly)
        try reader.execute("BEGIN")
        #expect(try reader.integer("SELECT count(*) FROM entry") == 2_000)
        defer { try? reader.execute("COMMIT") }

        var limits = DiskTier.Limits(size: 700_000, minimumFreeSpace: nil)
        limits.evictionOrder = .leastRecentlyUsed
        let first = disk.planSweep(limits: limits, at: 100)
        #expect(first.choices.count > 256, "the first sweep chose \(first.choices.count)")
        let removed = disk.apply(first)
        disk.finish(first)
        #expect(removed.count == first.choices.count)

        let second = disk.planSweep(limits: limits, at: 101)
        #expect(
            second.choices.count == 0,
            "a second sweep chose \(second.choices.count) more rows of the \(2_000 - removed.count) left, within the limit"
        )
        #expect(try reader.integer("SELECT count(*) FROM entry") == 2_000, "the reader's snapshot moved")
    }

    /// A collection with a size limit and a minimum of free space: between its measure of the
    /// folder and its walk, another process's sweep commits (here, when the collection asks for
    /// the free space, through a store connection of its own). The walk must not go on to evict
    /// what the measure counted, from what the other sweep left.
    ///
    /// When the measure and the walk were two read transactions, the collection evicted the
    /// 2,000 rows' overrun again from the 441 the other sweep left: all of them. The measure is
    /// now made in the walk's own snapshot.
    @Test func aCollectionWhoseWalkFollowsAnotherProcesssSweepEvictsOnlyWhatIsStillOver() throws {
        let armed = Locked<(@Sendable () -> Void)?>(nil)
        let disk = DiskTier(
            folder: folder.path, fileSystem: HookedSpace(hook: armed), usesStore: true, recheckInterval: 0)
        for index in 0..<2_000 { try Self.write("k\(index)", disk) }
        let limit = 700_000
        // The other process: the same sweep to the same limit, on a connection of its own.
        let other = try EntryStore(folder: folder.path)
        armed.withLock {
            $0 = {
                // As `StoreIndex.chooseVictims` counts: entries' sizes until the overrun is freed.
                let occupied = (try? other.occupiedBytes(includingLog: false, includingFreePages: false)) ?? 0
                let needed = occupied - limit * 9 / 10
                var (freed, victims) = (0, [StoreEntry]())
                try? other.forEachEvictionCandidate(order: .leastRecentlyUsed) { entry in
                    victims.append(entry)
                    freed += entry.size
                    return freed < needed
                }
                _ = try? other.remove(unchanged: victims, evictedIn: .leastRecentlyUsed)
                _ = try? other.reclaimSpace()
            }
        }
        var limits = DiskTier.Limits(size: limit, minimumFreeSpace: 1)
        limits.evictionOrder = .leastRecentlyUsed
        let plan = disk.planGarbageCollection(now: 100, limits: limits, reclaim: DiskTier.Reclaim(expired: true))
        let leftByOther = try other.count()
        let removed = disk.apply(plan)
        disk.finish(plan)
        let left = try other.occupiedBytes(includingLog: false, includingFreePages: false)
        #expect(
            left >= limit / 2,
            "the collection evicted \(removed.count) of the \(leftByOther) rows the other sweep left: \(left) bytes left under a limit of \(limit)"
        )
    }

    /// 2,500 rows of 1,000 bytes (three to a page); a sweep to a limit of 1 MB. What it evicts
    /// is counted in entries' sizes against an overrun measured in pages: the folder must be
    /// left near the limit's sweep target (90 to 95%), not at a fraction of it.
    ///
    /// Unscaled, the overrun was 2.8 MB of pages and the sweep freed 2.8 MB of entries, some
    /// 2,400 of 2,500 rows, leaving the store at about a fifth of the limit; a large overrun is
    /// now scaled by the entries' bytes to the bytes they occupy.
    @Test func aLargeSweepLeavesTheFolderNearItsLimitNotAFractionOfIt() throws {
        let disk = DiskTier(folder: folder.path, recheckInterval: 0)
        for index in 0..<2_500 { try Self.write(String(format: "k%05d", index), disk, bytes: 1_000) }
        let limit = 1_000_000
        var limits = DiskTier.Limits(size: limit, minimumFreeSpace: nil)
        limits.evictionOrder = .leastRecentlyUsed
        let plan = disk.planSweep(limits: limits, at: 100)
        let removed = disk.apply(plan)
        disk.finish(plan)
        let store = try EntryStore(folder: folder.path)
        let left = try store.occupiedBytes(includingLog: false, includingFreePages: false)
        #expect(
            left >= limit * 3 / 4,
            "the sweep evicted \(removed.count) of 2,500 rows and left \(left) bytes under a limit of \(limit)")
    }
}

/// The real file system, whose free space is plenty, and which runs `hook` (once) when asked for it.
struct HookedSpace: ForwardingFileSystem {
    let base = POSIXFileSystem()
    let hook: Locked<(@Sendable () -> Void)?>

    func availableCapacity(_ path: String) -> Int? {
        let run = hook.withLock { hook in
            defer { hook = nil }
            return hook
        }
        run?()
        return 1 << 40
    }
}
