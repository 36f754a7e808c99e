import Foundation

// MARK: - Coding path

/// A coding path as a parent-linked list: descending costs one small object, not an array copy,
/// and the array is only built when asked for (errors, `codingPath`).
final class PayloadPath {
    let key: any CodingKey
    let parent: PayloadPath?

    init(_ key: any CodingKey, parent: PayloadPath?) {
        self.key = key
        self.parent = parent
    }

    static func appending(_ key: (any CodingKey)?, to path: PayloadPath?) -> PayloadPath? {
        guard let key else { return path }
        return PayloadPath(key, parent: path)
    }

    /// The keys from the root down to `path`, then `last`.
    static func components(_ path: PayloadPath?, _ last: (any CodingKey)? = nil) -> [any CodingKey] {
        var components: [any CodingKey] = last.map { [$0] } ?? []
        var link = path
        while let current = link {
            components.append(current.key)
            link = current.parent
        }
        return components.reversed()
    }
}

/// An array index as a coding key ("Index 3", as `JSONDecoder` names it), also the "super" key.
/// Three words, so it fits an existential's inline buffer.
struct PayloadIndexKey: CodingKey {
    /// Nil for an index: its name is only spelled out when asked for.
    private let name: String?
    private let index: Int

    var stringValue: String { name ?? "Index \(index)" }
    var intValue: Int? { name == nil ? index : nil }

    init(_ index: Int) {
        name = nil
        self.index = index
    }

    init?(stringValue: String) {
        name = stringValue
        index = 0
    }

    init?(intValue: Int) {
        self.init(intValue)
    }

    static let `super` = PayloadIndexKey(stringValue: "super")!
}
