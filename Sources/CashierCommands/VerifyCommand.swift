import Foundation

/// `cashier-tool verify DIR [--json]`: exit 0 when every entry is sound, 1 when any is damaged.
///
/// A folder with no entries exits 0 (an empty cache is a sound one) but says that it
/// checked nothing, and when it holds other files, asks whether it is a cache folder.
enum VerifyCommand {
    static func run(directory: String, json: Bool, console: Console) throws(ToolError) -> ExitStatus {
        let inventory = try Inventory.load(directory)
        let damaged = inventory.entries.filter(\.isDamaged)
        if json {
            let document: JSONValue = .object([
                "directory": .string(directory),
                "checked": .int(inventory.entries.count),
                "sound": .int(inventory.entries.count - damaged.count),
                "damaged": .array(
                    damaged.map { entry in
                        .object([
                            "file": .string(entry.fileName), "key": .string(entry.header?.key),
                            "size": .int(entry.size), "problem": .string(entry.problem),
                        ])
                    }),
                "foreignFiles": .array(inventory.foreign.map(JSONValue.string)),
            ])
            console.print(document.text)
        } else {
            for entry in damaged {
                let key = entry.header.map { " (key \"\(Format.escaped($0.key))\")" } ?? ""
                console.print("damaged: \(entry.fileName)\(key): \(entry.problem ?? "")")
            }
            let checked = inventory.entries.count
            let files = checked == 1 ? "1 entry" : "\(checked) entries"
            if checked == 0 {
                // Not "all sound": nothing was checked, which a wrong folder gives too.
                console.print("No cache entries in \(directory): nothing to verify.")
            } else if damaged.isEmpty {
                console.print("\(files) checked, all sound.")
            } else {
                let them = damaged.count == 1 ? "it" : "them"
                // The command as it runs without installing anything, then how to install it:
                // a hint that assumes `cashier-tool` is on PATH fails for most readers.
                console.print("\(files) checked, \(damaged.count) damaged. Remove \(them) with:")
                console.print("  swift run cashier-tool prune \(directory) --damaged")
                console.print(Self.installNote)
            }
        }
        inventory.noteForeignFiles(console)
        return damaged.isEmpty ? .success : .failure
    }

    /// Where `swift run cashier-tool` works, and how to get a `cashier-tool` on PATH instead.
    static let installNote = """
        (run it in the Cashier package or in a package that depends on it; for a cashier-tool on
        your PATH: swift build -c release --product cashier-tool, then copy .build/release/cashier-tool
        into a folder on PATH, such as /usr/local/bin)
        """
}
