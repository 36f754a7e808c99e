import Foundation

/// Decodes the JSON `JSONEncoder()` writes, faster than `JSONDecoder`, or throws so the caller falls back.
///
/// The bytes are parsed once into a flat array of ``PayloadNode``s (a tape with byte ranges into the
/// input), then a `Decoder` walks that array. Anything unusual throws instead of guessing: the contract
/// is that a successful decode equals what `JSONDecoder()` (default strategies) produces for the same
/// bytes, so `JSONDecoder` stays the authority whenever this path gives up.
package enum PayloadDecoder {
    /// Decodes `type` from `bytes`, or throws (a `DecodingError`) when anything is unusual.
    package static func decode<V: Decodable>(
        _ type: V.Type, from bytes: UnsafeRawBufferPointer,
        agreeingWith decoder: JSONDecoderGeneration = .current
    ) throws -> V {
        var metSpecialType = false
        return try decode(type, from: bytes, agreeingWith: decoder, metSpecialType: &metSpecialType)
    }

    /// Decodes `type` from `bytes`; `metSpecialType` tells, success or not, whether a type
    /// left to `JSONDecoder` (`Data`, `URL`, `Decimal`, which it treats specially; and on older
    /// Apple systems the types of ``JSONDecoderGeneration/serialization``) was asked for, so the
    /// caller can send values of `type` to `JSONDecoder` directly from then on.
    ///
    /// A value's `init(from:)` may catch an error and go on (`try?` over one field). Where this
    /// path threw but `JSONDecoder` would not have, the value built would then differ, so a
    /// decode during which anything threw is given up as a whole, even when it returned.
    package static func decode<V: Decodable>(
        _ type: V.Type, from bytes: UnsafeRawBufferPointer,
        agreeingWith decoder: JSONDecoderGeneration = .current, metSpecialType: inout Bool
    ) throws -> V {
        let document = try PayloadDocument(bytes: bytes, agreeingWith: decoder)
        defer { metSpecialType = document.metSpecialType }
        let value = try document.decode(V.self, at: 0, path: nil, key: nil)
        guard !document.threw else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: [],
                    debugDescription: "A read failed and was caught inside init(from:); left to JSONDecoder"))
        }
        return value
    }

    /// Decodes `type` from `data`; see the pointer overload.
    package static func decode<V: Decodable>(
        _ type: V.Type, from data: Data, agreeingWith decoder: JSONDecoderGeneration = .current
    ) throws -> V {
        try data.withUnsafeBytes { try decode(V.self, from: $0, agreeingWith: decoder) }
    }

    /// The deepest nesting of arrays and objects accepted.
    static let maxDepth = 512
}

// MARK: - Which JSONDecoder to agree with

/// The Foundation `JSONDecoder` that ``PayloadDecoder`` must give the same answers as: where it
/// cannot show that it does, it throws, and the caller falls back to `JSONDecoder` itself.
///
/// The one place that knows Apple's older Foundation: ``current`` is the only `#available`
/// check, and tests run both cases on Linux.
package enum JSONDecoderGeneration: Sendable, Hashable {
    /// swift-foundation's `JSONDecoder`, written in Swift: Linux, and Apple's systems from
    /// macOS 14, iOS 17, tvOS 17 and watchOS 10 (Apple's Foundation adopted swift-foundation's
    /// implementation in that release, WWDC 2023). The fast path was tested bit for bit against it.
    case swiftFoundation
    /// The `JSONDecoder` before it (macOS 13, iOS 16, tvOS 16, watchOS 9), which decodes from
    /// `JSONSerialization`'s `NSNumber`s: it reads `Float` through `Double` (rounding twice), and
    /// how it rounds `Double` and holds integers above `Int64.max` is not documented. Those are
    /// left to it: `Float` and `Double` (and so `Date`) by type, larger integers by value.
    case serialization

    /// The generation of the `JSONDecoder` this process runs with. (The versions: swift-foundation
    /// issue 332, where its maintainers say the new `JSONDecoder` ships in macOS 14, iOS 17,
    /// watchOS 10 and tvOS 17.)
    package static let current: JSONDecoderGeneration = {
        if #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) { return .swiftFoundation }
        return .serialization
    }()

    /// Whether the fast path's `Float` and `Double` (parsed once from the text, correctly
    /// rounded) are known to equal this decoder's.
    var readsFloatingPointAlike: Bool { self == .swiftFoundation }
}
