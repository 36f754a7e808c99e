import Foundation

// MARK: - Decoder

/// Decodes one node: the `Decoder`, and its own single-value container.
struct PayloadNodeDecoder: Decoder, SingleValueDecodingContainer {
    let document: PayloadDocument
    let index: Int
    let path: PayloadPath?

    var codingPath: [any CodingKey] { PayloadPath.components(path) }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(try PayloadKeyedContainer<Key>(document: document, object: index, path: path))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try PayloadUnkeyedContainer(document: document, array: index, path: path)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool { document.kind(index) == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try document.bool(at: index, codingPath) }
    func decode(_ type: String.Type) throws -> String { try document.string(at: index, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try document.double(at: index, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try document.float(at: index, codingPath) }
    func decode(_ type: Int.Type) throws -> Int { try document.integer(type, at: index, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try document.integer(type, at: index, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try document.integer(type, at: index, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try document.integer(type, at: index, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try document.integer(type, at: index, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try document.integer(type, at: index, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try document.integer(type, at: index, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try document.integer(type, at: index, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try document.integer(type, at: index, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try document.integer(type, at: index, codingPath) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try document.decode(type, at: index, path: path, key: nil) }
}
