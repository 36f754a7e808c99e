import Cashier
import Foundation

/// `cashier-tool remove DIR KEY [--force]`.
///
/// A locked entry is one the app pinned (``Cache/lock(_:)``): exempt from expiry and,
/// while possible, from eviction. Removing one takes `--force`, so it is never a slip.
enum RemoveCommand {
    static func run(directory: String, key: String, force: Bool, console: Console) throws(ToolError) -> ExitStatus {
        try Inventory.checkFolder(directory)
        let fileName = DiskStore.fileName(for: key)
        guard let entry = Inventory.readEntry(directory, fileName, keepPayload: false),
            entry.header == nil || entry.header?.key == key
        else {
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
        do {
            try DiskStore(folder: directory).remove(fileName)
        } catch {
            throw ToolError("could not remove \(fileName): \(error)")
        }
        let note = entry.isDamaged ? ", which was damaged" : isLocked ? ", which was locked" : ""
        console.print("Removed \"\(Format.escaped(key))\" (\(Format.size(entry.size)))\(note).")
        return .success
    }
}
