import CashierStore
import CashierTestSupport
import Foundation

@testable import Cashier

/// What the store tests look at in a cache folder: its store file, its entry files, what it occupies.
extension TemporaryFolder {
    var storePath: String { path + "/" + DiskTier.storeFileName }
    var hasStore: Bool { FileManager.default.fileExists(atPath: storePath) }

    /// Whether `key` has an entry file (a large entry, or one written before the store).
    func hasEntryFile(for key: String) -> Bool {
        FileManager.default.fileExists(atPath: path + "/" + DiskTier.fileName(for: key))
    }

    /// The bytes of `key`'s entry file, `nil` when it has none.
    func entryFileBytes(for key: String) -> Data? {
        FileManager.default.contents(atPath: path + "/" + DiskTier.fileName(for: key))
    }

    /// Bytes the folder occupies by `st_size`: the store, its `-wal` and `-shm`, and every entry
    /// file (the lock file is empty): what `totalSize` reports and a size limit bounds.
    var occupiedBytes: Int {
        let store = DiskTier.storeFileName
        let names = [store, store + "-wal", store + "-shm"] + entryFiles
        return names.reduce(0) { total, name in
            var info = stat()
            return total + (stat(path + "/" + name, &info) == 0 ? Int(info.st_size) : 0)
        }
    }

    /// What a folder whose store holds nothing occupies at most once its log is cut back:
    /// the store's ten pages (40 KiB) and the `-shm` (32 KiB).
    static let emptyStoreBytes = 40_960 + 32_768

    /// The store's row for `key`, read through a read-only store of its own (changes nothing).
    func row(for key: String) throws -> StoreEntry? {
        var options = EntryStore.Options()
        options.readOnly = true
        return try EntryStore(folder: path, options: options).entry(for: key)
    }

    /// Removes the store and its `-wal` and `-shm`: what a folder of Cashier 0.1.0 lacks.
    func removeStore() {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: storePath + suffix) }
    }
}
