import Cashier
import CashierTestSupport
import Foundation
import Testing

@testable import CashierCommands

/// `cashier-tool report`: one HTML page, well-formed, escaped, agreeing with `list` and `stats`.
@Suite struct ReportTests {
    let folder = TemporaryFolder()

    init() throws {
        _ = try makeFixture(folder)
    }

    func page(_ extra: String...) throws -> HTMLDocument {
        let result = cashier(["report", folder.path] + extra)
        #expect(result.status == .success)
        return try HTMLDocument(result.output)
    }

    /// The table's rows as the page holds them: key cell text and `data-rank`.
    func rows(_ document: HTMLDocument) throws -> [(key: String, ranks: [Int], element: HTMLDocument.Element)] {
        let table = try #require(document.root.element(id: "entries-table"))
        let body = try #require(table.elements("tbody").first)
        return body.elements("tr").map { row in
            let key = row.elements("td").first?.text ?? ""
            let ranks = (row.attribute("data-rank") ?? "").split(separator: " ").compactMap { Int($0) }
            return (key, ranks, row)
        }
    }

    @Test func thePageIsWellFormedHTMLWithItsSectionsAndNoExternalResource() throws {
        let result = cashier("report", folder.path)
        #expect(result.error.isEmpty)
        let document = try HTMLDocument(result.output)
        for id in ["summary", "charts", "images", "entries", "entries-table", "filter"] {
            #expect(document.root.element(id: id) != nil, "no #\(id)")
        }
        #expect(document.root.elements("svg").count == 2)
        let policy = document.root.elements("meta").first { $0.attribute("http-equiv") == "Content-Security-Policy" }
        #expect(policy?.attribute("content")?.hasPrefix("default-src 'none'") == true)
        // Nothing loads from elsewhere: no link, no src but data: images, no url() in the style.
        #expect(document.root.elements("link").isEmpty)
        for element in document.root.all {
            if let source = element.attribute("src") { #expect(source.hasPrefix("data:image/png;base64,")) }
            #expect(element.attribute("href") == nil)
        }
        #expect(!ReportAssets.style.contains("url("))
        #expect(!ReportAssets.style.contains("@import"))
        // The constants cannot end their own elements early.
        #expect(!ReportAssets.script.lowercased().contains("</script"))
        #expect(!ReportAssets.script.contains("<!--"))
        #expect(!ReportAssets.style.lowercased().contains("</style"))
    }

    @Test func theTableHasListsRowsInListsOrderWithExpiredAndDamagedMarked() throws {
        try damage("note", in: folder)
        let document = try page()
        let table = try rows(document)
        let list = try #require(cashier("list", folder.path, "--json").json["entries"] as? [[String: Any]])
        #expect(table.map(\.key) == list.map { Format.escaped($0["key"] as? String ?? "") })
        let header = try #require(document.root.elements("thead").first).elements("th").map(\.text)
        #expect(header == EntryFile.tableHeader)
        for (row, entry) in zip(table, list) {
            let status = try #require(entry["status"] as? String)
            #expect(row.element.classes == [status])
            #expect(row.element.elements("td").last?.text == status)
        }
        #expect(table.first { $0.key == "feed" }?.element.classes == ["expired"])
        let note = try #require(table.first { $0.key == "note" })
        #expect(note.element.classes == ["damaged"])
        #expect(note.element.elements("td").last?.attribute("title") == "checksum mismatch")
    }

    @Test(arguments: ListSort.allCases)
    func eachSortableColumnsOrderIsListsOrder(order: ListSort) throws {
        try damage("blob", in: folder)
        let table = try rows(try page())
        let index = [ListSort.key, .size, .age, .expiry].firstIndex(of: order)!
        let sorted = table.sorted { $0.ranks[index] < $1.ranks[index] }.map(\.key)
        let list = try #require(
            cashier("list", folder.path, "--sort", order.rawValue, "--json").json["entries"] as? [[String: Any]])
        #expect(sorted == list.map { Format.escaped($0["key"] as? String ?? "") })
        // Ranks are a permutation: no two rows tie.
        #expect(Set(table.map { $0.ranks[index] }) == Set(0..<table.count))
    }

    @Test func theSummaryAgreesWithListAndStats() throws {
        try damage("profile", in: folder)
        let document = try page("--size-limit", "4K")
        let list = cashier("list", folder.path, "--json").json
        let stats = cashier("stats", folder.path, "--json").json
        func value(_ id: String, _ attribute: String = "data-value") -> Int? {
            document.root.element(id: "summary-\(id)")?.attribute(attribute).flatMap { Int($0) }
        }
        #expect(value("count") == list["count"] as? Int)
        #expect(value("bytes") == list["totalBytes"] as? Int)
        for group in ["expired", "locked", "damaged"] {
            let counts = try #require(stats[group] as? [String: Any])
            #expect(value(group) == counts["count"] as? Int, "\(group) count")
            #expect(value(group, "data-bytes") == counts["bytes"] as? Int, "\(group) bytes")
        }
        #expect(value("damaged") == 1)
        let total = try #require(list["totalBytes"] as? Int)
        let share = String(format: "%.1f", Double(total) / 4096 * 100) + " % of the 4.0 KiB limit"
        #expect(document.root.element(id: "summary")?.text.contains(share) == true)
    }

    @Test func aPNGPayloadHasItsThumbnailAndOtherBytesHaveNone() throws {
        // The facade's image (avatar), and plain `Data` that happens to be a PNG.
        let cache = try makeFixture(folder)
        try cache.set(onePixelPNG, for: CacheKey<Data>("logo"))
        let document = try page()
        let images = document.root.elements("img")
        #expect(images.map { $0.attribute("alt") } == ["avatar", "logo"])
        for image in images {
            #expect(image.attribute("src") == "data:image/png;base64," + onePixelPNG.base64EncodedString())
        }
        #expect(document.root.element(id: "images")?.text.contains("1 × 1") == true)
    }

    @Test func thumbnailsAreCappedInCount() throws {
        let cache = try makeFixture(folder)
        for index in 0..<(ReportCommand.thumbnailLimit + 5) {
            try cache.setImage(pngData: onePixelPNG, forKey: "image.\(index)")
        }
        #expect(try page().root.elements("img").count == ReportCommand.thumbnailLimit)
    }

    @Test func theChartsCountEveryByteByTypeAndByAge() throws {
        let inventory = try Inventory.load(folder.path)
        let now = inspectedAt.timeIntervalSince1970
        let byType = ReportCharts.bytesByType(inventory.entries)
        let byAge = ReportCharts.bytesByAge(inventory.entries, now: now)
        #expect(byType.reduce(0) { $0 + $1.bytes } == inventory.totalSize)
        #expect(byAge.reduce(0) { $0 + $1.bytes } == inventory.totalSize)
        #expect(byType.map(\.label).contains("Array<String>"))
        // Written ten minutes before the report: all in "1 minute to 1 hour".
        #expect(byAge[1] == ReportCharts.Bar(label: "1 minute to 1 hour", bytes: inventory.totalSize, count: 5))
    }

    /// 10,000 entries made a 2.8 MiB page (issue 28: "a few MB"): about 300 bytes a row.
    /// This pins the cost of a row, so the page of a large folder cannot quietly grow.
    @Test func aRowCostsAFewHundredBytesSoALargeFolderMakesAPageOfAFewMB() throws {
        let cache = try makeFixture(folder)
        for index in 0..<1000 {
            try cache.set(TestUser(name: "User \(index)", age: index), for: CacheKey<TestUser>("user.\(index).profile"))
        }
        let page = cashier("report", folder.path).output.utf8.count
        #expect(page < 1005 * 360 + 64 * 1024, "\(page) bytes for 1005 entries")
    }

    @Test func anEmptyFolderStillMakesAPage() throws {
        let empty = TemporaryFolder()
        try FileManager.default.createDirectory(atPath: empty.path, withIntermediateDirectories: true)
        let result = cashier("report", empty.path)
        #expect(result.status == .success)
        let document = try HTMLDocument(result.output)
        #expect(document.root.element(id: "summary-count")?.attribute("data-value") == "0")
    }

    @Test func outputGoesToTheFileGivenAndNeverIntoTheCacheFolder() throws {
        let elsewhere = TemporaryFolder()
        try FileManager.default.createDirectory(atPath: elsewhere.path, withIntermediateDirectories: true)
        let before = folder.snapshot()
        let result = cashier("report", folder.path, "--output", elsewhere.path + "/report.html")
        #expect(result.status == .success)
        #expect(result.output.hasPrefix("Wrote the report of 5 entries, "))
        let written = try String(contentsOfFile: elsewhere.path + "/report.html", encoding: .utf8)
        _ = try HTMLDocument(written)
        #expect(folder.snapshot() == before)

        let inside = cashier("report", folder.path, "--output", folder.path + "/report.html")
        #expect(inside.status == .usage)
        #expect(inside.error.hasPrefix("cashier-tool: --output \(folder.path)/report.html is inside the cache folder"))
        #expect(folder.snapshot() == before)
    }

    @Test func aTerminalGetsAMessageInsteadOfAPageOfHTML() {
        var printed = ""
        var diagnostics = ""
        let console = Console(output: { printed += $0 }, error: { diagnostics += $0 }, outputIsTerminal: true)
        let status = CashierCommands.run(["report", folder.path], console: console, now: inspectedAt)
        #expect(status == .usage)
        #expect(printed.isEmpty)
        #expect(diagnostics.contains("give --output FILE"))
    }

    @Test func reportsArgumentsParse() throws {
        #expect(
            try Invocation.parse(["report", "d", "--output=r.html", "--size-limit", "150M"])
                == .report(directory: "d", output: "r.html", sizeLimit: 150 << 20))
        #expect(try Invocation.parse(["report", "d"]) == .report(directory: "d", output: nil, sizeLimit: nil))
        #expect(try Invocation.parse(["report", "--help"]) == .help(command: "report"))
    }

    @Test func reportsOptionsAreChecked() {
        #expect(
            cashier("report", folder.path, "--size-limit", "lots").error.contains("--size-limit takes a byte count"))
        #expect(cashier("report").status == .usage)
        #expect(cashier("report", folder.path, "--ouput", "x.html").error.contains("did you mean '--output'?"))
    }
}
