import Foundation

/// How sizes, durations, dates, keys and tables read in the tool's text output.
enum Format {
    /// "512 B", "1.2 KiB", "3.4 MiB": powers of 1024, one decimal past bytes.
    static func size(_ bytes: Int) -> String {
        guard bytes >= 1024 || bytes <= -1024 else { return "\(bytes) B" }
        let units = ["KiB", "MiB", "GiB", "TiB", "PiB"]
        var value = Double(bytes) / 1024
        var unit = 0
        while abs(value) >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return String(format: "%.1f", value) + " " + units[unit]
    }

    /// "45s", "3m", "2h", "5d": the largest whole unit, rounded down; negative durations get a minus sign.
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite else { return "?" }
        if seconds < 0 { return "-" + duration(-seconds) }
        let whole = Int(seconds.rounded(.down))
        switch whole {
        case ..<60: return "\(whole)s"
        case ..<3600: return "\(whole / 60)m"
        case ..<86_400: return "\(whole / 3600)h"
        default: return "\(whole / 86_400)d"
        }
    }

    /// "never", "in 59m", "3m ago".
    static func expiry(_ expiresAt: Double?, isLocked: Bool, now: Double) -> String {
        guard let expiresAt, !isLocked else { return "never" }
        let remaining = expiresAt - now
        return remaining > 0 ? "in \(duration(remaining))" : "\(duration(-remaining)) ago"
    }

    /// An ISO 8601 date in UTC, to the second.
    static func date(_ seconds: Double) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: seconds))
    }

    /// A key as one line of a table: control and format characters and the Unicode line and
    /// paragraph separators (U+2028, U+2029) escaped, so no key can break the layout.
    static func escaped(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            case _
            where [.control, .format, .lineSeparator, .paragraphSeparator].contains(scalar.properties.generalCategory):
                result += "\\u{\(String(scalar.value, radix: 16))}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// A type name without the `Swift.` and Foundation qualifiers.
    static func shortTypeName(_ name: String) -> String {
        name.replacingOccurrences(of: "Swift.", with: "").replacingOccurrences(of: "FoundationEssentials.", with: "")
            .replacingOccurrences(of: "Foundation.", with: "")
    }

    /// A stored type name as `list` and `show` both spell it: without the standard
    /// qualifiers, control characters escaped. (`--json` gives the same name, unescaped.)
    static func typeName(_ stored: String) -> String {
        escaped(shortTypeName(stored))
    }

    /// Left-aligned columns separated by two spaces; columns in `rightAligned` are aligned right.
    static func table(_ header: [String], _ rows: [[String]], rightAligned: Set<Int> = []) -> String {
        let all = [header] + rows
        var widths = [Int](repeating: 0, count: header.count)
        for row in all {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        return all.map { row in
            row.enumerated().map { column, cell in
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                if rightAligned.contains(column) { return padding + cell }
                return column == row.count - 1 ? cell : cell + padding
            }
            .joined(separator: "  ")
        }
        .joined(separator: "\n")
    }

    /// `xxd`-style lines: offset, 16 bytes in hex, and the printable ones as text.
    static func hexDump(_ bytes: Data) -> String {
        var lines: [String] = []
        let bytes = [UInt8](bytes)
        var offset = 0
        while offset < bytes.count {
            let line = bytes[offset..<min(offset + 16, bytes.count)]
            var hex = ""
            for (index, byte) in line.enumerated() {
                hex += String(format: "%02x ", byte)
                if index == 7 { hex += " " }
            }
            hex = hex.padding(toLength: 49, withPad: " ", startingAt: 0)
            let text = String(line.map { (0x20..<0x7F).contains($0) ? Character(Unicode.Scalar($0)) : "." })
            lines.append(String(format: "%08x  ", offset) + hex + " |" + text + "|")
            offset += 16
        }
        return lines.joined(separator: "\n")
    }
}
