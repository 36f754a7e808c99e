import Foundation

/// `cashier stats DIR [--json]`.
enum StatsCommand {
    static let largestCount = 5

    static func run(directory: String, json: Bool, console: Console, now: Date) throws(ToolError) -> ExitStatus {
        let inventory = try Inventory.load(directory)
        let seconds = now.timeIntervalSince1970
        let entries = inventory.entries
        let expired = entries.filter { $0.status(at: seconds) == .expired }
        let locked = entries.filter { $0.header?.isLocked == true && !$0.isDamaged }
        let damaged = entries.filter(\.isDamaged)
        let largest = inventory.sorted(by: .size, now: seconds).prefix(largestCount)
        let oldest = inventory.sorted(by: .age, now: seconds).first { $0.header != nil }
        func bytes(_ group: [EntryFile]) -> Int { group.reduce(0) { $0 + $1.size } }

        if json {
            func group(_ group: [EntryFile]) -> JSONValue {
                .object(["count": .int(group.count), "bytes": .int(bytes(group))])
            }
            let document: JSONValue = .object([
                "directory": .string(directory),
                "count": .int(entries.count),
                "totalBytes": .int(inventory.totalSize),
                "expired": group(expired),
                "locked": group(locked),
                "damaged": group(damaged),
                "largest": .array(
                    largest.map {
                        .object([
                            "key": .string($0.key), "file": .string($0.fileName),
                            "location": .string($0.location.rawValue), "size": .int($0.size),
                        ])
                    }),
                "oldest": oldest.map { entry in
                    .object([
                        "key": .string(entry.key), "file": .string(entry.fileName),
                        "location": .string(entry.location.rawValue),
                        "createdAt": .string(Format.date(entry.header!.createdAt)),
                        "ageSeconds": .int(Int((seconds - entry.header!.createdAt).rounded(.down))),
                    ])
                } ?? .null,
                "foreignFiles": .array(inventory.foreign.map(JSONValue.string)),
                "store": inventory.storeJSON,
            ])
            console.print(document.text)
        } else {
            func line(_ group: [EntryFile]) -> String { "\(group.count) (\(Format.size(bytes(group))))" }
            var rows: [(String, String)] = [
                ("folder", directory),
                ("entries", line(entries)),
                ("expired", line(expired)),
                ("locked", line(locked)),
                ("damaged", line(damaged)),
            ]
            if inventory.showsLocation {
                rows.insert(("in rows", line(inventory.rows)), at: 2)
                rows.insert(("in files", line(inventory.files)), at: 3)
                rows.insert(("store", storeLine(inventory)), at: 4)
            }
            rows.append(
                (
                    "largest",
                    largest.isEmpty
                        ? "-"
                        : largest.map { "\(Format.escaped($0.displayKey)) (\(Format.size($0.size)))" }.joined(
                            separator: ", ")
                ))
            rows.append(
                (
                    "oldest",
                    oldest.map {
                        "\(Format.escaped($0.displayKey)) (\(Format.duration(seconds - $0.header!.createdAt)))"
                    } ?? "-"
                ))
            let width = rows.map(\.0.count).max() ?? 0
            console.print(
                rows.map { $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1 }.joined(
                    separator: "\n"))
        }
        inventory.noteForeignFiles(console)
        return .success
    }

    /// "store.sqlite, 48.0 KiB on disk", or why it does not read.
    static func storeLine(_ inventory: Inventory) -> String {
        let state = inventory.store.state
        guard let problem = state.problem else {
            return "\(FolderStore.fileName), \(Format.size(inventory.store.bytes)) on disk"
        }
        return "\(FolderStore.fileName) \(state.name): \(problem)"
    }
}
