import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Another process's writes reach this process's memory tier: it checks the store's
/// `data_version` before serving a hit (every hit here; at most every 10 ms by default).
@Suite("Memory coherence across processes")
struct MemoryCoherenceProcessTests {
    @Test("A value another process replaces or removes is not served from this process's memory")
    func anotherProcessesWritesAreNotServedFromMemory() throws {
        let folder = TemporaryFolder()
        // The folder's store exists before this process uses it, as in an app whose extension wrote first.
        try runChild(folder, ["set", "other", "first"])
        var configuration = folder.configuration()
        configuration.memoryCoherenceNanoseconds = 0
        let cache = Cache(configuration)
        let replaced = CacheKey<String>("replaced", schemaVersion: 1)
        let removed = CacheKey<String>("removed", schemaVersion: 1)
        try cache.set("mine", for: replaced)
        try cache.set("kept", for: removed)
        #expect(cache.entry(for: replaced)?.origin == .memory)
        #expect(cache.entry(for: removed)?.origin == .memory)

        #expect(cache.memory.coherenceDrops == 0)

        try runChild(folder, ["set", "replaced", "theirs"])
        try runChild(folder, ["remove", "removed"])

        #expect(cache.value(for: replaced) == "theirs")
        #expect(cache.value(for: removed) == nil)
        #expect(cache.memory.coherenceDrops >= 1)
        // Read again, the new value is served from memory until the next write elsewhere.
        #expect(cache.entry(for: replaced)?.origin == .memory)
        #expect(cache.entry(for: replaced)?.value == "theirs")
    }

    private func runChild(_ folder: TemporaryFolder, _ arguments: [String]) throws {
        let child = try Child(["coherence", folder.path] + arguments)
        #expect(child.readLine() == "done")
        #expect(child.wait() == 0)
    }
}
