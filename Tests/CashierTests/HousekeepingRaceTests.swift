import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

#if canImport(Glibc)
import Glibc
#endif

/// Bulk removals racing with writes leave an instance reading what a fresh one reads.
@Suite struct HousekeepingRaceTests {
    let folder = TemporaryFolder()
    let clock = TestClock()

    enum BulkRemoval: String, CaseIterable, CustomTestStringConvertible {
        case removeAll, removeAllWhere, removeAllUnlocked, removeExpired, collectGarbage, sizeSweeps
        var testDescription: String { rawValue }
    }

    static let keys = (0..<200).map { CacheKey<Int>("key-\($0)") }

    @Test(
        "After a bulk removal races with writes, the instance reads what a fresh instance reads",
        arguments: BulkRemoval.allCases)
    func bulkRemovalRacingWithWritesLeavesMemoryAndDiskAgreeing(_ removal: BulkRemoval) throws {
        var configuration = makeConfiguration(folder, clock: clock)
        if removal == .sizeSweeps { configuration.diskSizeLimit = 40 * 120 }
        if removal == .collectGarbage { configuration.diskSizeLimit = 100 * 120 }
        // Expiry removals need expired entries: these are written already expired.
        let lifespan: Lifespan? =
            removal == .removeExpired || removal == .collectGarbage ? .until(Date(timeIntervalSince1970: 0)) : nil
        for round in 0..<4 {
            let cache = Cache(configuration)
            // The remover starts once every writer has written, and removes for as long as
            // any is still writing (no removal starts after the last write).
            let writing = DispatchGroup()
            for _ in 0..<3 { writing.enter() }
            let writersLeft = Locked(3)
            runOnThreads(4) { worker in
                if worker == 3 {
                    writing.wait()
                    while writersLeft.withLock({ $0 }) > 0 {
                        switch removal {
                        case .removeAll: cache.removeAll()
                        case .removeAllWhere: cache.removeAll(where: { _ in true })
                        case .removeAllUnlocked: cache.removeAllUnlocked()
                        case .removeExpired: cache.removeExpired()
                        case .collectGarbage: cache.collectGarbage()
                        case .sizeSweeps: cache.waitForBackgroundWork()
                        }
                    }
                    return
                }
                for (index, key) in Self.keys.enumerated() where index % 3 == worker {
                    try? cache.set(round * 1000 + index, for: key, lifespan: lifespan)
                    if index / 3 == 10 { writing.leave() }
                }
                writersLeft.withLock { $0 -= 1 }
            }
            cache.waitForBackgroundWork()
            let fresh = Cache(configuration)
            var disagreements: [String] = []
            for key in Self.keys where cache.entry(for: key)?.value != fresh.entry(for: key)?.value {
                disagreements.append(key.name)
            }
            #expect(
                disagreements.isEmpty,
                "round \(round): \(disagreements.count) keys disagree, e.g. \(disagreements.prefix(5))")
            cache.removeAll()
        }
    }

    @Test func removeAllWaitsForAWriteInProgressAndTakesIt() throws {
        let cache = Cache(makeConfiguration(folder, clock: clock))
        let key = CacheKey<Int>("k")
        try cache.set(1, for: key)
        // A write holding its key, then removeAll from another thread: it must wait, then remove the write's file too.
        let started = DispatchSemaphore(value: 0)
        let removed = DispatchSemaphore(value: 0)
        cache.folderState.keyLocks.withLock(key.name) {
            DispatchQueue.global().async {
                started.signal()
                cache.removeAll()
                removed.signal()
            }
            started.wait()
            let finishedEarly = removed.wait(timeout: .now() + 0.2) == .success
            #expect(!finishedEarly, "removeAll did not wait for the write holding its key")
            if finishedEarly { removed.signal() }
        }
        removed.wait()
        #expect(cache.value(for: key) == nil)
        #expect(folder.entryFiles.isEmpty)
    }
}

/// Garbage collection reclaims what no read can return.
@Suite struct ReclaimTests {
    let folder = TemporaryFolder()

    @Test func garbageCollectionReclaimsUnversionedEntriesOfAnotherAppVersion() throws {
        let old = Cache(makeConfiguration(folder, appVersion: "1.0", storage: .files))
        try old.set("old", for: CacheKey<String>("unversioned"))
        try old.set("kept", for: CacheKey<String>("versioned", schemaVersion: 1))
        let events = EventLog()
        let updated = Cache(makeConfiguration(folder, events: events, appVersion: "2.0", storage: .files))
        try updated.set("new", for: CacheKey<String>("current"))
        #expect(updated.keys == ["current", "versioned"])
        updated.collectGarbage()
        #expect(events.discards.count == 1)
        #expect(events.discards.first?.0 == "unversioned")
        #expect(events.discards.first?.1 == .appVersionMismatch(stored: "1.0", current: "2.0"))
        #expect(folder.entryFiles.count == 2)
        let fresh = Cache(makeConfiguration(folder, appVersion: "2.0", storage: .files))
        #expect(fresh.count == 2)
        #expect(fresh.totalSize == updated.totalSize)
        #expect(fresh.keys == ["current", "versioned"])
        #expect(fresh.value(for: CacheKey<String>("versioned", schemaVersion: 1)) == "kept")
    }

    @Test func anAppWithoutAVersionReclaimsEntriesWrittenWithOne() throws {
        try Cache(makeConfiguration(folder, appVersion: "1.0")).set(1, for: CacheKey<Int>("k"))
        let events = EventLog()
        let unversionedApp = Cache(makeConfiguration(folder, events: events, appVersion: nil))
        #expect(unversionedApp.keys.isEmpty)
        unversionedApp.collectGarbage()
        #expect(events.discards.first?.1 == .appVersionMismatch(stored: "1.0", current: nil))
        #expect(unversionedApp.count == 0)
    }

    @Test func removeExpiredLeavesOtherAppVersionsToGarbageCollection() throws {
        try Cache(makeConfiguration(folder, appVersion: "1.0", storage: .files)).set(1, for: CacheKey<Int>("k"))
        let cache = Cache(makeConfiguration(folder, appVersion: "2.0", storage: .files))
        cache.removeExpired()
        #expect(folder.entryFiles.count == 1)
    }
}

/// Observers end on the truth.
@Suite struct ObserverOrderTests {
    let folder = TemporaryFolder()

    @Test func anExpiryAnnouncedAfterANewerWriteIsDropped() async throws {
        let clock = TestClock()
        let cache = Cache(makeConfiguration(folder, clock: clock))
        let key = CacheKey<Int>("k", lifespan: .seconds(10))
        try cache.set(1, for: key)
        clock.advance(by: 20)
        var iterator = cache.updates(for: key).makeAsyncIterator()
        #expect(await iterator.next() == .some(nil)) // expired
        try cache.set(2, for: key)
        // A read that found the old value expired, announcing it only now, after the write.
        cache.missExpired(key.name)
        try cache.set(3, for: key)
        #expect(await iterator.next() == 2)
        #expect(await iterator.next() == 3) // not the stale nil in between
    }

    @Test("Racing writes leave an updates(for:) stream on the stored value", arguments: [false, true])
    func racingWritesLeaveTheStreamOnTheStoredValue(memoryOnly: Bool) async throws {
        for round in 0..<50 {
            var configuration = makeConfiguration(folder)
            if memoryOnly { configuration.location = .memoryOnly }
            // An app's onEvent runs before observers hear of a write: make it slow on one thread,
            // so that thread's announcements would come late.
            configuration.onEvent = { event in
                if case .write = event, Thread.current.name == "slow" { for _ in 0..<50 { sched_yield() } }
            }
            let cache = Cache(configuration)
            let key = CacheKey<Int>("contended")
            try cache.set(-1, for: key)
            var iterator = cache.updates(for: key).makeAsyncIterator()
            #expect(await iterator.next() == -1)
            runOnThreads(4) { worker in
                if worker == 0 { Thread.current.name = "slow" }
                for index in 0..<5 { try? cache.set(worker * 100 + index, for: key) }
            }
            // Every write is announced once: the stream holds exactly 20 more values.
            var last: Int?? = .none
            for _ in 0..<20 { last = await iterator.next() }
            #expect(last == .some(cache.value(for: key)), "round \(round)")
        }
    }
}

/// Runs `body(0)`…`body(count - 1)` each on a thread of its own, all at once (unlike
/// `concurrentPerform`, whose pool may run them one after another on a small machine),
/// and returns when every one has.
func runOnThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let done = DispatchGroup()
    for index in 0..<count {
        done.enter()
        Thread.detachNewThread {
            body(index)
            done.leave()
        }
    }
    done.wait()
}
