import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile review of removals through a store another process replaced (4cc4ef5), with other
/// processes: when the replacing store cannot be opened at that moment, the removal says so.
@Suite struct RemovalThroughAReplacedStoreProcessReviewTests {
    /// The folder removed and made again by another process (its store holds the key again),
    /// and that store held by a third process in exclusive locking mode (as a process on a full
    /// volume holds it during a call) while this process removes the key. On 4cc4ef5 (and
    /// before) the removal met ESTALE, could not reopen (busy past the timeout), took that for
    /// "the folder is gone" and returned as if nothing were there to remove: no failure event,
    /// and once the lock went the removed value read again in every process (DESIGN.md: nothing
    /// removed is read again; a removal that cannot land must say so). With the default
    /// re-check interval too (argument `hourlyCheck` false): `indexForReading`'s own check
    /// failed the same way. Now the removal reports the failure.
    @Test(arguments: [true, false])
    func aRemovalWhileTheReplacingStoreIsLockedIsNotSilentlyDropped(hourlyCheck: Bool) throws {
        let folder = TemporaryFolder()
        let key = CacheKey<String>("k", schemaVersion: 1)
        let failures = Locked<[CacheError]>([])
        var configuration = folder.configuration(memoryCountLimit: 0)
        if hourlyCheck { configuration.folderRecheckNanoseconds = 3_600_000_000_000 }
        configuration.busyTimeout = 0.3
        configuration.onEvent = { event in
            if case .failure(_, let error) = event { failures.withLock { $0.append(error) } }
        }
        let cache = Cache(configuration)
        try cache.set("old", for: key)
        #expect(cache.value(for: key) == "old") // a read: the store file's check is not due again

        // Another process removes the folder and makes it again, writing the key.
        try FileManager.default.removeItem(at: folder.url)
        let other = try StressSession(folder)
        #expect(other.ask("set k new") == "ok")
        other.close()

        let holder = try WriteLockHolder(storeIn: folder.path, mode: .exclusive)
        cache.removeValue(for: key)
        holder.release()

        let reported = failures.withLock { $0 }
        let readAgain = Cache(folder.configuration(memoryCountLimit: 0)).value(for: key)
        #expect(
            !reported.isEmpty || readAgain == nil,
            "the removal reported nothing, and the removed value reads again: \(String(describing: readAgain))")
    }

    /// The same with `removeAll()` (failed on 4cc4ef5 with either interval).
    @Test(arguments: [true, false])
    func removeAllWhileTheReplacingStoreIsLockedIsNotSilentlyDropped(hourlyCheck: Bool) throws {
        let folder = TemporaryFolder()
        let key = CacheKey<String>("k", schemaVersion: 1)
        let failures = Locked<[CacheError]>([])
        var configuration = folder.configuration(memoryCountLimit: 0)
        if hourlyCheck { configuration.folderRecheckNanoseconds = 3_600_000_000_000 }
        configuration.busyTimeout = 0.3
        configuration.onEvent = { event in
            if case .failure(_, let error) = event { failures.withLock { $0.append(error) } }
        }
        let cache = Cache(configuration)
        try cache.set("old", for: key)
        #expect(cache.value(for: key) == "old")

        try FileManager.default.removeItem(at: folder.url)
        let other = try StressSession(folder)
        #expect(other.ask("set k new") == "ok")
        other.close()

        let holder = try WriteLockHolder(storeIn: folder.path, mode: .exclusive)
        cache.removeAll()
        holder.release()

        let reported = failures.withLock { $0 }
        let readAgain = Cache(folder.configuration(memoryCountLimit: 0)).value(for: key)
        #expect(
            !reported.isEmpty || readAgain == nil,
            "removeAll reported nothing, and the removed value reads again: \(String(describing: readAgain))")
    }

    /// The replacement made by a real second process (its store open in that process, its
    /// log not folded in) and no lock held: the removal reaches that store, and the other
    /// process itself no longer reads the value.
    @Test func aRemovalReachesAStoreAnotherLiveProcessMade() throws {
        let folder = TemporaryFolder()
        let key = CacheKey<String>("k", schemaVersion: 1)
        var configuration = folder.configuration(memoryCountLimit: 0)
        configuration.folderRecheckNanoseconds = 3_600_000_000_000
        let cache = Cache(configuration)
        try cache.set("old", for: key)
        #expect(cache.value(for: key) == "old")

        try FileManager.default.removeItem(at: folder.url)
        let other = try StressSession(folder)
        defer { other.exit() }
        #expect(other.ask("set k new") == "ok")
        #expect(other.ask("get k") == "value new")
        cache.removeValue(for: key)
        #expect(other.ask("get k") == "nil", "the other process reads the removed value")
        #expect(Cache(folder.configuration(memoryCountLimit: 0)).value(for: key) == nil)
    }
}
