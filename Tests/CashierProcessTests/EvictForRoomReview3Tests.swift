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
extension FullVolumeTests {
    // MARK: - Found: an eviction that could not commit is reported again by the next size sweep

    /// StorageAndLimits.md / `noteEvictedForRoom`: when the room the evicted files gave back does
    /// not let the removal's transaction commit, "their rows stayed without their files: each
    /// reads as absent, and goes at its next read or garbage collection". The eviction is
    /// reported then (`.evicted`). But a size sweep (`StoreIndex.planSweep` -> `chooseVictims`)
    /// does not look at files: it takes those orphan rows as eviction candidates like any other,
    /// counts their row sizes as freed, "removes" them and reports each as `.evicted` a second
    /// time (to every instance's `onEvent`, published again). One eviction, two events; and the
    /// sweep's arithmetic counts bytes it never freed.
    @Test("Evict review 3: an eviction for room that could not commit is reported again by the next size sweep")
    func anUncommittedEvictionIsReportedTwice() throws {
        let volume = try #require(FullVolume.folder)
        let folder = URL(fileURLWithPath: volume).appendingPathComponent("evict3-twice-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try Self.seedForReview(folder)
        // Another reader has the large files open: their unlinks free no block, so the
        // removal's transaction still finds no room and its evictions' rows stay.
        let held = Self.largeSeedNames.map { open(Self.entryFile(folder, $0), O_RDONLY) }
        var closed = false
        defer { if !closed { for fd in held where fd >= 0 { close(fd) } } }
        try #require(held.allSatisfy { $0 >= 0 })
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
        for fd in held where fd >= 0 { close(fd) }
        closed = true
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
    /// Every event a cache reports, in order.
    final class OrderedEventLog: Sendable {
        private let events = Locked<[CacheEvent]>([])
        var handler: @Sendable (CacheEvent) -> Void { { [events] event in events.withLock { $0.append(event) } } }
        /// Every `.evicted` event, in order.
        var evictedEvents: [(key: String, bytes: Int)] {
            events.withLock { $0 }.compactMap { if case .evicted(let key, let bytes) = $0 { (key, bytes) } else { nil } }
        }
        var failures: [String] {
            events.withLock { $0 }.compactMap { if case .failure = $0 { "\($0)" } else { nil } }
        }
    }
}
