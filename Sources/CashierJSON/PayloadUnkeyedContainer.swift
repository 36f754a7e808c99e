import Foundation

/// Reads one array's elements in order.
struct PayloadUnkeyedContainer: UnkeyedDecodingContainer {
    let document: PayloadDocument
    /// The path to the array itself.
    let path: PayloadPath?
    let count: Int?
    private(set) var currentIndex = 0
    /// The node of the element at `currentIndex`.
    private var cursor: Int
    private let elementCount: Int

    init(document: PayloadDocument, array: Int, path: PayloadPath?) throws {
        guard document.kind(array) == .array else {
            throw document.mismatch([Any].self, at: array, PayloadPath.components(path))
        }
        self.document = document
        self.path = path
        elementCount = Int(document.nodes[array].count)
        count = elementCount
        cursor = array + 1
    }

    var codingPath: [any CodingKey] { PayloadPath.components(path) }
    var isAtEnd: Bool { currentIndex >= elementCount }

    /// The current element's node; throws at the end.
    private func element(_ type: Any.Type) throws -> Int {
        guard !isAtEnd else {
            throw document.failure(
                .valueNotFound(
                    type,
                    .init(
                        codingPath: PayloadPath.components(path, PayloadIndexKey(currentIndex)),
                        debugDescription: "Unkeyed container is at end")))
        }
        return cursor
    }

    private mutating func advance() {
        cursor = document.next(after: cursor)
        currentIndex += 1
    }

    /// Reads the current element with `read` (given the document, the element's node, the path and
    /// the element's key) and
    /// moves past it only if that succeeded.
    private mutating func take<T>(
        _ type: Any.Type, _ read: (PayloadDocument, Int, PayloadPath?, PayloadIndexKey) throws -> T
    ) throws -> T {
        let value = try read(document, element(type), path, PayloadIndexKey(currentIndex))
        advance()
        return value
    }

    mutating func decodeNil() throws -> Bool {
        guard document.kind(try element(Never.self)) == .null else { return false }
        advance()
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool {
        try take(type) { try $0.bool(at: $1, PayloadPath.components($2, $3)) }
    }
    mutating func decode(_ type: String.Type) throws -> String {
        try take(type) { try $0.string(at: $1, PayloadPath.components($2, $3)) }
    }
    mutating func decode(_ type: Double.Type) throws -> Double {
        try take(type) { try $0.double(at: $1, PayloadPath.components($2, $3)) }
    }
    mutating func decode(_ type: Float.Type) throws -> Float {
        try take(type) { try $0.float(at: $1, PayloadPath.components($2, $3)) }
    }
    mutating func decode(_ type: Int.Type) throws -> Int {
        try take(type) { try $0.integer(type, at: $1, PayloadPath.components($2, $3)) }
    }
    mutating func decode(_ type: Int8.Type) throws -> Int8 {
        try take(type) { try $0.integer(type, at: $1, PayloadPath.components($2, $3)) }
    }
    mutating func decode(_ type: Int16.Type) throws -> Int16 {
        try take(type) { try $0.integer(type, at: $1, PayloadPath.components($2, $3)) }
    }
    mutating func decode(_ type: Int32.Type) throws -> Int32 {
        try take(type) { try $0.integer(type, at: $1, PayloadPath.components($2, $3)) }
    }
    mutating func decode(_ type: Int64.Type) throws -> Int64 {
        try take(type) { try $0.integer(type, at: $1, PayloadPath.components($2, $3)) }
    }
    mutating func decode(_ type: UInt.Type) throws -> UInt {
        try take(type) { try $0.integer(type, at: $1, PayloadPath.components($2, $3)) }
    }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 {
        try take(type) { try $0.integer(type, at: $1, PayloadPath.components($2, $3)) }
    }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 {
        try take(type) { try $0.integer(type, at: $1, PayloadPath.components($2, $3)) }
    }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 {
        try take(type) { try $0.integer(type, at: $1, PayloadPath.components($2, $3)) }
    }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 {
        try take(type) { try $0.integer(type, at: $1, PayloadPath.components($2, $3)) }
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try take(type) { try $0.decode(type, at: $1, path: $2, key: $3) }
    }

    /// On `null`, nil and moves on, as in `JSONDecoder`. At the end this throws: `JSONDecoder` returns
    /// nil there but also moves `currentIndex` past `count`, which is not worth imitating.
    private mutating func ifPresent<T>(_ type: Any.Type, _ read: (inout PayloadUnkeyedContainer) throws -> T) throws
        -> T?
    {
        _ = try element(type)
        return try decodeNil() ? nil : read(&self)
    }

    mutating func decodeIfPresent(_ type: Bool.Type) throws -> Bool? { try ifPresent(type) { try $0.decode(type) } }
    mutating func decodeIfPresent(_ type: String.Type) throws -> String? { try ifPresent(type) { try $0.decode(type) } }
    mutating func decodeIfPresent(_ type: Double.Type) throws -> Double? { try ifPresent(type) { try $0.decode(type) } }
    mutating func decodeIfPresent(_ type: Float.Type) throws -> Float? { try ifPresent(type) { try $0.decode(type) } }
    mutating func decodeIfPresent(_ type: Int.Type) throws -> Int? { try ifPresent(type) { try $0.decode(type) } }
    mutating func decodeIfPresent(_ type: Int8.Type) throws -> Int8? { try ifPresent(type) { try $0.decode(type) } }
    mutating func decodeIfPresent(_ type: Int16.Type) throws -> Int16? { try ifPresent(type) { try $0.decode(type) } }
    mutating func decodeIfPresent(_ type: Int32.Type) throws -> Int32? { try ifPresent(type) { try $0.decode(type) } }
    mutating func decodeIfPresent(_ type: Int64.Type) throws -> Int64? { try ifPresent(type) { try $0.decode(type) } }
    mutating func decodeIfPresent(_ type: UInt.Type) throws -> UInt? { try ifPresent(type) { try $0.decode(type) } }
    mutating func decodeIfPresent(_ type: UInt8.Type) throws -> UInt8? { try ifPresent(type) { try $0.decode(type) } }
    mutating func decodeIfPresent(_ type: UInt16.Type) throws -> UInt16? { try ifPresent(type) { try $0.decode(type) } }
    mutating func decodeIfPresent(_ type: UInt32.Type) throws -> UInt32? { try ifPresent(type) { try $0.decode(type) } }
    mutating func decodeIfPresent(_ type: UInt64.Type) throws -> UInt64? { try ifPresent(type) { try $0.decode(type) } }
    mutating func decodeIfPresent<T: Decodable>(_ type: T.Type) throws -> T? {
        try ifPresent(type) { try $0.decode(type) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<
        NestedKey
    > {
        try take(type) {
            KeyedDecodingContainer(
                try PayloadKeyedContainer<NestedKey>(document: $0, object: $1, path: PayloadPath($3, parent: $2)))
        }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try take([Any].self) { try PayloadUnkeyedContainer(document: $0, array: $1, path: PayloadPath($3, parent: $2)) }
    }

    mutating func superDecoder() throws -> any Decoder {
        try take((any Decoder).self) { PayloadNodeDecoder(document: $0, index: $1, path: PayloadPath($3, parent: $2)) }
    }
}
