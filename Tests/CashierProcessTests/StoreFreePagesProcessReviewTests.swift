import CashierSQLite
import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// From a hostile review of the free pages given back at rest (`settle(over:)`) and after every
/// collection (`finish(_:)`): three processes collecting and settling at once over a store with
/// the free pages a killed process leaves, the first round beside a reader of the test process.
/// Each answers, no row within the limit goes, and the folder ends within its limit with no
/// free page.
@Suite struct StoreFreePagesProcessReviewTests {
    @Test func processesCollectingAtOnceOverFreePagesKeepEveryRowAndEndWithinTheLimit() throws {
        let folder = TemporaryFolder()
        let storePath = folder.path + "/" + DiskTier.storeFileName
        do {
            let cache = Cache(folder.configuration())
            for index in 0..<600 {
                try cache.set(Data(repeating: UInt8(index % 251), count: 900), for: CacheKey<Data>("k\(index)"))
            }
            cache.waitForBackgroundWork()
        }
        let (inUse, free) = try freePagesAsAKilledProcessLeavesThem(store: storePath, keeping: 201)
        let limit = inUse + 32_768 + free / 2

        let sessions = try (0..<3).map { _ in try StressSession(folder, memoryCountLimit: 0, sizeLimit: limit) }
        // A reader of this process holds a snapshot through the first round.
        let reader = try SQLiteConnection(path: storePath, flags: SQLiteCode.openReadOnly)
        try reader.execute("BEGIN")
        #expect(try reader.integer("SELECT count(*) FROM entry") == 201)
        for round in 0..<4 {
            for session in sessions { session.child.send(round % 2 == 0 ? "gc" : "wait") }
            let answers = sessions.map { $0.child.readLine() ?? "gone" }
            #expect(answers == ["ok", "ok", "ok"], "round \(round)")
            if round == 0 { try reader.execute("COMMIT") }
        }
        for session in sessions { session.close() }
        let cache = Cache(folder.configuration(sizeLimit: limit))
        cache.waitForBackgroundWork()
        #expect(cache.count == 201, "a row within the limit went")
        let lost = (0...200).filter {
            cache.value(for: CacheKey<Data>("k\($0)")) != Data(repeating: UInt8($0 % 251), count: 900)
        }
        #expect(lost.isEmpty, "rows lost: \(lost.prefix(10))")
        let after = try SQLiteConnection(path: storePath, flags: SQLiteCode.openReadOnly)
        #expect(try after.integer("PRAGMA freelist_count") == 0)
        #expect(folder.bytesOnDisk <= limit, "\(folder.sizes)")
    }
}
