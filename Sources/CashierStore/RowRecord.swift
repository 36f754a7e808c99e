import Foundation

/// How a row holds its record: verbatim, or smaller, and always given back byte for byte.
///
/// A record laid out as an entry file is an 80-byte header, the key, the type name and the
/// payload (`EntryHeader`, OnDiskFormat). When the record's bytes right after the header are
/// exactly the key's UTF-8, the row leaves them out (its `key` column holds them) and, when
/// that is smaller, also the header's zero bytes:
///
/// - `location = 0`: the record, verbatim (any other record: shorter, another layout, another key).
/// - `location = 2` (``keyElided``): the record without the key's bytes.
/// - `location = 3` (``compact``): a 10-byte map of the header's nonzero bytes, those bytes,
///   then the record after the key. Before the map is made, the header is XORed with what
///   most headers hold (magic `CSHR`, version 2) and its "validated at" with its "created at"
///   (usually equal): those become zero bytes too. A typical header keeps about 30 bytes.
///
/// Lossless, and the checksum covers what a read trusts as before: the record a read returns
/// is byte for byte the one written, its key bytes are the `key` column, which the read has
/// just compared with the key asked for, and the caller checks the whole record's checksum.
/// Damage (a marker flipped, a map or blob cut short) gives a record whose checksum or
/// lengths fail: a `.corrupt` miss, never a trap.
enum RowRecord {
    /// `location` of a row whose record is stored without its key.
    static let keyElided: Int64 = 2
    /// `location` of a row whose record is stored without its key and its header's zero bytes.
    static let compact: Int64 = 3
    /// Where the key starts in a record laid out as an entry file: `EntryHeader.fixedLength`.
    static let keyOffset = 80
    private static let mapLength = keyOffset / 8
    /// XORed into a header before its zero bytes are left out: magic "CSHR", format version 2.
    private static let template: [UInt8] = [0x43, 0x53, 0x48, 0x52, 2] + [UInt8](repeating: 0, count: keyOffset - 5)
    /// "validated at" is XORed with "created at" (both Float64, offsets 24 and 16).
    private static let validated = 24..<32
    private static let created = 16

    /// The entry's location for a `location` column value; a damaged value reads as a file entry
    /// (its file is then missing: a miss).
    static func location(_ value: Int64) -> StoreLocation {
        value == keyElided || value == compact ? .row : StoreLocation(rawValue: value) ?? .file
    }

    /// What a row stores for `record` of `key`, with its `location`; nil to store it verbatim.
    static func stored(_ record: [UInt8], key: String) -> (location: Int64, bytes: [UInt8])? {
        guard let keyLength = elidableKeyLength(record, key: key) else { return nil }
        return record.withUnsafeBytes { bytes in
            let rest = UnsafeRawBufferPointer(rebasing: bytes[(keyOffset + keyLength)...])
            var header = [UInt8](bytes[0..<keyOffset])
            for index in validated { header[index] ^= bytes[index - validated.lowerBound + created] }
            var map = [UInt8](repeating: 0, count: mapLength)
            var kept: [UInt8] = []
            kept.reserveCapacity(keyOffset)
            for index in 0..<keyOffset {
                let byte = header[index] ^ template[index]
                guard byte != 0 else { continue }
                map[index >> 3] |= 1 << UInt8(index & 7)
                kept.append(byte)
            }
            guard mapLength + kept.count < keyOffset else {
                return (keyElided, [UInt8](bytes[0..<keyOffset]) + [UInt8](rest))
            }
            return (compact, map + kept + [UInt8](rest))
        }
    }

    /// The key's UTF-8 length when `record` holds it right after the header, else nil.
    static func elidableKeyLength(_ record: [UInt8], key: String) -> Int? {
        var key = key
        return key.withUTF8 { expected -> Int? in
            guard let keyBase = expected.baseAddress, !expected.isEmpty, record.count >= keyOffset + expected.count
            else { return nil }
            let same = record.withUnsafeBytes { bytes in
                memcmp(bytes.baseAddress! + keyOffset, keyBase, expected.count) == 0
            }
            return same ? expected.count : nil
        }
    }

    /// The record written, from a row's stored bytes, its `location` and the key the read
    /// compared with the row's. Stored bytes too short for what `location` says come back as
    /// they are (the caller finds them damaged).
    static func restoring(_ stored: UnsafeRawBufferPointer, location: Int64, key: String) -> [UInt8] {
        guard location == keyElided || location == compact, let base = stored.baseAddress else {
            return Array(stored)
        }
        var header = [UInt8](repeating: 0, count: keyOffset)
        var restStart = keyOffset
        if location == compact {
            guard stored.count >= mapLength else { return Array(stored) }
            var kept = 0
            for index in 0..<mapLength { kept += stored[index].nonzeroBitCount }
            guard stored.count >= mapLength + kept else { return Array(stored) }
            var next = mapLength
            for index in 0..<keyOffset {
                var byte = template[index]
                if stored[index >> 3] & (1 << UInt8(index & 7)) != 0 {
                    byte ^= stored[next]
                    next += 1
                }
                header[index] = byte
            }
            for index in validated { header[index] ^= header[index - validated.lowerBound + created] }
            restStart = next
        } else {
            guard stored.count >= keyOffset else { return Array(stored) }
            header.withUnsafeMutableBytes { $0.copyMemory(from: UnsafeRawBufferPointer(start: base, count: keyOffset)) }
        }
        var key = key
        return key.withUTF8 { keyBytes in
            let restCount = stored.count - restStart
            return [UInt8](unsafeUninitializedCapacity: keyOffset + keyBytes.count + restCount) { buffer, count in
                let out = UnsafeMutableRawPointer(buffer.baseAddress!)
                header.withUnsafeBytes { out.copyMemory(from: $0.baseAddress!, byteCount: keyOffset) }
                if let keyBase = keyBytes.baseAddress {
                    (out + keyOffset).copyMemory(from: keyBase, byteCount: keyBytes.count)
                }
                if restCount > 0 {
                    (out + keyOffset + keyBytes.count).copyMemory(from: base + restStart, byteCount: restCount)
                }
                count = keyOffset + keyBytes.count + restCount
            }
        }
    }
}
