import CashierPlatform
import CashierStore
import Foundation

/// The folder's large-entry files brought in line with the store: an import at the store's
/// first opening in a process (and after it was set aside), and the reconcile garbage
/// collection runs too.
extension DiskTier {
    /// Gives every entry file of the folder that has no row one (`StoreLocation.file`), and
    /// removes the files a row shadows, on the sweep queue, holding the folder lock, inside an
    /// expiring background activity as a sweep is: it never waits for the lock (another process
    /// holding it: tried again a second later), so a suspended app neither holds nor waits on it.
    /// An import the system refuses is left to garbage collection, which does the same.
    func scheduleImport(into store: EntryStore, after delay: Double? = nil) {
        storeState.withLock { $0.importPending = true }
        pendingSweeps.enter()
        // The tier weakly: a retry held it, and with it the store's open files, for as long as
        // another process held the store, so a cache released meanwhile lived on, waking every
        // second. A tier gone leaves its import to the next one that opens the store. The group
        // strongly: it must outlive its `enter`, whatever happens to the tier.
        let work: @Sendable () -> Void = { [weak self, pendingSweeps] in
            defer { pendingSweeps.leave() }
            guard let self else { return }
            // The store's file gone or another one (the folder removed, maybe made again by
            // another process): the retries end, the import left pending, as for a folder gone
            // (below). The first read or write that notices reopens the store, or makes it
            // anew, and imports; background work makes nothing in a folder being removed.
            guard !store.isReplaced else { return }
            let outcome: Bool?? = withBackgroundActivity("Cashier store import") {
                withFolderLock(waiting: false) { reconcileFiles(with: store, indexing: true) }
            }
            // A folder gone (removed, a file in its place, a link in its path missing) ends the
            // retries: each held this tier, and with it the store's open files, for as long as
            // the process lived. The import stays pending, even after a pass that seemed
            // complete (the files it listed vanished with the folder, so it gave none a row):
            // reads still look for files without rows, garbage collection removes none as
            // orphans, and the next opening imports again.
            guard case .some(let finished) = outcome, isFolder else { return }
            if finished == true {
                storeState.withLock { $0.importPending = false }
            } else {
                scheduleImport(into: store, after: 1)
            }
        }
        if let delay {
            sweepQueue.asyncAfter(deadline: .now() + delay, execute: work)
        } else {
            sweepQueue.async(execute: work)
        }
    }

    /// Brings the folder's entry files in line with the store (EntryStore's `reconcile`): a
    /// file a row shadows goes; a file without a row gets one with `indexing` (an import) and
    /// goes without (an orphan). Files of large entries the store indexes are passed over
    /// without a read. Returns whether every file was handled (false: the store failed).
    /// `removingStrays`: a file named from another spelling of its key (never read) goes too.
    @discardableResult
    func reconcileFiles(with store: EntryStore, indexing: Bool, removingStrays: Bool = false) -> Bool {
        guard let names = try? fileSystem.contentsOfDirectory(folder),
            let indexed = try? store.largeEntryKeys()
        else { return false }
        let indexedNames = Set(indexed.map { Self.fileName(for: $0) })
        var found: [(path: String, entry: StoreEntry?)] = []
        for name in names where Self.isEntryFileName(name) && !indexedNames.contains(name) {
            guard let info = fileSystem.info(name, in: folder), info.isRegularFile,
                case .success(let (header, _)) = readHeader(name)
            else { continue }
            // A file named from another spelling of its key is never read: garbage collection
            // removes it; an import, which a read may start, leaves it alone.
            guard Self.isHome(name, of: header.key) || removingStrays else { continue }
            let entry = Self.fileRow(header, size: info.size, lastUse: info.accessedAt)
            found.append((path(name), Self.isHome(name, of: header.key) ? entry : nil))
        }
        var complete = true
        // In batches: each transaction holds the store's lock briefly.
        for start in stride(from: 0, to: found.count, by: 256) {
            do throws(StoreError) {
                _ = try store.reconcile(files: Array(found[start..<min(start + 256, found.count)]), indexing: indexing)
            } catch {
                if case .setAside(let setAside) = error { noteSetAside(setAside, of: store) }
                complete = false
            }
        }
        return complete
    }

    /// Whether the folder's path names a directory now (following links): one `stat`.
    private var isFolder: Bool {
        var info = stat()
        return stat(folder, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }
}
