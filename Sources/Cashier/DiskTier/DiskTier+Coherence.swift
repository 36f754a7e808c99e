import CashierStore
import Foundation

/// Which state of the folder's store a memory tier's values were read from (see ``Coherence``).
///
/// SQLite's `data_version` (`EntryStore.dataVersionIfFree()`) changes when another connection, in
/// practice another process, commits to the store, not on this process's own writes (one
/// writer connection per folder and process); the file's device and inode tell a store set
/// aside or deleted and made anew, whose fresh connection counts from scratch.
enum StoreVersion: Equatable, Sendable {
    /// The folder has no store (not yet written, SQLite missing): nothing to compare.
    case none
    case version(device: UInt64, inode: UInt64, dataVersion: Int64)
    /// The store could not say: equal to nothing, so the tier empties.
    case unknown

    /// Whether this is a store's version (not ``none``, not ``unknown``).
    var isStore: Bool {
        if case .version = self { true } else { false }
    }

    static func == (lhs: StoreVersion, rhs: StoreVersion) -> Bool {
        switch (lhs, rhs) {
        case (.none, .none): true
        case (.version(let a, let b, let c), .version(let d, let e, let f)): a == d && b == e && c == f
        default: false
        }
    }
}

extension DiskTier {
    /// The version of the folder's store for a memory hit, which never waits: one `lstat` and,
    /// if no call of this process holds the store's writer (a write waiting for another
    /// process's lock, say), `PRAGMA data_version` on it; nil, at once, if one does: the check
    /// gives up its turn. Opening a store the folder has, or reopening one replaced, is I/O: it
    /// is done off the caller's thread, and the version says the store changed meanwhile.
    func storeVersionWithoutWaiting() -> StoreVersion? {
        openedIndex.versionWithoutWaiting()
    }

    /// Runs `work` on the sweep queue, off the caller's thread; ``waitForSweeps()`` waits for it.
    func inBackground(_ work: @escaping @Sendable () -> Void) {
        pendingSweeps.enter()
        sweepQueue.async { [self] in
            defer { pendingSweeps.leave() }
            work()
        }
    }
}

extension DiskTier {
    /// ``recheckInterval``'s default: 10 ms, as the memory tier's coherence interval (a cache
    /// passes its configuration's), so a folder or store replaced under a running cache is seen
    /// by its writes no later than by its hits.
    package static let defaultRecheckInterval: UInt64 = 10_000_000
}
