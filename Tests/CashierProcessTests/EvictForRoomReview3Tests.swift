import CashierPlatform
import CashierSQLite
import CashierStress
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A third hostile review of the evictions for room (39561f3: only `removeValue` of one small
/// entry evicts, once; evictions published under a key lock only when it is free, else requeued;
/// `KeyLocks.withLockIfFree`). In `FullVolumeTests` (serialized, `CASHIER_FULL_VOLUME` on a 2 MiB
/// tmpfs). Seeds are `seedForReview`'s: `seed-0`, `seed-10`, `seed-20` large (20 KiB files).
/// Each test pins the fix made after it.
extension FullVolumeTests {
    // MARK: - Found: an eviction that could not commit is reported again by the next size sweep

    /// StorageAndLimits.md / `noteEvictedForRoom`: when the room the evicted files gave back does
    /// not let the removal's transaction commit, "their rows stayed without their files: each
    /// reads as absent, and goes at its next read or garbage collection". The eviction is
    /// reported then (`.evicted`). But a size sweep (`StoreIndex.planSweep` -> `chooseVictims`)
    /// does not look at files: it takes those orphan rows as eviction candidates like any other,
    /// counts their row sizes as freed, "removes" them and reports each as `.evicted` a second
    /// time (to every instance's `onEvent`, published again). One eviction, two events; and the
    /// sweep's arithmetic counts bytes it never freed. Now a sweep takes such a row (a large
    /// entry's, its file gone) as a removal, unannounced, that frees nothing.
    @Test("Evict review 3: an eviction for room that could not commit is not reported again by the next size sweep")
    func anUncommittedEvictionIsReportedTwice() throws {
        let volume = try #require(FullVolume.folder)
        let folder = URL(fileURLWithPath: volume).appendingPathComponent("evict3-twice-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try Self.seedForReview(folder)
        // Another reader has the large files open: their unlinks free no block, so the
        // removal's transaction still finds no room and its evictions' rows stay.
        let held = try HeldFiles(Self.largeSeedNames.map { Self.entryFile(folder, $0) })
        let filler = Self.fillVolumeWithAFile(volume)
        var fillerRemoved = false
        defer { if !fillerRemoved { unlink(filler) } }

        // One app, one event handler, two instances on the folder (one with a size limit).
        let log = OrderedEventLog()
        var configuration = Self.configuration(folder, memoryCountLimit: 0)
        configuration.onEvent = log.handler
        let cache = Cache(configuration)
        cache.removeValue(for: CacheKey<Data>(Self.reviewRow.name))
        cache.waitForBackgroundWork()
        let gone = Set(Self.largeFilesGone(folder))
        let first = log.evictedEvents
        try #require(!gone.isEmpty, "nothing evicted: the case did not arise; \(log.failures)")

        // Room back, the files let go; no read of the evicted keys, no collection yet.
        held.close()
        unlink(filler)
        fillerRemoved = true

        var limited = Self.configuration(folder, memoryCountLimit: 0)
        limited.diskSizeLimit = 8 * 1024
        limited.onEvent = log.handler
        let sweeping = Cache(limited)
        sweeping.sweepIfNeeded()
        sweeping.waitForBackgroundWork()
        let all = log.evictedEvents
        let counts = Dictionary(all.map { ($0.key, 1) }, uniquingKeysWith: +)
        let twice = counts.filter { $0.value > 1 }.map(\.key).sorted()
        #expect(
            twice.isEmpty,
            "evicted keys reported more than once: \(twice) (first by the removal: \(first.map(\.key).sorted()); files gone: \(gone.sorted()))"
        )
        _ = cache
    }
}

extension FullVolumeTests {
    // MARK: - Found: an eviction for room through a store whose folder was made again

    /// 39561f3 gave the reconcile an identity check (`removeIfStillOurs`, EntryStore+Maintenance.swift):
    /// "A folder removed and made again by another process holds another store: what this one
    /// says of its files ... is not so, and removing them loses the other process's entries."
    /// Found: `evictLargeEntries` (EntryStore+Reserve.swift) had none: a removal through a store whose
    /// folder another process removed and made again (not yet noticed: `indexForReading` checks at
    /// most every `folderRecheckNanoseconds`, 10 ms by default; widened here to make it
    /// deterministic) evicts the old store's large rows by unlinking the files of the same keys'
    /// names in the NEW folder: the other process's entries, whose writes returned, lose their
    /// files while their rows stay; nothing is reported to it. (The old store's file is unlinked
    /// but still takes room on the same volume, so its removal finds it full.) Now the eviction
    /// makes the same check first, and evicts nothing through a replaced store.
    @Test("Evict review 3: an eviction for room through a replaced store unlinks none of the new folder's entries")
    func anEvictionThroughAReplacedStoreUnlinksTheNewFoldersFiles() throws {
        let volume = try #require(FullVolume.folder)
        let folder = URL(fileURLWithPath: volume).appendingPathComponent("evict3-replaced-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try Self.seedForReview(folder)
        let log = OrderedEventLog()
        var configuration = Self.configuration(folder, memoryCountLimit: 0)
        configuration.folderRecheckNanoseconds = 60 * 1_000_000_000
        configuration.onEvent = log.handler
        let old = Cache(configuration)
        // The old store open (a read), as an app that just used it.
        try #require(old.value(for: CacheKey<Data>("seed-2")) != nil)

        // Another process removes the folder and makes it again with the same keys.
        try FileManager.default.removeItem(at: folder)
        do {
            let other = try StressSession(folderPath: folder.path)
            defer { other.exit() }
            for index in 0..<30 {
                let bytes = index % 10 == 0 ? 20 * 1024 : 1_500
                try #require(other.ask("fill seed-\(index) \(bytes) \(index)") == "ok", "the other process's write")
            }
        }
        usleep(200_000)
        _ = Self.dropReserve(folder)
        let before = Self.largeFilesGone(folder)
        try #require(before.isEmpty, "the new folder lacks large files before the removal: \(before)")
        let filler = Self.fillVolumeWithAFile(volume)
        var fillerRemoved = false
        defer { if !fillerRemoved { unlink(filler) } }

        old.removeValue(for: CacheKey<Data>(Self.reviewRow.name))
        old.waitForBackgroundWork()
        let gone = Self.largeFilesGone(folder)
        unlink(filler)
        fillerRemoved = true
        // What the process that made the folder again reads of its own writes, in a process of its own.
        let reader = try StressSession(folderPath: folder.path)
        let wrong = Self.largeSeedNames.sorted().filter { name in
            let index = Int(name.dropFirst("seed-".count))!
            return reader.ask("check \(name) \(20 * 1024) \(index)") != "whole"
        }
        reader.exit()
        #expect(
            gone.isEmpty && wrong.isEmpty,
            "the new folder's large entries lost their files through the old store's eviction: gone \(gone.sorted()), read wrong \(wrong.sorted()); old instance's evictions \(log.evictedEvents.map(\.key)); failures \(log.failures)"
        )
    }
}

extension FullVolumeTests {
    /// Every event a cache reports, in order.
    final class OrderedEventLog: Sendable {
        private let events = Locked<[CacheEvent]>([])
        var handler: @Sendable (CacheEvent) -> Void { { [events] event in events.withLock { $0.append(event) } } }
        /// Every `.evicted` event, in order.
        var evictedEvents: [(key: String, bytes: Int)] {
            events.withLock { $0 }.compactMap {
                if case .evicted(let key, let bytes) = $0 { (key, bytes) } else { nil }
            }
        }
        var failures: [String] {
            events.withLock { $0 }.compactMap { if case .failure = $0 { "\($0)" } else { nil } }
        }
    }
}
