import Cashier
import CashierEntryFormat
import CashierTestSupport
import Foundation
import Testing

@testable import CashierCommands

/// Keys, values, type names, app versions and the folder's own name are arbitrary strings,
/// perhaps from a server: on the report they are text, never markup.
@Suite struct ReportEscapingTests {
    static let hostile = [
        "<script>alert('key')</script>",
        "\"><img src=x onerror=alert(1)>",
        "' onmouseover='alert(1)",
        "a & b &amp; \"quoted\" 'single'",
        "</td></tr></table><script>alert(1)</script>",
        "line\nbreak\ttab\u{1b}[31mred\u{0}nul",
        "\u{2028}\u{2029}</script><!-- <style>",
        "]]><svg onload=alert(1)><desc>",
        "javascript:alert(1)",
        "&lt;already escaped&gt;",
        "\u{202E}reversed",
    ]

    let parent = TemporaryFolder()
    /// The cache folder's own name is hostile too: the page shows the path.
    var path: String { parent.path + "/<i>\"&'dir" }

    init() throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        var configuration = Cache.Configuration(name: "hostile")
        configuration.location = .directory(URL(fileURLWithPath: path))
        // A folder without a store (as 0.1.0 and SQLite's absence leave one): these tests read and
        // damage entry files; StoreRowsTests cover folders with a store.
        configuration.usesStore = false
        configuration.appVersion = "\"><b onclick=alert(2)>1.0</b>"
        configuration.now = { writtenAt }
        let cache = Cache(configuration)
        for (index, key) in Self.hostile.enumerated() {
            try cache.setString(key, forKey: key)
            if index < 3 { try cache.setImage(pngData: onePixelPNG, forKey: "image " + key) }
        }
        // A type name no Swift type has, written as the library would write it.
        let payload = Data("{}".utf8)
        let header = EntryHeader(
            key: "typed", typeName: "<img src=x onerror=alert('type')>", format: .json,
            createdAt: writtenAt.timeIntervalSince1970, validatedAt: writtenAt.timeIntervalSince1970,
            lifespan: .never, schemaVersion: nil, appVersion: "'><script>alert(3)</script>", isLocked: false,
            payloadLength: payload.count)
        let bytes = payload.withUnsafeBytes { header.encode(payload: $0) } + payload
        _ = FileManager.default.createFile(atPath: path + "/" + DiskTier.fileName(for: "typed"), contents: Data(bytes))
        // A key that is not UTF-8: one byte of a written key made 0xFF.
        let name = "bad-utf8-<b>"
        var invalid =
            payload.withUnsafeBytes {
                EntryHeader(
                    key: name, typeName: "String", format: .json, createdAt: 0, validatedAt: 0, lifespan: .never,
                    schemaVersion: nil, appVersion: nil, isLocked: false, payloadLength: payload.count
                ).encode(payload: $0)
            } + payload
        let at = try #require(invalid.indices.first { invalid[$0...].starts(with: Array(name.utf8)) })
        invalid[at + 3] = 0xFF
        _ = FileManager.default.createFile(atPath: path + "/" + DiskTier.fileName(for: name), contents: Data(invalid))
        // A file named like an entry that is not one, holding markup: damaged, shown by its name.
        _ = FileManager.default.createFile(
            atPath: path + "/" + DiskTier.fileName(for: "garbage"), contents: Data("<script>alert(4)</script>".utf8))
        // And a foreign file with markup in its name.
        _ = FileManager.default.createFile(atPath: path + "/<svg onload=alert(5)>", contents: Data())
    }

    static let allowedElements: Set<String> = [
        "#document", "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "p", "code", "main",
        "section", "div", "span", "figure", "figcaption", "svg", "g", "text", "rect", "img", "label", "input",
        "table", "thead", "tbody", "tr", "th", "td", "button", "script",
    ]
    static let allowedAttributes: Set<String> = [
        "lang", "charset", "http-equiv", "content", "name", "class", "id", "data-value", "data-bytes", "data-rank",
        "data-column", "aria-sort", "aria-label", "type", "title", "style", "src", "alt", "placeholder",
        "autocomplete", "spellcheck", "role", "viewbox", "width", "height", "xmlns", "x", "y", "text-anchor", "rx",
    ]

    @Test func everyHostileStringIsTextAndNoElementOrAttributeIsTheAttackers() throws {
        let result = cashier("report", path)
        #expect(result.status == .success)
        let document = try HTMLDocument(result.output)
        let elements = document.root.all
        for element in elements {
            #expect(Self.allowedElements.contains(element.name), "element <\(element.name)>")
            for attribute in element.attributes {
                #expect(
                    Self.allowedAttributes.contains(attribute.name), "attribute \(attribute.name) on <\(element.name)>")
            }
        }
        // The one script and the one style sheet are the constants, nothing added.
        #expect(document.root.elements("script").map(\.text) == [ReportAssets.script])
        #expect(document.root.elements("style").map(\.text) == [ReportAssets.style])
        #expect(document.root.elements("meta").count == 4)
        #expect(document.root.elements("input").count == 1)
        // Inline style only where the page puts it: none without --size-limit.
        #expect(elements.allSatisfy { $0.attribute("style") == nil })

        let cells = Set(document.root.elements("td").map(\.text))
        for key in Self.hostile {
            #expect(cells.contains(Format.escaped(key)), "key \(key.debugDescription) not shown as text")
        }
        #expect(cells.contains("<img src=x onerror=alert('type')>"))
        #expect(cells.contains("\"><b onclick=alert(2)>1.0</b>"))
        #expect(cells.contains("'><script>alert(3)</script>"))
        #expect(cells.contains("[\(DiskTier.fileName(for: "garbage"))]"))
        // The key that is not UTF-8 is shown as `list` shows it.
        let invalid = try #require(
            Inventory.readEntry(path, DiskTier.fileName(for: "bad-utf8-<b>"), keepPayload: false))
        #expect(invalid.isDamaged)
        let shown = invalid.tableRow(at: inspectedAt.timeIntervalSince1970)[0]
        #expect(cashier("list", path).output.contains(shown))
        #expect(cells.contains(shown))
        let alts = document.root.elements("img").compactMap { $0.attribute("alt") }
        #expect(Set(alts) == Set(Self.hostile.prefix(3).map { Format.escaped("image " + $0) }))
        #expect(document.root.elements("title").first?.text == "Cashier report: " + path)
        #expect(document.root.element(id: "foreign")?.text.contains("<svg onload=alert(5)>") == true)
        // No control character reaches the page: `list`'s escapes stand in for them.
        #expect(result.output.unicodeScalars.allSatisfy { $0 == "\n" || $0.properties.generalCategory != .control })
        #expect(!result.output.contains("\u{2028}"))
    }

    @Test func htmlEscapingCoversTextAndQuotedAttributes() {
        #expect(
            HTML.text("<a href=\"x\" title='y'>&</a>")
                == "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;")
        #expect(HTML.text("plain – ünïcode ✓") == "plain – ünïcode ✓")
    }

    @Test func theCheckerRefusesWhatABrowserWouldReadAsMarkup() {
        for bad in [
            "<!DOCTYPE html><p>a <b>b</p>", "<!DOCTYPE html><p title=x>a</p>", "<!DOCTYPE html><p>a & b</p>",
            "<!DOCTYPE html><p>a</p><!-- c -->", "<!DOCTYPE html><p>a", "<p>no doctype</p>",
            "<!DOCTYPE html><p title=\"a<b\">a</p>",
        ] {
            #expect(throws: HTMLDocument.ParseError.self, "\(bad)") { try HTMLDocument(bad) }
        }
        #expect(throws: Never.self) { try HTMLDocument("<!DOCTYPE html><p title=\"&quot;\">&lt;<img src=\"d\"></p>") }
    }
}
