import Cashier
import Foundation

/// `cashier-tool remove DIR KEY [--force]`.
///
/// A locked entry is one the app pinned (``Cache/lock(_:)``): exempt from expiry and,
/// while possible, from eviction. Removing one takes `--force`, so it is never a slip.
enum RemoveCommand {
    static func run(directory: String, key: String, force: Bool, console: Console) throws(ToolError) -> ExitStatus {
        try Inventory.checkFolder(directory)
        guard let entry = Inventory.entry(for: key, in: directory, keepPayload: false, console: console) else {
            throw ToolError(
                "no entry for key \"\(Format.escaped(key))\" in \(directory)"
                    + Suggestion.clause(key, among: Suggestion.keys(in: directory), quote: "\""))
        }
        // A damaged entry is unreadable whatever its flags say: no reason to keep it.
        let isLocked = !entry.isDamaged && entry.header?.isLocked == true
        if isLocked && !force {
            throw ToolError(
                "\"\(Format.escaped(key))\" is locked (the app pinned it, so it never expires); nothing removed. Remove it anyway with --force."
            )
        }
        // A row found means the store read; a row is removed through it, and the key's
        // left-over file (a write moved the value into the store) with it.
        let removal = EntryRemoval(directory: directory, state: entry.rowKey == nil ? .absent : .sound)
        let shadowed = entry.location == .row ? leftOverFile(of: key, in: directory) : nil
        if let problem = removal.remove(entry, shadowed: shadowed) {
            throw ToolError("could not remove \(entry.place): \(problem)")
        }
        let note = entry.isDamaged ? ", which was damaged" : isLocked ? ", which was locked" : ""
        console.print("Removed \"\(Format.escaped(key))\" (\(Format.size(entry.size)))\(note).")
        return .success
    }

    /// The file of `key` beside its row, when there is one and it is not another key's.
    private static func leftOverFile(of key: String, in directory: String) -> String? {
        let name = DiskTier.fileName(for: key)
        guard let file = Inventory.readEntry(directory, name, keepPayload: false),
            file.header == nil || file.header?.key == key
        else { return nil }
        return name
    }
}
