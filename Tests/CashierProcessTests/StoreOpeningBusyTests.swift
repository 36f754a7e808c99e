import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// An opening of the store that SQLite answers `SQLITE_BUSY` at once, without calling its busy
/// handler: the switch to WAL (`PRAGMA journal_mode = WAL`) upgrades the read transaction it
/// began to a write one, and SQLite never waits there (waiting could deadlock). Two processes
/// creating one folder's store at once meet it (the first process switches the new file to WAL
/// while the second holds its write lock to do the same): the rare failure of
/// `alternatingRowAndFileWritesOfOneKeyNeverReadNothing` (S5), "done sets=1477 nil=23 errors=23",
/// each set throwing "busy … (SQLite error 5 in step: PRAGMA journal_mode = WAL: database is
/// locked)" and then "… in prepare PRAGMA synchronous = NORMAL …" without any wait, and each
/// read after it missing. The opening failed without waiting; `StoreOpenBackoff` took it for a
/// busy timeout waited in vain, so every opening of the next second (writes and reads alike)
/// tried without waiting and failed too.
///
/// Here a `python3` process holds the write lock of a store in rollback-journal mode
/// (``WriteLockHolder/Mode/rollbackWrite``) for a moment: the opening meets the same busy
/// switch, deterministically.
@Suite("An opening of the store refused without a wait")
struct StoreOpeningBusyTests {
    @Test("A write whose opening meets the switch to WAL busy waits for the lock, and the value reads back")
    func anOpeningRefusedWithoutAWaitStillWaitsForTheLock() throws {
        let folder = try folderWithAStoreAnotherProcessMade()
        let holder = try WriteLockHolder(storeIn: folder.path, mode: .rollbackWrite)
        defer { holder.release() }
        var configuration = folder.configuration(memoryCountLimit: 0)
        configuration.busyTimeout = 10
        let cache = Cache(configuration)
        let backoff = try #require(cache.folderState.disk?.storeOpenBackoff)
        let key = CacheKey<String>("kept", schemaVersion: 1)

        // The other process lets go well within the busy timeout.
        let hold = 0.4
        let releaser = Thread { [holder] in
            Thread.sleep(forTimeInterval: hold)
            holder.release()
        }
        let started = Date()
        releaser.start()
        var thrown: String?
        do { try cache.set("new", for: key) } catch { thrown = "\(error)" }
        let waited = Date().timeIntervalSince(started)
        let read = cache.value(for: key)
        holder.waitUntilReleased()

        #expect(
            thrown == nil,
            "the set threw after \(waited) s of a \(configuration.busyTimeout) s busy timeout: \(thrown ?? "")")
        #expect(waited >= hold * 0.9 || thrown == nil, "it did not wait for the lock")
        #expect(read == "new", "the read right after the set found \(read ?? "nothing")")
        #expect(backoff.failedWaits == 0, "an opening that never waited counted as a busy timeout waited in vain")
        #expect(Cache(configuration).value(for: key) == "new")
    }
}
