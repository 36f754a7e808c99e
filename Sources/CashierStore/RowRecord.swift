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
/// - `location = 3` (``compact``): the header as a map of its nonzero bytes and those bytes,
///   then the record after the key. The map: two bytes (little-endian) with a bit for each
///   group of eight header bytes holding a nonzero one, then a byte for each such group with
///   a bit for each of its nonzero bytes. Before the map is made, fields are XORed with what
///   the rest predicts for them (``predict(_:keyLength:recordLength:restoring:)``), so a
///   typical header keeps its created-at, checksum and a few small fields: about 26 bytes.
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
    private static let groups = keyOffset / 8

    /// The entry's location for a `location` column value; a damaged value reads as a file entry
    /// (its file is then missing: a miss).
    static func location(_ value: Int64) -> StoreLocation {
        value == keyElided || value == compact ? .row : StoreLocation(rawValue: value) ?? .file
    }

    /// XORs into `header` (80 bytes) what the rest of the record predicts for some fields, or
    /// (`restoring`) takes it out again. Each prediction uses only fields that are restored
    /// before it, so restoring runs the steps in order on the stored values:
    ///
    /// - magic `CSHR` and format version 2 (offsets 0 and 4): constants;
    /// - key length (56): the key's UTF-8 length, which the row's `key` column gives;
    /// - header length (8): 80 + key, type name and app version lengths (56, 60, 64);
    /// - payload length (48): the record's length less the header length;
    /// - validated at (24): created at (16), usually equal.
    static func predict(_ header: UnsafeMutableRawPointer, keyLength: Int, recordLength: Int, restoring: Bool) {
        func load32(_ offset: Int) -> UInt32 {
            UInt32(littleEndian: header.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
        }
        func load64(_ offset: Int) -> UInt64 {
            UInt64(littleEndian: header.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        }
        func xor32(_ offset: Int, _ value: UInt32) {
            header.storeBytes(of: (load32(offset) ^ value).littleEndian, toByteOffset: offset, as: UInt32.self)
        }
        func xor64(_ offset: Int, _ value: UInt64) {
            header.storeBytes(of: (load64(offset) ^ value).littleEndian, toByteOffset: offset, as: UInt64.self)
        }
        let magic: UInt32 = 0x5248_5343 // "CSHR" read little-endian
        if restoring {
            xor32(0, magic)
            xor32(4, 2)
            xor32(56, UInt32(truncatingIfNeeded: keyLength))
            xor32(8, 80 &+ load32(56) &+ load32(60) &+ load32(64))
            xor64(48, UInt64(truncatingIfNeeded: recordLength) &- UInt64(load32(8)))
            xor64(24, load64(16))
        } else {
            let headerLength = 80 &+ load32(56) &+ load32(60) &+ load32(64)
            let payloadLength = UInt64(truncatingIfNeeded: recordLength) &- UInt64(load32(8))
            xor32(0, magic)
            xor32(4, 2)
            xor32(56, UInt32(truncatingIfNeeded: keyLength))
            xor32(8, headerLength)
            xor64(48, payloadLength)
            xor64(24, load64(16))
        }
    }

    /// What a row stores for `record` of `key`, with its `location`; nil to store it verbatim.
    static func stored(_ record: [UInt8], key: String) -> (location: Int64, bytes: [UInt8])? {
        guard let keyLength = elidableKeyLength(record, key: key) else { return nil }
        return record.withUnsafeBytes { source -> (Int64, [UInt8]) in
            let base = source.baseAddress!
            let rest = UnsafeRawBufferPointer(rebasing: source[(keyOffset + keyLength)...])
            return withUnsafeTemporaryAllocation(byteCount: keyOffset, alignment: 8) { header in
                header.copyMemory(from: UnsafeRawBufferPointer(start: base, count: keyOffset))
                predict(header.baseAddress!, keyLength: keyLength, recordLength: source.count, restoring: false)
                // The map and the kept bytes, built beside the header: at most 2 + 10 + 80 bytes.
                return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 2 + groups + keyOffset) { map in
                    var groupMask = 0
                    var maps = 2
                    var kept = 0
                    for group in 0..<groups {
                        var bits: UInt8 = 0
                        for bit in 0..<8 where header[group &* 8 &+ bit] != 0 {
                            bits |= 1 << UInt8(bit)
                            map[2 &+ groups &+ kept] = header[group &* 8 &+ bit]
                            kept &+= 1
                        }
                        guard bits != 0 else { continue }
                        groupMask |= 1 << group
                        map[maps] = bits
                        maps &+= 1
                    }
                    map[0] = UInt8(truncatingIfNeeded: groupMask)
                    map[1] = UInt8(truncatingIfNeeded: groupMask >> 8)
                    let compactLength = maps + kept
                    let small = compactLength < keyOffset
                    let prefix = small ? compactLength : keyOffset
                    let bytes = [UInt8](unsafeUninitializedCapacity: prefix + rest.count) { out, count in
                        let raw = UnsafeMutableRawPointer(out.baseAddress!)
                        if small {
                            let mapBase = UnsafeRawPointer(map.baseAddress!)
                            raw.copyMemory(from: mapBase, byteCount: maps)
                            (raw + maps).copyMemory(from: mapBase + 2 + groups, byteCount: kept)
                        } else {
                            // No smaller than the header itself: keep the header as it is.
                            raw.copyMemory(from: base, byteCount: keyOffset)
                        }
                        if let restBase = rest.baseAddress, !rest.isEmpty {
                            (raw + prefix).copyMemory(from: restBase, byteCount: rest.count)
                        }
                        count = prefix + rest.count
                    }
                    return (small ? compact : keyElided, bytes)
                }
            }
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
        var groupMask = 0
        if location == compact {
            guard stored.count >= 2 else { return Array(stored) }
            groupMask = Int(stored[0]) | Int(stored[1]) << 8
            let present = groupMask.nonzeroBitCount
            guard groupMask < 1 << groups, stored.count >= 2 + present else { return Array(stored) }
            var kept = 0
            for index in 2..<(2 + present) { kept += stored[index].nonzeroBitCount }
            guard stored.count >= 2 + present + kept else { return Array(stored) }
            restStart = 2 + present + kept
        } else {
            guard stored.count >= keyOffset else { return Array(stored) }
        }
        var key = key
        return key.withUTF8 { keyBytes in
            let restCount = stored.count - restStart
            let length = keyOffset + keyBytes.count + restCount
            return [UInt8](unsafeUninitializedCapacity: length) { out, count in
                let raw = UnsafeMutableRawPointer(out.baseAddress!)
                if location == compact {
                    var nextMap = 2
                    var next = 2 + groupMask.nonzeroBitCount
                    for group in 0..<groups {
                        let at = group &* 8
                        guard groupMask & (1 << group) != 0 else {
                            (raw + at).initializeMemory(as: UInt8.self, repeating: 0, count: 8)
                            continue
                        }
                        let map = stored[nextMap]
                        nextMap &+= 1
                        for bit in 0..<8 {
                            if map & (1 << UInt8(bit)) != 0 {
                                out[at &+ bit] = stored[next]
                                next &+= 1
                            } else {
                                out[at &+ bit] = 0
                            }
                        }
                    }
                    predict(raw, keyLength: keyBytes.count, recordLength: length, restoring: true)
                } else {
                    raw.copyMemory(from: base, byteCount: keyOffset)
                }
                if let keyBase = keyBytes.baseAddress {
                    (raw + keyOffset).copyMemory(from: keyBase, byteCount: keyBytes.count)
                }
                if restCount > 0 {
                    (raw + keyOffset + keyBytes.count).copyMemory(from: base + restStart, byteCount: restCount)
                }
                count = length
            }
        }
    }
}
