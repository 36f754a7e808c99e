/// How an entry's payload is encoded, as recorded in its header.
package enum PayloadFormat: UInt8, Sendable, Hashable, CaseIterable {
    /// The bytes of a `Data` value, unencoded.
    case raw = 0
    /// JSON (`JSONEncoder`).
    case json = 1
    /// A binary property list (`PropertyListEncoder`).
    case propertyList = 2

    package var name: String {
        switch self {
        case .raw: "raw"
        case .json: "json"
        case .propertyList: "plist"
        }
    }
}
