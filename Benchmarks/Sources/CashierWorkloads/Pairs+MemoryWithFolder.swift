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
        let names = (0..<keyCount).map { "user-\($0)" }
        let folder = Scratch("memory-folder")
        let keys = (0..<keyCount).map(userKey)
        do {
            let writer = Cache(folder.configuration())
            for key in keys { try? writer.set(.sample, for: key) }
            writer.waitForBackgroundWork()
        }
        // A fresh instance loads every value from the store once (decoded, as an app's values
        // are, not the literals written), then hits memory.
        let cache = Cache(folder.configuration())
        // The baseline holds the same decoded values: a copy of one costs what a copy of the other does.
        for (index, key) in keys.enumerated() { dictionary["user-\(index)"] = cache.value(for: key) }
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
