import Cashier
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
        let store = DiskStore(folder: directory)
        // The folder lock the library's own eviction takes: no cache in another process sweeps meanwhile.
        var lockToken: Int32?
        if !options.dryRun {
            do {
                lockToken = try store.fileSystem.lockExclusively(store.path(DiskStore.lockFileName))
            } catch {
                throw ToolError("cannot lock \(directory) for pruning: \(error)")
            }
        }
        defer { if let lockToken { store.fileSystem.unlock(lockToken) } }

        let inventory = try Inventory.load(directory)
        let selected = select(inventory.entries, options: options, now: now.timeIntervalSince1970)
        var removed: [(EntryFile, Reason)] = []
        var failures: [(EntryFile, String)] = []
        for (entry, reason) in selected {
            if options.dryRun {
                removed.append((entry, reason))
                continue
            }
            do {
                try store.remove(entry.fileName)
                removed.append((entry, reason))
            } catch {
                failures.append((entry, error.description))
            }
        }
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
                            "key": .string(entry.header?.key), "file": .string(entry.fileName),
                            "size": .int(entry.size), "reason": .string(reason.rawValue),
                        ])
                    }),
                "count": .int(removed.count),
                "bytes": .int(removedBytes),
                "remainingCount": .int(remainingCount),
                "remainingBytes": .int(remainingBytes),
                "failures": .array(
                    failures.map { .object(["file": .string($0.0.fileName), "problem": .string($0.1)]) }),
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
        }
        for (entry, problem) in failures {
            console.printError("cashier-tool: could not remove \(entry.fileName): \(problem)")
        }
        inventory.noteForeignFiles(console)
        return failures.isEmpty ? .success : .failure
    }

    /// What to remove, in order: damaged, then expired, then least recently used past the size limit.
    static func select(_ entries: [EntryFile], options: PruneOptions, now: Double) -> [(EntryFile, Reason)] {
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
        var total = remaining.reduce(0) { $0 + $1.size }
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
            return a.fileName < b.fileName
        }
        for entry in order where total > limit {
            selected.append((entry, .evicted))
            total -= entry.size
        }
        return selected
    }
}
