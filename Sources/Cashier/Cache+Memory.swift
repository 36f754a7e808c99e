import CashierPlatform
import Foundation

extension Cache {
    /// Drops every decoded value from the memory tier; the disk is untouched.
    ///
    /// Reads that follow decode from the files again. Call it when the app must give memory
    /// back; on Apple platforms the cache does the same by itself on a critical memory-pressure
    /// event (and drops half its ``Configuration-swift.struct/memoryCostLimit`` cost on a
    /// warning). For a ``Location/memoryOnly`` cache the memory tier is all there is: its values
    /// are gone, reported as ``CacheEvent/evicted(key:bytes:)`` and to observers as removals.
    public func purgeMemory() {
        forget(memory.removeAll())
    }

    /// Trims the memory tier as the system asks on memory pressure: a warning drops least
    /// recently used values (unlocked first) down to half the cost held, critical drops every
    /// value. The disk is untouched.
    ///
    /// Called by the memory-pressure source on Apple platforms; tests call it to simulate an event.
    package func relieveMemoryPressure(_ pressure: MemoryPressure) {
        switch pressure {
        case .warning: forget(memory.trim(toCost: { $0 / 2 }))
        case .critical: purgeMemory()
        }
    }

    /// For a memory-only cache, values dropped from memory are gone: says so, as the count
    /// limit's evictions do. A cache with a folder still reads them from disk: nothing to say.
    private func forget(_ records: [MemoryRecord]) {
        guard disk == nil else { return }
        for record in records {
            emit(.evicted(key: record.name, bytes: 0))
            publish(record.name, nil)
        }
    }
}
