import Cashier
import CashierEntryFormat
import Foundation

/// `cashier show DIR KEY [--json]`.
enum ShowCommand {
    static func run(directory: String, key: String, json: Bool, console: Console, now: Date) throws(ToolError)
        -> ExitStatus
    {
        try Inventory.checkFolder(directory)
        let seconds = now.timeIntervalSince1970
        guard let entry = Inventory.entry(for: key, in: directory, keepPayload: true, console: console) else {
            throw ToolError(
                "no entry for key \"\(Format.escaped(key))\" in \(directory)"
                    + Suggestion.clause(key, among: Suggestion.keys(in: directory), quote: "\""))
        }
        let payload = entry.payload.map { Payload(data: $0, format: entry.header!.format) }
        if json {
            var fields = entry.json(at: seconds)
            fields["directory"] = .string(directory)
            fields["payload"] = payload.map { .object($0.json) } ?? .null
            console.print(JSONValue.object(fields).text)
        } else {
            console.print(metadata(entry, now: seconds))
            if let payload {
                console.print("")
                console.print(payload.text)
            }
        }
        return entry.isDamaged ? .failure : .success
    }

    private static func metadata(_ entry: EntryFile, now: Double) -> String {
        var rows: [(String, String)] = []
        if let header = entry.header {
            rows += [
                ("key", Format.escaped(entry.key ?? header.key)),
                entry.fileName.map { ("file", $0) } ?? ("row", "in \(FolderStore.fileName)"),
                ("type", Format.typeName(header.typeName)),
                ("codec", header.format.name),
                ("schema version", header.schemaVersion.map(String.init) ?? "none"),
                ("app version", header.appVersion.map(Format.escaped) ?? "none"),
                (
                    "size",
                    "\(Format.size(entry.size)) (\(entry.size) bytes: header \(header.length), payload \(header.payloadLength))"
                ),
                ("created", "\(Format.date(header.createdAt)) (\(Format.duration(now - header.createdAt)) ago)"),
                ("validated", "\(Format.date(header.validatedAt)) (\(Format.duration(now - header.validatedAt)) ago)"),
                ("expires", expiry(header, lastUse: entry.lastUse, now: now)),
                ("locked", header.isLocked ? "yes" : "no"),
            ]
        } else {
            if let key = entry.rowKey { rows.append(("key", Format.escaped(key))) }
            rows += [
                entry.fileName.map { ("file", $0) } ?? ("row", "in \(FolderStore.fileName)"),
                ("size", "\(Format.size(entry.size)) (\(entry.size) bytes)"),
            ]
        }
        rows.append(("status", entry.status(at: now).rawValue + (entry.problem.map { ": \($0)" } ?? "")))
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1 }.joined(
            separator: "\n")
    }

    private static func expiry(_ header: EntryHeader, lastUse: Double, now: Double) -> String {
        guard let expiresAt = header.expiresAt(lastUsedAt: lastUse) else { return "never" }
        let relative = Format.expiry(expiresAt, isLocked: false, now: now)
        return "\(Format.date(expiresAt)) (\(relative))" + (header.isLocked ? ", but locked entries never expire" : "")
    }
}

/// A sound entry's payload, shown by its format.
struct Payload {
    var data: Data
    var format: PayloadFormat

    static let dumpLength = 256
    /// The largest payload parsed and pretty-printed (1 MiB). A larger one (entries go up to
    /// 1 GiB) would cost many times its size in parsed values and text: it is described and
    /// its first bytes dumped instead.
    static let prettyPrintLimit = 1 << 20

    /// Whether the payload is small enough to parse and pretty-print.
    var isPrintable: Bool { data.count <= Self.prettyPrintLimit }
    static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// Width and height from a PNG's IHDR chunk, when the bytes are a PNG.
    var pngSize: (width: Int, height: Int)? {
        let bytes = [UInt8](data.prefix(24))
        guard format == .raw, bytes.count == 24, Array(bytes[0..<8]) == Self.pngSignature,
            Array(bytes[12..<16]) == Array("IHDR".utf8)
        else { return nil }
        func bigEndian(_ range: Range<Int>) -> Int { bytes[range].reduce(0) { $0 << 8 | Int($1) } }
        return (bigEndian(16..<20), bigEndian(20..<24))
    }

    var jsonValue: JSONValue? { format == .json && isPrintable ? JSONValue.parse(data) : nil }

    /// The property list as XML text, when the payload is one.
    var propertyListXML: String? {
        guard format == .propertyList, isPrintable,
            let object = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil),
            let xml = try? PropertyListSerialization.data(fromPropertyList: object, format: .xml, options: 0)
        else { return nil }
        return String(decoding: xml, as: UTF8.self)
    }

    var text: String {
        if format != .raw, !isPrintable {
            return
                "payload: \(data.count) bytes of \(format == .json ? "JSON" : "property list"), too large to pretty-print"
                + " (over \(Format.size(Self.prettyPrintLimit)))\n" + dump
        }
        switch format {
        case .json:
            if let value = jsonValue { return value.text }
            return "payload: \(data.count) bytes that do not parse as JSON\n" + dump
        case .propertyList:
            if let xml = propertyListXML { return xml.hasSuffix("\n") ? String(xml.dropLast()) : xml }
            return "payload: \(data.count) bytes that do not parse as a property list\n" + dump
        case .raw:
            if let png = pngSize { return "PNG image, \(png.width) × \(png.height) pixels, \(data.count) bytes" }
            return dump
        }
    }

    private var dump: String {
        let shown = min(data.count, Self.dumpLength)
        let heading =
            data.count > shown
            ? "\(data.count) bytes (\(Format.size(data.count))), the first \(shown) shown:"
            : "\(data.count) bytes:"
        return heading + (shown > 0 ? "\n" + Format.hexDump(data.prefix(shown)) : "")
    }

    var json: [String: JSONValue] {
        let png = pngSize
        let hex =
            (format == .raw && png == nil) || !isPrintable
            ? data.prefix(Self.dumpLength).map { String(format: "%02x", $0) }.joined() : nil
        return [
            "format": .string(format.name),
            "length": .int(data.count),
            "value": jsonValue ?? .null,
            "xml": .string(propertyListXML),
            "png": png.map { .object(["width": .int($0.width), "height": .int($0.height)]) } ?? .null,
            "hexPrefix": .string(hex),
        ]
    }
}
