import Cashier
import Foundation

/// `cashier remove DIR KEY`.
enum RemoveCommand {
    static func run(directory: String, key: String, console: Console) throws(ToolError) -> ExitStatus {
        try Inventory.checkFolder(directory)
        let fileName = DiskStore.fileName(for: key)
        guard let entry = Inventory.readEntry(directory, fileName, keepPayload: false),
              entry.header == nil || entry.header?.key == key
        else {
            throw ToolError("no entry for key \"\(Format.escaped(key))\" in \(directory)")
        }
        do {
            try DiskStore(folder: directory).remove(fileName)
        } catch {
            throw ToolError("could not remove \(fileName): \(error)")
        }
        console.print("Removed \"\(Format.escaped(key))\" (\(Format.size(entry.size)))\(entry.isDamaged ? ", which was damaged" : "").")
        return .success
    }
}
