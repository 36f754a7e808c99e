import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A folder whose store exists but cannot be opened for a while: another process holding it
/// past the busy timeout, an I/O error, no file descriptor left. Here its `-wal` is a folder,
/// so SQLite cannot open the log (`SQLITE_CANTOPEN`: not damage, nothing is set aside).
@Suite struct StoreUnopenableTests {
    let folder = TemporaryFolder()
    let clock = TestClock()

    func cache() -> Cache { Cache(makeConfiguration(folder, clock: clock)) }

    /// A `set` that returns wrote the value somewhere every later read looks first; a file
    /// written while the store was closed must not lose to the key's older row once it opens.
    @Test
    func aWriteThatReturnedWhileTheStoreCouldNotBeOpenedIsReadAfterItOpens() throws {
        let key = CacheKey<String>("token")
        do {
            let cache = cache()
            try cache.set("old", for: key)
        }
        _ = try EntryStore(folder: folder.path).checkpoint()
        folder.removeStore(keepingMainFile: true)
        try FileManager.default.createDirectory(atPath: folder.storePath + "-wal", withIntermediateDirectories: false)
        var returned = false
        do {
            let cache = cache()
            // Failing is fine (the old value then stays); returning means "new" is stored.
            returned = (try? cache.set("new", for: key)) != nil
        }
        try FileManager.default.removeItem(atPath: folder.storePath + "-wal")
        #expect(cache().value(for: key) == (returned ? "new" : "old"))
    }
}
