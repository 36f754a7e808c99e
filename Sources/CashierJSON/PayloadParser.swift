import Foundation

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
