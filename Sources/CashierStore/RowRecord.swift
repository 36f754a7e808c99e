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
/// - `location = 4` (``shaped``): a ``RowShape``'s id (LEB128), then the map of the header XORed
///   with the shape's header as well, then the record after the key, the type name and the app
///   version, which the shape holds. Records of one type and app version share a shape: the
///   header keeps little more than its checksum and the low bytes of its created-at (about 17
///   bytes with the id, against 26 bytes and the names).
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
    /// `location` of a row whose record is stored compactly and without its names (``RowShape``).
    static let shaped: Int64 = 4
    /// Where the key starts in a record laid out as an entry file: `EntryHeader.fixedLength`.
    static let keyOffset = 80
    private static let groups = keyOffset / 8

    /// The entry's location for a `location` column value; a damaged value reads as a file entry
    /// (its file is then missing: a miss).
    static func location(_ value: Int64) -> StoreLocation {
        isRestored(value) ? .row : StoreLocation(rawValue: value) ?? .file
    }

    /// Whether a row's `location` says its record is stored smaller than written.
    static func isRestored(_ location: Int64) -> Bool {
        location == keyElided || location == compact || location == shaped
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
    ///
    /// `shape` is asked for the shape of the record's names (its type name and app version
    /// bytes) given its predicted header, which a new shape keeps; without one (nil) the row is
    /// ``compact``, or ``keyElided`` when the map would not be smaller than the header.
    static func stored(
        _ record: [UInt8], key: String,
        shape: (_ names: UnsafeRawBufferPointer, _ header: UnsafeRawBufferPointer) -> RowShape? = { _, _ in nil }
    ) -> (location: Int64, bytes: [UInt8])? {
        guard let keyLength = elidableKeyLength(record, key: key) else { return nil }
        return record.withUnsafeBytes { source -> (Int64, [UInt8]) in
            let base = source.baseAddress!
            return withUnsafeTemporaryAllocation(byteCount: keyOffset, alignment: 8) { header in
                header.copyMemory(from: UnsafeRawBufferPointer(start: base, count: keyOffset))
                predict(header.baseAddress!, keyLength: keyLength, recordLength: source.count, restoring: false)
                var restStart = keyOffset + keyLength
                var shapeID: UInt64?
                // A shape is found by its names alone, which another split of them shares (type
                // `T` under app version `"X"`, type `TX` without one): only a shape that splits
                // them as this record does is used, so its rows are what ``RowShape/appVersion``
                // says they are, and `Cache.keys` may list them unread.
                if let names = namesRange(source, keyLength: keyLength),
                    let found = shape(UnsafeRawBufferPointer(rebasing: source[names]), UnsafeRawBufferPointer(header)),
                    found.splitsNames(as: UnsafeRawBufferPointer(header))
                {
                    xor(header.baseAddress!, found.header)
                    restStart = names.upperBound
                    shapeID = UInt64(found.id)
                }
                let rest = UnsafeRawBufferPointer(rebasing: source[restStart...])
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
                    let idLength = shapeID.map(leb128Length) ?? 0
                    // A shaped row always keeps the map; otherwise only when it is smaller.
                    let mapped = shapeID != nil || maps + kept < keyOffset
                    let prefix = mapped ? idLength + maps + kept : keyOffset
                    let bytes = [UInt8](unsafeUninitializedCapacity: prefix + rest.count) { out, count in
                        let raw = UnsafeMutableRawPointer(out.baseAddress!)
                        if mapped {
                            if var id = shapeID {
                                for index in 0..<idLength {
                                    let more: UInt8 = index < idLength - 1 ? 0x80 : 0
                                    out[index] = UInt8(truncatingIfNeeded: id & 0x7F) | more
                                    id >>= 7
                                }
                            }
                            let mapBase = UnsafeRawPointer(map.baseAddress!)
                            (raw + idLength).copyMemory(from: mapBase, byteCount: maps)
                            (raw + idLength + maps).copyMemory(from: mapBase + 2 + groups, byteCount: kept)
                        } else {
                            // No smaller than the header itself: keep the header as it is.
                            raw.copyMemory(from: base, byteCount: keyOffset)
                        }
                        if let restBase = rest.baseAddress, !rest.isEmpty {
                            (raw + prefix).copyMemory(from: restBase, byteCount: rest.count)
                        }
                        count = prefix + rest.count
                    }
                    return (shapeID != nil ? shaped : mapped ? compact : keyElided, bytes)
                }
            }
        }
    }

    /// XORs the 80 bytes at `header` with `template` (80 bytes), eight at a time.
    private static func xor(_ header: UnsafeMutableRawPointer, _ template: [UInt8]) {
        template.withUnsafeBytes { template in
            for offset in stride(from: 0, to: keyOffset, by: 8) {
                let value =
                    header.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                    ^ template.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                header.storeBytes(of: value, toByteOffset: offset, as: UInt64.self)
            }
        }
    }

    /// Where the type name and the app version of `record` lie (right after its key of
    /// `keyLength` bytes), when its header's lengths fit the record and
    /// ``RowShape/maximumNamesLength``; else nil.
    static func namesRange(_ record: UnsafeRawBufferPointer, keyLength: Int) -> Range<Int>? {
        let typeLength = UInt32(littleEndian: record.loadUnaligned(fromByteOffset: 60, as: UInt32.self))
        let appLength = UInt32(littleEndian: record.loadUnaligned(fromByteOffset: 64, as: UInt32.self))
        let limit = UInt32(RowShape.maximumNamesLength)
        guard typeLength <= limit, appLength <= limit, typeLength + appLength <= limit else { return nil }
        let start = keyOffset + keyLength
        let end = start + Int(typeLength + appLength)
        return end <= record.count ? start..<end : nil
    }

    /// Bytes of `value` in LEB128 (seven bits a byte, low first, the high bit set on all but the last).
    static func leb128Length(_ value: UInt64) -> Int {
        var length = 1
        var rest = value >> 7
        while rest != 0 {
            length += 1
            rest >>= 7
        }
        return length
    }

    /// A shape id at the start of `stored`, and its length: at most three bytes, at least 1.
    static func shapeID(_ stored: UnsafeRawBufferPointer) -> (id: Int64, length: Int)? {
        var id: Int64 = 0
        for index in 0..<min(3, stored.count) {
            id |= Int64(stored[index] & 0x7F) << (7 * index)
            if stored[index] & 0x80 == 0 { return id > 0 ? (id, index + 1) : nil }
        }
        return nil
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

    /// The record written, from a row's stored bytes, its `location`, the key the read
    /// compared with the row's, and for a ``shaped`` row the shape its id names.
    /// Stored bytes too short for what `location` says, or naming no shape, come back as they
    /// are (the caller finds them damaged). One allocation: the record is written in place.
    static func restoring(
        _ stored: UnsafeRawBufferPointer, location: Int64, key: String, shape: RowShape? = nil
    ) -> [UInt8] {
        guard isRestored(location), let base = stored.baseAddress else { return Array(stored) }
        var mapStart = 0
        var found: RowShape?
        if location == shaped {
            guard let (id, length) = shapeID(stored), let known = shape, known.id == id else { return Array(stored) }
            found = known
            mapStart = length
        }
        var restStart = keyOffset
        var groupMask = 0
        if location != keyElided {
            guard stored.count >= mapStart + 2 else { return Array(stored) }
            groupMask = Int(stored[mapStart]) | Int(stored[mapStart + 1]) << 8
            let present = groupMask.nonzeroBitCount
            guard groupMask < 1 << groups, stored.count >= mapStart + 2 + present else { return Array(stored) }
            var kept = 0
            for index in (mapStart + 2)..<(mapStart + 2 + present) { kept += stored[index].nonzeroBitCount }
            guard stored.count >= mapStart + 2 + present + kept else { return Array(stored) }
            restStart = mapStart + 2 + present + kept
        } else {
            guard stored.count >= keyOffset else { return Array(stored) }
        }
        let names = found?.names ?? []
        var key = key
        return key.withUTF8 { keyBytes in
            let restCount = stored.count - restStart
            let namesStart = keyOffset + keyBytes.count
            let length = namesStart + names.count + restCount
            return [UInt8](unsafeUninitializedCapacity: length) { out, count in
                let raw = UnsafeMutableRawPointer(out.baseAddress!)
                if location != keyElided {
                    var nextMap = mapStart + 2
                    var next = mapStart + 2 + groupMask.nonzeroBitCount
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
                    if let found { xor(raw, found.header) }
                    predict(raw, keyLength: keyBytes.count, recordLength: length, restoring: true)
                } else {
                    raw.copyMemory(from: base, byteCount: keyOffset)
                }
                if let keyBase = keyBytes.baseAddress {
                    (raw + keyOffset).copyMemory(from: keyBase, byteCount: keyBytes.count)
                }
                if !names.isEmpty {
                    names.withUnsafeBytes { (raw + namesStart).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
                }
                if restCount > 0 {
                    (raw + namesStart + names.count).copyMemory(from: base + restStart, byteCount: restCount)
                }
                count = length
            }
        }
    }
}

/// What the records of one Codable type and app version share in a store: their names (the
/// type name and app version bytes that follow the key in a record) and the predicted header
/// (``RowRecord/predict(_:keyLength:recordLength:restoring:)``) of the record that made the
/// shape, which its rows' headers are XORed with. A ``RowRecord/shaped`` row names its shape
/// by id. Shapes are rows of the store's `shape` table, written before any row names them and
/// never changed or removed after: a connection keeps those it has met.
package struct RowShape: Sendable, Equatable {
    package let id: Int64
    package let names: [UInt8]
    /// 80 bytes.
    package let header: [UInt8]

    /// A shape as a store may hold one; nil for what only damage gives (an id below 1, a header
    /// of another length than 80 bytes, names over ``maximumNamesLength``), whose rows then
    /// read as damaged. The one place a shape is judged: every other one is sound.
    init?(id: Int64, names: [UInt8], header: [UInt8]) {
        guard id > 0, header.count == RowRecord.keyOffset, names.count <= Self.maximumNamesLength else { return nil }
        self.id = id
        self.names = names
        self.header = header
    }

    /// The app version its records were written under; nil for records written without one
    /// (the header's flag at offset 15), or names that do not hold it.
    package var appVersion: String? {
        guard header[15] == 1, typeLength + length(at: 64) == names.count else { return nil }
        return String(decoding: names[typeLength...], as: UTF8.self)
    }

    /// Whether its records were written under `version` (`nil`: without an app version), as the
    /// header's flag and the names say; false for names that do not hold what the flag says.
    package func isWritten(underAppVersion version: String?) -> Bool {
        guard let version else { return header[15] == 0 && typeLength == names.count }
        return appVersion == version
    }

    /// The type name's length in `names` (the header's 4 bytes at offset 60).
    private var typeLength: Int { length(at: 60) }

    /// The little-endian 32-bit length at `offset` of the header.
    private func length(at offset: Int) -> Int {
        (0..<4).reduce(0) { $0 | Int(header[offset + $1]) << (8 * $1) }
    }

    /// Whether a record whose (predicted) header is `header` splits its names as this shape's
    /// records do: the same app-version flag (offset 15), type name and app version lengths
    /// (60, 64). A record that does not is stored without this shape.
    func splitsNames(as header: UnsafeRawBufferPointer) -> Bool {
        guard header.count == RowRecord.keyOffset else { return false }
        return header[15] == self.header[15] && (60..<68).allSatisfy { header[$0] == self.header[$0] }
    }

    /// Names longer than this (a type name of 1 KiB) keep their row ``RowRecord/compact``.
    package static let maximumNamesLength = 1024
    /// Shapes a store holds at most; when it holds them, new names keep their rows compact.
    package static let maximumCount = 4096
}
