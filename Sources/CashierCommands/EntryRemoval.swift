import Cashier
import CashierStore
import Foundation

/// Removes entries for `prune`, `remove` and `demo`: a row through the store, and a large
/// entry's file inside the same transaction, before its row goes (a row without its file is
/// one the cache misses; a file without its row one it never reads again), as the cache does.
struct EntryRemoval {
    let directory: String
    let disk: DiskTier
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
        disk = DiskTier(folder: directory)
        if state == .sound || (state.damage != nil && setAsideDamage) {
            let (opened, openState) = FolderStore.open(directory, readOnly: false)
            (store, storeProblem, setAside) = (opened, openState.problem, opened?.setAsideAtOpen)
        } else {
            (store, storeProblem, setAside) = (nil, state.problem, nil)
        }
    }

    /// Removes `entries` (and the left-over file of each key, `shadowed`): the rows, and the
    /// large entries' files before them, in one store transaction, which on a nearly full
    /// volume needs far less room for the store's log than a transaction per entry; entry by
    /// entry when that fails. Returns, for each entry, why it could not be removed.
    func remove(_ entries: [(entry: EntryFile, shadowed: String?)]) -> [String?] {
        let keyed = entries.filter { $0.entry.rowKey != nil }
        if let store, keyed.count > 1 {
            var files: [String: String] = [:]
            for (entry, _) in keyed {
                if let key = entry.rowKey, let name = entry.fileName { files[key] = disk.path(name) }
            }
            let removed = try? store.remove(keyed.compactMap(\.entry.rowKey), filePath: { files[$0] ?? "" })
            if removed != nil {
                return entries.map { entry, shadowed in
                    entry.rowKey != nil
                        ? removeFiles(of: entry, shadowed: shadowed) : remove(entry, shadowed: shadowed)
                }
            }
        }
        return entries.map { remove($0.entry, shadowed: $0.shadowed) }
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
        return removeFiles(of: entry, shadowed: shadowed)
    }

    /// Removes what is left of `entry`'s files once its row is gone (a file older than the
    /// store, the left-over `shadowed`; a large entry's went with its row).
    private func removeFiles(of entry: EntryFile, shadowed: String?) -> String? {
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
