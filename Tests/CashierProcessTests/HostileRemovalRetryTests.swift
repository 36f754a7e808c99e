import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile review of the store's rules (issue 34).
@Suite struct HostileRemovalRetryTests {
    /// Rule 4, "two processes writing one key never lose it", and rule 3, "nothing stored
    /// before is lost".
    ///
    /// A removal that found the volume full throws to its caller and leaves the key in
    /// `removalsAwaitingRoom` (DiskTier+Store.swift, `removeFromStore`) with its row as it was;
    /// the next reclaim of this process removes that row if it is unchanged
    /// (`retryRemovalsAwaitingRoom`): another process's write made meanwhile stays. The list is
    /// filled here as the failed removal fills it (no full volume needed to show what the retry
    /// then does).
    @Test func aRemovalThatFoundTheVolumeFullNeverRemovesAnotherProcesssLaterWrite() throws {
        let folder = TemporaryFolder()
        var configuration = Cache.Configuration(name: "stress")
        configuration.location = .directory(folder.url)
        configuration.appVersion = "stress"
        configuration.memoryCountLimit = 0
        let key = CacheKey<String>("contested", schemaVersion: 1)
        let other = CacheKey<String>("other", schemaVersion: 1)
        let cache = Cache(configuration)
        try cache.set("mine", for: key)
        try cache.set("other", for: other)
        cache.waitForBackgroundWork()
        // `cache.removeValue(for: key)` met ENOSPC: it threw, and the key awaits room with its row as it was.
        let row = try #require(try cache.disk!.openedStore!.entry(for: key.name))
        cache.disk!.storeState.withLock { $0.removalsAwaitingRoom[key.name] = row }

        // Room is back; another process writes the key, and says so.
        let child = try Child(["coherence", folder.path, "set", key.name, "theirs"])
        #expect(child.readLine() == "done")
        #expect(child.wait() == 0)
        #expect(cache.value(for: key) == "theirs")

        // Any later removal here schedules a reclaim, which retries the old removal.
        cache.removeValue(for: other)
        cache.waitForBackgroundWork()
        let after = cache.value(for: key)
        print("removal retry: after another process wrote \"theirs\", the key reads \(String(describing: after))")
        #expect(after == "theirs", "the retried removal removed another process's later write")
    }
}
