import Foundation

/// Decodes the JSON `JSONEncoder()` writes, faster than `JSONDecoder`, or throws so the caller falls back.
///
/// The bytes are parsed once into a flat array of ``PayloadNode``s (a tape with byte ranges into the
/// input), then a `Decoder` walks that array. Anything unusual throws instead of guessing: the contract
/// is that a successful decode equals what `JSONDecoder()` (default strategies) produces for the same
/// bytes, so `JSONDecoder` stays the authority whenever this path gives up.
enum PayloadDecoder {
    /// Decodes `type` from `bytes`, or throws (a `DecodingError`) when anything is unusual.
    static func decode<V: Decodable>(
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
    static func decode<V: Decodable>(
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
    static func decode<V: Decodable>(
        _ type: V.Type, from data: Data, agreeingWith decoder: JSONDecoderGeneration = .current
    ) throws -> V {
        try data.withUnsafeBytes { try decode(V.self, from: $0, agreeingWith: decoder) }
    }

    /// The deepest nesting of arrays and objects accepted.
    static let maxDepth = 512
}

// MARK: - Tape

/// One JSON value (or object key) in document order; a container's members follow it directly.
struct PayloadNode {
    /// What a node holds.
    enum Kind: UInt8 { case null, `true`, `false`, number, string, array, object }

    /// A string with at least one backslash escape.
    static let escaped: UInt8 = 1
    /// A string with bytes of 0x80 and up.
    static let nonASCII: UInt8 = 2
    /// A number of the form `-?(0|[1-9][0-9]*)`.
    static let integral: UInt8 = 4
    /// An object whose keys were checked unique (and not integers in a non-canonical spelling).
    static let keysChecked: UInt8 = 8

    var kind: Kind
    var flags: UInt8 = 0
    /// Scalars: offset of the first byte (strings: after the opening quote).
    var start: UInt32 = 0
    /// Scalars: offset after the last byte (strings: of the closing quote); containers: the index
    /// of the node after the container's last descendant.
    var end: UInt32 = 0
    /// Containers: how many members (objects) or elements (arrays).
    var count: UInt32 = 0
    /// Objects: the key node after the last lookup's match, where the next lookup starts.
    var hint: UInt32 = 0
}

/// Builds the tape from bytes, iteratively, validating everything a later read relies on: the
/// grammar of RFC 8259, UTF-8, escapes and surrogate pairs, and the nesting limit.
struct PayloadParser {
    private let input: UnsafeRawBufferPointer
    private var position = 0
    private(set) var nodes: [PayloadNode] = []
    /// The indexes of the containers still open, innermost last.
    private var open: [Int] = []

    init(_ input: UnsafeRawBufferPointer) {
        self.input = input
    }

    /// The byte at `offset`, or 0 past the end: 0 is invalid everywhere in JSON, so reading past the
    /// end fails the same way a stray control character does.
    @inline(__always)
    private func byte(_ offset: Int) -> UInt8 {
        offset < input.count ? input[offset] : 0
    }

    private func failure(_ message: String) -> DecodingError {
        .dataCorrupted(.init(codingPath: [], debugDescription: "\(message) at byte \(position)"))
    }

    /// Parses one top-level value followed only by whitespace.
    mutating func parse() throws {
        // Compared as UInt64: `Int(UInt32.max)` does not fit where `Int` is 32 bits (watchOS on arm64_32).
        // Every offset and count on the tape is then below UInt32.max and no more than `input.count`.
        guard UInt64(input.count) < UInt64(UInt32.max) else { throw failure("Payload too large") }
        nodes.reserveCapacity(input.count / 6 + 2)
        try beginValue()
        while let container = open.last {
            skipWhitespace()
            let next = byte(position)
            if next == UInt8(ascii: ",") {
                position += 1
                try beginEntry(of: container)
                try beginValue()
            } else if next == closer(of: container) {
                position += 1
                close(container)
            } else {
                throw failure("Expected ',' or the end of a container")
            }
        }
        skipWhitespace()
        guard position == input.count else { throw failure("Trailing bytes") }
    }

    /// Starts the next entry of `container` and counts it: for an object, its key and colon;
    /// for an array, nothing to read (the element is the value that follows).
    private mutating func beginEntry(of container: Int) throws {
        if nodes[container].kind == .object {
            try beginMember(of: container)
        } else {
            nodes[container].count += 1
        }
    }

    private func closer(of container: Int) -> UInt8 {
        nodes[container].kind == .object ? UInt8(ascii: "}") : UInt8(ascii: "]")
    }

    private mutating func skipWhitespace() {
        while true {
            switch byte(position) {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return
            }
        }
    }

    /// Parses a scalar, or opens a container and descends into its first value (looping, not
    /// recursing); closing containers is left to ``parse()``.
    private mutating func beginValue() throws {
        while true {
            skipWhitespace()
            switch byte(position) {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let container = try openContainer(byte(position) == UInt8(ascii: "{") ? .object : .array)
                skipWhitespace()
                if byte(position) == closer(of: container) {
                    position += 1
                    close(container)
                    return
                }
                try beginEntry(of: container)
            case UInt8(ascii: "\""):
                try parseString()
                return
            case UInt8(ascii: "t"):
                try parseLiteral("true", .true)
                return
            case UInt8(ascii: "f"):
                try parseLiteral("false", .false)
                return
            case UInt8(ascii: "n"):
                try parseLiteral("null", .null)
                return
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                try parseNumber()
                return
            default:
                throw failure("Expected a value")
            }
        }
    }

    private mutating func openContainer(_ kind: PayloadNode.Kind) throws -> Int {
        guard open.count < PayloadDecoder.maxDepth else {
            throw failure("Nesting deeper than \(PayloadDecoder.maxDepth)")
        }
        position += 1
        nodes.append(PayloadNode(kind: kind))
        open.append(nodes.count - 1)
        return nodes.count - 1
    }

    private mutating func close(_ container: Int) {
        nodes[container].end = UInt32(nodes.count)
        open.removeLast()
    }

    /// Parses `"key" :` and counts the member; its value comes next.
    private mutating func beginMember(of object: Int) throws {
        skipWhitespace()
        guard byte(position) == UInt8(ascii: "\"") else { throw failure("Expected a key") }
        try parseString()
        skipWhitespace()
        guard byte(position) == UInt8(ascii: ":") else { throw failure("Expected ':'") }
        position += 1
        nodes[object].count += 1
    }

    private mutating func parseLiteral(_ literal: StaticString, _ kind: PayloadNode.Kind) throws {
        let text = UnsafeRawBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        for (offset, expected) in text.enumerated() where byte(position + offset) != expected {
            throw failure("Invalid literal")
        }
        position += text.count
        nodes.append(PayloadNode(kind: kind))
    }

    // MARK: Numbers

    private func isDigit(_ offset: Int) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte(offset))
    }

    private func skipDigits(from offset: Int) -> Int {
        var offset = offset
        while isDigit(offset) { offset += 1 }
        return offset
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    private mutating func parseNumber() throws {
        var offset = position
        if byte(offset) == UInt8(ascii: "-") { offset += 1 }
        if byte(offset) == UInt8(ascii: "0") {
            offset += 1
        } else if isDigit(offset) {
            offset = skipDigits(from: offset)
        } else {
            throw failure("Invalid number")
        }
        var flags = PayloadNode.integral
        if byte(offset) == UInt8(ascii: ".") {
            guard isDigit(offset + 1) else { throw failure("Invalid fraction") }
            offset = skipDigits(from: offset + 1)
            flags = 0
        }
        if byte(offset) | 0x20 == UInt8(ascii: "e") {
            offset += 1
            if byte(offset) == UInt8(ascii: "+") || byte(offset) == UInt8(ascii: "-") { offset += 1 }
            guard isDigit(offset) else { throw failure("Invalid exponent") }
            offset = skipDigits(from: offset)
            flags = 0
        }
        nodes.append(PayloadNode(kind: .number, flags: flags, start: UInt32(position), end: UInt32(offset)))
        position = offset
    }

    // MARK: Strings

    private mutating func parseString() throws {
        let start = position + 1
        var offset = start
        var flags: UInt8 = 0
        let input = input
        while true {
            // The common run: printable ASCII other than a quote or a backslash.
            while offset < input.count, case let next = input[offset], next >= 0x20, next < 0x80,
                next != UInt8(ascii: "\""), next != UInt8(ascii: "\\")
            {
                offset += 1
            }
            let next = byte(offset)
            if next == UInt8(ascii: "\"") { break }
            if next == UInt8(ascii: "\\") {
                flags |= PayloadNode.escaped
                offset = try skipEscape(at: offset)
            } else if next < 0x20 {
                throw failure("Unescaped control character or unterminated string")
            } else if next < 0x80 {
                offset += 1
            } else {
                flags |= PayloadNode.nonASCII
                offset = try skipScalar(at: offset)
            }
        }
        nodes.append(PayloadNode(kind: .string, flags: flags, start: UInt32(start), end: UInt32(offset)))
        position = offset + 1
    }

    /// Validates the escape at `offset` (a backslash) and returns the offset after it.
    private func skipEscape(at offset: Int) throws -> Int {
        switch byte(offset + 1) {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
            UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return offset + 2
        case UInt8(ascii: "u"):
            let unit = try hexUnit(at: offset + 2)
            switch unit {
            case 0xD800..<0xDC00:
                guard byte(offset + 6) == UInt8(ascii: "\\"), byte(offset + 7) == UInt8(ascii: "u"),
                    (0xDC00..<0xE000).contains(try hexUnit(at: offset + 8))
                else { throw failure("Unpaired high surrogate") }
                return offset + 12
            case 0xDC00..<0xE000:
                throw failure("Unpaired low surrogate")
            default:
                return offset + 6
            }
        default:
            throw failure("Invalid escape")
        }
    }

    private func hexUnit(at offset: Int) throws -> UInt32 {
        var unit: UInt32 = 0
        for index in offset..<offset + 4 {
            guard let digit = PayloadText.hexValue(byte(index)) else { throw failure("Invalid \\u escape") }
            unit = unit << 4 | digit
        }
        return unit
    }

    /// Validates one multi-byte UTF-8 scalar at `offset` (Unicode table 3-7: no overlongs, no
    /// surrogates, nothing past U+10FFFF) and returns the offset after it.
    private func skipScalar(at offset: Int) throws -> Int {
        let lead = byte(offset)
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            secondRange = 0x80...0x9F
        case 0xF0:
            length = 4
            secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            secondRange = 0x80...0x8F
        default: throw failure("Invalid UTF-8")
        }
        guard secondRange.contains(byte(offset + 1)) else { throw failure("Invalid UTF-8") }
        for index in offset + 2..<offset + length where !(0x80...0xBF).contains(byte(index)) {
            throw failure("Invalid UTF-8")
        }
        return offset + length
    }
}

/// Text helpers shared by the parser and the reader.
enum PayloadText {
    static func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    /// The UTF-8 of an escaped string's content (already validated by ``PayloadParser``).
    static func unescape(_ raw: UnsafeRawBufferPointer) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(raw.count)
        var offset = 0
        func byte(_ index: Int) -> UInt8 { index < raw.count ? raw[index] : 0 }
        func unit(at index: Int) -> UInt32 {
            (index..<index + 4).reduce(0) { $0 << 4 | (hexValue(byte($1)) ?? 0) }
        }
        while offset < raw.count {
            let next = raw[offset]
            guard next == UInt8(ascii: "\\") else {
                output.append(next)
                offset += 1
                continue
            }
            let escape = byte(offset + 1)
            offset += 2
            switch escape {
            case UInt8(ascii: "b"): output.append(0x08)
            case UInt8(ascii: "f"): output.append(0x0C)
            case UInt8(ascii: "n"): output.append(0x0A)
            case UInt8(ascii: "r"): output.append(0x0D)
            case UInt8(ascii: "t"): output.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = unit(at: offset)
                offset += 4
                if (0xD800..<0xDC00).contains(scalar) {
                    let low = unit(at: offset + 2)
                    offset += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + ((low &- 0xDC00) & 0x3FF)
                }
                UTF8.encode(Unicode.Scalar(scalar) ?? "\u{FFFD}") { output.append($0) }
            default: output.append(escape)
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}

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

// MARK: - Which JSONDecoder to agree with

/// The Foundation `JSONDecoder` that ``PayloadDecoder`` must give the same answers as: where it
/// cannot show that it does, it throws, and the caller falls back to `JSONDecoder` itself.
///
/// The one place that knows Apple's older Foundation: ``current`` is the only `#available`
/// check, and tests run both cases on Linux.
enum JSONDecoderGeneration: Sendable, Hashable {
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
    static let current: JSONDecoderGeneration = {
        if #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) { return .swiftFoundation }
        return .serialization
    }()

    /// Whether the fast path's `Float` and `Double` (parsed once from the text, correctly
    /// rounded) are known to equal this decoder's.
    var readsFloatingPointAlike: Bool { self == .swiftFoundation }
}
