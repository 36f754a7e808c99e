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
    /// One allocation: the stored bytes are written in place.
    static func stored(_ record: [UInt8], key: String) -> (location: Int64, bytes: [UInt8])? {
        guard let keyLength = elidableKeyLength(record, key: key) else { return nil }
        return record.withUnsafeBytes { source -> (Int64, [UInt8]) in
            let base = source.baseAddress!
            let restStart = keyOffset + keyLength
            let restCount = source.count - restStart
            var location = compact
            let bytes = [UInt8](unsafeUninitializedCapacity: keyOffset + restCount) { out, count in
                // The map first (zeroed), then each nonzero byte as it comes.
                for index in 0..<mapLength { out[index] = 0 }
                var next = mapLength
                template.withUnsafeBytes { template in
                    for index in 0..<keyOffset {
                        let against =
                            validated.contains(index)
                            ? source[index &- validated.lowerBound &+ created] : template[index]
                        let byte = source[index] ^ against
                        guard byte != 0 else { continue }
                        guard next < keyOffset else { break }
                        out[index >> 3] |= 1 << UInt8(index & 7)
                        out[next] = byte
                        next &+= 1
                    }
                }
                if next >= keyOffset {
                    // No smaller than the header itself: keep the header as it is.
                    location = keyElided
                    UnsafeMutableRawPointer(out.baseAddress!).copyMemory(from: base, byteCount: keyOffset)
                    next = keyOffset
                }
                if restCount > 0 {
                    UnsafeMutableRawPointer(out.baseAddress! + next).copyMemory(
                        from: base + restStart, byteCount: restCount)
                }
                count = next + restCount
            }
            return (location, bytes)
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
    /// they are (the caller finds them damaged). One allocation: the record is written in place.
    static func restoring(_ stored: UnsafeRawBufferPointer, location: Int64, key: String) -> [UInt8] {
        guard location == keyElided || location == compact, let base = stored.baseAddress else {
            return Array(stored)
        }
        var restStart = keyOffset
        if location == compact {
            guard stored.count >= mapLength else { return Array(stored) }
            var kept = 0
            for index in 0..<mapLength { kept += stored[index].nonzeroBitCount }
            guard stored.count >= mapLength + kept else { return Array(stored) }
            restStart = mapLength + kept
        } else {
            guard stored.count >= keyOffset else { return Array(stored) }
        }
        var key = key
        return key.withUTF8 { keyBytes in
            let restCount = stored.count - restStart
            return [UInt8](unsafeUninitializedCapacity: keyOffset + keyBytes.count + restCount) { out, count in
                let raw = UnsafeMutableRawPointer(out.baseAddress!)
                if location == compact {
                    template.withUnsafeBytes { template in
                        var next = mapLength
                        for group in 0..<mapLength {
                            let bits = stored[group]
                            let at = group &* 8
                            // A group of eight bytes equal to the template's (most of them) is a copy.
                            guard bits != 0 else {
                                (raw + at).copyMemory(from: template.baseAddress! + at, byteCount: 8)
                                continue
                            }
                            for bit in 0..<8 {
                                var byte = template[at &+ bit]
                                if bits & (1 << UInt8(bit)) != 0 {
                                    byte ^= stored[next]
                                    next &+= 1
                                }
                                out[at &+ bit] = byte
                            }
                        }
                    }
                    for index in validated { out[index] ^= out[index - validated.lowerBound + created] }
                } else {
                    raw.copyMemory(from: base, byteCount: keyOffset)
                }
                if let keyBase = keyBytes.baseAddress {
                    (raw + keyOffset).copyMemory(from: keyBase, byteCount: keyBytes.count)
                }
                if restCount > 0 {
                    (raw + keyOffset + keyBytes.count).copyMemory(from: base + restStart, byteCount: restCount)
                }
                count = keyOffset + keyBytes.count + restCount
            }
        }
    }

}
