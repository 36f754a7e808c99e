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
/// Here a `python3` process holds the write lock of a store in rollback-journal mode (as a new
/// store is until its first opening has switched it) for a moment: the opening meets the same
/// busy switch, deterministically.
@Suite("An opening of the store refused without a wait")
struct StoreOpeningBusyTests {
    @Test("A write whose opening meets the switch to WAL busy waits for the lock, and the value reads back")
    func anOpeningRefusedWithoutAWaitStillWaitsForTheLock() throws {
        let folder = TemporaryFolder()
        let seeding = try StressSession(folder)
        #expect(seeding.ask("set kept stored") == "ok")
        seeding.close()
        let holder = try RollbackWriteLockHolder(store: folder.path + "/" + DiskTier.storeFileName)
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

/// A `python3` process that puts a store in rollback-journal mode and holds its write lock
/// (`BEGIN IMMEDIATE`, a reserved lock: other connections still read) until ``release()``.
final class RollbackWriteLockHolder: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let lock = NSLock()
    private var released = false // guarded by lock

    static let script = """
        import sqlite3, sys
        connection = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=5)
        mode = connection.execute("PRAGMA journal_mode = DELETE").fetchone()[0]
        connection.execute("BEGIN IMMEDIATE")
        print("holding " + mode, flush=True)
        sys.stdin.readline()
        connection.execute("COMMIT")
        print("released", flush=True)
        sys.stdin.readline()
        """

    init(store: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", Self.script, store]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let line = String(decoding: output.fileHandleForReading.readLine(), as: UTF8.self)
        #expect(
            line == "holding delete",
            "python3 did not take the write lock (\(line)): is python3 with sqlite3 installed?")
    }

    /// Commits (nothing was written), keeping the connection open; once only.
    func release() {
        let first = lock.withLock {
            defer { released = true }
            return !released
        }
        guard first, process.isRunning else { return }
        input.fileHandleForWriting.write(Data("\n".utf8))
        _ = output.fileHandleForReading.readLine()
    }

    /// Waits for ``release()`` (from any thread) to have been asked, then ends the process.
    func waitUntilReleased() {
        while !lock.withLock({ released }) { usleep(1_000) }
        if process.isRunning { input.fileHandleForWriting.write(Data("\n".utf8)) }
        process.waitUntilExit()
    }

    deinit {
        release()
        waitUntilReleased()
    }
}
