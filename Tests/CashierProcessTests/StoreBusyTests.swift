import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Another process holding the store's write lock (an app extension mid-transaction, or one
/// suspended while it held it): a write waits at most ``Cache/Configuration-swift.struct/busyTimeout``
/// in all and then throws `.busy`, which a caller can tell from an I/O fault; a memory hit never
/// waits for it (review S3; issue 34, item 2).
@Suite("The store's write lock held by another process")
struct StoreBusyTests {
    @Test("A write while another process holds the write lock throws .busy after busyTimeout and changes nothing")
    func aWriteBlockedByAnotherProcessThrowsBusy() throws {
        let folder = TemporaryFolder()
        var configuration = folder.configuration(memoryCountLimit: 0)
        configuration.busyTimeout = 0.5
        let cache = Cache(configuration)
        let key = CacheKey<String>("kept")
        // Written before the lock is taken: the store exists, and so do this type's names.
        try cache.set("stored", for: key)

        let holder = try WriteLockHolder(storeIn: folder.path)
        defer { holder.release() }
        for attempt in ["a value of a type the store knows", "a value of a type it does not know yet"] {
            do {
                if attempt.hasSuffix("knows") {
                    try cache.set("replacement", for: key)
                } else {
                    try cache.set([1, 2, 3], for: CacheKey<[Int]>("new type"))
                }
                Issue.record("the write of \(attempt) returned while another process held the write lock")
            } catch let error as CacheError {
                #expect(error.kind == .busy, "\(attempt): \(error)")
                #expect(error.kind.rawValue == "busy")
            }
        }
        // Reads do not wait for the lock, and the failed write changed nothing.
        #expect(cache.value(for: key) == "stored")
        #expect(Cache(configuration).value(for: key) == "stored")

        holder.release()
        // Writes resume once the other process lets go.
        try cache.set("after", for: key)
        #expect(Cache(configuration).value(for: key) == "after")
    }

    @Test("A memory hit returns while a write on another thread waits for another process's write lock")
    func aMemoryHitNeverWaitsForAWriteBlockedOnTheLock() throws {
        let folder = TemporaryFolder()
        var configuration = folder.configuration(memoryCountLimit: nil)
        configuration.busyTimeout = 30
        // Every hit checks the store for other processes' writes: the check is what must not wait.
        configuration.memoryCoherenceNanoseconds = 0
        let cache = Cache(configuration)
        let hot = CacheKey<String>("hot")
        let written = CacheKey<String>("written")
        try cache.set("in memory", for: hot)
        try cache.set("before", for: written)
        #expect(cache.entry(for: hot)?.origin == .memory)

        let holder = try WriteLockHolder(storeIn: folder.path)
        let writer = BackgroundWrite { try cache.set("after", for: written) }
        #expect(writer.started.wait(timeout: .now() + 60) == .success)
        // Hits on this thread for a while after the write started: each returns the value while
        // the write is still blocked (it cannot finish before the holder lets go, which it does
        // only after the last hit).
        var (hits, misses) = (0, 0)
        let until = Date().addingTimeInterval(1)
        while Date() < until || hits < 100 {
            if cache.value(for: hot) != "in memory" { misses += 1 }
            hits += 1
        }
        #expect(misses == 0, "\(misses) of \(hits) hits did not return the value in memory")
        #expect(!writer.isFinished, "the blocked write finished before the lock was released: \(writer.outcome)")
        holder.release()
        #expect(writer.finished.wait(timeout: .now() + 120) == .success, "the write never returned")
        #expect(writer.outcome == "ok", "the write failed after the lock was released: \(writer.outcome)")
        #expect(Cache(folder.configuration(memoryCountLimit: 0)).value(for: written) == "after")
    }

    @Test(
        "A read from disk of an entry last used long ago returns while another process holds the write lock; its use lands after",
        arguments: [0, nil] as [Int?])
    func aColdReadNeverWaitsToRecordItsUse(memoryCountLimit: Int?) throws {
        let folder = TemporaryFolder()
        let key = CacheKey<String>("old")
        do {
            // Written an hour ago by the writer's clock: the read below is a use its row lacks.
            var configuration = folder.configuration(memoryCountLimit: 0)
            configuration.now = { Date(timeIntervalSinceNow: -3_600) }
            let writer = Cache(configuration)
            try writer.set("stored", for: key)
            writer.waitForBackgroundWork()
        }
        var configuration = folder.configuration(memoryCountLimit: memoryCountLimit)
        configuration.busyTimeout = 60
        let cache = Cache(configuration)
        #expect(Self.lastUse(in: folder) ?? .max < Int(Date().timeIntervalSince1970) - 3_000)

        let holder = try WriteLockHolder(storeIn: folder.path)
        defer { holder.release() }
        // The read returns while the lock is held (waiting for it would take the 60 s busy timeout).
        let reader = BackgroundWrite { if cache.value(for: key) != "stored" { throw ReadMissed() } }
        #expect(reader.finished.wait(timeout: .now() + 30) == .success, "the read waited for the write lock")
        #expect(reader.outcome == "ok")
        holder.release()
        cache.waitForBackgroundWork()
        #expect(
            Self.lastUse(in: folder) ?? 0 > Int(Date().timeIntervalSince1970) - 600, "the read's use was not written")
    }

    private struct ReadMissed: Error {}

    /// Finding 5 of the full-volume review: a process locked out of the store (another process
    /// holds it in exclusive locking mode, as one on a full volume does during a call) waited two
    /// to four busy timeouts a call, one at each opening of the store the call made (the memory
    /// tier's ticket, the call's own, one in the background). Now once: after an opening waited
    /// in vain, the openings within the retry interval try without waiting. The openings' clock
    /// is the test's: each call after the first comes an interval later, or within one.
    @Test("A call locked out of the store waits for another process's lock at most once")
    func aLockedOutCallWaitsForTheLockAtMostOnce() throws {
        let folder = try folderWithAStoreAnotherProcessMade()
        let holder = try WriteLockHolder(storeIn: folder.path, mode: .exclusive)
        defer { holder.release() }
        let clock = Locked<UInt64>(1 << 40)
        var configuration = folder.configuration(memoryCountLimit: nil) // its ticket opens the store too
        configuration.busyTimeout = 0.1
        configuration.storeOpenClock = { clock.withLock { $0 } }
        let cache = Cache(configuration)
        let backoff = try #require(cache.folderState.disk?.storeOpenBackoff)
        let key = CacheKey<String>("kept", schemaVersion: 1)
        func anIntervalLater() { clock.withLock { $0 += backoff.retryInterval } }

        #expect(cache.value(for: key) == nil, "read a store another process holds exclusively")
        #expect(backoff.failedWaits == 1, "a read")
        anIntervalLater()
        #expect {
            try cache.set("new", for: key)
        } throws: { error in
            (error as? CacheError)?.kind == .busy
        }
        #expect(backoff.failedWaits == 2, "a write")
        anIntervalLater()
        #expect(cache.count == 0)
        #expect(backoff.failedWaits == 3, "count")
        // Within the interval a call fails at once; once the holder lets go, it gets the store.
        #expect(cache.value(for: CacheKey<String>("other", schemaVersion: 1)) == nil)
        #expect(backoff.failedWaits == 3, "a read within the interval")
        holder.release()
        #expect(cache.value(for: key) == "stored", "a read once the holder let go, within the interval")
    }

    /// The last use of the one row of the folder's store, read by `python3`'s SQLite.
    static func lastUse(in folder: TemporaryFolder) -> Int? {
        folder.storeInteger("select max(last_use) from entry")
    }
}

/// A `python3` process holding a lock on a store until ``release()``, which any thread may call.
final class WriteLockHolder: @unchecked Sendable {
    enum Mode {
        /// `BEGIN IMMEDIATE`: SQLite's write lock (in WAL mode readers still read).
        case write
        /// Exclusive locking mode, as a process opens the store on a full volume: no other
        /// connection can even open it.
        case exclusive
        /// The store switched to rollback-journal mode (as a new store is until its first opening
        /// has switched it to WAL), then `BEGIN IMMEDIATE`: an opening meets the switch to WAL
        /// busy, which SQLite answers without its busy handler (``StoreOpeningBusyTests``).
        case rollbackWrite
    }

    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let lock = NSLock()
    private var released = false // guarded by lock
    private var exited = false // guarded by lock

    static func script(_ mode: Mode) -> String {
        let take =
            switch mode {
            case .write: "connection.execute(\"BEGIN IMMEDIATE\")"
            case .exclusive:
                "connection.execute(\"PRAGMA locking_mode = EXCLUSIVE\")\n"
                    + "connection.execute(\"SELECT count(*) FROM entry\").fetchall()"
            case .rollbackWrite:
                "mode = connection.execute(\"PRAGMA journal_mode = DELETE\").fetchone()[0]\n"
                    + "if mode != \"delete\": sys.exit(\"journal mode \" + mode)\n"
                    + "connection.execute(\"BEGIN IMMEDIATE\")"
            }
        // The switch to rollback mode may wait for the seeding process's last connection.
        let timeout = mode == .rollbackWrite ? 5 : 0
        return """
            import sqlite3, sys
            connection = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=\(timeout))
            \(take)
            print("holding", flush=True)
            sys.stdin.readline()
            connection.close()
            print("released", flush=True)
            """
    }

    init(store: String, mode: Mode = .write) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", Self.script(mode), store]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let line = String(decoding: output.fileHandleForReading.readLine(), as: UTF8.self)
        #expect(line == "holding", "python3 did not take the lock (\(line)): is python3 with sqlite3 installed?")
    }

    /// A holder of the store in the folder at `folder`.
    convenience init(storeIn folder: String, mode: Mode = .write) throws {
        try self.init(store: folder + "/" + DiskTier.storeFileName, mode: mode)
    }

    /// Lets go of the lock (a write transaction is committed: nothing was written) and waits for
    /// the process to exit; the first call only.
    func release() {
        let first = lock.withLock {
            defer { released = true }
            return !released
        }
        guard first else { return }
        if process.isRunning { input.fileHandleForWriting.write(Data("\n".utf8)) }
        process.waitUntilExit()
        lock.withLock { exited = true }
    }

    /// Waits until ``release()`` (from any thread) has been asked, and the process has exited.
    /// Not by a second `waitUntilExit()`: two at once on one `Process` (this thread's and
    /// `release()`'s) crashed swift-corelibs-foundation, both invalidating its run-loop source
    /// (a CI run: `Process.waitUntilExit()` → `CFRunLoopSourceInvalidate`, a null dereference).
    func waitUntilReleased() {
        while !lock.withLock({ exited }) { usleep(1_000) }
    }

    deinit { release() }
}

/// A folder whose store another process made (a `StressSession`, closed since), holding the
/// string "stored" under "kept": the store a ``WriteLockHolder`` then holds.
func folderWithAStoreAnotherProcessMade() throws -> TemporaryFolder {
    let folder = TemporaryFolder()
    let seeding = try StressSession(folder)
    #expect(seeding.ask("set kept stored") == "ok")
    seeding.close()
    return folder
}

/// A write run on a thread of its own, with what it came to.
final class BackgroundWrite: @unchecked Sendable {
    let started = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var result: String? // guarded by lock

    init(_ write: @escaping @Sendable () throws -> Void) {
        Thread.detachNewThread { [self] in
            started.signal()
            let outcome: String
            do {
                try write()
                outcome = "ok"
            } catch {
                outcome = "\(error)"
            }
            lock.withLock { result = outcome }
            finished.signal()
        }
    }

    var isFinished: Bool { lock.withLock { result != nil } }
    var outcome: String { lock.withLock { result ?? "not finished" } }
}

extension FileHandle {
    /// Bytes up to the next newline (not included), or to the end of the input.
    func readLine() -> Data {
        var line = Data()
        while true {
            let byte = readData(ofLength: 1)
            if byte.isEmpty || byte.first == UInt8(ascii: "\n") { return line }
            line.append(byte)
        }
    }
}
