import CashierTestSupport
import Foundation
import Testing

@testable import Cashier
@testable import CashierJSON

// MARK: - Models

private struct Address: Codable, Equatable {
    var street: String
    var city: String
    var zip: String?
}

private enum Color: String, Codable, Equatable { case red, green, blue }
private enum Level: Int, Codable, Equatable {
    case low = 1
    case high = 10
}

private enum Shape: Codable, Equatable {
    case circle(radius: Double)
    case rect(width: Int, height: Int)
    case labeled(String, Int)
    case point
}

private struct Person: Codable, Equatable {
    var name: String
    var age: Int
    var email: String?
    var nickname: String?
    var tags: [String]
    var address: Address
    var previous: [Address]
    var scores: [Double]
    var active: Bool
    var color: Color
    var level: Level?
    var shapes: [Shape]
}

private struct Integers: Codable, Equatable {
    var int: Int, int8: Int8, int16: Int16, int32: Int32, int64: Int64
    var uint: UInt, uint8: UInt8, uint16: UInt16, uint32: UInt32, uint64: UInt64

    static let min = Integers(
        int: .min, int8: .min, int16: .min, int32: .min, int64: .min, uint: .min, uint8: .min, uint16: .min,
        uint32: .min, uint64: .min)
    static let max = Integers(
        int: .max, int8: .max, int16: .max, int32: .max, int64: .max, uint: .max, uint8: .max, uint16: .max,
        uint32: .max, uint64: .max)
}

private struct Floats: Codable, Equatable {
    var doubles: [Double]
    var float: Float
    var floats: [Float]
}

private struct Empties: Codable, Equatable {
    struct Nothing: Codable, Equatable {}
    var text: String
    var list: [Int]
    var map: [String: Int]
    var nothing: Nothing
    var nested: [[String]]
}

private struct Maps: Codable, Equatable {
    var byName: [String: Int]
    var byNumber: [Int: String]
    var nested: [String: [String: Bool]]
}

private struct Optionals: Codable, Equatable {
    var present: Int?
    var absent: Int?
    var explicitNull: String?
    var list: [Int?]

    /// Writes `explicitNull` as `null` instead of leaving it out.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(present, forKey: .present)
        try container.encodeIfPresent(absent, forKey: .absent)
        try container.encode(explicitNull, forKey: .explicitNull)
        try container.encode(list, forKey: .list)
    }
}

/// A base class and subclass that share one object through `superDecoder()`/`superEncoder()`.
private class Animal: Codable, Equatable {
    var name: String
    init(name: String) { self.name = name }
    static func == (left: Animal, right: Animal) -> Bool { left.isEqual(to: right) }
    func isEqual(to other: Animal) -> Bool { type(of: self) == type(of: other) && name == other.name }
}

private final class Dog: Animal {
    enum CodingKeys: String, CodingKey { case breed, parent }
    var breed: String

    init(name: String, breed: String) {
        self.breed = breed
        super.init(name: name)
    }

    required init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        breed = try container.decode(String.self, forKey: .breed)
        try super.init(from: container.superDecoder())
    }

    override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(breed, forKey: .breed)
        try super.encode(to: container.superEncoder())
    }

    override func isEqual(to other: Animal) -> Bool {
        super.isEqual(to: other) && breed == (other as? Dog)?.breed
    }
}

/// Uses `superDecoder(forKey:)` and the unkeyed `superDecoder()`.
private final class Cat: Animal {
    enum CodingKeys: String, CodingKey { case lives, parent, friends }
    var lives: Int
    var friends: [Animal]

    init(name: String, lives: Int, friends: [Animal]) {
        self.lives = lives
        self.friends = friends
        super.init(name: name)
    }

    required init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        lives = try container.decode(Int.self, forKey: .lives)
        var list = try container.nestedUnkeyedContainer(forKey: .friends)
        var friends: [Animal] = []
        while !list.isAtEnd { friends.append(try Animal(from: list.superDecoder())) }
        self.friends = friends
        try super.init(from: container.superDecoder(forKey: .parent))
    }

    override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(lives, forKey: .lives)
        var list = container.nestedUnkeyedContainer(forKey: .friends)
        for friend in friends { try friend.encode(to: list.superEncoder()) }
        try super.encode(to: container.superEncoder(forKey: .parent))
    }

    override func isEqual(to other: Animal) -> Bool {
        guard let cat = other as? Cat else { return false }
        return super.isEqual(to: other) && lives == cat.lives && friends == cat.friends
    }
}

private struct WithDate: Codable, Equatable {
    var id: Int
    var when: Date
}
/// Reads each field leniently, as many apps do: a field that fails to decode becomes nil.
private struct Lenient: Codable, Equatable {
    var count: Int?
    var link: URL?
    init(count: Int?, link: URL?) { (self.count, self.link) = (count, link) }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        count = try? container.decodeIfPresent(Int.self, forKey: .count)
        link = try? container.decodeIfPresent(URL.self, forKey: .link)
    }
}
private struct WithData: Codable, Equatable {
    var id: Int
    var blob: Data
}
private struct WithURL: Codable, Equatable {
    var id: Int
    var link: URL?
}
private struct WithDecimal: Codable, Equatable {
    var id: Int
    var amounts: [Decimal]
}

/// Decodes `[[[…]]]` of any depth.
private indirect enum Nest: Decodable, Equatable {
    case list([Nest])
    init(from decoder: any Decoder) throws { self = .list(try [Nest](from: decoder)) }
}

/// Records what an unkeyed container reports while reading `[null, 1, null, "x"]`.
private struct UnkeyedProbe: Decodable, Equatable {
    var log: [String] = []

    init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        func note(_ event: String) {
            log.append("\(event)@\(container.currentIndex)/\(container.count ?? -1)/\(container.isAtEnd)")
        }
        note("start")
        note("nil=\(try container.decodeNil())")
        note("nil=\(try container.decodeNil())")
        note("int=\(try container.decode(Int.self))")
        note("opt=\(String(describing: try container.decodeIfPresent(Int.self)))")
        note("nil=\(try container.decodeNil())")
        note("str=\(try container.decode(String.self))")
    }
}

/// Calls `decodeIfPresent` past the end of `[1]`, where `JSONDecoder` returns nil but moves `currentIndex` to 2.
private struct PastEndProbe: Decodable {
    init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        _ = try container.decodeIfPresent(Int.self)
        _ = try container.decodeIfPresent(Int.self)
    }
}

/// Records `contains`, `decodeNil(forKey:)` and `decodeIfPresent` on `{"a": null, "b": 2}`.
private struct KeyedProbe: Decodable, Equatable {
    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.init(stringValue) }
        init?(intValue: Int) { nil }
    }

    var log: [String] = []

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        for name in ["a", "b", "c", "\u{212A}"] {
            // decodeNil throws for a missing key: ask only when the key is there, since a caught
            // error would give the whole fast decode up.
            let isNil = container.contains(Key(name)) ? try container.decodeNil(forKey: Key(name)) : nil
            let value = try container.decodeIfPresent(Int.self, forKey: Key(name))
            log.append(
                "\(name): contains=\(container.contains(Key(name))) nil=\(String(describing: isNil)) value=\(String(describing: value))"
            )
        }
        log.append("keys=\(container.allKeys.map(\.stringValue).sorted())")
        log.append("path=\(container.codingPath.count) user=\(decoder.userInfo.count)")
    }
}

// MARK: - Samples

private let person = Person(
    name: "Ada \"Countess\" Lovelace", age: 36, email: "ada@example.org", nickname: nil,
    tags: ["math", "poetry/science", "日本", "🎉", "é"],
    address: Address(street: "12 St James's Square", city: "London", zip: nil),
    previous: [Address(street: "a\\b", city: "c\td", zip: "e\nf")],
    scores: [0.1, 1e300, -0.0, Double.leastNonzeroMagnitude, 12345.678], active: true, color: .green,
    level: .high,
    shapes: [.circle(radius: 2.5), .rect(width: 3, height: -4), .labeled("x", 1), .point]
)

private let everyEscape =
    "quote\" backslash\\ slash/ \u{8} \u{C} \n \r \t nul\u{0} unit\u{1F} del\u{7F} é 日本 🎉 \u{FFFF} \u{10FFFF}"

private let floats = Floats(
    doubles: [
        0.1, 1e300, -0.0, Double.leastNonzeroMagnitude, 12345.678, -1.5, .greatestFiniteMagnitude,
        .leastNormalMagnitude, 1, 0, 1.25e20,
    ],
    float: 3.14159, floats: [.greatestFiniteMagnitude, .leastNonzeroMagnitude, -0.0, 0.1, 16_777_216, 1e-30]
)

private let maps = Maps(
    byName: ["one": 1, "two": 2, "日本": 3, "a/b": 4, "": 5],
    byNumber: [1: "one", -2: "minus two", 0: "zero", 1_000_000: "million"],
    nested: ["x": ["y": true, "z": false], "empty": [:]]
)

private func encoded<V: Encodable>(_ value: V) throws -> Data { try JSONEncoder().encode(value) }

private func bytes(_ text: String) -> Data { Data(text.utf8) }

/// Decodes with both decoders and expects equal values.
private func expectSameAsJSONDecoder<V: Decodable & Equatable>(
    _ type: V.Type, _ data: Data, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let expected = try JSONDecoder().decode(V.self, from: data)
    let fast = try PayloadDecoder.decode(V.self, from: data)
    #expect(fast == expected, sourceLocation: sourceLocation)
}

private func expectRoundTrip<V: Codable & Equatable>(_ value: V, sourceLocation: SourceLocation = #_sourceLocation)
    throws
{
    let data = try encoded(value)
    try expectSameAsJSONDecoder(V.self, data, sourceLocation: sourceLocation)
    #expect(try PayloadDecoder.decode(V.self, from: data) == value, sourceLocation: sourceLocation)
}

private func expectThrows<V: Decodable>(_ type: V.Type, _ data: Data, sourceLocation: SourceLocation = #_sourceLocation)
{
    #expect(throws: (any Error).self, sourceLocation: sourceLocation) { try PayloadDecoder.decode(V.self, from: data) }
}

// MARK: - Tests

@Suite struct PayloadDecoderTests {
    @Test("Nested structs, arrays, optionals, raw-value and associated-value enums equal JSONDecoder's")
    func roundTripsARepresentativeStruct() throws {
        try expectRoundTrip(person)
        try expectRoundTrip([person, person])
        try expectRoundTrip(Optional(person))
    }

    @Test("Every integer width at its minimum and maximum equals JSONDecoder's")
    func roundTripsIntegerExtremes() throws {
        try expectRoundTrip(Integers.min)
        try expectRoundTrip(Integers.max)
        try expectRoundTrip([Int64.min, -1, 0, 1, Int64.max])
        try expectRoundTrip([UInt64.max, 0])
        try expectSameAsJSONDecoder(Int.self, bytes("-0"))
    }

    @Test("Doubles and Floats decode bit-for-bit as JSONDecoder's, -0.0 keeping its sign")
    func roundTripsFloatingPoint() throws {
        let data = try encoded(floats)
        let fast = try PayloadDecoder.decode(Floats.self, from: data)
        let expected = try JSONDecoder().decode(Floats.self, from: data)
        #expect(fast.doubles.map(\.bitPattern) == expected.doubles.map(\.bitPattern))
        #expect(fast.floats.map(\.bitPattern) == expected.floats.map(\.bitPattern))
        #expect(fast.float.bitPattern == expected.float.bitPattern)
        #expect(fast.doubles == floats.doubles)
        // Float straight from the text, not through Double (which would round twice to 16777216).
        try expectSameAsJSONDecoder(Float.self, bytes("16777217.000000000000001"))
        try expectSameAsJSONDecoder([Double].self, bytes("[1E5, 2e+2, 3.25e-2, -0, 0e0, -0.0E-00, 1]"))
    }

    @Test("Bools, every escape, non-ASCII and JSONEncoder's \\/ decode as JSONDecoder's")
    func roundTripsTextAndBools() throws {
        try expectRoundTrip([true, false])
        try expectRoundTrip(everyEscape)
        try expectRoundTrip([everyEscape: everyEscape])
        #expect(try encoded("a/b") == bytes(#""a\/b""#))
        try expectSameAsJSONDecoder(String.self, bytes(#" "\u00e9\u65E5\ud83c\udf89\/\"\\\b\f\n\r\t\u0000" "#))
        try expectSameAsJSONDecoder(String.self, bytes("\"\u{7F}é\""))
    }

    @Test("Empty strings, arrays and objects decode")
    func roundTripsEmpties() throws {
        try expectRoundTrip(Empties(text: "", list: [], map: [:], nothing: .init(), nested: [[], [""]]))
        try expectRoundTrip([String]())
        try expectRoundTrip([String: Int]())
    }

    @Test("[String: Int], [Int: String] and nested dictionaries decode through the keyed container")
    func roundTripsDictionaries() throws {
        try expectRoundTrip(maps)
        try expectRoundTrip(Dictionary(uniqueKeysWithValues: (0..<200).map { ("key\($0)", $0) }))
    }

    @Test("Optionals present, absent and explicitly null, in objects and arrays")
    func roundTripsOptionals() throws {
        let value = Optionals(present: 1, absent: nil, explicitNull: nil, list: [1, nil, 3, nil])
        #expect(String(decoding: try encoded(value), as: UTF8.self).contains(#""explicitNull":null"#))
        try expectRoundTrip(value)
        try expectRoundTrip([Int?.none, 2])
        try expectSameAsJSONDecoder(Int?.self, bytes("null"))
    }

    @Test("A class hierarchy through superDecoder(), superDecoder(forKey:) and the unkeyed superDecoder()")
    func roundTripsClassHierarchy() throws {
        let dog = Dog(name: "Rex", breed: "collie")
        let data = try encoded(dog)
        let expected = try JSONDecoder().decode(Dog.self, from: data)
        #expect(try PayloadDecoder.decode(Dog.self, from: data) == expected)
        #expect(expected == dog)
        let cat = Cat(name: "Tom", lives: 9, friends: [Animal(name: "a"), Animal(name: "b")])
        let catData = try encoded(cat)
        #expect(
            try PayloadDecoder.decode(Cat.self, from: catData) == (try JSONDecoder().decode(Cat.self, from: catData)))
        #expect(try PayloadDecoder.decode(Cat.self, from: catData) == cat)
    }

    @Test(
        "Unkeyed container: count, isAtEnd, currentIndex; decodeNil and decodeIfPresent advance only past null; decodeIfPresent at the end throws"
    )
    func unkeyedContainerSemantics() throws {
        let data = bytes(#"[null, 1, null, "x"]"#)
        let fast = try PayloadDecoder.decode(UnkeyedProbe.self, from: data)
        #expect(fast.log == (try JSONDecoder().decode(UnkeyedProbe.self, from: data)).log)
        #expect(fast.log.first == "start@0/4/false")
        #expect(fast.log.last == "str=x@4/4/true")
        expectThrows(PastEndProbe.self, bytes("[1]"))
    }

    @Test("Keyed container: contains and decodeNil for null, missing keys, allKeys, canonically equivalent keys")
    func keyedContainerSemantics() throws {
        let data = bytes(#"{"a": null, "b": 2, "K": 3}"#)
        let fast = try PayloadDecoder.decode(KeyedProbe.self, from: data)
        #expect(fast == (try JSONDecoder().decode(KeyedProbe.self, from: data)))
        #expect(fast.log.contains("c: contains=false nil=nil value=nil"))
        // U+212A KELVIN SIGN is canonically "K": Swift String equality (and JSONDecoder) match it.
        #expect(fast.log.contains("\u{212A}: contains=true nil=Optional(false) value=Optional(3)"))
    }

    @Test("Missing non-optional keys throw keyNotFound; type mismatches throw")
    func missingKeysAndMismatchesThrow() {
        #expect {
            try PayloadDecoder.decode(Address.self, from: bytes(#"{"street": "x"}"#))
        } throws: { error in
            guard case DecodingError.keyNotFound(let key, _) = error else { return false }
            return key.stringValue == "city"
        }
        expectThrows(Address.self, bytes(#"{"street": 1, "city": "c"}"#))
        expectThrows(Bool.self, bytes("1"))
        expectThrows(Int.self, bytes("true"))
        expectThrows(String.self, bytes("null"))
        expectThrows([Int].self, bytes(#"{"a": 1}"#))
    }

    @Test("Errors carry the coding path down to the failing value")
    func errorsCarryCodingPath() {
        #expect {
            try PayloadDecoder.decode([String: [Int]].self, from: bytes(#"{"k": [1, "two"]}"#))
        } throws: { error in
            guard case DecodingError.typeMismatch(_, let context) = error else { return false }
            return context.codingPath.map(\.stringValue) == ["k", "Index 1"]
        }
    }

    @Test("Every proper prefix of a payload throws")
    func truncatedPayloadsThrow() throws {
        let data = try encoded(person)
        for length in 0..<data.count {
            expectThrows(Person.self, data.prefix(length))
        }
    }

    @Test(
        "Invalid UTF-8 in strings throws",
        arguments: [
            [0xFF], [0xC0, 0xAF], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],
            [0xC3], [0xE6, 0x97], [0xF0, 0x9F, 0x8E], [0x80], [0xF8, 0x88, 0x80, 0x80, 0x80],
        ] as [[UInt8]])
    func invalidUTF8Throws(sequence: [UInt8]) {
        expectThrows(String.self, Data([0x22] + sequence + [0x22]))
        expectThrows([String: Int].self, Data([0x7B, 0x22] + sequence + [0x22, 0x3A, 0x31, 0x7D]))
    }

    @Test(
        "Lone, reversed or malformed surrogates and bad escapes throw",
        arguments: [
            #""\ud800""#, #""\udc00""#, #""\ud800\u0041""#, #""\udc00\ud800""#, #""\ud800\""#,
            #""\x""#, #""\u12""#, #""\u12G4""#, #""\"#, "\"tab\there\"", "\"unterminated",
        ])
    func badEscapesThrow(text: String) {
        expectThrows(String.self, bytes(text))
    }

    @Test(
        "Integers: leading zeros, fractions, exponents, overflow and signs the type cannot hold throw",
        arguments: [
            ("01", "Int"), ("-01", "Int"), ("00", "Int"), ("1.5", "Int"), ("1.0", "Int"), ("1e2", "Int"),
            ("300", "UInt8"), ("-1", "UInt"), ("-0", "UInt"), ("128", "Int8"), ("-129", "Int8"),
            ("9223372036854775808", "Int"), ("18446744073709551616", "UInt64"), ("+1", "Int"), ("-", "Int"),
            ("1.", "Double"), (".5", "Double"), ("1e", "Double"), ("1e400", "Double"), ("1e-400", "Double"),
            ("1e39", "Float"), ("1e-50", "Float"), ("0e1", "Double"), ("0e+1", "Double"), ("NaN", "Double"),
            ("\"1\"", "Int"),
        ])
    func badNumbersThrow(text: String, type: String) {
        let data = bytes(text)
        switch type {
        case "Int": expectThrows(Int.self, data)
        case "UInt": expectThrows(UInt.self, data)
        case "UInt8": expectThrows(UInt8.self, data)
        case "Int8": expectThrows(Int8.self, data)
        case "UInt64": expectThrows(UInt64.self, data)
        case "Float": expectThrows(Float.self, data)
        default: expectThrows(Double.self, data)
        }
    }

    @Test(
        "Trailing garbage, empty input, BOMs and bad literals throw",
        arguments: [
            "1 x", "{}{}", "[1]]", "[1,]", "{\"a\":1,}", "", "   ", "\u{FEFF}1", "tru", "nul", "True", "[1 2]",
            "{\"a\" 1}", "{1: 2}", "[", "{", "\"a\" \"b\"",
        ])
    func malformedDocumentsThrow(text: String) {
        expectThrows([Int].self, bytes(text))
        expectThrows(Int.self, bytes(text))
    }

    @Test("Nesting 512 deep parses; 513 and 600 deep throw without overflowing the stack")
    func nestingLimit() throws {
        func nested(_ depth: Int) -> Data { Data(repeating: 0x5B, count: depth) + Data(repeating: 0x5D, count: depth) }
        try nested(512).withUnsafeBytes {
            var parser = PayloadParser($0)
            try parser.parse()
        }
        #expect(throws: (any Error).self) {
            try nested(513).withUnsafeBytes {
                var parser = PayloadParser($0)
                try parser.parse()
            }
        }
        expectThrows(Nest.self, nested(600))
        expectThrows(Nest.self, Data(repeating: 0x5B, count: 100_000))
        try expectSameAsJSONDecoder(Nest.self, nested(20))
    }

    @Test("Data, URL and Decimal throw wherever they appear, leaving them to JSONDecoder, and say so")
    func specialTypesThrow() throws {
        expectThrows(WithData.self, try encoded(WithData(id: 1, blob: Data([1, 2, 3]))))
        expectThrows(WithURL.self, try encoded(WithURL(id: 1, link: URL(string: "https://example.org/a"))))
        expectThrows(WithDecimal.self, try encoded(WithDecimal(id: 1, amounts: [Decimal(string: "1.25")!])))
        expectThrows([String: URL].self, try encoded(["a": URL(string: "https://example.org")!]))
        var metSpecialType = false
        let data = try encoded(WithData(id: 1, blob: Data([1])))
        _ = data.withUnsafeBytes {
            try? PayloadDecoder.decode(WithData.self, from: $0, metSpecialType: &metSpecialType)
        }
        #expect(metSpecialType)
        // An absent optional URL never reaches the URL decoder.
        try expectRoundTrip(WithURL(id: 2, link: nil))
    }

    @Test("Dates decode as JSONDecoder's default strategy does: Date(from:), a Double")
    func datesMatchTheDefaultStrategy() throws {
        try expectRoundTrip(WithDate(id: 1, when: Date(timeIntervalSince1970: 12)))
        try expectRoundTrip(WithDate(id: 2, when: Date(timeIntervalSinceReferenceDate: -1.5e9 + 0.123456789)))
        try expectRoundTrip([Date?.none, Date(timeIntervalSince1970: 1)])
    }

    @Test(
        "An error caught inside init(from:) gives the whole decode up, so a try? over a field cannot hide a difference")
    func caughtErrorsGiveTheDecodeUp() throws {
        // JSONDecoder reads 1.0 as the Int 1; the fast path throws on it, and the try? below would
        // turn that into nil: a different value, unless the decode is given up.
        let data = bytes(#"{"count": 1.0, "link": "https://example.org"}"#)
        #expect(
            try JSONDecoder().decode(Lenient.self, from: data)
                == Lenient(count: 1, link: URL(string: "https://example.org")))
        expectThrows(Lenient.self, data)
        // A key that is simply absent throws nothing: decodeIfPresent is not a failure.
        try expectSameAsJSONDecoder(Lenient.self, bytes(#"{}"#))
    }

    @Test(
        "ValueCoding reads what PayloadDecoder gives up on with JSONDecoder: lenient inits, 1.0 for an Int, Data fields"
    )
    func valueCodingFallsBackToJSONDecoder() throws {
        let lenient = bytes(#"{"count": 1.0, "link": "https://example.org"}"#)
        #expect(
            try ValueCoding.decode(Lenient.self, from: lenient, format: .json)
                == Lenient(count: 1, link: URL(string: "https://example.org")))
        let withData = WithData(id: 3, blob: Data([1, 2, 3]))
        // The second read goes to JSONDecoder directly (the type is remembered); both read the same.
        for _ in 0..<2 {
            #expect(try ValueCoding.decode(WithData.self, from: encoded(withData), format: .json) == withData)
        }
        #expect(throws: (any Error).self) { try ValueCoding.decode(WithData.self, from: bytes("{"), format: .json) }
    }

    @Test(
        "Duplicate keys (also canonically equivalent ones) and non-canonical integer keys throw",
        arguments: [
            #"{"a": 1, "a": 2}"#, #"{"\u00e9": 1, "e\u0301": 2}"#, #"{"a": 1, "\u0061": 2}"#, #"{"01": 1}"#,
            #"{"+1": 1}"#, #"{"-0": 1}"#,
        ])
    func ambiguousKeysThrow(text: String) {
        expectThrows([String: Int].self, bytes(text))
        expectThrows([Int: Int].self, bytes(text))
    }

    @Test("Duplicate keys throw in large objects too")
    func duplicateKeysInLargeObjectsThrow() {
        let members = (0..<40).map { "\"k\($0)\": \($0)" } + ["\"k7\": 0"]
        expectThrows([String: Int].self, bytes("{" + members.joined(separator: ",") + "}"))
    }

    /// Seeded (`SplitMix64` from CashierTestSupport), so every run mutates the same way.
    @Test("2,000 seeded random mutations: whenever PayloadDecoder succeeds, JSONDecoder succeeds with an equal value")
    func randomMutationsNeverDisagree() throws {
        var random = SplitMix64(seed: 0xCA5B_1E12)
        var successes = 0
        successes += try mutate(person, rounds: 500, &random)
        successes += try mutate(Integers.max, rounds: 300, &random)
        successes += try mutate(floats, rounds: 300, &random)
        successes += try mutate(maps, rounds: 300, &random)
        successes += try mutate([everyEscape, "日本🎉"], rounds: 300, &random)
        successes += try mutate(
            Optionals(present: 1, absent: nil, explicitNull: nil, list: [nil, 2]), rounds: 300, &random)
        #expect(successes > 50, "mutations should sometimes stay decodable")
    }

    /// Mutates `value`'s payload `rounds` times; returns how many mutants PayloadDecoder accepted.
    private func mutate<V: Codable & Equatable>(_ value: V, rounds: Int, _ random: inout SplitMix64) throws -> Int {
        let original = [UInt8](try encoded(value))
        let alphabet =
            Array(#"{}[],:"\ 0123456789-+.eEtrufalsn/ubfnrt"#.utf8) + [0x00, 0x1F, 0x7F, 0x80, 0xC3, 0xA9, 0xED, 0xFF]
        var successes = 0
        for _ in 0..<rounds {
            var bytes = original
            for _ in 0...Int.random(in: 0...2, using: &random) {
                let position = Int.random(in: 0...bytes.count, using: &random)
                let byte = alphabet.randomElement(using: &random)!
                switch Int.random(in: 0..<5, using: &random) {
                case 0 where position < bytes.count: bytes[position] = byte
                case 1: bytes.insert(byte, at: position)
                case 2 where position < bytes.count: bytes.remove(at: position)
                case 3 where position < bytes.count: bytes[position] ^= 1 << UInt8.random(in: 0..<8, using: &random)
                default:
                    bytes.removeSubrange(position..<min(bytes.count, position + Int.random(in: 1...4, using: &random)))
                }
            }
            let data = Data(bytes)
            guard let fast = try? PayloadDecoder.decode(V.self, from: data) else { continue }
            successes += 1
            let slow = try? JSONDecoder().decode(V.self, from: data)
            #expect(slow == fast, "mutant \(String(decoding: bytes, as: UTF8.self))")
        }
        return successes
    }
}
