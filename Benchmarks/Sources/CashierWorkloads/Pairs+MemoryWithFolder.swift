import Cashier
import Foundation

extension Pairs {
    /// Memory hits of a cache with a folder (whose store exists): what a check of the store for
    /// another process's writes costs a hit, beside ``memoryHit(_:keyCount:)``'s memory-only cache,
    /// which checks nothing. A reference: the goal is the memory hit's.
    public static func memoryHitWithFolder(_ scale: Scale) -> Pair {
        let keyCount = 100
        let operations = scale.times(200_000)
        let lock = NSLock()
        var dictionary = [String: User]()
        for index in 0..<keyCount { dictionary["user-\(index)"] = .sample }
        let names = (0..<keyCount).map { "user-\($0)" }
        let folder = Scratch("memory-folder")
        let cache = Cache(folder.configuration())
        let keys = (0..<keyCount).map(userKey)
        for key in keys { try? cache.set(.sample, for: key) }
        // Loaded once from the store after the tier's first check, then memory hits.
        for key in keys { _ = cache.value(for: key) }
        return Pair(
            name: "memory hit, folder with a store", baselineName: "Dictionary + NSLock", goal: .atMost(1.5),
            baseline: Workload(operations: operations) {
                for index in 0..<operations { consume(lock.withLock { dictionary[names[index % keyCount]] }) }
            },
            cashier: Workload(operations: operations) {
                for index in 0..<operations { consume(cache.value(for: keys[index % keyCount])) }
            },
            fixtures: [cache, folder], isReference: true)
    }
}
