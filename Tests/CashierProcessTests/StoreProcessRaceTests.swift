import CashierStress
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// The store's rules where several processes share a folder (an app and its extensions), each
/// pinned against what a review of 875f6e6 found (`store-review-875f6e6.md`, S2, S4-S7):
/// writes of one key as a row and as a file, removals and an import cut short by SIGKILL, a damaged store met
/// by two processes, and a reader without a memory tier whose store file is replaced.
@Suite("The store across processes: races, kills, replaced files")
struct StoreProcessRaceTests {
    // MARK: A row and a file for one key (S5)

    @Test(
        "Each key written at one moment as a row by one process and as a file by another reads one of the two values (S5)"
    )
    func aRowAndAFileWrittenAtOnceLeaveOneOfTheTwoValues() throws {
        let folder = TemporaryFolder()
        let keys = environmentNumber("CASHIER_RACE_KEYS", default: 300)
        let children = try ["small", "large"].map { try Child(["race", folder.path, $0, String(keys)]) }
        for child in children { #expect(child.readLine() == "ready") }
        // A barrier per key: both write it when they read their line (one of them up to a
        // millisecond later, so the writes overlap at every stage), then wait for the next.
        var random = SplitMix64(seed: UInt64(environmentNumber("CASHIER_STRESS_SEED", default: 20_261_127)))
        keys: for index in 0..<keys {
            let late = Int(random.next() % 2)
            let delay = random.next() % 1_000
            // A child that failed has exited: writing to it would end this process (SIGPIPE).
            guard children.allSatisfy({ $0.process.isRunning }) else { break keys }
            for (which, child) in children.enumerated() { child.send(which == late ? "go \(delay)" : "go") }
            for (which, child) in children.enumerated() {
                let line = child.readLine()
                guard line == "wrote \(index)" else {
                    Issue.record("writer \(which) stopped at key \(index): \(line ?? "exited")")
                    break keys
                }
            }
        }
        for (index, child) in children.enumerated() {
            #expect(child.readLine() == "done", "writer \(index) did not finish")
            #expect(child.wait() == 0, "writer \(index) failed")
        }

        let cache = Cache(folder.configuration(memoryCountLimit: 0))
        var empty: [String] = []
        var foreign: [String] = []
        for index in 0..<keys {
            let name = RowFileRace.key(index)
            switch cache.value(for: CacheKey<Data>(name)) {
            case nil: empty.append(name)
            case let value?:
                if value != RowFileRace.value(for: name, large: false)
                    && value != RowFileRace.value(for: name, large: true)
                {
                    foreign.append(name)
                }
            }
        }
        #expect(empty.isEmpty, "\(empty.count) of \(keys) keys read nothing after both writes returned: \(empty)")
        #expect(foreign.isEmpty, "keys read a value neither process wrote: \(foreign)")
        // Housekeeping finds nothing to take either: every row has what it indexes.
        cache.collectGarbage()
        cache.waitForBackgroundWork()
        let emptyAfterGC = (0..<keys).map(RowFileRace.key).filter { cache.value(for: CacheKey<Data>($0)) == nil }
        #expect(emptyAfterGC.isEmpty, "after collectGarbage \(emptyAfterGC.count) keys read nothing: \(emptyAfterGC)")
        #expect(cache.count == keys)
    }

    @Test(
        "Two processes alternating a row and a file for one key each read the key back after every set they made (S5)"
    )
    func alternatingRowAndFileWritesOfOneKeyNeverReadNothing() throws {
        let folder = TemporaryFolder()
        let iterations = environmentNumber("CASHIER_RACE_ITERATIONS", default: 1_500)
        let children = try ["small", "large"].map {
            try Child(["race-loop", folder.path, "contended", String(iterations), $0])
        }
        for child in children { #expect(child.readLine() == "ready") }
        for child in children where child.process.isRunning { child.send("go") }
        var reports: [String] = []
        for (index, child) in children.enumerated() {
            let report = child.readLine() ?? "nothing"
            reports.append(report)
            #expect(child.wait() == 0, "writer \(index) failed: \(report)")
            // "done sets=N nil=N unsound=N errors=N": no read found nothing, none found another value, no set threw.
            #expect(report == "done sets=\(iterations) nil=0 unsound=0 errors=0", "writer \(index): \(report)")
        }
        let name = "contended"
        let read = Cache(folder.configuration(memoryCountLimit: 0)).value(for: CacheKey<Data>(name))
        #expect(
            read == RowFileRace.value(for: name, large: false) || read == RowFileRace.value(for: name, large: true),
            "after both returned the key reads \(read.map { "\($0.count) bytes" } ?? "nothing")")
        print("row/file race: \(reports.joined(separator: "; "))")
    }

    // MARK: Removals cut short (S4)

    @Test("A value whose removal returned is never read again after the remover is SIGKILLed (S4)")
    func removedValuesStayRemovedAfterKills() throws {
        let rounds = environmentNumber("CASHIER_REMOVAL_KILLS", default: 10)
        let folder = TemporaryFolder()
        var random = SplitMix64(seed: UInt64(environmentNumber("CASHIER_STRESS_SEED", default: 20_261_126)))
        var removed: [String] = []
        var kept: [String] = []
        for round in 0..<rounds {
            let prefix = "r\(round)"
            let child = try Child(["remove", folder.path, prefix])
            #expect(child.readLine() == "written", "round \(round): the child did not write its values")
            // Where the kill lands: after a random number of removals, while the next ones run.
            let target = Int(random.next() % 401)
            var returned: [String] = []
            while returned.count < target, let line = child.readLine(), line.hasPrefix("removed ") {
                returned.append(String(line.dropFirst(8)))
            }
            child.killAndReap()
            // Lines printed before the kill name removals that returned too.
            while let line = child.readLine(), line.hasPrefix("removed ") {
                returned.append(String(line.dropFirst(8)))
            }
            removed += returned
            // The one after the last that returned may have been cut short: either answer is right for it.
            kept += RemovalAfterKill.keys(prefix: prefix).dropFirst(returned.count + 1)
        }
        #expect(!removed.isEmpty)

        for memoryCountLimit in [0, nil] as [Int?] {
            let cache = Cache(folder.configuration(memoryCountLimit: memoryCountLimit))
            let back = removed.filter { cache.value(for: CacheKey<Data>($0)) != nil }
            #expect(back.isEmpty, "memory \(String(describing: memoryCountLimit)): removed values read again: \(back)")
            let unsound = kept.filter { name in
                cache.value(for: CacheKey<Data>(name)).map { $0 != RemovalAfterKill.value(for: name) } ?? false
            }
            #expect(unsound.isEmpty, "values read back changed: \(unsound)")
            cache.collectGarbage()
            cache.waitForBackgroundWork()
            let backAfterGC = removed.filter { cache.value(for: CacheKey<Data>($0)) != nil }
            #expect(backAfterGC.isEmpty, "removed values read again after collectGarbage: \(backAfterGC)")
            #expect(Set(cache.keys).isDisjoint(with: removed), "keys lists removed entries")
        }
        print("removal after kills: \(rounds) kills, \(removed.count) removals returned before them")
    }

    // MARK: A damaged store met by two processes (S2)

    /// How the store file is damaged while no process has it open.
    enum Damage: String, CaseIterable, Sendable {
        /// Random bytes over the middle fifth of the file: it opens, and reads that reach those pages fail.
        case middle
        /// The whole file replaced by random bytes of the same length: it does not open.
        case randomFile
    }

    @Test(
        "Two processes on a damaged store set it aside once: one .damaged file, the original, and the value written after recovery stays (S2)",
        arguments: Damage.allCases)
    func twoProcessesOnADamagedStoreSetItAsideOnce(_ damage: Damage) throws {
        let folder = TemporaryFolder()
        let fillers = 300
        // The store, written by a process that exits, so no one has it open while it is damaged.
        let writer = try StressSession(folder)
        #expect(writer.ask("fill probe 200 1") == "ok")
        for index in 0..<fillers { #expect(writer.ask("fill filler-\(index) 1000 1") == "ok") }
        writer.close()
        let store = folder.url.appendingPathComponent(DiskTier.storeFileName)
        // Closed cleanly: the log folded into the store and removed (by this test's connection if
        // the child's last one closed on a background thread after "closed").
        if access(store.path + "-wal", F_OK) == 0 { Self.foldLog(of: store.path) }
        #expect(access(store.path + "-wal", F_OK) != 0, "the writer's log is still there")
        var bytes = [UInt8](try Data(contentsOf: store))
        var random = SplitMix64(seed: 0xDA3A6E)
        let damaged = damage == .middle ? (bytes.count * 2 / 5)..<(bytes.count * 3 / 5) : 0..<bytes.count
        for index in damaged { bytes[index] = UInt8(truncatingIfNeeded: random.next()) }
        let original = Data(bytes)
        try original.write(to: store)

        // Both open the damaged store (a read of the probe: in a page the damage spares), then
        // meet the damage one after the other, and each writes once it has.
        let first = try StressSession(folder)
        let second = try StressSession(folder)
        _ = first.ask("check probe 200 1")
        _ = second.ask("check probe 200 1")
        for index in 0..<fillers { _ = first.ask("check filler-\(index) 1000 1") }
        #expect(first.ask("fill after-first 300 7") == "ok")
        for index in 0..<fillers { _ = second.ask("check filler-\(index) 1000 1") }
        #expect(second.ask("fill after-second 300 8") == "ok")

        for (name, session) in [("first", first), ("second", second)] {
            #expect(session.ask("check after-first 300 7") == "whole", "\(name) lost the first's write after recovery")
            #expect(session.ask("check after-second 300 8") == "whole", "\(name) lost the second's write")
        }
        first.exit()
        second.exit()
        let fresh = Cache(folder.configuration(memoryCountLimit: 0))
        #expect(
            fresh.value(for: CacheKey<Data>("after-first"))
                == StressSession.value(for: "after-first", bytes: 300, seed: 7))

        // Set aside once: the store (with the log it had, if any), never a second time.
        let setAside = folder.fileNames.filter { $0.contains("damaged") }
        let once = ["", "-wal", "-shm"].map { DiskTier.storeFileName + ".damaged" + $0 }
        #expect(setAside.contains(once[0]) && Set(setAside).isSubset(of: once), "files set aside: \(setAside)")
        let kept = try? Data(contentsOf: folder.url.appendingPathComponent(DiskTier.storeFileName + ".damaged"))
        #expect(kept == original, "the file set aside is not the damaged original")
    }

    // MARK: An import cut short (S7)

    @Test(
        "An import of a 0.1.0 folder cut short by SIGKILL resumes at the next open: every entry counted, a locked one stays locked when overwritten (S7)"
    )
    func anImportOfAnOldFolderCutShortResumes() throws {
        let folder = TemporaryFolder()
        let count = environmentNumber("CASHIER_IMPORT_FILES", default: 3_000)
        // A folder as 0.1.0 left it: files only, one of them locked, no store.
        let writer = try Child(["files", folder.path, String(count)])
        #expect(writer.readLine() == "done")
        #expect(writer.wait() == 0)
        for suffix in ["", "-wal", "-shm"] { unlink(folder.path + "/" + DiskTier.storeFileName + suffix) }
        #expect(folder.entryFiles.count == count)

        // The first write makes the store and starts the import of the files; killed at once.
        let first = try StressSession(folder)
        #expect(first.ask("set first value") == "ok")
        first.child.killAndReap()
        let rows = Self.rowCount(folder)
        print("import cut short: \(rows.map(String.init) ?? "unknown") rows of \(count + 1) entries when killed")

        let cache = Cache(folder.configuration(memoryCountLimit: 0))
        _ = cache.count
        cache.waitForBackgroundWork()
        #expect(cache.count == count + 1, "the entries counted after the import was cut short")
        #expect(Set(cache.keys) == Set((0..<count).map(OldFolder.key) + ["first"]))
        let missing = (0..<count).map(OldFolder.key).filter {
            cache.value(for: CacheKey<Data>($0)) != OldFolder.value(for: $0)
        }
        #expect(missing.isEmpty, "\(missing.count) old entries do not read back: \(missing.prefix(20))")
        let locked = CacheKey<Data>(OldFolder.lockedKey)
        #expect(cache.entry(for: locked)?.isLocked == true)
        try cache.set(Data([1, 2, 3]), for: locked)
        #expect(cache.entry(for: locked)?.isLocked == true, "overwriting the locked 0.1.0 entry dropped its lock")
        #expect(Cache(folder.configuration(memoryCountLimit: 0)).entry(for: locked)?.isLocked == true)
    }

    /// Rows in the folder's store, read by `python3`'s SQLite (read only); `nil` when it cannot tell.
    static func rowCount(_ folder: TemporaryFolder) -> Int? {
        folder.storeInteger("select count(*) from entry")
    }

    /// Folds the `-wal` of the store at `path` into it: `python3`'s SQLite opens it, checkpoints,
    /// and, the last connection, removes the log as it closes.
    static func foldLog(of path: String) {
        _ = runPython(
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)'); c.close()",
            path)
    }

    // MARK: A reader without a memory tier (S6)

    /// What becomes of the store file under a reader.
    enum Replacement: String, CaseIterable, Sendable {
        /// `store.sqlite` and its `-wal` and `-shm` unlinked; another process writes a new store.
        case deleted
        /// Another store renamed over `store.sqlite` (as a process setting a store aside and starting anew would leave it).
        case renamedOver
    }

    @Test(
        "A process reading without a memory tier reaches the value in a store another process replaced (S6)",
        arguments: Replacement.allCases)
    func aReaderWithoutAMemoryTierNoticesAReplacedStore(_ replacement: Replacement) throws {
        let folder = TemporaryFolder()
        let writer = try StressSession(folder)
        #expect(writer.ask("set shared old") == "ok")
        writer.exit()
        let reader = try StressSession(folder, memoryCountLimit: 0)
        #expect(reader.ask("get shared") == "value old")

        let store = folder.path + "/" + DiskTier.storeFileName
        switch replacement {
        case .deleted:
            for suffix in ["", "-wal", "-shm"] { unlink(store + suffix) }
            let other = try StressSession(folder)
            #expect(other.ask("set shared new") == "ok")
            other.exit()
        case .renamedOver:
            let elsewhere = TemporaryFolder()
            let other = try StressSession(elsewhere)
            #expect(other.ask("set shared new") == "ok")
            other.close()
            // A store closed cleanly: its log folded in and removed. The child's last connection
            // may close on a background thread after "closed" (the closure that held it is
            // released there), so a connection of this test's own folds what is left.
            let source = elsewhere.path + "/" + DiskTier.storeFileName
            if access(source + "-wal", F_OK) == 0 { Self.foldLog(of: source) }
            #expect(access(source + "-wal", F_OK) != 0)
            unlink(store + "-wal")
            unlink(store + "-shm")
            #expect(rename(source, store) == 0)
        }

        var answers: [String] = []
        let reached = poll {
            let answer = reader.ask("get shared")
            answers.append(answer)
            return answer == "value new"
        }
        #expect(reached, "the reader kept reading \(Set(answers)) after the store was replaced")
        reader.exit()
    }
}

/// A `CashierStress session` child: one command, one answer.
final class StressSession {
    let child: Child

    init(arguments: [String]) throws {
        child = try Child(arguments)
        let ready = child.readLine()
        #expect(ready == "ready", "session did not start: \(String(describing: ready))")
    }

    convenience init(_ folder: TemporaryFolder, memoryCountLimit: Int = 0, sizeLimit: Int? = nil) throws {
        try self.init(
            arguments: ["session", folder.path, String(memoryCountLimit)] + (sizeLimit.map { [String($0)] } ?? []))
    }

    /// Sends one command and returns its answer ("gone" once the child has exited).
    func ask(_ command: String) -> String {
        // A write to the input of a child that died would end this process (SIGPIPE).
        guard child.process.isRunning else { return "gone" }
        child.send(command)
        return child.readLine() ?? "gone"
    }

    /// Ends the child once its background work is done and its cache has gone: its store is
    /// closed, the log folded into it.
    func close() {
        #expect(ask("close") == "closed")
        _ = child.wait()
    }

    /// Ends the child as an app that is closed ends (no background work waited for), and reaps it.
    func exit() {
        if child.process.isRunning { child.send("exit") }
        _ = child.wait()
    }

    /// Values `fill KEY BYTES SEED` writes.
    static func value(for key: String, bytes: Int, seed: UInt64) -> Data {
        Session.value(for: key, bytes: bytes, seed: seed)
    }
}

extension TemporaryFolder {
    func configuration(memoryCountLimit: Int?, sizeLimit: Int? = nil) -> Cache.Configuration {
        var configuration = configuration(sizeLimit: sizeLimit)
        configuration.memoryCountLimit = memoryCountLimit
        return configuration
    }
}

extension TemporaryFolder {
    /// The integer `sql` answers on the folder's store, read by `python3`'s SQLite (read only,
    /// no connection of this process's); `nil` when it cannot tell.
    func storeInteger(_ sql: String) -> Int? {
        runPython(
            "import sqlite3, sys; print(sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True).execute(sys.argv[2]).fetchone()[0])",
            path + "/" + DiskTier.storeFileName, sql
        ).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }
}

/// Runs `python3 -c script arguments…`; its standard output, `nil` when it could not start.
func runPython(_ script: String, _ arguments: String...) -> String? {
    let process = Process()
    let output = Pipe()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", "-c", script] + arguments
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return nil }
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return text
}
