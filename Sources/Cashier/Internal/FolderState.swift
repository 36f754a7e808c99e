import CashierPlatform
import CashierStore
import Foundation

/// State shared by every ``Cache`` instance of this process on one folder.
final class FolderState: Sendable {
    let disk: DiskTier?
    let keyLocks: KeyLocks
    let hub = ChangeHub()
    let fetches = Locked<[String: FetchCall]>([:])
    let revalidating = Locked<Set<String>>([])
    /// The changes of this folder's instances on their way to their shared tiers, in the
    /// order they landed here (one queue for the folder: see ``SharedTierWrites``).
    let sharedTierWrites = SharedTierWrites()
    /// Which keys' records in a shared tier this folder's reads must not trust now.
    var sharedTierLedger: SharedTierLedger { sharedTierWrites.ledger }

    private init(disk: DiskTier?) {
        self.disk = disk
        keyLocks = disk?.keyLocks ?? KeyLocks()
    }

    private static let shared = Locked<[String: WeakFolderState]>([:])

    /// The store for `path`: shared in the process, unless memory-only or on a test file system.
    ///
    /// Keyed on the folder's identity, not its spelling (``DiskTier/resolvedPath(of:)``): one
    /// folder is one cache however its path is spelled. The first instance's spelling is the
    /// one the shared store's files are named by.
    static func forFolder(
        _ path: String?, fileSystem: (any FileSystem)?, rowSizeLimit: Int? = nil, usesStore: Bool = true,
        recheckInterval: UInt64 = DiskTier.defaultRecheckInterval,
        busyTimeoutMilliseconds: Int32 = EntryStore.Options().busyTimeoutMilliseconds,
        storeOpenBackoff: @autoclosure () -> StoreOpenBackoff = StoreOpenBackoff()
    ) -> FolderState {
        guard let path else { return FolderState(disk: nil) }
        if let fileSystem {
            return FolderState(
                disk: DiskTier(
                    folder: path, fileSystem: fileSystem, usesStore: usesStore ? nil : false,
                    rowSizeLimit: rowSizeLimit, recheckInterval: recheckInterval,
                    storeBusyTimeoutMilliseconds: busyTimeoutMilliseconds, storeOpenBackoff: storeOpenBackoff()))
        }
        let identity = DiskTier.resolvedPath(of: path)
        return shared.withLock { stores in
            if let store = stores[identity]?.store { return store }
            stores = stores.filter { $0.value.store != nil }
            let store = FolderState(
                disk: DiskTier(
                    folder: path, usesStore: usesStore, rowSizeLimit: rowSizeLimit, recheckInterval: recheckInterval,
                    storeBusyTimeoutMilliseconds: busyTimeoutMilliseconds, storeOpenBackoff: storeOpenBackoff()))
            stores[identity] = WeakFolderState(store: store)
            return store
        }
    }

    private struct WeakFolderState {
        weak var store: FolderState?
    }
}
