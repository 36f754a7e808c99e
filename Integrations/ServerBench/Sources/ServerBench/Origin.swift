import Foundation

/// An item of the catalogue: about 400 bytes of JSON.
struct Item: Codable, Sendable {
    var id: Int
    var title: String
    var summary: String
    var tags: [String]
    var price: Double
    var stock: Int

    init(id: Int, title: String) {
        self.id = id
        self.title = title
        summary = String(repeating: "A line of the item's description. ", count: 8)
        tags = ["catalogue", "item-\(id % 97)", "shelf-\(id % 13)"]
        price = Double(id % 1000) + 0.99
        stock = id % 50
    }
}

/// The source of truth: a JSON file per item, what the routes without a cache read on every
/// request (a file read and a decode stand for a database's point query).
struct Origin: Sendable {
    let folder: URL

    init(folder: URL) throws {
        self.folder = folder
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    /// Writes the items a previous run has not.
    func fill(_ count: Int) throws {
        for id in 0..<count where !FileManager.default.fileExists(atPath: file(id).path) {
            try write(Item(id: id, title: "Item \(id)"))
        }
    }

    func read(_ id: Int) throws -> Item {
        try JSONDecoder().decode(Item.self, from: Data(contentsOf: file(id)))
    }

    /// Replaces the item's file whole (a new file renamed over the old).
    func write(_ item: Item) throws {
        try JSONEncoder().encode(item).write(to: file(item.id), options: .atomic)
    }

    private func file(_ id: Int) -> URL { folder.appendingPathComponent("\(id).json") }
}

/// `--name value` options.
struct Options {
    private var values: [String: String] = [:]

    init(_ arguments: ArraySlice<String>) {
        var arguments = arguments
        while let name = arguments.popFirst(), name.hasPrefix("--"), let value = arguments.popFirst() {
            values[String(name.dropFirst(2))] = value
        }
    }

    func string(_ name: String) -> String? { values[name] }
    func int(_ name: String) -> Int? { values[name].flatMap { Int($0) } }
}
