import CashierEntryFormat
import CashierPlatform
import CashierSQLite
import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile review of 2808c42: a sweep of more than `EntryStore.movesPerSweep` rows gives its
/// free pages back inside its own transaction, so its commit leaves no free page, but the store
/// file keeps its length until a checkpoint copies the log back. A sweep measures what the
/// folder occupies as the store file's length less its free pages (`occupiedBytes(includingLog:
/// false, includingFreePages: false)`): before the checkpoint, the pages given back are counted
/// as entries. A reader (any process) holding a snapshot from before the sweep keeps every
/// checkpoint from getting there, and two processes sweeping at once meet the same window.
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
    /// Fails at 108a06e: the second sweep measures the store file as long as before the first
    /// (its pages went back in the commit, the file is cut only at a checkpoint the reader
    /// holds off) with no free page to subtract, and chooses all 441 rows left: a reader of
    /// another process that stays empties the cache, sweep after sweep. Not a regression: with
    /// the in-transaction vacuum disabled the sweep's reclaim (its own commit) does the same.
    /// Measuring the snapshot's `page_count` (less its free pages) instead of the file's length
    /// passes.
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
            "a second sweep chose \(second.choices.count) more rows of the \(2_000 - removed.count) left, within the limit")
        #expect(try reader.integer("SELECT count(*) FROM entry") == 2_000, "the reader's snapshot moved")
    }

    /// A collection with a size limit and a minimum of free space: between its measure of the
    /// folder and its walk, another process's sweep commits (here, when the collection asks for
    /// the free space, through a store connection of its own). The walk must not go on to evict
    /// what the measure counted, from what the other sweep left.
    ///
    /// Fails at 108a06e, as at dd564b4 (not a regression): the measure and the walk are two read
    /// transactions, and the walk's snapshot (ec0561a) is taken after the measure, so the
    /// collection evicts the 2,000 rows' overrun again from the 441 the other sweep left: all of
    /// them. Comparing the writer's `data_version` before the measure with the walk's snapshot,
    /// and measuring again when they differ, passes.
    @Test func aCollectionWhoseWalkFollowsAnotherProcesssSweepEvictsOnlyWhatIsStillOver() throws {
        let armed = Locked<(@Sendable () -> Void)?>(nil)
        let disk = DiskTier(folder: folder.path, fileSystem: HookedSpace(hook: armed), usesStore: true, recheckInterval: 0)
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
            "the collection evicted \(removed.count) of the \(leftByOther) rows the other sweep left: \(left) bytes left under a limit of \(limit)")
    }

    /// 2,500 rows of 1,000 bytes (three to a page); a sweep to a limit of 1 MB. What it evicts
    /// is counted in entries' sizes against an overrun measured in pages: the folder must be
    /// left near the limit's sweep target (90 to 95%), not at a fraction of it.
    ///
    /// Fails at 108a06e, as at dd564b4 (not a regression): the overrun is 2.8 MB of pages, the
    /// sweep frees 2.8 MB of entries, some 2,400 of 2,500 rows, and leaves the store at about a
    /// fifth of the limit. Two processes whose sweeps meet a large overrun (a relaunch with a
    /// lower limit) see it: SweepVacuumProcessReviewTests kept 125 of 2,650 rows under 1 MB.
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
