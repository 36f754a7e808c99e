import Foundation

/// Turns values into payload bytes and back, by codec; `Data` passes through raw.
enum ValueCoding {
    /// The name stored in headers for `V`: fully qualified, stable across runs and platforms.
    ///
    /// Computed once per type: `String(reflecting:)` and the normalization cost about a
    /// microsecond, a tenth of a cold read.
    static func typeName<V>(of type: V.Type) -> String {
        let identifier = ObjectIdentifier(type)
        if let name = typeFacts.withLock({ $0[identifier]?.name }) { return name }
        let name = normalizedTypeName(String(reflecting: type))
        typeFacts.withLock { $0[identifier, default: TypeFacts()].name = name }
        return name
    }

    /// What is learned once per value type and kept for the process.
    private struct TypeFacts {
        /// ``typeName(of:)``, once computed.
        var name: String?
        /// Whether `PayloadDecoder` leaves this type's payloads to `JSONDecoder`.
        var decodesWithJSONDecoder = false
    }

    private static let typeFacts = Locked<[ObjectIdentifier: TypeFacts]>([:])

    /// `String(reflecting:)` says `FoundationEssentials.Data` on Linux and `Foundation.Data` on
    /// Apple platforms: both are written, and compared, as `Foundation.…`.
    static func normalizedTypeName(_ name: String) -> String {
        name.contains("FoundationEssentials.") ? name.replacingOccurrences(of: "FoundationEssentials.", with: "Foundation.") : name
    }

    /// The payload format a key's values are written with.
    static func format<V>(for type: V.Type, codec: Codec) -> PayloadFormat {
        if type == Data.self { return .raw }
        return codec == .json ? .json : .propertyList
    }

    static func encode<V: Encodable>(_ value: V, format: PayloadFormat) throws -> Data {
        switch format {
        case .raw:
            guard let data = value as? Data else { throw CodingFailure("raw payloads hold Data only") }
            return data
        case .json:
            return try JSONEncoder().encode(value)
        case .propertyList:
            let encoder = PropertyListEncoder()
            encoder.outputFormat = .binary
            return try encoder.encode(value)
        }
    }

    static func decode<V: Decodable>(_ type: V.Type, from payload: Data, format: PayloadFormat) throws -> V {
        switch format {
        case .raw:
            guard let value = payload as? V else { throw CodingFailure("raw payload read as \(V.self)") }
            return value
        case .json:
            return try decodeJSON(type, from: payload)
        case .propertyList:
            return try PropertyListDecoder().decode(type, from: payload)
        }
    }

    /// `PayloadDecoder` first (27.8K instructions against 59.6K for the benchmarks' 187-byte
    /// `User`, by callgrind on `cashier-ratios --smoke --only read`), `JSONDecoder` whenever it gives
    /// up: `JSONDecoder` stays the authority, and a payload only one of them reads is read by it.
    /// Types that hold `Data`, `URL` or `Decimal` (which `JSONDecoder` treats specially) go to
    /// `JSONDecoder` directly once seen; so do those holding `Float` or `Double` where this
    /// system's `JSONDecoder` is the older one (``JSONDecoderGeneration/serialization``).
    static func decodeJSON<V: Decodable>(_ type: V.Type, from payload: Data,
                                         agreeingWith decoder: JSONDecoderGeneration = .current) throws -> V {
        let identifier = ObjectIdentifier(type)
        if !typeFacts.withLock({ $0[identifier]?.decodesWithJSONDecoder ?? false }) {
            var metSpecialType = false
            let fast = payload.withUnsafeBytes { bytes in
                try? PayloadDecoder.decode(type, from: bytes, agreeingWith: decoder, metSpecialType: &metSpecialType)
            }
            if let fast { return fast }
            if metSpecialType { typeFacts.withLock { $0[identifier, default: TypeFacts()].decodesWithJSONDecoder = true } }
        }
        return try JSONDecoder().decode(type, from: payload)
    }

    struct CodingFailure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
