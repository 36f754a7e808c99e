import Foundation

/// Reads one object's members by key.
struct PayloadKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let document: PayloadDocument
    let object: Int
    /// The path to the object itself.
    let path: PayloadPath?

    init(document: PayloadDocument, object: Int, path: PayloadPath?) throws {
        guard document.kind(object) == .object else {
            throw document.mismatch([String: Any].self, at: object, PayloadPath.components(path))
        }
        try document.checkKeys(of: object, PayloadPath.components(path))
        self.document = document
        self.object = object
        self.path = path
    }

    var codingPath: [any CodingKey] { PayloadPath.components(path) }

    private func codingPath(_ key: Key) -> [any CodingKey] { PayloadPath.components(path, key) }

    var allKeys: [Key] {
        var keys: [Key] = []
        var index = object + 1
        while index < Int(document.nodes[object].end) {
            if let key = Key(stringValue: document.string(at: index)) { keys.append(key) }
            index = document.next(after: index + 1)
        }
        return keys
    }

    func contains(_ key: Key) -> Bool {
        document.member(named: key.stringValue, in: object) != nil
    }

    private func value(for key: Key) throws -> Int {
        guard let index = document.member(named: key.stringValue, in: object) else {
            throw document.failure(
                .keyNotFound(key, .init(codingPath: codingPath, debugDescription: "No value for \(key.stringValue)")))
        }
        return index
    }

    func decodeNil(forKey key: Key) throws -> Bool { try document.kind(value(for: key)) == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try document.bool(at: value(for: key), codingPath(key))
    }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try document.string(at: value(for: key), codingPath(key))
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try document.double(at: value(for: key), codingPath(key))
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        try document.float(at: value(for: key), codingPath(key))
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int {
        try document.integer(type, at: value(for: key), codingPath(key))
    }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 {
        try document.integer(type, at: value(for: key), codingPath(key))
    }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 {
        try document.integer(type, at: value(for: key), codingPath(key))
    }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 {
        try document.integer(type, at: value(for: key), codingPath(key))
    }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
        try document.integer(type, at: value(for: key), codingPath(key))
    }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt {
        try document.integer(type, at: value(for: key), codingPath(key))
    }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 {
        try document.integer(type, at: value(for: key), codingPath(key))
    }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 {
        try document.integer(type, at: value(for: key), codingPath(key))
    }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 {
        try document.integer(type, at: value(for: key), codingPath(key))
    }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 {
        try document.integer(type, at: value(for: key), codingPath(key))
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try document.decode(type, at: value(for: key), path: path, key: key)
    }

    /// Absent and `null` are both nil, as in `JSONDecoder`; one lookup instead of the three of
    /// the default implementations.
    private func ifPresent<T>(_ key: Key, _ read: (Int) throws -> T) throws -> T? {
        guard let index = document.member(named: key.stringValue, in: object), document.kind(index) != .null else {
            return nil
        }
        return try read(index)
    }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        try ifPresent(key) { try document.bool(at: $0, codingPath(key)) }
    }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        try ifPresent(key) { try document.string(at: $0, codingPath(key)) }
    }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        try ifPresent(key) { try document.double(at: $0, codingPath(key)) }
    }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? {
        try ifPresent(key) { try document.float(at: $0, codingPath(key)) }
    }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        try ifPresent(key) { try document.integer(type, at: $0, codingPath(key)) }
    }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? {
        try ifPresent(key) { try document.integer(type, at: $0, codingPath(key)) }
    }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? {
        try ifPresent(key) { try document.integer(type, at: $0, codingPath(key)) }
    }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? {
        try ifPresent(key) { try document.integer(type, at: $0, codingPath(key)) }
    }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
        try ifPresent(key) { try document.integer(type, at: $0, codingPath(key)) }
    }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? {
        try ifPresent(key) { try document.integer(type, at: $0, codingPath(key)) }
    }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? {
        try ifPresent(key) { try document.integer(type, at: $0, codingPath(key)) }
    }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? {
        try ifPresent(key) { try document.integer(type, at: $0, codingPath(key)) }
    }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? {
        try ifPresent(key) { try document.integer(type, at: $0, codingPath(key)) }
    }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? {
        try ifPresent(key) { try document.integer(type, at: $0, codingPath(key)) }
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        try ifPresent(key) { try document.decode(type, at: $0, path: path, key: key) }
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        KeyedDecodingContainer(
            try PayloadKeyedContainer<NestedKey>(
                document: document, object: value(for: key), path: PayloadPath(key, parent: path)))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try PayloadUnkeyedContainer(document: document, array: value(for: key), path: PayloadPath(key, parent: path))
    }

    /// A missing "super" throws (`JSONDecoder` would hand out a decoder of null).
    func superDecoder() throws -> any Decoder {
        let key = PayloadIndexKey.super
        guard let index = document.member(named: key.stringValue, in: object) else {
            throw document.failure(
                .keyNotFound(key, .init(codingPath: codingPath, debugDescription: "No value for super")))
        }
        return PayloadNodeDecoder(document: document, index: index, path: PayloadPath(key, parent: path))
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        PayloadNodeDecoder(document: document, index: try value(for: key), path: PayloadPath(key, parent: path))
    }
}
