import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile review of commit f905f99's compaction after sweeps (`EntryStore.compact(afterRemoving:)`).
@Suite struct HostileCompactionProcessTests {
    static let sqlite3 = "/usr/bin/sqlite3"

    /// A store file with one row whose id is negative (SQLite takes any 64-bit rowid; a flipped
    /// bit in a cell's rowid varint gives one, and neither `cell_size_check` nor defensive mode
    /// objects). The store opens, reads, writes and sweeps as usual: compaction leaves such a
    /// store alone (it computed `highest - lowest + 1` in Int64 and trapped, killing the app at
    /// every launch that swept: the row is locked, so never evicted). The store's contract is
    /// that a hostile file does no more than fail a call.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: sqlite3), "needs the sqlite3 command"))
    func aStoreWithANegativeRowIDDoesNotKillTheProcessThatSweepsIt() throws {
        let folder = TemporaryFolder()
        var configuration = Cache.Configuration(name: "stress")
        configuration.location = .directory(folder.url)
        configuration.appVersion = "stress"
        do {
            let cache = Cache(configuration)
            for index in 0..<40 { try cache.set(Data(count: 100), for: CacheKey<Data>("seed-\(index)")) }
            cache.waitForBackgroundWork()
        }
        let edit = Process()
        edit.executableURL = URL(fileURLWithPath: Self.sqlite3)
        edit.arguments = [
            folder.path + "/" + DiskTier.storeFileName,
            "UPDATE entry SET id = -9223372036854775808, locked = 1 WHERE key = 'seed-0'",
        ]
        try edit.run()
        edit.waitUntilExit()
        try #require(edit.terminationStatus == 0)

        // A process writing under a size limit: its sweeps evict and then compact.
        let child = try Child(["limit-churn", folder.path, "7", String(200 * 1024)])
        #expect(child.readLine() == "ready")
        let deadline = Date().addingTimeInterval(5)
        while child.process.isRunning, Date() < deadline { usleep(50_000) }
        let survived = child.process.isRunning
        if survived { child.killAndReap() }
        #expect(
            survived,
            "the child died (status \(child.process.terminationStatus), reason \(child.process.terminationReason.rawValue))"
        )
    }
}
