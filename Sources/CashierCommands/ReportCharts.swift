import Foundation

/// The report's two charts, drawn on the server side as inline SVG: no script, no library.
enum ReportCharts {
    /// One bar: its label (from the folder, escaped when drawn), its bytes and entry count.
    struct Bar: Equatable {
        var label: String
        var bytes: Int
        var count: Int
    }

    /// The types with the most bytes, largest first; past the eighth, one bar "other types".
    static func bytesByType(_ entries: [EntryFile], shown: Int = 8) -> [Bar] {
        var groups: [String: Bar] = [:]
        for entry in entries {
            let name = entry.header.map { Format.typeName($0.typeName) } ?? "(unreadable header)"
            groups[name, default: Bar(label: name, bytes: 0, count: 0)].bytes += entry.size
            groups[name]!.count += 1
        }
        let sorted = groups.values.sorted { $0.bytes != $1.bytes ? $0.bytes > $1.bytes : $0.label < $1.label }
        guard sorted.count > shown + 1 else { return sorted }
        let rest = sorted.dropFirst(shown)
        let other = Bar(
            label: "\(rest.count) other types", bytes: rest.reduce(0) { $0 + $1.bytes },
            count: rest.reduce(0) { $0 + $1.count })
        return Array(sorted.prefix(shown)) + [other]
    }

    /// The age buckets, youngest first, each the entries written within it (all buckets
    /// drawn, empty ones too, so two reports compare at a glance).
    static let ageBuckets: [(label: String, upTo: Double)] = [
        ("under 1 minute", 60), ("1 minute to 1 hour", 3600), ("1 hour to 1 day", 86_400),
        ("1 day to 1 week", 7 * 86_400), ("1 week to 30 days", 30 * 86_400), ("over 30 days", .infinity),
    ]

    static func bytesByAge(_ entries: [EntryFile], now: Double) -> [Bar] {
        var bars = ageBuckets.map { Bar(label: $0.label, bytes: 0, count: 0) }
        var unknown = Bar(label: "unreadable header", bytes: 0, count: 0)
        for entry in entries {
            guard let age = entry.age(at: now), age.isFinite else {
                unknown.bytes += entry.size
                unknown.count += 1
                continue
            }
            let index = ageBuckets.firstIndex { age < $0.upTo } ?? ageBuckets.count - 1
            bars[index].bytes += entry.size
            bars[index].count += 1
        }
        return unknown.count > 0 ? bars + [unknown] : bars
    }

    /// Horizontal bars: a label column, the bar scaled to the largest, the size and count.
    static func bars(_ bars: [Bar], label: String) -> String {
        let rowHeight = 24
        let labelWidth = 200
        let barWidth = 180
        let width = labelWidth + barWidth + 160 // room for "1023.9 MiB · 10000 entries"
        let height = max(bars.count, 1) * rowHeight + 4
        let largest = max(bars.map(\.bytes).max() ?? 0, 1)
        var svg =
            "<svg class=\"chart\" role=\"img\" aria-label=\"\(HTML.text(label))\" viewBox=\"0 0 \(width) \(height)\""
        svg += " width=\"\(width)\" height=\"\(height)\" xmlns=\"http://www.w3.org/2000/svg\">\n"
        for (index, bar) in bars.enumerated() {
            let y = index * rowHeight + 2
            let length =
                bar.bytes == 0 ? 0 : max(2, Int((Double(bar.bytes) / Double(largest) * Double(barWidth)).rounded()))
            let entries = bar.count == 1 ? "1 entry" : "\(bar.count) entries"
            svg +=
                "<g><title>\(HTML.text(bar.label)): \(Format.size(bar.bytes)) (\(bar.bytes) bytes), \(entries)</title>"
            svg +=
                "<text x=\"\(labelWidth - 8)\" y=\"\(y + 16)\" text-anchor=\"end\">\(HTML.text(shortened(bar.label)))</text>"
            svg += "<rect x=\"\(labelWidth)\" y=\"\(y + 3)\" width=\"\(length)\" height=\"\(rowHeight - 8)\" rx=\"3\"/>"
            svg +=
                "<text class=\"amount\" x=\"\(labelWidth + length + 6)\" y=\"\(y + 16)\">\(Format.size(bar.bytes)) · \(entries)</text>"
            svg += "</g>\n"
        }
        return svg + "</svg>"
    }

    /// A label cut to fit the label column, with an ellipsis (the full text is in the bar's title).
    static func shortened(_ label: String, to length: Int = 28) -> String {
        label.count <= length ? label : String(label.prefix(length - 1)) + "…"
    }
}
