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
        let work: @Sendable () -> Void = { [self] in
            defer { pendingSweeps.leave() }
            let outcome: Bool?? = withBackgroundActivity("Cashier store import") {
                withFolderLock(waiting: false) { reconcileFiles(with: store, indexing: true) }
            }
            if case .some(.some(true)) = outcome { storeState.withLock { $0.importPending = false } }
            if case .some(.none) = outcome { scheduleImport(into: store, after: 1) }
            if case .some(.some(false)) = outcome { scheduleImport(into: store, after: 1) }
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
        let names: [String]
        do throws(SystemError) {
            names = try fileSystem.contentsOfDirectory(folder)
        } catch {
            // A folder removed (the app cleared its caches) has nothing left to reconcile: an
            // import retrying every second would otherwise keep this tier alive for good.
            return error.code == ENOENT
        }
        guard let indexed = try? store.largeEntryKeys() else { return false }
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
}
