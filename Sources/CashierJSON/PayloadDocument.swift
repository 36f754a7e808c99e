import CashierInternals
import Foundation

// MARK: - Document

/// The parsed payload: its bytes and tape, and the typed reads the containers share.
///
/// Typed reads take the coding path as an autoclosure: it is only built when they throw.
/// Not `Sendable` (lookups move each object's `hint`); a document lives for one synchronous decode.
final class PayloadDocument {
    /// A copy of the input, owned (and freed) by the document, so texts are plain slices of it.
    private let bytes: UnsafeMutableRawBufferPointer
    /// Only written by ``member(named:in:)`` (a `hint`), never while another access is open.
    @exclusivity(unchecked) private(set) var nodes: [PayloadNode]

    /// The `JSONDecoder` whose results this document's reads must equal.
    private let generation: JSONDecoderGeneration

    init(bytes input: UnsafeRawBufferPointer, agreeingWith generation: JSONDecoderGeneration = .current) throws {
        self.generation = generation
        var parser = PayloadParser(input)
        try parser.parse()
        nodes = parser.nodes
        bytes = .allocate(byteCount: input.count, alignment: 1)
        bytes.copyMemory(from: input)
    }

    deinit {
        bytes.deallocate()
    }

    func kind(_ index: Int) -> PayloadNode.Kind { nodes[index].kind }

    /// The index of the node after `index` and its descendants.
    func next(after index: Int) -> Int {
        let node = nodes[index]
        return node.kind == .array || node.kind == .object ? Int(node.end) : index + 1
    }

    /// The bytes of a scalar node; valid while the document lives.
    func text(_ index: Int) -> UnsafeRawBufferPointer {
        let node = nodes[index]
        return UnsafeRawBufferPointer(rebasing: bytes[Int(node.start)..<Int(node.end)])
    }

    /// Whether two nodes' texts are the same bytes.
    func sameText(_ left: Int, _ right: UnsafeRawBufferPointer) -> Bool {
        let text = text(left)
        guard text.count == right.count else { return false }
        return text.isEmpty || memcmp(text.baseAddress!, right.baseAddress!, text.count) == 0
    }

    // MARK: Errors

    /// Whether any read of the decode threw (see ``PayloadDecoder/decode(_:from:agreeingWith:metSpecialType:)``).
    /// Every decode-time error is made by ``failure(_:)``, which sets it.
    private(set) var threw = false
    /// Whether a type left to `JSONDecoder` was asked for: `Data`, `URL` or `Decimal`, and
    /// for ``JSONDecoderGeneration/serialization`` also `Float` and `Double` (so `Date`).
    private(set) var metSpecialType = false

    /// `error`, noted as thrown.
    func failure(_ error: DecodingError) -> DecodingError {
        threw = true
        return error
    }

    func mismatch(_ type: Any.Type, at index: Int, _ path: [any CodingKey]) -> DecodingError {
        let context = DecodingError.Context(
            codingPath: path, debugDescription: "Expected \(type), found \(kind(index)) (or a form left to JSONDecoder)"
        )
        return failure(kind(index) == .null ? .valueNotFound(type, context) : .typeMismatch(type, context))
    }

    func corrupted(_ message: String, _ path: [any CodingKey]) -> DecodingError {
        failure(.dataCorrupted(.init(codingPath: path, debugDescription: message)))
    }

    // MARK: Typed reads

    func bool(at index: Int, _ path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        switch kind(index) {
        case .true: return true
        case .false: return false
        default: throw mismatch(Bool.self, at: index, path())
        }
    }

    func string(at index: Int, _ path: @autoclosure () -> [any CodingKey]) throws -> String {
        guard kind(index) == .string else { throw mismatch(String.self, at: index, path()) }
        return string(at: index)
    }

    /// The content of a string node (a value or a key).
    func string(at index: Int) -> String {
        let escaped = nodes[index].flags & PayloadNode.escaped != 0
        return escaped ? PayloadText.unescape(text(index)) : String(decoding: text(index), as: UTF8.self)
    }

    /// An integer written `-?(0|[1-9][0-9]*)` that fits `T`; anything else throws.
    func integer<T: FixedWidthInteger>(_ type: T.Type, at index: Int, _ path: @autoclosure () -> [any CodingKey]) throws
        -> T
    {
        let node = nodes[index]
        guard node.kind == .number, node.flags & PayloadNode.integral != 0 else {
            throw mismatch(T.self, at: index, path())
        }
        guard let value = PayloadText.integer(T.self, text(index)) else {
            throw corrupted("Number does not fit \(T.self)", path())
        }
        if generation == .serialization, !T.isSigned, T.bitWidth >= 64,
            UInt64(truncatingIfNeeded: value) > UInt64(Int64.max)
        {
            throw corrupted("\(value) is above Int64.max: left to JSONDecoder", path())
        }
        return value
    }

    func double(at index: Int, _ path: @autoclosure () -> [any CodingKey]) throws -> Double {
        try floatingPoint(Double.self, at: index, path())
    }

    /// Parsed straight from the text (as `JSONDecoder` does), not through `Double`: rounding twice
    /// can differ in the last bit.
    func float(at index: Int, _ path: @autoclosure () -> [any CodingKey]) throws -> Float {
        try floatingPoint(Float.self, at: index, path())
    }

    /// A correctly rounded, finite value. A zero throws unless every digit is 0: `JSONDecoder` rejects
    /// underflow to zero, and also "0e1".
    private func floatingPoint<T: BinaryFloatingPoint & LosslessStringConvertible>(
        _ type: T.Type, at index: Int, _ path: @autoclosure () -> [any CodingKey]
    ) throws -> T {
        guard generation.readsFloatingPointAlike else {
            metSpecialType = true
            throw corrupted("\(T.self) is left to this system's JSONDecoder", path())
        }
        guard kind(index) == .number else { throw mismatch(T.self, at: index, path()) }
        let text = text(index)
        // Exponent digits count too: JSONDecoder rejects "0e1" (though not "0e0").
        let isTrueZero = text.allSatisfy { $0 < UInt8(ascii: "1") || $0 > UInt8(ascii: "9") }
        let value = T(String(decoding: text, as: UTF8.self))
        guard let value, value.isFinite, value != 0 || isTrueZero else {
            throw corrupted("Number is not representable as \(T.self)", path())
        }
        return value
    }

    // MARK: Values

    /// Decodes any `Decodable` at `index`, reached through `key`; the types `JSONDecoder` treats
    /// specially throw.
    func decode<T: Decodable>(_ type: T.Type, at index: Int, path: PayloadPath?, key: (any CodingKey)?) throws -> T {
        if T.self == String.self { return try string(at: index, PayloadPath.components(path, key)) as! T }
        if T.self == Int.self { return try integer(Int.self, at: index, PayloadPath.components(path, key)) as! T }
        if T.self == Double.self { return try double(at: index, PayloadPath.components(path, key)) as! T }
        if T.self == Bool.self { return try bool(at: index, PayloadPath.components(path, key)) as! T }
        // `Date` needs nothing special: JSONDecoder's default strategy (deferredToDate) is
        // `Date(from:)`, a Double, exactly what the generic path below does.
        if T.self == Data.self || T.self == URL.self || T.self == Decimal.self {
            metSpecialType = true
            throw corrupted("\(T.self) is left to JSONDecoder", PayloadPath.components(path, key))
        }
        let decoder = PayloadNodeDecoder(document: self, index: index, path: PayloadPath.appending(key, to: path))
        return try T(from: decoder)
    }

    // MARK: Objects

    /// The value node for `name` in `object`, or nil. Lookups start after the last match, so
    /// reading keys in written order costs one comparison each. Keys compare as Swift `String`s do
    /// (canonical equivalence, like `JSONDecoder`'s dictionary), by bytes when both are plain ASCII.
    func member(named name: String, in object: Int) -> Int? {
        let node = nodes[object]
        guard node.count > 0 else { return nil }
        let first = object + 1
        var target = name
        return target.withUTF8 { targetBytes in
            var targetIsASCII: Bool?
            var key = max(Int(node.hint), first)
            for _ in 0..<node.count {
                let following = next(after: key + 1)
                if keyMatches(key, targetBytes, &targetIsASCII, name) {
                    nodes[object].hint = UInt32(following < Int(node.end) ? following : first)
                    return key + 1
                }
                key = following < Int(node.end) ? following : first
            }
            return nil
        }
    }

    /// Whether key node `key` equals `name` (whose UTF-8 is `target`); `targetIsASCII` is worked
    /// out on the first byte mismatch.
    private func keyMatches(
        _ key: Int, _ target: UnsafeBufferPointer<UInt8>, _ targetIsASCII: inout Bool?, _ name: String
    ) -> Bool {
        guard nodes[key].flags == 0 else { return string(at: key) == name }
        if sameText(key, UnsafeRawBufferPointer(target)) { return true }
        if targetIsASCII == nil { targetIsASCII = UnsafeRawBufferPointer(target).isASCII }
        return targetIsASCII == false && string(at: key) == name
    }

    /// Throws when two keys of `object` are equal `String`s (`JSONDecoder` keeps the first; this
    /// path leaves that to it), or when a key spells an integer non-canonically ("01", "+1", "-0"),
    /// which `Int(_:)` would merge with another key in an `[Int: V]`.
    func checkKeys(of object: Int, _ path: @autoclosure () -> [any CodingKey]) throws {
        let node = nodes[object]
        guard node.flags & PayloadNode.keysChecked == 0 else { return }
        let keys = sequence(first: object + 1) { self.next(after: $0 + 1) }.prefix(Int(node.count))
        var plain = true
        for key in keys {
            plain = plain && nodes[key].flags == 0
            if PayloadText.isNonCanonicalInteger(text(key)) {
                throw corrupted("Key \(string(at: key)) spells an integer non-canonically", path())
            }
        }
        if plain && node.count <= 16 {
            // Pairwise by bytes, walking the tape (no allocation).
            var left = object + 1
            for remaining in (0..<Int(node.count)).reversed() {
                var right = next(after: left + 1)
                for _ in 0..<remaining {
                    if sameText(left, text(right)) { throw corrupted("Duplicate key \(string(at: left))", path()) }
                    right = next(after: right + 1)
                }
                left = next(after: left + 1)
            }
        } else {
            var seen = Set<String>(minimumCapacity: Int(node.count))
            for key in keys where !seen.insert(string(at: key)).inserted {
                throw corrupted("Duplicate key \(string(at: key))", path())
            }
        }
        nodes[object].flags |= PayloadNode.keysChecked
    }
}

extension PayloadText {
    /// `[+-]?[0-9]+` other than the way `String(Int)` writes it.
    static func isNonCanonicalInteger(_ text: UnsafeRawBufferPointer) -> Bool {
        guard let first = text.first else { return false }
        let signed = first == UInt8(ascii: "+") || first == UInt8(ascii: "-")
        let digits = text.dropFirst(signed ? 1 : 0)
        guard !digits.isEmpty, digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            return false
        }
        return first == UInt8(ascii: "+") || (digits.first == UInt8(ascii: "0") && (signed || digits.count > 1))
    }

    /// Reads `-?[0-9]+` (already validated) into `T`, or nil when it does not fit.
    static func integer<T: FixedWidthInteger>(_ type: T.Type, _ text: UnsafeRawBufferPointer) -> T? {
        let negative = text.first == UInt8(ascii: "-")
        var magnitude: UInt64 = 0
        for digit in text.dropFirst(negative ? 1 : 0) {
            let (times10, overflow) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times10.addingReportingOverflow(UInt64(digit &- UInt8(ascii: "0")))
            guard !overflow, !carry else { return nil }
            magnitude = sum
        }
        let max = UInt64(truncatingIfNeeded: T.max)
        if !negative { return magnitude <= max ? T(truncatingIfNeeded: magnitude) : nil }
        // Two's complement: the magnitude negated, cut to T's width (T.min's magnitude is max + 1).
        guard T.isSigned, magnitude <= max + 1 else { return nil }
        return T(truncatingIfNeeded: 0 &- magnitude)
    }
}
