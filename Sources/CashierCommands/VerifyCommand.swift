import Foundation

/// `cashier-tool verify DIR [--json]`: exit 0 when every entry is sound, 1 when any is damaged.
///
/// A folder with no entries exits 0 (an empty cache is a sound one) but says that it
/// checked nothing, and when it holds other files, asks whether it is a cache folder.
enum VerifyCommand {
    static func run(directory: String, json: Bool, console: Console) throws(ToolError) -> ExitStatus {
        let inventory = try Inventory.load(directory, checkStore: true)
        let damaged = inventory.entries.filter(\.isDamaged)
        // The store's own damage: a file that does not open, or SQLite's structural findings.
        var storeProblems = inventory.store.structuralProblems
        // A store that cannot be read now (another process's lock, as a cache's exclusive one
        // on a full volume) is not damage: said as such, and still not sound (exit 1: its rows
        // went unchecked).
        var unreadable: String?
        switch inventory.store.state {
        case .damaged(let reason): storeProblems.insert(reason, at: 0)
        case .unreadable(let reason): unreadable = reason
        case .absent, .sound, .unavailable: break
        }
        let isSound = damaged.isEmpty && storeProblems.isEmpty && unreadable == nil
        if json {
            let document: JSONValue = .object([
                "directory": .string(directory),
                "checked": .int(inventory.entries.count),
                "sound": .int(inventory.entries.count - damaged.count),
                "damaged": .array(
                    damaged.map { entry in
                        .object([
                            "file": .string(entry.fileName), "key": .string(entry.key),
                            "location": .string(entry.location.rawValue), "size": .int(entry.size),
                            "problem": .string(entry.problem),
                        ])
                    }),
                "foreignFiles": .array(inventory.foreign.map(JSONValue.string)),
                "store": inventory.storeJSON,
                "storeProblems": .array(storeProblems.map(JSONValue.string)),
                "storeUnreadable": unreadable.map(JSONValue.string) ?? .null,
            ])
            console.print(document.text)
        } else {
            for entry in damaged {
                let key = entry.key.map { " (key \"\(Format.escaped($0))\")" } ?? ""
                console.print("damaged: \(entry.place)\(key): \(entry.problem ?? "")")
            }
            for problem in storeProblems {
                console.print("damaged: the store \(FolderStore.fileName): \(Format.escaped(problem))")
            }
            if let unreadable {
                console.print("unreadable: the store \(FolderStore.fileName): \(Format.escaped(unreadable))")
            }
            let checked = inventory.entries.count
            let files = checked == 1 ? "1 entry" : "\(checked) entries"
            if case .unreadable = inventory.store.state {
                console.print(
                    "\(files) checked, \(damaged.count) damaged; the store \(FolderStore.fileName) could not be read, "
                        + "so its rows were not checked.")
            } else if !storeProblems.isEmpty {
                // A store that does not open, `prune --damaged` sets aside (the cache would on its
                // next open); damage SQLite's check finds in a store that opens, the cache sets
                // aside when a read meets it.
                let opens = inventory.store.state.damage == nil
                let fix =
                    opens
                    ? "; the cache sets it aside when a read meets the damage."
                    : ". Set it aside (the cache starts a fresh one) and remove any damaged entries with:"
                console.print(
                    "\(files) checked, \(damaged.count) damaged, and the store \(FolderStore.fileName) is damaged\(fix)"
                )
                if !opens || !damaged.isEmpty {
                    if opens { console.print("Remove the damaged entries with:") }
                    console.print("  swift run cashier-tool prune \(directory) --damaged")
                    console.print(Self.installNote)
                }
            } else if checked == 0 {
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
        return isSound ? .success : .failure
    }

    /// Where `swift run cashier-tool` works, and how to get a `cashier-tool` on PATH instead.
    static let installNote = """
        (run it in the Cashier package or in a package that depends on it; for a cashier-tool on
        your PATH: swift build -c release --product cashier-tool, then copy .build/release/cashier-tool
        into a folder on PATH, such as /usr/local/bin)
        """
}
