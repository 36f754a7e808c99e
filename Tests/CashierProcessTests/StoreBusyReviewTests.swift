import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile review of 9afa85f (`StoreOpenBackoff`): the docs promise a process locked out of the
/// store (another process holds it in exclusive locking mode, as one on a full volume does during
/// a call) waits for the lock "one busy timeout at most" a call. The existing test covers a read,
/// a write and `count`; this one every other call an app makes, each an interval of the backoff's
/// clock after the last (so each may wait once).
@Suite("The store held exclusively by another process: review of the backoff")
struct StoreBusyReviewTests {
    @Test("Every call of a process locked out of the store waits for the lock at most once")
    func everyLockedOutCallWaitsAtMostOnce() async throws {
        let folder = TemporaryFolder()
        let seeding = try StressSession(folder)
        #expect(seeding.ask("set kept stored") == "ok")
        #expect(seeding.ask("set other stored") == "ok")
        #expect(seeding.ask("fill large 20000 1") == "ok")
        seeding.close()
        let clock = Locked<UInt64>(1 << 40)
        var configuration = folder.configuration(memoryCountLimit: nil)
        configuration.busyTimeout = 0.1
        configuration.memoryCoherenceNanoseconds = 0 // every memory hit checks the store
        configuration.storeOpenClock = { clock.withLock { $0 } }
        // The holder first: an exclusive lock is taken only with no other connection open.
        let holder = try WriteLockHolder(storeIn: folder.path, mode: .exclusive)
        defer { holder.release() }
        let cache = Cache(configuration)
        let backoff = try #require(cache.folderState.disk?.storeOpenBackoff)
        var waits = backoff.failedWaits
        var overWaited: [String] = []
        /// Runs `body` an interval after the last call, with background work of the last done.
        func call(_ name: String, allowed: Int = 1, _ body: () throws -> Void) rethrows {
            cache.waitForBackgroundWork()
            waits = backoff.failedWaits
            clock.withLock { $0 += backoff.retryInterval }
            try body()
            let waited = backoff.failedWaits - waits
            if waited > allowed { overWaited.append("\(name): \(waited) waits") }
        }

        call("value(for:) of a stored key") { _ = cache.value(for: CacheKey<String>("kept", schemaVersion: 1)) }
        call("value(for:) of a miss") { _ = cache.value(for: CacheKey<String>("absent", schemaVersion: 1)) }
        call("entry(for:)") { _ = cache.entry(for: CacheKey<String>("other", schemaVersion: 1)) }
        call("contains") { _ = cache.contains(CacheKey<String>("other", schemaVersion: 1)) }
        call("removeValue(for:)") { cache.removeValue(for: CacheKey<String>("other", schemaVersion: 1)) }
        call("removeAll(where:)") { cache.removeAll(where: { $0 == "large" }) }
        call("keys") { _ = cache.keys }
        call("totalSize") { _ = cache.totalSize }
        call("removeExpired()") { cache.removeExpired() }
        call("collectGarbage()") { cache.collectGarbage() }
        call("refresh") { cache.refresh(CacheKey<String>("other", schemaVersion: 1)) }
        call("lock") { cache.lock(CacheKey<String>("other", schemaVersion: 1)) }
        call("removeAll()") { cache.removeAll() }
        cache.waitForBackgroundWork()
        waits = backoff.failedWaits
        clock.withLock { $0 += backoff.retryInterval }
        _ = try? await cache.value(for: CacheKey<String>("fetched", schemaVersion: 1)) { "fetched" }
        if backoff.failedWaits - waits > 1 { overWaited.append("value(for:fetch:): \(backoff.failedWaits - waits)") }
        #expect(backoff.failedWaits >= 10, "the calls did not wait for the holder's lock: it did not lock them out")
        #expect(overWaited.isEmpty, "calls that waited for the lock more than once: \(overWaited)")
        holder.release()
        cache.waitForBackgroundWork()
    }

    /// A removal in a process locked out of the store: `removeValue(for:)` returns and the value
    /// is gone from memory, but the row stays. DESIGN.md: "Nothing removed is read again". Either
    /// the removal is reported (a `.failure` naming the key) or the value must not read again.
    @Test("A removeValue locked out of the store says so, or the value does not read again once the lock is released")
    func aLockedOutRemovalSaysSoOrHolds() throws {
        let folder = try folderWithAStoreAnotherProcessMade()
        let failures = Locked<[String]>([])
        var configuration = folder.configuration(memoryCountLimit: nil)
        configuration.busyTimeout = 0.1
        configuration.onEvent = { event in
            if case .failure(let key, let error) = event {
                failures.withLock { $0.append("\(key ?? "-") \(error.kind)") }
            }
        }
        let holder = try WriteLockHolder(storeIn: folder.path, mode: .exclusive)
        let cache = Cache(configuration)
        let key = CacheKey<String>("kept", schemaVersion: 1)
        cache.removeValue(for: key)
        cache.waitForBackgroundWork()
        holder.release()
        let readAgain = cache.value(for: key) != nil
        let reported = failures.withLock { $0 }.contains { $0.hasPrefix("kept ") }
        #expect(
            !readAgain || reported,
            "the removal returned silently and the value reads again: \(failures.withLock { $0 })")
    }
}
