import CashierInternals

/// The header at the start of every entry file: format version 2, or 1.
///
/// All integers are little-endian; timestamps are `Float64` seconds since
/// 1970-01-01 UTC; strings are UTF-8 without terminator.
///
/// ```
/// offset size field
///      0    4 magic "CSHR" (43 53 48 52)
///      4    2 format version (2; 1 is read too)
///      6    2 flags: bit 0 = locked; other bits are written 0 and ignored
///      8    4 header length H: 80 + key + type name + app version lengths
///     12    1 payload format: 0 raw bytes, 1 JSON, 2 binary property list
///     13    1 lifespan kind: 0 never, 1 seconds after validation, 2 until a date,
///             3 seconds after the last use (the file's access time; see below)
///     14    1 1 if a schema version is present, else 0
///     15    1 1 if an app version is present, else 0
///     16    8 created at (Float64)
///     24    8 validated at (Float64)
///     32    8 lifespan value: seconds (kinds 1 and 3) or a date (kind 2); 0 for never
///     40    8 schema version (Int64; 0 when absent)
///     48    8 payload length P (UInt64)
///     56    4 key length (UInt32)
///     60    4 type name length (UInt32)
///     64    4 app version length (UInt32; 0 when absent)
///     68    4 reserved, 0
///     72    8 checksum (UInt64), see below
///     80    … key, then type name, then app version
///      H    P payload
/// ```
///
/// The file is exactly `H + P` bytes long. The checksum chains a 64-bit hash
/// over three ranges: `a = hash(bytes[0..<72], seed: 0)`,
/// `b = hash(bytes[80..<H], seed: a)`, `checksum = hash(payload, seed: b)`.
/// The format version names the hash: XXH64 in version 1, XXH3-64 (default secret,
/// ``XXH3``) in version 2; the two versions differ in nothing else. XXH3 hashes a
/// large payload about twice as fast (``XXH3``; Benchmarks/ChecksumThroughput).
/// Writers write version 2 (``encode(payload:)``); readers accept both.
///
/// The last use of kind 3 is not in the header (reads would have to rewrite it): it is
/// the later of "validated at" and the file's access time, which Cashier sets itself
/// (see `DiskTier+Recency.swift`). Builds before kind 3 existed read it as a bad field:
/// such an entry is a `.corrupt` miss there, and removed.
package struct EntryHeader: Sendable, Hashable {
    package static let magic: [UInt8] = [0x43, 0x53, 0x48, 0x52]
    /// The version ``encode(payload:)`` writes.
    package static let formatVersion: UInt16 = 2
    /// The versions a read accepts: 1 (XXH64) and 2 (XXH3-64).
    package static let readableVersions: ClosedRange<UInt16> = 1...2
    package static let fixedLength = 80
    /// Headers longer than this are taken as damage rather than read.
    package static let maximumLength = 1 << 24
    /// The largest entry file, header and payload together, that Cashier writes or reads: 1 GiB.
    ///
    /// A write refuses a larger value (the cache's `checkWritable()`), and a read takes a
    /// larger file, or a header that claims more, as damage before allocating anything for
    /// it: no file decides an allocation past this bound. It fits `Int` where `Int` is 32
    /// bits (watchOS on arm64_32).
    package static let maximumEntryLength = 1 << 30
    package static let checksumOffset = 72

    package var key: String
    package var typeName: String
    package var format: PayloadFormat
    package var createdAt: Double
    package var validatedAt: Double
    /// The lifespan as stored; the cache reads it as its `Lifespan` (`EntryHeader.lifespan`).
    package var storedLifespan: StoredLifespan
    package var schemaVersion: Int?
    package var appVersion: String?
    package var isLocked: Bool
    package var payloadLength: Int
    /// The checksum read from the file, or computed by ``encode(payload:)``.
    package var checksum: UInt64 = 0

    package init(
        key: String, typeName: String, format: PayloadFormat, createdAt: Double, validatedAt: Double,
        storedLifespan: StoredLifespan, schemaVersion: Int?, appVersion: String?, isLocked: Bool, payloadLength: Int
    ) {
        self.key = key
        self.typeName = typeName
        self.format = format
        self.createdAt = createdAt
        self.validatedAt = validatedAt
        self.storedLifespan = storedLifespan
        self.schemaVersion = schemaVersion
        self.appVersion = appVersion
        self.isLocked = isLocked
        self.payloadLength = payloadLength
    }

    /// The header's length in bytes, variable part included.
    package var length: Int {
        Self.fixedLength + key.utf8.count + typeName.utf8.count + (appVersion?.utf8.count ?? 0)
    }

    /// The header's bytes, with the checksum computed over them and `payload`: always
    /// ``formatVersion``, whichever version the header was read from (a rewrite of a
    /// version-1 entry's header writes a version-2 entry).
    package func encode(payload: UnsafeRawBufferPointer) -> [UInt8] {
        precondition(payload.count == payloadLength, "payload length does not match the header")
        let length = self.length
        var bytes = [UInt8](repeating: 0, count: length)
        bytes.withUnsafeMutableBytes { out in
            for (index, byte) in Self.magic.enumerated() { out[index] = byte }
            out.storeBytes(of: Self.formatVersion.littleEndian, toByteOffset: 4, as: UInt16.self)
            out.storeBytes(of: UInt16(isLocked ? 1 : 0).littleEndian, toByteOffset: 6, as: UInt16.self)
            out.storeBytes(of: UInt32(length).littleEndian, toByteOffset: 8, as: UInt32.self)
            out[12] = format.rawValue
            let (kind, value) = storedLifespan.encoded
            out[13] = kind
            out[14] = schemaVersion == nil ? 0 : 1
            out[15] = appVersion == nil ? 0 : 1
            out.storeBytes(of: createdAt.bitPattern.littleEndian, toByteOffset: 16, as: UInt64.self)
            out.storeBytes(of: validatedAt.bitPattern.littleEndian, toByteOffset: 24, as: UInt64.self)
            out.storeBytes(of: value.bitPattern.littleEndian, toByteOffset: 32, as: UInt64.self)
            out.storeBytes(of: Int64(schemaVersion ?? 0).littleEndian, toByteOffset: 40, as: Int64.self)
            out.storeBytes(of: UInt64(payloadLength).littleEndian, toByteOffset: 48, as: UInt64.self)
            var offset = Self.fixedLength
            for (index, string) in [key, typeName, appVersion ?? ""].enumerated() {
                let utf8 = Array(string.utf8)
                out.storeBytes(of: UInt32(utf8.count).littleEndian, toByteOffset: 56 + 4 * index, as: UInt32.self)
                utf8.withUnsafeBytes {
                    out.baseAddress!.advanced(by: offset).copyMemory(from: $0.baseAddress!, byteCount: $0.count)
                }
                offset += utf8.count
            }
            let sum = Self.checksum(header: UnsafeRawBufferPointer(out), payload: payload)
            out.storeBytes(of: sum.littleEndian, toByteOffset: Self.checksumOffset, as: UInt64.self)
        }
        return bytes
    }

    /// The checksum of a header (whose checksum field is skipped) and a payload, by the
    /// hash the header's format version names: XXH64 for version 1, XXH3-64 for any other
    /// (a read has refused versions other than 1 and 2 before it gets here). `header` holds
    /// at least the ``fixedLength`` fixed bytes.
    package static func checksum(header: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer) -> UInt64 {
        let version = UInt16(littleEndian: header.loadUnaligned(fromByteOffset: 4, as: UInt16.self))
        let fixed = UnsafeRawBufferPointer(rebasing: header[0..<checksumOffset])
        let strings = UnsafeRawBufferPointer(rebasing: header[fixedLength...])
        if version == 1 {
            return XXHash64.hash(payload, seed: XXHash64.hash(strings, seed: XXHash64.hash(fixed)))
        }
        return XXH3.hash(payload, seed: XXH3.hash(strings, seed: XXH3.hash(fixed)))
    }

    /// Reads a whole entry file: the header, and where its payload lies.
    ///
    /// Checks everything the format promises: magic, version, lengths, field
    /// values, UTF-8 strings, that the file is exactly header plus payload long,
    /// and the checksum. Never traps, whatever `file` holds.
    package static func decode(file: UnsafeRawBufferPointer) throws(EntryFormatError) -> (
        header: EntryHeader, payload: Range<Int>
    ) {
        let header = try decodePrefix(file, fileLength: file.count)
        try header.verifyChecksum(file: file)
        return (header, header.length..<file.count)
    }

    /// Checks this header's stored checksum against `file`, the whole entry file it was decoded from.
    package func verifyChecksum(file: UnsafeRawBufferPointer) throws(EntryFormatError) {
        let headerLength = length
        guard file.count == headerLength + payloadLength else {
            throw .lengthMismatch(expected: headerLength + payloadLength, actual: file.count)
        }
        let computed = Self.checksum(
            header: UnsafeRawBufferPointer(rebasing: file[0..<headerLength]),
            payload: UnsafeRawBufferPointer(rebasing: file[headerLength...]))
        guard checksum == computed else { throw .checksumMismatch }
    }

    /// Reads a header from the first bytes of a file of `fileLength` bytes, without the checksum.
    ///
    /// Used where the payload is not needed (listing, garbage collection), and by the
    /// reader before it allocates for the rest (EntryReader.swift). Throws
    /// ``EntryFormatError/needMoreBytes(_:)`` when `prefix` is shorter than the header, and
    /// only once the declared lengths are checked: the header at most ``maximumLength``,
    /// header and payload together equal to `fileLength` and at most ``maximumEntryLength``.
    package static func decodePrefix(_ prefix: UnsafeRawBufferPointer, fileLength: Int) throws(EntryFormatError)
        -> EntryHeader
    {
        // Judged before a byte is looked at: a 40 GB file is damage whatever it starts with.
        guard fileLength <= maximumEntryLength else { throw .tooLarge(fileLength) }
        guard prefix.count >= fixedLength else {
            throw fileLength < fixedLength ? .truncated : .needMoreBytes(fixedLength)
        }
        guard prefix[0] == magic[0], prefix[1] == magic[1], prefix[2] == magic[2], prefix[3] == magic[3] else {
            throw .notAnEntry
        }
        let version = UInt16(littleEndian: prefix.loadUnaligned(fromByteOffset: 4, as: UInt16.self))
        guard readableVersions.contains(version) else { throw .unsupportedVersion(Int(version)) }
        let flags = UInt16(littleEndian: prefix.loadUnaligned(fromByteOffset: 6, as: UInt16.self))
        // Lengths are compared in UInt64 before any becomes an Int: where Int is 32 bits
        // (watchOS on arm64_32) a damaged UInt32 field, or the sum of three, must not trap.
        let storedHeaderLength = UInt64(UInt32(littleEndian: prefix.loadUnaligned(fromByteOffset: 8, as: UInt32.self)))
        let storedKeyLength = UInt64(UInt32(littleEndian: prefix.loadUnaligned(fromByteOffset: 56, as: UInt32.self)))
        let storedTypeLength = UInt64(UInt32(littleEndian: prefix.loadUnaligned(fromByteOffset: 60, as: UInt32.self)))
        let storedAppLength = UInt64(UInt32(littleEndian: prefix.loadUnaligned(fromByteOffset: 64, as: UInt32.self)))
        guard storedHeaderLength <= UInt64(maximumLength),
            storedHeaderLength == UInt64(fixedLength) + storedKeyLength + storedTypeLength + storedAppLength
        else {
            throw .badField("header length")
        }
        // All four are now at most `maximumLength` (16 MiB): they fit any Int.
        let headerLength = Int(storedHeaderLength)
        let keyLength = Int(storedKeyLength)
        let typeLength = Int(storedTypeLength)
        let appLength = Int(storedAppLength)
        let payloadLength = UInt64(littleEndian: prefix.loadUnaligned(fromByteOffset: 48, as: UInt64.self))
        // The header is at most 16 MiB, so the sum cannot wrap; it may exceed `Int` (32 bits).
        guard payloadLength <= UInt64(maximumEntryLength) - storedHeaderLength else {
            throw .tooLarge(Int(clamping: storedHeaderLength + min(payloadLength, UInt64(Int64.max))))
        }
        guard storedHeaderLength + payloadLength == UInt64(max(fileLength, 0)) else {
            let expected = Int(storedHeaderLength + payloadLength)
            throw fileLength < headerLength ? .truncated : .lengthMismatch(expected: expected, actual: fileLength)
        }
        guard prefix.count >= headerLength else { throw .needMoreBytes(headerLength) }
        guard let format = PayloadFormat(rawValue: prefix[12]) else { throw .badField("payload format") }
        let hasSchema = prefix[14]
        let hasApp = prefix[15]
        guard hasSchema <= 1, hasApp <= 1, hasApp == 1 || appLength == 0 else { throw .badField("presence flags") }
        let createdAt = Double(
            bitPattern: UInt64(littleEndian: prefix.loadUnaligned(fromByteOffset: 16, as: UInt64.self)))
        let validatedAt = Double(
            bitPattern: UInt64(littleEndian: prefix.loadUnaligned(fromByteOffset: 24, as: UInt64.self)))
        let value = Double(bitPattern: UInt64(littleEndian: prefix.loadUnaligned(fromByteOffset: 32, as: UInt64.self)))
        guard createdAt.isFinite, validatedAt.isFinite, value.isFinite else { throw .badField("timestamps") }
        guard let lifespan = StoredLifespan(kind: prefix[13], value: value) else { throw .badField("lifespan") }
        let schema = Int64(littleEndian: prefix.loadUnaligned(fromByteOffset: 40, as: Int64.self))
        guard let schemaVersion = Int(exactly: schema) else { throw .badField("schema version") }
        var offset = fixedLength
        func string(_ count: Int) throws(EntryFormatError) -> String {
            defer { offset += count }
            let bytes = UnsafeRawBufferPointer(rebasing: prefix[offset..<offset + count])
            let string = String(decoding: bytes, as: UTF8.self)
            // ASCII (keys, type names and versions nearly always are) decodes as itself.
            if bytes.isASCII { return string }
            // `String(validating:as:)` needs macOS 15 / iOS 18: decode, then check nothing was repaired.
            guard string.utf8.count == count, string.utf8.elementsEqual(bytes) else { throw .badField("UTF-8 string") }
            return string
        }
        let key = try string(keyLength)
        let typeName = try string(typeLength)
        let appVersion = try string(appLength)
        var header = EntryHeader(
            key: key, typeName: typeName, format: format, createdAt: createdAt, validatedAt: validatedAt,
            storedLifespan: lifespan, schemaVersion: hasSchema == 1 ? schemaVersion : nil,
            appVersion: hasApp == 1 ? appVersion : nil, isLocked: flags & 1 == 1, payloadLength: Int(payloadLength))
        header.checksum = UInt64(littleEndian: prefix.loadUnaligned(fromByteOffset: checksumOffset, as: UInt64.self))
        return header
    }
}
