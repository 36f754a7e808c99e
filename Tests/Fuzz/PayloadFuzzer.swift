// libFuzzer entry point over PayloadDecoder, the fast path of JSON payload decoding,
// checked against JSONDecoder. Built by .ci/fuzz.sh against the CashierJSON target (compiled
// whole, with the fuzzer's instrumentation); nothing here is part of the package's targets.
//
// It traps (and libFuzzer reports the input) when the fast path breaks a promise:
// - PayloadDecoder never traps, whatever the bytes (the sanitizer and libFuzzer catch
//   crashes, overflows and runaway recursion);
// - whatever it accepts, JSONDecoder accepts too and decodes to an equal value, for
//   each of a few shapes of value (so Cashier's fallback to JSONDecoder is the only
//   behaviour a user can see).
import CashierJSON
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPayload(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    compare(Sample.self, bytes)
    compare([Sample].self, bytes)
    compare([String: Double].self, bytes)
    compare([Int: [Int8]].self, bytes)
    compare(String.self, bytes)
    compare([UInt64?].self, bytes)
    compare(Shape.self, bytes)
    return 0
}

private func compare<V: Decodable & Equatable>(_ type: V.Type, _ bytes: UnsafeRawBufferPointer) {
    guard let fast = try? PayloadDecoder.decode(type, from: bytes) else { return }
    let slow: V
    do {
        slow = try JSONDecoder().decode(type, from: Data(bytes))
    } catch {
        fatalError("PayloadDecoder accepted what JSONDecoder rejects as \(type): \(error)")
    }
    guard fast == slow else { fatalError("PayloadDecoder and JSONDecoder disagree as \(type): \(fast) vs \(slow)") }
}

/// Most of what synthesized Codable asks of a decoder: every scalar kind, optionals,
/// nesting, arrays, dictionaries.
struct Sample: Codable, Equatable {
    var id: Int
    var small: Int8?
    var unsigned: UInt32
    var score: Double
    var ratio: Float?
    var flag: Bool
    var name: String
    var tags: [String]
    var child: Child?
    var table: [String: Int]?
    var shape: Shape?

    struct Child: Codable, Equatable {
        var note: String
        var values: [Double]
    }
}

/// An enum with associated values: keyed containers nested in keyed containers.
enum Shape: Codable, Equatable {
    case point
    case circle(radius: Double)
    case polygon([Int16], closed: Bool)
}
