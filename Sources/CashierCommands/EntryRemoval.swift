import Cashier
import CashierStore
import Foundation

/// Removes entries for `prune`, `remove` and `demo`: a row through the store, a file through
/// the library's ``DiskStore``, a large entry's index row before its file (a file without a
/// row is one the cache still reads; a row without its file is one it misses).
struct EntryRemoval {
    let directory: String
    let disk: DiskStore
    /// The store opened read-write; `nil` when the folder has none or it does not open.
    let store: EntryStore?
    /// Why ``store`` is `nil` though the folder has a store file.
    let storeProblem: String?
    /// A damaged store moved aside by opening it read-write (`prune --damaged` only).
    let setAside: StoreSetAside?

    /// Opens what removals need. The store is opened read-write only when a read-only look
    /// found it sound, or when `setAsideDamage` allows a damaged one to be set aside, as the
    /// cache would on its next open; a store file is never created.
    init(directory: String, state: FolderStore.State, setAsideDamage: Bool = false) {
        self.directory = directory
        disk = DiskStore(folder: directory)
        if state == .sound || (state.damage != nil && setAsideDamage) {
            let (opened, openState) = FolderStore.open(directory, readOnly: false)
            (store, storeProblem, setAside) = (opened, openState.problem, opened?.setAsideAtOpen)
        } else {
            (store, storeProblem, setAside) = (nil, state.problem, nil)
        }
    }

    /// Removes `entry` (and the left-over file of its key, `shadowed`); returns why it could not.
    func remove(_ entry: EntryFile, shadowed: String? = nil) -> String? {
        if let key = entry.rowKey {
            if let store {
                // The file goes first, inside the row's transaction, as the cache removes entries:
                // no process reads a removed entry's file again, even after a kill.
                let file = entry.fileName.map(disk.path)
                do throws(StoreError) {
                    try store.remove([key], filePath: file.map { file in { _ in file } })
                } catch {
                    return "cannot remove its row: \(error)"
                }
            } else if entry.location == .row || setAside == nil {
                // A row the store cannot reach (a set-aside store took its rows with it).
                return "cannot open the store \(FolderStore.fileName) for writing: \(storeProblem ?? "no store")"
            }
        }
        for name in [entry.fileName, shadowed].compactMap(\.self) {
            var info = stat()
            guard lstat(disk.path(name), &info) == 0 else { continue }
            do {
                try disk.remove(name)
            } catch {
                return "cannot remove \(name): \(error)"
            }
        }
        return nil
    }

    /// Gives the pages of removed rows back to the file system, as the cache does after evicting.
    func reclaimSpace() {
        _ = try? store?.reclaimSpace()
    }
}
