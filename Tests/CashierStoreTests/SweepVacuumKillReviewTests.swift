import CashierSQLite
import CashierStore
import CashierStoreSupport
import CashierTestSupport
import Foundation
import Testing

/// A hostile review of 2808c42 and ec0561a under SIGKILL: a sweep of thousands of rows, by the
/// walk's ids, with the free pages given back inside its transaction, killed at any moment in
/// another process (`CashierStoreChild eviction FOLDER evict BYTES`). After a reopening, the
/// store holds every row, or every row but exactly those the sweep chose: nothing removed comes
/// back half, nothing not chosen is gone, the ghost names no stored key, a swept store has no
/// free page left (its vacuum committed with its deletes), and the store is sound.
@Suite(.serialized) struct SweepVacuumKillReviewTests {
    let folder = TemporaryFolder()

    /// 3,000 rows of 100 to 1,099 bytes, `r0` least recently used; then the folder copied aside.
    func pristine() throws -> (keys: Set<String>, victims: Set<String>, copy: URL, bytes: Int) {
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        var store: EntryStore? = try EntryStore(folder: folder.path)
        for index in 0..<3_000 {
            let size = 100 + index * 7 % 1_000
            try store!.upsert(
                StoreEntry(key: "r\(index)", location: .row, size: size, lastUse: Int64(index / 10)),
                record: bytes(size, seed: index))
        }
        try store!.recordUses((0..<3_000).filter { $0 % 7 == 0 }.map { "r\($0)" }, at: 400)
        let target = try store!.totalSize() / 3
        var left = try store!.totalSize()
        var victims: Set<String> = []
        try store!.forEachEvictionCandidate(order: .frequencyAware) { entry in
            victims.insert(entry.key)
            left -= entry.size
            return left > target
        }
        _ = try store!.checkpoint()
        store = nil
        let copy = folder.url.deletingLastPathComponent().appendingPathComponent("pristine-\(UUID().uuidString)")
        try FileManager.default.copyItem(at: folder.url, to: copy)
        return (Set((0..<3_000).map { "r\($0)" }), victims, copy, target)
    }

    @Test(.timeLimit(.minutes(3)))
    func aSweepKilledAtAnyMomentLeavesEveryRowOrAllButTheChosen() throws {
        let (all, victims, copy, target) = try pristine()
        defer { try? FileManager.default.removeItem(at: copy) }
        #expect(victims.count > 256, "a sweep of \(victims.count) rows: no vacuum in its transaction")
        for delay in stride(from: 2_000, to: 42_000, by: 1_000) {
            try FileManager.default.removeItem(at: folder.url)
            try FileManager.default.copyItem(at: copy, to: folder.url)
            let child = Process()
            child.executableURL = try EntryStoreKillTests.writer()
            child.arguments = ["eviction", folder.path, "evict", String(target)]
            child.standardOutput = FileHandle.nullDevice
            try child.run()
            usleep(useconds_t(delay))
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()

            let store = try EntryStore(folder: folder.path)
            let keys = Set(try store.keys())
            let outcome = keys == all ? "untouched" : keys == all.subtracting(victims) ? "swept" : "other"
            #expect(
                outcome != "other",
                "killed after \(delay) µs: \(all.count - keys.count) rows gone, \(victims.count) chosen")
            #expect(try store.structuralProblems().isEmpty, "killed after \(delay) µs")
            let reader = try SQLiteConnection(path: store.path, flags: SQLiteCode.openReadOnly)
            let ghost = try reader.texts("SELECT key FROM ghost")
            // The sweep's own transaction gave its pages back: no commit left them free.
            if outcome == "swept" {
                #expect(try reader.integer("PRAGMA freelist_count") == 0, "killed after \(delay) µs: pages left free")
            }
            #expect(Set(ghost).isDisjoint(with: keys), "killed after \(delay) µs: the ghost names stored keys")
            for key in keys.prefix(20) {
                let index = Int(key.dropFirst())!
                #expect(try store.record(for: key)?.record == bytes(100 + index * 7 % 1_000, seed: index))
            }
        }
    }
}
