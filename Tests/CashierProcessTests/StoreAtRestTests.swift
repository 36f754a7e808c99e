import CashierStress
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// At rest a folder is within its size limit plus one entry, counting everything it holds: the
/// store, its `-wal` and `-shm`, and large entries' files (issue 34, item 7).
@Suite("A folder at rest within its size limit")
struct StoreAtRestTests {
    static let sizeLimit = 400_000
    /// The largest entry `limit-churn` writes: its largest value and a header.
    static let largestEntry = LimitChurn.largestValue + 512

    @Test(
        "After writers under a size limit are SIGKILLed, a fresh instance at rest keeps the whole folder within the limit plus one entry"
    )
    func killedWritersLeaveTheFolderWithinItsLimitAtRest() throws {
        let kills = environmentNumber("CASHIER_AT_REST_KILLS", default: 12)
        let folder = TemporaryFolder()
        var random = SplitMix64(seed: UInt64(environmentNumber("CASHIER_STRESS_SEED", default: 20_261_128)))
        var largestSeen = 0
        for _ in 0..<kills {
            let children = try (0..<2).map { _ in
                try Child(["limit-churn", folder.path, String(random.next() % 1_000_000), String(Self.sizeLimit)])
            }
            for child in children { #expect(child.readLine() == "ready") }
            // Not waiting for an effect: choosing when the kills land, up to 300 ms of writes in.
            usleep(UInt32(20_000 + random.next() % 280_000))
            for child in children { child.killAndReap() }
            largestSeen = max(largestSeen, folder.bytesOnDisk)
        }

        let afterKills = folder.bytesOnDisk

        // The next launch: a fresh instance writes once, and its background work is done.
        let cache = Cache(folder.configuration(sizeLimit: Self.sizeLimit))
        try cache.set(Data(repeating: 1, count: 100), for: CacheKey<Data>("next-launch"))
        cache.waitForBackgroundWork()
        let afterWrite = folder.bytesOnDisk
        #expect(
            afterWrite <= Self.sizeLimit + Self.largestEntry,
            "after a write at rest the folder holds \(afterWrite) bytes for a limit of \(Self.sizeLimit): \(folder.sizes)"
        )
        // Its garbage collection too.
        cache.collectGarbage()
        cache.waitForBackgroundWork()
        let atRest = folder.bytesOnDisk
        #expect(
            atRest <= Self.sizeLimit + Self.largestEntry,
            "at rest the folder holds \(atRest) bytes for a limit of \(Self.sizeLimit): \(folder.sizes)")
        // What `totalSize` says the folder holds is within the same bound, not the limit alone:
        // after writers were killed, what no sweep evicts (a large entry's file a killed writer
        // left without its row, until collection finds it stale, say) may keep the folder over
        // by less than an entry. CI's run under the thread sanitizer, slower, saw 439,822 bytes
        // for the 400,000 limit, unchanged by collection and by another process's.
        #expect(cache.totalSize <= Self.sizeLimit + Self.largestEntry)

        // A fresh process's housekeeping, once it has closed its store, leaves it so too.
        let session = try StressSession(folder, memoryCountLimit: 0, sizeLimit: Self.sizeLimit)
        #expect(session.ask("gc") == "ok")
        session.close()
        let afterProcess = folder.bytesOnDisk
        #expect(
            afterProcess <= Self.sizeLimit + Self.largestEntry,
            "after another process's housekeeping the folder holds \(afterProcess) bytes: \(folder.sizes)")
        print(
            "at rest: \(kills) kills of two writers, largest folder seen \(largestSeen) bytes, \(afterKills) after the last, "
                + "\(afterWrite) after a write, \(atRest) after collectGarbage, "
                + "\(afterProcess) after another process, for a limit of \(Self.sizeLimit); totalSize \(cache.totalSize)"
        )
    }
}

extension TemporaryFolder {
    /// Every file's `st_size` but the entry files', which are summed: for messages.
    var sizes: String {
        func size(_ name: String) -> Int {
            var info = stat()
            return lstat(path + "/" + name, &info) == 0 ? Int(info.st_size) : 0
        }
        let entries = entryFiles
        let others = fileNames.filter { !entries.contains($0) }.map { "\($0) \(size($0))" }
        return (others + ["\(entries.count) entry files \(entries.reduce(0) { $0 + size($1) })"]).joined(
            separator: ", ")
    }
}
