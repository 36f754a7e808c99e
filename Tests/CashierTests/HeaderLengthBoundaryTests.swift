import CashierEntryFormat
import Foundation
import Testing

@testable import Cashier

/// Every length in a header is checked in fixed-width types before it becomes an `Int`, so a
/// damaged field is an error, never a trap, also where `Int` is 32 bits (watchOS on arm64_32).
@Suite struct HeaderLengthBoundaryTests {
    /// A sound entry file: header and a 3-byte payload.
    private func entryBytes() -> [UInt8] {
        let payload: [UInt8] = [1, 2, 3]
        let header = EntryHeader(
            key: "k", typeName: "Swift.String", format: .json, createdAt: 0, validatedAt: 0, lifespan: .never,
            schemaVersion: 1, appVersion: "1", isLocked: false, payloadLength: payload.count)
        return payload.withUnsafeBytes { header.encode(payload: $0) } + payload
    }

    private func decode(_ bytes: [UInt8]) -> Result<EntryHeader, EntryFormatError> {
        bytes.withUnsafeBytes { raw in
            Result { () throws(EntryFormatError) in try EntryHeader.decodePrefix(raw, fileLength: raw.count) }
        }
    }

    private func patched(_ offset: Int, _ value: UInt32) -> [UInt8] {
        var bytes = entryBytes()
        withUnsafeBytes(of: value.littleEndian) { for (i, byte) in $0.enumerated() { bytes[offset + i] = byte } }
        return bytes
    }

    static let lengths: [UInt32] = [UInt32(Int32.max), UInt32(Int32.max) + 1, UInt32.max, UInt32.max - 79]

    @Test(arguments: [8, 56, 60, 64], lengths)
    func aLengthFieldAtTheIntegerBoundariesIsABadField(offset: Int, length: UInt32) {
        guard case .failure(let error) = decode(patched(offset, length)) else {
            Issue.record("decoded a header whose length field at \(offset) is \(length)")
            return
        }
        #expect(error == .badField("header length"))
    }

    /// Field values whose sum wraps a 32-bit integer back to the stored header length.
    @Test func lengthsWhoseSumWrapsAroundAreABadField() {
        var bytes = patched(56, UInt32.max) // key length
        withUnsafeBytes(of: UInt32(2).littleEndian) { for (i, byte) in $0.enumerated() { bytes[60 + i] = byte } }
        #expect(throws: Never.self) { _ = decode(bytes) }
        guard case .failure(let error) = decode(bytes) else {
            Issue.record("decoded")
            return
        }
        #expect(error == .badField("header length"))
    }

    @Test(arguments: [UInt64(Int32.max), UInt64(UInt32.max), UInt64(Int64.max), UInt64.max, UInt64.max - 80])
    func aPayloadLengthAtTheIntegerBoundariesIsTooLarge(length: UInt64) {
        var bytes = entryBytes()
        withUnsafeBytes(of: length.littleEndian) { for (i, byte) in $0.enumerated() { bytes[48 + i] = byte } }
        guard case .failure(let error) = decode(bytes) else {
            Issue.record("decoded a payload length of \(length)")
            return
        }
        // All are over the 1 GiB an entry may hold: judged so before the file's length.
        if case .tooLarge = error {} else { Issue.record("\(error)") }
    }
}
