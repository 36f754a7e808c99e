import CashierEntryFormat
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Properties of the entry-file encoder and decoder over many random entries.
///
/// Deterministic: the generator is seeded, so a failure names an entry that the
/// same seed reproduces.
@Suite("Entry header properties")
struct HeaderPropertyTests {
    /// A random entry: header and payload as they would be written.
    static func randomEntry(_ random: inout SplitMix64) -> (header: EntryHeader, payload: [UInt8]) {
        func string(maximumLength: Int) -> String {
            let alphabet: [Character] = ["a", "Z", "0", "/", ".", " ", "\0", "\n", "é", "ß", "🔑", "日", "\u{301}"]
            let length = Int(random.next() % UInt64(maximumLength + 1))
            return String((0..<length).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] })
        }
        func moment() -> Double { Double(random.next() % 4_000_000_000) + Double(random.next() % 1000) / 1000 }
        let lifespan: Lifespan =
            switch random.next() % 3 {
            case 0: .never
            case 1: .seconds(Double(random.next() % 1_000_000) / 8)
            default: .until(Date(timeIntervalSince1970: moment()))
            }
        let payload = (0..<Int(random.next() % 4097)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        let header = EntryHeader(
            key: string(maximumLength: 300), typeName: string(maximumLength: 60),
            format: PayloadFormat.allCases[Int(random.next() % 3)],
            createdAt: moment(), validatedAt: moment(), lifespan: lifespan,
            schemaVersion: random.next() % 2 == 0 ? nil : Int(Int64(bitPattern: random.next())),
            appVersion: random.next() % 2 == 0 ? nil : string(maximumLength: 20),
            isLocked: random.next() % 2 == 0, payloadLength: payload.count)
        return (header, payload)
    }

    static func file(_ header: EntryHeader, _ payload: [UInt8]) -> [UInt8] {
        payload.withUnsafeBytes { header.encode(payload: $0) } + payload
    }

    @Test("Any header round-trips through encode and decode, whole-file and prefix alike")
    func anyHeaderRoundTrips() throws {
        var random = SplitMix64(seed: 0xC0FFEE)
        for _ in 0..<2_000 {
            let (header, payload) = Self.randomEntry(&random)
            let file = Self.file(header, payload)
            try file.withUnsafeBytes { bytes in
                let (decoded, range) = try EntryHeader.decode(file: bytes)
                var expected = header
                expected.checksum = decoded.checksum
                #expect(decoded == expected)
                #expect(Array(bytes[range]) == payload)
                let prefix = try EntryHeader.decodePrefix(
                    UnsafeRawBufferPointer(rebasing: bytes[0..<header.length]), fileLength: file.count)
                #expect(prefix == decoded)
            }
        }
    }

    @Test("Changing any single byte of an entry file is detected")
    func everySingleByteChangeIsDetected() {
        var random = SplitMix64(seed: 7)
        var mutations = 0
        for _ in 0..<12 {
            let (header, payload) = Self.randomEntry(&random)
            let original = Self.file(header, payload)
            for position in original.indices {
                var damaged = original
                // Every position with one random non-zero change, and the first byte with all 255.
                let changes: [UInt8] =
                    position == 0 ? Array(1...255) : [UInt8(truncatingIfNeeded: random.next() % 255 + 1)]
                for change in changes {
                    damaged[position] = original[position] ^ change
                    mutations += 1
                    let accepted = damaged.withUnsafeBytes { try? EntryHeader.decode(file: $0) }
                    #expect(
                        accepted == nil, "byte \(position) ^ \(change) of a \(original.count)-byte entry went unnoticed"
                    )
                }
            }
        }
        #expect(mutations > 10_000)
    }

    @Test("Random multi-byte damage, truncation and extension are detected, or leave a self-consistent entry")
    func randomDamageIsDetectedOrConsistent() {
        var random = SplitMix64(seed: 99)
        for _ in 0..<3_000 {
            let (header, payload) = Self.randomEntry(&random)
            var file = Self.file(header, payload)
            switch random.next() % 3 {
            case 0:
                for _ in 0..<(1 + random.next() % 8) {
                    file[Int(random.next() % UInt64(file.count))] = UInt8(truncatingIfNeeded: random.next())
                }
            case 1: file.removeLast(1 + Int(random.next() % UInt64(file.count)))
            default: file += (0..<(1 + random.next() % 64)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            }
            file.withUnsafeBytes { bytes in
                guard let (decoded, range) = try? EntryHeader.decode(file: bytes) else { return }
                // Accepted (the bytes happened to be restored, e.g. overwritten with themselves):
                // then it must be exactly a sound entry whose checksum matches its contents.
                let recomputed = EntryHeader.checksum(
                    header: UnsafeRawBufferPointer(rebasing: bytes[0..<decoded.length]),
                    payload: UnsafeRawBufferPointer(rebasing: bytes[range]))
                #expect(decoded.checksum == recomputed)
                #expect(Array(bytes) == Self.file(header, payload), "damage was accepted as another entry")
            }
        }
    }
}
