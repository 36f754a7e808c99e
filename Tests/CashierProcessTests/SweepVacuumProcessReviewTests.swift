import CashierPlatform
import CashierStress
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile review of ec0561a and 2808c42 across processes: sweeps of hundreds of rows by the
/// walk's ids, the free pages given back inside their transactions, in two processes at once
/// while a third writes, and under a reader of another process holding a read transaction.
@Suite(.serialized) struct SweepVacuumProcessReviewTests {
    let folder = TemporaryFolder()

    /// `count` rows `old-i` of 1,000 bytes written by a session child (no limit), closed after.
    func oldRows(_ count: Int) throws {
        let writer = try StressSession(folder)
        for index in 0..<count { #expect(writer.ask("fill old-\(index) 1000 \(index)") == "ok") }
        writer.close()
    }

    /// Two sessions with a limit of 1 MB collect at once (each sweeping some 2,000 rows of
    /// 2,500) while a third writes 150 new rows; then the third writes 20 more and one sweeper
    /// collects again. No value reads otherwise than it was written, the 20 written after the
    /// sweeps are all there (the newest, the folder within its limit), the store is sound and
    /// its entries within the limit. (Which of the 150 written during the sweeps stay is not
    /// pinned: a sweep counts what it frees in entries' sizes against an overrun measured in
    /// pages, and goes far past the limit: SweepVacuumMeasureReviewTests.)
    @Test(.timeLimit(.minutes(3)), arguments: [1, 2, 3])
    func twoProcessesSweepingWhileAThirdWritesLoseNothingNewAndCorruptNothing(round: Int) throws {
        try oldRows(2_500)
        let sweepers = try [StressSession(folder, sizeLimit: 1_000_000), StressSession(folder, sizeLimit: 1_000_000)]
        let writer = try StressSession(folder)
        for sweeper in sweepers { sweeper.child.send("gc") }
        for index in 0..<150 { #expect(writer.ask("fill new-\(index) 1100 \(round * 1_000 + index)") == "ok") }
        for sweeper in sweepers { #expect(sweeper.child.readLine() == "ok") }
        for index in 0..<20 { #expect(writer.ask("fill last-\(index) 1100 \(index)") == "ok") }
        #expect(sweepers[0].ask("gc") == "ok")

        let lostLast = (0..<20).filter { writer.ask("check last-\($0) 1100 \($0)") != "whole" }
        #expect(lostLast.isEmpty, "rows written after the sweeps lost: \(lostLast)")
        let newAnswers = (0..<150).map { writer.ask("check new-\($0) 1100 \(round * 1_000 + $0)") }
        #expect(newAnswers.allSatisfy { $0 == "whole" || $0 == "nil" }, "new rows read otherwise than written")
        var answers: [String: Int] = [:]
        for index in 0..<2_500 { answers[writer.ask("check old-\(index) 1000 \(index)"), default: 0] += 1 }
        #expect(answers["other"] == nil, "old rows read otherwise than written: \(answers)")
        #expect((answers["nil"] ?? 0) > 1_500, "the sweeps evicted \(answers["nil"] ?? 0) rows: no large sweep")
        #expect(folder.storeInteger("SELECT count(*) FROM pragma_quick_check WHERE quick_check != 'ok'") == 0)
        let size = folder.storeInteger("SELECT sum(size) FROM entry") ?? .max
        #expect(size <= 1_000_000, "the folder holds \(size) bytes of entries over a limit of 1,000,000")
        for session in sweepers + [writer] { session.close() }
        try FileManager.default.removeItem(at: folder.url)
    }

    /// A reader of another process (python3's SQLite) holds a read transaction while a cache
    /// with a limit sweeps 2,000 of 2,500 rows, its vacuum inside the eviction's transaction:
    /// the reader still counts what it counted, the sweep evicts all the same, and once the
    /// reader has let go the store file comes back down to what is left.
    @Test(.timeLimit(.minutes(2)))
    func aReaderOfAnotherProcessHoldingItsSnapshotThroughALargeSweepSeesItAndTheFileShrinksAfter() throws {
        try oldRows(2_500)
        let store = folder.path + "/" + DiskTier.storeFileName
        let reader = Process()
        let (input, output) = (Pipe(), Pipe())
        reader.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        reader.arguments = [
            "python3", "-c",
            """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute('BEGIN')
            print(c.execute('SELECT count(*) FROM entry').fetchone()[0], flush=True)
            sys.stdin.readline()
            print(c.execute('SELECT count(*) FROM entry').fetchone()[0], flush=True)
            c.execute('COMMIT')
            """,
            store,
        ]
        reader.standardInput = input
        reader.standardOutput = output
        try reader.run()
        defer { if reader.isRunning { reader.terminate() } }
        func line() -> String {
            var data = Data()
            while true {
                let byte = output.fileHandleForReading.readData(ofLength: 1)
                if byte.isEmpty || byte == Data("\n".utf8) { return String(decoding: data, as: UTF8.self) }
                data.append(byte)
            }
        }
        #expect(line() == "2500")

        var configuration = folder.configuration(sizeLimit: 1_000_000)
        configuration.garbageCollectionInterval = nil
        var cache: Cache? = Cache(configuration)
        cache!.collectGarbage()
        cache!.waitForBackgroundWork()
        let left = cache!.count
        #expect(left < 1_000, "the sweep left \(left) of 2,500 rows")
        try input.fileHandleForWriting.write(contentsOf: Data("go\n".utf8))
        #expect(line() == "2500", "the reader's snapshot changed under it")
        reader.waitUntilExit()
        #expect(reader.terminationStatus == 0)

        #expect(folder.storeInteger("SELECT count(*) FROM pragma_quick_check WHERE quick_check != 'ok'") == 0)
        #expect(folder.storeInteger("SELECT count(*) FROM entry") == left)
        cache = nil // closing folds the log in
        let pages = folder.storeInteger("PRAGMA page_count") ?? .max
        let bytes = (try? FileManager.default.attributesOfItem(atPath: store)[.size] as? Int) ?? .max
        #expect(bytes <= 1_400_000, "the store file takes \(bytes) bytes (\(pages) pages) for \(left) rows")
    }
}
