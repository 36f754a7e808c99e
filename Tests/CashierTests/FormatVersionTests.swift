import CashierEntryFormat
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// The format version names the checksum: XXH64 in version 1, XXH3-64 in version 2.
/// Writers write version 2, readers take both, and neither hash stands in for the other.
@Suite struct FormatVersionTests {
    let folder = TemporaryFolder()

    /// A sound entry of the current version with a 64 KiB payload, its checksum spanning the stripe loop.
    static func entry() -> [UInt8] {
        let payload = (0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 5) }
        let header = EntryHeader(
            key: "photo", typeName: ValueCoding.typeName(of: Data.self), format: .raw, createdAt: 1_800_000_000,
            validatedAt: 1_800_000_000, lifespan: .never, schemaVersion: nil, appVersion: "1.0", isLocked: false,
            payloadLength: payload.count)
        return payload.withUnsafeBytes { header.encode(payload: $0) } + payload
    }

    /// `file` with its version field set to `version` and its checksum recomputed by `hash`'s chain.
    static func resealed(_ file: [UInt8], version: UInt16, hash: (UnsafeRawBufferPointer, UInt64) -> UInt64) -> [UInt8]
    {
        var file = file
        file.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: version.littleEndian, toByteOffset: 4, as: UInt16.self)
            let headerLength = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self)))
            let a = hash(UnsafeRawBufferPointer(rebasing: bytes[0..<72]), 0)
            let b = hash(UnsafeRawBufferPointer(rebasing: bytes[80..<headerLength]), a)
            let sum = hash(UnsafeRawBufferPointer(rebasing: bytes[headerLength...]), b)
            bytes.storeBytes(of: sum.littleEndian, toByteOffset: 72, as: UInt64.self)
        }
        return file
    }

    static func decodes(_ file: [UInt8]) -> Result<EntryHeader, EntryFormatError> {
        file.withUnsafeBytes { bytes in
            Result { () throws(EntryFormatError) in try EntryHeader.decode(file: bytes).header }
        }
    }

    @Test func writersWriteVersion2SealedWithXXH3() {
        let file = Self.entry()
        #expect(file[4] == 2 && file[5] == 0)
        #expect(file == Self.resealed(file, version: 2, hash: { XXH3.hash($0, seed: $1) }))
    }

    @Test func version1SealedWithXXH64StillReads() throws {
        let file = Self.resealed(Self.entry(), version: 1, hash: { XXHash64.hash($0, seed: $1) })
        #expect(try Self.decodes(file).get().key == "photo")
    }

    @Test func version2SealedWithXXH64IsDamage() {
        let file = Self.resealed(Self.entry(), version: 2, hash: { XXHash64.hash($0, seed: $1) })
        #expect(Self.decodes(file) == .failure(.checksumMismatch))
    }

    @Test func version1SealedWithXXH3IsDamage() {
        let file = Self.resealed(Self.entry(), version: 1, hash: { XXH3.hash($0, seed: $1) })
        #expect(Self.decodes(file) == .failure(.checksumMismatch))
    }

    @Test(arguments: [0, 3, 0x0102] as [UInt16])
    func otherVersionsAreUnsupported(version: UInt16) {
        for hash in [XXH3.hash(_:seed:), XXHash64.hash(_:seed:)] as [(UnsafeRawBufferPointer, UInt64) -> UInt64] {
            let file = Self.resealed(Self.entry(), version: version, hash: hash)
            #expect(Self.decodes(file) == .failure(.unsupportedVersion(Int(version))))
        }
    }

    /// A header rewrite (lock, unlock, refresh) of a version-1 entry writes it as version 2.
    @Test func rewritingAVersion1EntryWritesVersion2() throws {
        let key = CacheKey<Data>("photo")
        let file = Self.resealed(Self.entry(), version: 1, hash: { XXHash64.hash($0, seed: $1) })
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        let path = folder.path + "/" + DiskTier.fileName(for: key.name)
        try Data(file).write(to: URL(fileURLWithPath: path))
        var configuration = makeConfiguration(folder, storage: .files)
        configuration.now = { Date(timeIntervalSince1970: 1_800_000_100) }
        let cache = Cache(configuration)
        cache.lock(key)
        let rewritten = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(rewritten[4] == 2)
        #expect(cache.entry(for: key)?.isLocked == true)
        #expect(cache.value(for: key) == Data(file[(file.count - 65_536)...]))
    }

    /// The example of OnDiskFormat.md, byte for byte: the `greeting` entry as version 2.
    @Test func theDocumentedExampleIsWhatAWriterWrites() {
        let documented = """
            4353 4852 0200 0000 6700 0000 0101 0101 0000 0040 fc54 d941 0000 0040 fc54 d941
            0000 0000 0020 ac40 0200 0000 0000 0000 0400 0000 0000 0000 0800 0000 0c00 0000
            0300 0000 0000 0000 9aca eed2 d45d 083a 6772 6565 7469 6e67 5377 6966 742e 5374
            7269 6e67 312e 3022 6869 22
            """.filter(\.isHexDigit)
        let expected = stride(from: 0, to: documented.count, by: 2).map { offset in
            let start = documented.index(documented.startIndex, offsetBy: offset)
            return UInt8(documented[start..<documented.index(start, offsetBy: 2)], radix: 16)!
        }
        let payload = Array(#""hi""#.utf8)
        let header = EntryHeader(
            key: "greeting", typeName: "Swift.String", format: .json, createdAt: 1_700_000_000,
            validatedAt: 1_700_000_000, lifespan: .seconds(3600), schemaVersion: 2, appVersion: "1.0",
            isLocked: false, payloadLength: payload.count)
        #expect(payload.withUnsafeBytes { header.encode(payload: $0) } + payload == expected)
    }
}
