import Foundation

/// How a row holds its record: verbatim, or with the key it repeats left out.
///
/// A record laid out as an entry file is an 80-byte header, the key, the type name and the
/// payload (`EntryHeader`, OnDiskFormat). The row already holds the key in its `key` column, so
/// when the record's bytes right after the header are exactly the key's UTF-8, the row keeps
/// the record without them and marks it `location = 2` (``keyElided``); a read puts them back.
/// Any other record (shorter, another layout, another key) is kept verbatim (`location = 0`).
///
/// Lossless, and the checksum covers what a read trusts as before: the record a read returns
/// is byte for byte the one written, its key bytes are the `key` column, which the read has
/// just compared with the key asked for, and the caller checks the whole record's checksum.
/// Damage (a marker flipped, a blob cut short) gives a record whose checksum or lengths fail:
/// a `.corrupt` miss, never a trap. Saves the key's length per row: 100,000 rows with keys of
/// 43 bytes, 2.62x → 2.25x of the payload (`CashierStoreBench footprint`, KEYS=long).
enum RowRecord {
    /// `location` of a row whose record is stored without its key.
    static let keyElided: Int64 = 2
    /// Where the key starts in a record laid out as an entry file: `EntryHeader.fixedLength`.
    static let keyOffset = 80

    /// The entry's location for a `location` column value; a damaged value reads as a file entry
    /// (its file is then missing: a miss).
    static func location(_ value: Int64) -> StoreLocation {
        value == keyElided ? .row : StoreLocation(rawValue: value) ?? .file
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

    /// `record` without the `keyLength` bytes after its header.
    static func eliding(_ record: [UInt8], keyLength: Int) -> [UInt8] {
        var stored = record
        stored.removeSubrange(keyOffset..<(keyOffset + keyLength))
        return stored
    }

    /// The record written, from a row's stored bytes and the key the read compared with the row's:
    /// the key's bytes put back after the header. Stored bytes too short for a header come back
    /// as they are (the caller finds them damaged).
    static func restoring(_ stored: UnsafeRawBufferPointer, key: String) -> [UInt8] {
        guard stored.count >= keyOffset, let base = stored.baseAddress else { return Array(stored) }
        var key = key
        return key.withUTF8 { keyBytes in
            [UInt8](unsafeUninitializedCapacity: stored.count + keyBytes.count) { buffer, count in
                let out = UnsafeMutableRawPointer(buffer.baseAddress!)
                out.copyMemory(from: base, byteCount: keyOffset)
                if let keyBase = keyBytes.baseAddress {
                    (out + keyOffset).copyMemory(from: keyBase, byteCount: keyBytes.count)
                }
                (out + keyOffset + keyBytes.count).copyMemory(
                    from: base + keyOffset, byteCount: stored.count - keyOffset)
                count = stored.count + keyBytes.count
            }
        }
    }
}
