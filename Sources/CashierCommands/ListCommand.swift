import Foundation

/// `cashier list DIR [--sort ORDER] [--json]`.
enum ListCommand {
    static func run(directory: String, sort: ListSort, json: Bool, console: Console, now: Date) throws(ToolError)
        -> ExitStatus
    {
        let inventory = try Inventory.load(directory)
        let seconds = now.timeIntervalSince1970
        if json {
            let document: JSONValue = .object([
                "directory": .string(directory),
                "sort": .string(sort.rawValue),
                "entries": .array(inventory.sorted(by: sort, now: seconds).map { .object($0.json(at: seconds)) }),
                "count": .int(inventory.entries.count),
                "totalBytes": .int(inventory.totalSize),
                "foreignFiles": .array(inventory.foreign.map(JSONValue.string)),
                "store": inventory.storeJSON,
            ])
            console.print(document.text)
        } else if inventory.entries.isEmpty {
            console.print("No entries in \(directory).")
        } else {
            console.print(inventory.table(sortedBy: sort, now: seconds))
            console.print("")
            console.print(inventory.summary)
        }
        inventory.noteForeignFiles(console)
        return .success
    }
}
