import Foundation

/// The HTML of `cashier-tool report`: one page, no external resource.
///
/// Escaping: every string that comes from the folder (keys, type names, app versions,
/// file names, problems, the folder's own path) first goes through ``Format/escaped(_:)``,
/// as `list` shows it (control characters as `\n`, `\u{1b}`), then through ``HTML/text(_:)``,
/// which escapes `&`, `<`, `>`, `"` and `'`, so the same text is safe between tags and
/// inside a quoted attribute. Nothing from the folder goes into the script, the style sheet,
/// a URL or an unquoted attribute: the script is a constant that reads the table's cells.
struct ReportPage {
    var directory: String
    var inventory: Inventory
    var now: Double
    var sizeLimit: Int?
    var thumbnails: [Thumbnail]

    /// Allows the page's own inline style and script and `data:` images, nothing else:
    /// no network, no plug-ins, no form, no other base URL.
    static let contentSecurityPolicy =
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

    var html: String {
        var page = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta http-equiv="Content-Security-Policy" content="\(ReportPage.contentSecurityPolicy)">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="generator" content="cashier-tool \(Version.current)">
            <title>Cashier report: \(HTML.text(Format.escaped(directory)))</title>
            <style>\(ReportAssets.style)</style>
            </head>
            <body>
            <header>
            <h1>Cashier cache report</h1>
            <p class="folder"><code>\(HTML.text(Format.escaped(directory)))</code></p>
            <p class="generated">\(Format.date(now)) · cashier-tool \(Version.current)</p>
            </header>
            <main>

            """
        page += summary + charts + images + table
        page += """
            </main>
            <script>\(ReportAssets.script)</script>
            </body>
            </html>

            """
        return page
    }

    // MARK: Summary

    private struct Group {
        var count = 0
        var bytes = 0
        mutating func add(_ entry: EntryFile) {
            count += 1
            bytes += entry.size
        }
    }

    private var summary: String {
        var expired = Group()
        var locked = Group()
        var damaged = Group()
        for entry in inventory.entries {
            if entry.isDamaged { damaged.add(entry) }
            if entry.status(at: now) == .expired { expired.add(entry) }
            if entry.header?.isLocked == true, !entry.isDamaged { locked.add(entry) }
        }
        let total = inventory.totalSize
        var size = card(
            "Size", id: "bytes", value: total, shown: Format.size(total), note: "\(total) bytes")
        if let sizeLimit, sizeLimit > 0 {
            let share = Double(total) / Double(sizeLimit) * 100
            let width = String(format: "%.1f", min(share, 100))
            size = card(
                "Size", id: "bytes", value: total, shown: Format.size(total),
                note: String(format: "%.1f", share) + " % of the \(Format.size(sizeLimit)) limit",
                extra:
                    "<div class=\"meter\(share > 100 ? " over" : "")\"><div style=\"width: \(width)%\"></div></div>")
        }
        var text = """
            <section id="summary">
            <h2>Summary</h2>
            <div class="cards">
            \(card("Entries", id: "count", value: inventory.entries.count, shown: "\(inventory.entries.count)"))
            \(size)
            \(groupCard("Expired", "expired", expired))
            \(groupCard("Locked", "locked", locked))
            \(groupCard("Damaged", "damaged", damaged))
            \(storeCards)
            </div>

            """
        if sizeLimit == nil {
            text += "<p class=\"hint\">Give <code>--size-limit BYTES</code> (the cache's <code>diskSizeLimit</code>) "
            text += "to see how much of it is used.</p>\n"
        }
        if !inventory.foreign.isEmpty {
            let names = inventory.foreign.prefix(20).map { "<code>\(HTML.text(Format.escaped($0)))</code>" }
            let more = inventory.foreign.count > 20 ? ", …" : ""
            let files =
                inventory.foreign.count == 1
                ? "1 file is not a cache entry" : "\(inventory.foreign.count) files are not cache entries"
            text +=
                "<p class=\"hint\" id=\"foreign\">\(files) (left alone): \(names.joined(separator: ", "))\(more)</p>\n"
        }
        return text + "</section>\n"
    }

    /// With a store: what is in rows and in files, and the store's bytes on disk (or why it does not read).
    private var storeCards: String {
        guard inventory.showsLocation else { return "" }
        var rows = Group()
        var files = Group()
        for entry in inventory.entries {
            if entry.location == .row { rows.add(entry) } else { files.add(entry) }
        }
        let bytes = inventory.store.bytes
        let problem = inventory.store.state.problem
        let store = card(
            "Store file", id: "store", value: bytes,
            shown: problem == nil ? Format.size(bytes) : inventory.store.state.name,
            note: problem.map { "\(FolderStore.fileName): \(Format.escaped($0))" }
                ?? "\(FolderStore.fileName), \(bytes) bytes",
            bytes: bytes, warn: problem != nil)
        return [
            card(
                "In rows", id: "rows", value: rows.count, shown: "\(rows.count)", note: Format.size(rows.bytes),
                bytes: rows.bytes),
            card(
                "In files", id: "files", value: files.count, shown: "\(files.count)", note: Format.size(files.bytes),
                bytes: files.bytes),
            store,
        ].joined(separator: "\n")
    }

    private func groupCard(_ title: String, _ id: String, _ group: Group) -> String {
        card(
            title, id: id, value: group.count, shown: "\(group.count)",
            note: "\(Format.size(group.bytes))", bytes: group.bytes, warn: group.count > 0 && id != "locked")
    }

    private func card(
        _ title: String, id: String, value: Int, shown: String, note: String? = nil, bytes: Int? = nil,
        warn: Bool = false, extra: String = ""
    ) -> String {
        let bytesAttribute = bytes.map { " data-bytes=\"\($0)\"" } ?? ""
        let noteHTML = note.map { "<span class=\"note\">\(HTML.text($0))</span>" } ?? ""
        return "<div class=\"card\(warn ? " \(id)" : "")\"><span class=\"label\">\(title)</span>"
            + "<span class=\"value\" id=\"summary-\(id)\" data-value=\"\(value)\"\(bytesAttribute)>\(shown)</span>"
            + noteHTML + extra + "</div>"
    }

    // MARK: Charts

    private var charts: String {
        guard !inventory.entries.isEmpty else { return "" }
        return """
            <section id="charts">
            <h2>Where the bytes are</h2>
            <div class="charts">
            <figure><figcaption>Bytes by value type</figcaption>
            \(ReportCharts.bars(ReportCharts.bytesByType(inventory.entries), label: "Bytes by value type"))
            </figure>
            <figure><figcaption>Bytes by age (since the last write)</figcaption>
            \(ReportCharts.bars(ReportCharts.bytesByAge(inventory.entries, now: now), label: "Bytes by age"))
            </figure>
            </div>
            </section>

            """
    }

    // MARK: Images

    private var images: String {
        guard !thumbnails.isEmpty else { return "" }
        var text = """
            <section id="images">
            <h2>Images</h2>
            <p class="hint">PNG payloads in key order: at most \(ReportCommand.thumbnailLimit), \
            each up to \(Format.size(ReportCommand.thumbnailMaximumBytes)), \
            \(Format.size(ReportCommand.thumbnailBudget)) in all.</p>
            <div class="thumbs">

            """
        for thumbnail in thumbnails {
            let key = HTML.text(Format.escaped(thumbnail.key))
            text += "<figure class=\"thumb\"><img src=\"data:image/png;base64,\(thumbnail.png.base64EncodedString())\""
            text += " alt=\"\(key)\" title=\"\(key)\"><figcaption><span class=\"key\">\(key)</span>"
            text +=
                "<span class=\"note\">\(thumbnail.width) × \(thumbnail.height), \(Format.size(thumbnail.png.count))</span>"
            text += "</figcaption></figure>\n"
        }
        return text + "</div>\n</section>\n"
    }

    // MARK: Table

    /// The columns of `list`, named as its header names them; the first four sort by
    /// `list --sort`'s own orders (key, size, age, expiry), whose ranks each row carries.
    static let columns = ["key", "type", "codec", "schema", "app", "size", "age", "expires", "locked", "status"]

    private var table: String {
        let orders: [ListSort] = [.key, .size, .age, .expiry]
        var ranks: [String: [Int]] = [:]
        for order in orders {
            for (rank, entry) in inventory.sorted(by: order, now: now).enumerated() {
                ranks[entry.identity, default: []].append(rank)
            }
        }
        var text = """
            <section id="entries">
            <h2>Entries</h2>
            <p class="tools"><label>Filter by key <input id="filter" type="search" placeholder="part of a key" \
            autocomplete="off" spellcheck="false"></label> <span id="shown">\(inventory.entries.count) of \
            \(inventory.entries.count) shown</span> <span class="hint">Click a column to sort; again to reverse.</span></p>
            <table id="entries-table">
            <thead><tr>
            """
        for (index, name) in EntryFile.tableHeader.enumerated() {
            let numeric = EntryFile.rightAlignedColumns.contains(index) ? " class=\"number\"" : ""
            let current = index == 0 ? " aria-sort=\"ascending\"" : ""
            text +=
                "<th\(numeric) data-column=\"\(Self.columns[index])\"\(current)><button type=\"button\">\(name)</button></th>"
        }
        text += "</tr></thead>\n<tbody>\n"
        for entry in inventory.sorted(by: .key, now: now) {
            let status = entry.status(at: now)
            let cells = entry.tableRow(at: now)
            let rank = (ranks[entry.identity] ?? []).map(String.init).joined(separator: " ")
            text += "<tr class=\"\(status.rawValue)\" data-rank=\"\(rank)\">"
            for (index, cell) in cells.enumerated() {
                var attributes = EntryFile.rightAlignedColumns.contains(index) ? " class=\"number\"" : ""
                if index == 0 { attributes += " title=\"\(HTML.text(entry.place))\"" }
                if index == 5 { attributes += " title=\"\(entry.size) bytes\"" }
                if index == cells.count - 1, let problem = entry.problem {
                    attributes += " title=\"\(HTML.text(Format.escaped(problem)))\""
                }
                // `tableRow` escapes the key's and type's control characters, as `list` prints them.
                text += "<td\(attributes)>\(HTML.text(cell))</td>"
            }
            text += "</tr>\n"
        }
        text += "</tbody>\n</table>\n"
        if inventory.entries.isEmpty { text += "<p class=\"hint\">No entries in this folder.</p>\n" }
        return text + "</section>\n"
    }
}

/// Escaping for HTML.
enum HTML {
    /// `text` with `&`, `<`, `>`, `"` and `'` as character references: safe as the content of
    /// an element (not `script` or `style`) and as the value of a quoted attribute.
    static func text(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.unicodeScalars.append(character)
            }
        }
        return result
    }
}
