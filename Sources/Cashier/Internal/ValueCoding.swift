import CashierEntryFormat
import CashierJSON
import CashierPlatform
import Foundation

/// Turns values into payload bytes and back, by codec; `Data` passes through raw.
enum ValueCoding {
    /// The name stored in headers for `V`: fully qualified, stable across launches and platforms
    /// (see ``normalizedTypeName(_:)``).
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

    /// A reflected type name made the same on every platform and at every launch.
    ///
    /// - `String(reflecting:)` says `FoundationEssentials.Data` on Linux and `Foundation.Data`
    ///   on Apple platforms: both are written, and compared, as `Foundation.…`.
    /// - A `private`, `fileprivate` or function-local type's reflected name holds its context's
    ///   address, `(unknown context at $55e3387690fc)`, which changes at every launch: it is
    ///   written, and compared, as `(unknown context)`. (Two such types of one module with one
    ///   name then share a stored name; decoding still tells their payloads apart, mostly.)
    ///
    /// Headers written before either rule keep their old spelling: the read path compares
    /// stored names through this function too, so they stay readable.
    static func normalizedTypeName(_ name: String) -> String {
        var name = name
        if name.contains("FoundationEssentials.") {
            name = name.replacingOccurrences(of: "FoundationEssentials.", with: "Foundation.")
        }
        if name.contains(unknownContext) { name = withoutContextAddresses(name) }
        return name
    }

    private static let unknownContext = "(unknown context at $"

    /// `name` with every `(unknown context at $…)` written as `(unknown context)`.
    private static func withoutContextAddresses(_ name: String) -> String {
        var result = ""
        var rest = name[...]
        while let marker = rest.range(of: unknownContext) {
            result += rest[..<marker.lowerBound]
            result += "(unknown context)"
            let afterMarker = rest[marker.upperBound...]
            guard let close = afterMarker.firstIndex(of: ")") else {
                rest = afterMarker[afterMarker.endIndex...]
                break
            }
            rest = afterMarker[afterMarker.index(after: close)...]
        }
        return result + rest
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

    /// The first bytes of every binary property list: "bplist".
    static let binaryPropertyListMagic: [UInt8] = Array("bplist".utf8)

    static func decode<V: Decodable>(_ type: V.Type, from payload: Data, format: PayloadFormat) throws -> V {
        switch format {
        case .raw:
            return try decodeRaw(type, from: payload)
        case .json:
            return try decodeJSON(type, from: payload)
        case .propertyList:
            // Cashier writes binary property lists only. `PropertyListDecoder` would also take
            // XML, whose parser recurses once per nesting level: 20,000 nested `<array>`s
            // overflow the stack (a crash, not an error). Only the binary form is read.
            guard payload.starts(with: binaryPropertyListMagic) else {
                throw CodingFailure("the payload is not a binary property list (Cashier writes only those)")
            }
            return try PropertyListDecoder().decode(type, from: payload)
        }
    }

    /// A `.raw` payload, which only `Data` is stored as. Apart from ``decode(_:from:format:)``:
    /// the cast's `V?` would otherwise be made (its metadata looked up) on every read.
    private static func decodeRaw<V>(_ type: V.Type, from payload: Data) throws -> V {
        guard let value = payload as? V else { throw CodingFailure("raw payload read as \(V.self)") }
        return value
    }

    /// `PayloadDecoder` first (27.8K instructions against 59.6K for the benchmarks' 187-byte
    /// `User`, by callgrind on `cashier-ratios --smoke --only read`), `JSONDecoder` whenever it gives
    /// up: `JSONDecoder` stays the authority, and a payload only one of them reads is read by it.
    /// Types that hold `Data`, `URL` or `Decimal` (which `JSONDecoder` treats specially) go to
    /// `JSONDecoder` directly once seen; so do those holding `Float` or `Double` where this
    /// system's `JSONDecoder` is the older one (`JSONDecoderGeneration.serialization`).
    static func decodeJSON<V: Decodable>(
        _ type: V.Type, from payload: Data,
        agreeingWith decoder: JSONDecoderGeneration = .current
    ) throws -> V {
        let identifier = ObjectIdentifier(type)
        if !typeFacts.withLock({ $0[identifier]?.decodesWithJSONDecoder ?? false }) {
            var metSpecialType = false
            // `try`, not `try?`: no `V?` in this unspecialized function (see `Found`).
            do {
                return try payload.withUnsafeBytes { bytes in
                    try PayloadDecoder.decode(type, from: bytes, agreeingWith: decoder, metSpecialType: &metSpecialType)
                }
            } catch {}
            if metSpecialType {
                typeFacts.withLock { $0[identifier, default: TypeFacts()].decodesWithJSONDecoder = true }
            }
        }
        return try JSONDecoder().decode(type, from: payload)
    }

    struct CodingFailure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
