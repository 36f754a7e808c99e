import Cashier
import Foundation

/// `cashier-tool report DIR [--output FILE] [--size-limit BYTES]`: one self-contained HTML page.
///
/// Reads the folder exactly as `list` does (``Inventory``), so it changes nothing, not even
/// access times; the page goes to FILE, never into DIR, or to standard output.
enum ReportCommand {
    /// At most this many PNG thumbnails, each of a payload up to ``thumbnailMaximumBytes``,
    /// all together at most ``thumbnailBudget`` bytes (a third more as base64): a folder of
    /// thousands of avatars still makes a page of a few MB.
    static let thumbnailLimit = 48
    static let thumbnailMaximumBytes = 48 << 10
    static let thumbnailBudget = 768 << 10

    static func run(
        directory: String, output: String?, sizeLimit: Int?, console: Console, now: Date
    ) throws(ToolError) -> ExitStatus {
        try Inventory.checkFolder(directory)
        if let output {
            try checkOutput(output, directory: directory)
        } else if console.outputIsTerminal {
            throw ToolError(
                "report writes a page of HTML: give --output FILE, or redirect it (cashier-tool report DIR > report.html)",
                status: .usage)
        }
        let inventory = try Inventory.load(directory)
        let seconds = now.timeIntervalSince1970
        let page = ReportPage(
            directory: directory, inventory: inventory, now: seconds, sizeLimit: sizeLimit,
            thumbnails: thumbnails(inventory, now: seconds)
        ).html
        if let output {
            do {
                try Data(page.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
            } catch {
                throw ToolError("cannot write \(output): \(Inventory.reason(error))")
            }
            console.print("Wrote the report of \(inventory.summary) to \(output) (\(Format.size(page.utf8.count))).")
        } else {
            console.output(page)
        }
        inventory.noteForeignFiles(console)
        return .success
    }

    /// Refuses an output file inside the cache folder (the report would become a foreign
    /// file there, and the report is read-only) or one that is a folder.
    static func checkOutput(_ output: String, directory: String) throws(ToolError) {
        let file = URL(fileURLWithPath: output)
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: output, isDirectory: &isDirectory), isDirectory.boolValue {
            throw ToolError("--output \(output) is a folder; give a file name such as report.html", status: .usage)
        }
        let parent = file.deletingLastPathComponent().resolvingSymlinksInPath().standardizedFileURL.path
        let folder = URL(fileURLWithPath: directory).resolvingSymlinksInPath().standardizedFileURL.path
        if parent == folder {
            throw ToolError(
                "--output \(output) is inside the cache folder; write the report elsewhere (the report changes nothing in DIR)",
                status: .usage)
        }
    }

    /// The PNG payloads shown as thumbnails: sound raw entries whose payload starts with
    /// the PNG signature, in key order, within the caps. Each is read again through the
    /// same reader as `list` (``Inventory/reread(_:in:)``): no access time changes, no row written.
    static func thumbnails(_ inventory: Inventory, now: Double) -> [Thumbnail] {
        var result: [Thumbnail] = []
        var budget = thumbnailBudget
        for entry in inventory.sorted(by: .key, now: now) {
            guard result.count < thumbnailLimit else { break }
            guard let header = entry.header, !entry.isDamaged, header.format == .raw,
                header.payloadLength >= 24, header.payloadLength <= min(thumbnailMaximumBytes, budget),
                let again = Inventory.reread(entry, in: inventory.directory),
                again.header?.key == header.key, let data = again.payload,
                let size = Payload(data: data, format: .raw).pngSize
            else { continue }
            budget -= data.count
            result.append(Thumbnail(key: header.key, png: data, width: size.width, height: size.height))
        }
        return result
    }
}

/// A PNG payload shown on the page.
struct Thumbnail {
    var key: String
    var png: Data
    var width: Int
    var height: Int
}
