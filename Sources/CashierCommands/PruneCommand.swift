import Cashier
import CashierStore
import Foundation

/// `cashier prune DIR [--expired] [--damaged] [--max-size BYTES] [--dry-run] [--json]`.
enum PruneCommand {
    enum Reason: String {
        case damaged, expired, evicted
    }

    static func run(directory: String, options: PruneOptions, json: Bool, console: Console, now: Date) throws(ToolError)
        -> ExitStatus
    {
        try Inventory.checkFolder(directory)
        let store = DiskTier(folder: directory)
        // The folder lock the library's own eviction takes: no cache in another process sweeps meanwhile.
        var lockToken: Int32?
        if !options.dryRun {
            do {
                lockToken = try store.fileSystem.lockExclusively(store.path(DiskTier.lockFileName))
            } catch {
                throw ToolError("cannot lock \(directory) for pruning: \(error)")
            }
        }
        defer { if let lockToken { store.fileSystem.unlock(lockToken) } }

        let inventory = try Inventory.load(directory)
        // A store that is there but cannot be read now (another process's lock, as a cache's
        // exclusive one on a full volume): its rows are not listed, so the files alone would
        // be pruned, the large entries' from behind their rows, and every row would stay.
        if case .unreadable(let reason) = inventory.store.state, !options.dryRun {
            throw ToolError(
                "cannot prune \(directory): its store \(FolderStore.fileName) cannot be read now (\(reason)); nothing removed"
            )
        }
        // The log folded into the store first (without waiting for readers) when the store is
        // sound (a damaged one is `--damaged`'s): what the store's files occupy is then what its
        // entries need, which a size limit counts.
        if !options.dryRun, inventory.store.state == .sound { foldLog(directory) }
        let selected = select(
            inventory.entries, options: options, now: now.timeIntervalSince1970,
            storeBytes: storeFileBytes(directory))
        // A store that does not open is set aside by `--damaged` (the cache would do it on its next open).
        let storeDamage = options.damaged ? inventory.store.state.damage : nil
        var removed: [(EntryFile, Reason)] = []
        var failures: [(EntryFile, String)] = []
        let removal =
            options.dryRun
            ? nil : EntryRemoval(directory: directory, state: inventory.store.state, setAsideDamage: storeDamage != nil)
        if let removal {
            // One store transaction for them all (see EntryRemoval.remove(_:)).
            let problems = removal.remove(
                selected.map { entry, _ in
                    (entry, entry.location == .row ? entry.rowKey.flatMap { inventory.shadowed[$0] } : nil)
                })
            for ((entry, reason), problem) in zip(selected, problems) {
                if let problem { failures.append((entry, problem)) } else { removed.append((entry, reason)) }
            }
        } else {
            removed = selected
        }
        if removed.contains(where: { $0.0.location == .row }) { removal?.reclaimSpace() }
        let removedBytes = removed.reduce(0) { $0 + $1.0.size }
        let remainingCount = inventory.entries.count - removed.count
        let remainingBytes = inventory.totalSize - removedBytes

        if json {
            let document: JSONValue = .object([
                "directory": .string(directory),
                "dryRun": .bool(options.dryRun),
                "removed": .array(
                    removed.map { entry, reason in
                        .object([
                            "key": .string(entry.key), "file": .string(entry.fileName),
                            "location": .string(entry.location.rawValue), "size": .int(entry.size),
                            "reason": .string(reason.rawValue),
                        ])
                    }),
                "count": .int(removed.count),
                "bytes": .int(removedBytes),
                "remainingCount": .int(remainingCount),
                "remainingBytes": .int(remainingBytes),
                "failures": .array(
                    failures.map {
                        .object([
                            "file": .string($0.0.fileName), "key": .string($0.0.key),
                            "location": .string($0.0.location.rawValue), "problem": .string($0.1),
                        ])
                    }),
                "storeSetAside": storeDamage.map { reason in
                    .object([
                        "file": .string(FolderStore.fileName), "reason": .string(reason),
                        "movedTo": .string(removal?.setAside?.movedTo.map { ($0 as NSString).lastPathComponent }),
                    ])
                } ?? .null,
            ])
            console.print(document.text)
        } else {
            let verb = options.dryRun ? "would remove" : "removed"
            let rows = removed.map { entry, reason in
                [verb, Format.escaped(entry.displayKey), Format.size(entry.size), reason.rawValue]
            }
            if !rows.isEmpty { console.print(Format.table(["", "KEY", "SIZE", "WHY"], rows, rightAligned: [2])) }
            let entries = removed.count == 1 ? "1 entry" : "\(removed.count) entries"
            let remaining = remainingCount == 1 ? "1 entry" : "\(remainingCount) entries"
            console.print(
                "\(options.dryRun ? "Would remove" : "Removed") \(entries) (\(Format.size(removedBytes))); "
                    + "\(remaining) (\(Format.size(remainingBytes))) \(options.dryRun ? "would remain" : "remain").")
            if let storeDamage {
                let aside = removal?.setAside?.movedTo.map { " to \(($0 as NSString).lastPathComponent)" } ?? ""
                console.print(
                    "\(options.dryRun ? "Would set" : "Set") the damaged store \(FolderStore.fileName) aside\(aside)"
                        + " (\(Format.escaped(storeDamage))); the cache starts a fresh one.")
            }
        }
        for (entry, problem) in failures {
            let key = entry.key.map { " (key \"\(Format.escaped($0))\")" } ?? ""
            console.printError("cashier-tool: could not remove \(entry.place)\(key): \(problem)")
        }
        if storeDamage != nil, !options.dryRun, removal?.setAside == nil {
            console.printError(
                "cashier-tool: could not set the damaged store \(FolderStore.fileName) aside: "
                    + (removal?.storeProblem
                        ?? "it opens for writing; the cache sets it aside when a read meets the damage")
            )
        }
        var noted = inventory
        // A store this run set aside is no longer the folder's: nothing to note about it.
        if removal?.setAside != nil { noted.store.state = .absent }
        noted.noteForeignFiles(console)
        let setAsideFailed = storeDamage != nil && !options.dryRun && removal?.setAside == nil
        return failures.isEmpty && !setAsideFailed ? .success : .failure
    }

    /// Checkpoints the folder's store, if it has one, without waiting, and cuts its log back.
    static func foldLog(_ directory: String) {
        guard FileManager.default.fileExists(atPath: directory + "/" + DiskTier.storeFileName) else { return }
        _ = try? EntryStore(folder: directory).checkpoint()
    }

    /// What the store's own files occupy (the store, its `-wal` and `-shm`): rows are in it.
    static func storeFileBytes(_ directory: String) -> Int {
        ["", "-wal", "-shm"].reduce(0) { total, suffix in
            var info = stat()
            let path = directory + "/" + DiskTier.storeFileName + suffix
            return total + (stat(path, &info) == 0 ? Int(info.st_size) : 0)
        }
    }

    /// What to remove, in order: damaged, then expired, then least recently used past the size limit.
    ///
    /// The limit bounds what the folder occupies, as the cache's `diskSizeLimit` does:
    /// `storeBytes` (the store's files, rows included) and the large entries' files. A row
    /// removed is counted as freeing its size, which the reclaim after the removals gives back.
    static func select(_ entries: [EntryFile], options: PruneOptions, now: Double, storeBytes: Int = 0)
        -> [(EntryFile, Reason)]
    {
        var selected: [(EntryFile, Reason)] = []
        var remaining: [EntryFile] = []
        for entry in entries {
            if options.damaged, entry.isDamaged {
                selected.append((entry, .damaged))
            } else if options.expired, entry.status(at: now) == .expired {
                selected.append((entry, .expired))
            } else {
                remaining.append(entry)
            }
        }
        guard let limit = options.maximumSize else { return selected }
        var total = remaining.reduce(storeBytes) { $0 + ($1.location == .row ? 0 : $1.size) }
        // Damaged files can never be read: they go first. Then unlocked entries, then locked
        // ones, each least recently used first.
        func rank(_ entry: EntryFile) -> Int {
            if entry.isDamaged { return 0 }
            return entry.header?.isLocked == true ? 2 : 1
        }
        let order = remaining.sorted { a, b in
            let (x, y) = (rank(a), rank(b))
            if x != y { return x < y }
            if a.lastUse != b.lastUse { return a.lastUse < b.lastUse }
            return a.identity < b.identity
        }
        for entry in order where total > limit {
            selected.append((entry, .evicted))
            total -= entry.size
        }
        return selected
    }
}
