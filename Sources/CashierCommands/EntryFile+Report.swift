import Cashier
import Foundation

/// The views of one entry shared by `list`, `show`, `stats` and `demo`: table cells and `--json` fields.
extension EntryFile {
    /// When the entry stops being valid, or `nil` for never (no lifespan end, or locked).
    var effectiveExpiry: Double? {
        guard let header, !header.isLocked else { return nil }
        return header.expiresAt(lastUsedAt: lastUse)
    }

    func age(at now: Double) -> Double? {
        header.map { now - $0.createdAt }
    }

    static let tableHeader = ["KEY", "TYPE", "CODEC", "SCHEMA", "APP", "SIZE", "AGE", "EXPIRES", "LOCKED", "STATUS"]
    static let rightAlignedColumns: Set<Int> = [5, 6]

    func tableRow(at now: Double) -> [String] {
        let status = status(at: now).rawValue
        guard let header else {
            return [displayKey, "?", "?", "?", "?", Format.size(size), "?", "?", "?", status]
        }
        return [
            Format.escaped(key ?? header.key),
            Format.typeName(header.typeName),
            header.format.name,
            header.schemaVersion.map(String.init) ?? "-",
            header.appVersion.map(Format.escaped) ?? "-",
            Format.size(size),
            Format.duration(now - header.createdAt),
            Format.expiry(header.expiresAt(lastUsedAt: lastUse), isLocked: header.isLocked, now: now),
            header.isLocked ? "yes" : "no",
            status,
        ]
    }

    /// The fields documented in the README under "`--json` fields".
    func json(at now: Double) -> [String: JSONValue] {
        [
            "key": .string(key),
            // `file` is null for a row; `location` says which (added with the store).
            "file": .string(fileName),
            "location": .string(location.rawValue),
            // The name as the table spells it (`Array<String>`, `Data`): one spelling for people
            // and scripts, and the same on every platform (no `Foundation` or `FoundationEssentials`).
            "type": .string(header.map { Format.shortTypeName($0.typeName) }),
            "codec": .string(header?.format.name),
            "schemaVersion": .int(header?.schemaVersion),
            "appVersion": .string(header?.appVersion),
            "size": .int(size),
            "createdAt": .string(header.map { Format.date($0.createdAt) }),
            "validatedAt": .string(header.map { Format.date($0.validatedAt) }),
            "expiresAt": .string(effectiveExpiry.map(Format.date)),
            "ageSeconds": .int(age(at: now).map(Self.whole)),
            "expiresInSeconds": .int(effectiveExpiry.map { Self.whole($0 - now) }),
            "locked": header.map { .bool($0.isLocked) } ?? .null,
            "status": .string(status(at: now).rawValue),
            "problem": .string(problem),
        ]
    }

    private static func whole(_ seconds: Double) -> Int {
        guard seconds.isFinite else { return 0 }
        return Int(max(min(seconds.rounded(.down), 1e15), -1e15))
    }
}

extension Inventory {
    func sorted(by order: ListSort, now: Double) -> [EntryFile] {
        // Ties, and rows without a header, fall back to key then file name so the order is stable.
        func byKey(_ a: EntryFile, _ b: EntryFile) -> Bool {
            switch (a.key, b.key) {
            case (let x?, let y?) where x != y: return x < y
            case (_?, nil): return true
            case (nil, _?): return false
            default: return a.identity < b.identity
            }
        }
        return entries.sorted { a, b in
            switch order {
            case .key:
                return byKey(a, b)
            case .size:
                return a.size != b.size ? a.size > b.size : byKey(a, b)
            case .age:
                let x = a.header?.createdAt ?? .infinity
                let y = b.header?.createdAt ?? .infinity
                return x != y ? x < y : byKey(a, b)
            case .expiry:
                let x = a.effectiveExpiry ?? .infinity
                let y = b.effectiveExpiry ?? .infinity
                return x != y ? x < y : byKey(a, b)
            }
        }
    }

    /// Whether the table has a LOCATION column: when the folder has a store (a folder of
    /// files alone lists as it always has).
    var showsLocation: Bool { store.state != .absent }

    /// The table `list` prints (and `demo` ends with).
    func table(sortedBy order: ListSort, now: Double) -> String {
        let location = showsLocation
        let rows = sorted(by: order, now: now).map { $0.tableRow(at: now) + (location ? [$0.location.rawValue] : []) }
        return Format.table(
            EntryFile.tableHeader + (location ? ["LOCATION"] : []), rows, rightAligned: EntryFile.rightAlignedColumns)
    }

    /// Entries and bytes in rows and in files.
    var rows: [EntryFile] { entries.filter { $0.location == .row } }
    var files: [EntryFile] { entries.filter { $0.location == .file } }

    var totalSize: Int { entries.reduce(0) { $0 + $1.size } }

    /// "7 entries, 3.4 KiB", and with a store "7 entries, 3.4 KiB (5 rows, 2 files)".
    var summary: String {
        let total = "\(entries.count) \(entries.count == 1 ? "entry" : "entries"), \(Format.size(totalSize))"
        guard showsLocation else { return total }
        let rows = rows.count
        let files = entries.count - rows
        return total + " (\(rows) \(rows == 1 ? "row" : "rows"), \(files) \(files == 1 ? "file" : "files"))"
    }
}
