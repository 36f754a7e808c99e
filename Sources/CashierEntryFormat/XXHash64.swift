/// XXH64, the 64-bit xxHash by Yann Collet: the checksum of entry files and the
/// hash behind their names. It is stable across processes, runs and platforms,
/// unlike Swift's per-process seeded `Hasher`.
package enum XXHash64 {
    // The five 64-bit primes, shared with XXH3 (its `PRIME64_1` … `PRIME64_5`).
    static let p1: UInt64 = 0x9E37_79B1_85EB_CA87
    static let p2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    static let p3: UInt64 = 0x1656_67B1_9E37_79F9
    static let p4: UInt64 = 0x85EB_CA77_C2B2_AE63
    static let p5: UInt64 = 0x27D4_EB2F_1656_67C5

    /// The hash of `bytes` with `seed`.
    package static func hash(_ bytes: UnsafeRawBufferPointer, seed: UInt64 = 0) -> UInt64 {
        let count = bytes.count
        var offset = 0
        var h: UInt64
        if count >= 32 {
            var v1 = seed &+ p1 &+ p2
            var v2 = seed &+ p2
            var v3 = seed
            var v4 = seed &- p1
            while offset + 32 <= count {
                v1 = round(v1, load64(bytes, offset))
                v2 = round(v2, load64(bytes, offset + 8))
                v3 = round(v3, load64(bytes, offset + 16))
                v4 = round(v4, load64(bytes, offset + 24))
                offset += 32
            }
            h = rotl(v1, 1) &+ rotl(v2, 7) &+ rotl(v3, 12) &+ rotl(v4, 18)
            h = merge(h, v1)
            h = merge(h, v2)
            h = merge(h, v3)
            h = merge(h, v4)
        } else {
            h = seed &+ p5
        }
        h &+= UInt64(count)
        while offset + 8 <= count {
            h ^= round(0, load64(bytes, offset))
            h = rotl(h, 27) &* p1 &+ p4
            offset += 8
        }
        if offset + 4 <= count {
            h ^= UInt64(load32(bytes, offset)) &* p1
            h = rotl(h, 23) &* p2 &+ p3
            offset += 4
        }
        while offset < count {
            h ^= UInt64(bytes[offset]) &* p5
            h = rotl(h, 11) &* p1
            offset += 1
        }
        return avalanche(h)
    }

    /// The hash of a string's UTF-8 bytes.
    package static func hash(_ string: String, seed: UInt64 = 0) -> UInt64 {
        var string = string
        return string.withUTF8 { hash(UnsafeRawBufferPointer($0), seed: seed) }
    }

    /// XXH64's final mix, which XXH3 also uses for empty and 1–3-byte inputs.
    @inline(__always) static func avalanche(_ h: UInt64) -> UInt64 {
        var h = h
        h ^= h >> 33
        h &*= p2
        h ^= h >> 29
        h &*= p3
        h ^= h >> 32
        return h
    }

    @inline(__always) static func rotl(_ x: UInt64, _ r: UInt64) -> UInt64 { (x << r) | (x >> (64 - r)) }

    @inline(__always) private static func round(_ acc: UInt64, _ input: UInt64) -> UInt64 {
        rotl(acc &+ input &* p2, 31) &* p1
    }

    @inline(__always) private static func merge(_ acc: UInt64, _ val: UInt64) -> UInt64 {
        (acc ^ round(0, val)) &* p1 &+ p4
    }

    @inline(__always) private static func load64(_ b: UnsafeRawBufferPointer, _ i: Int) -> UInt64 {
        UInt64(littleEndian: b.loadUnaligned(fromByteOffset: i, as: UInt64.self))
    }

    @inline(__always) private static func load32(_ b: UnsafeRawBufferPointer, _ i: Int) -> UInt32 {
        UInt32(littleEndian: b.loadUnaligned(fromByteOffset: i, as: UInt32.self))
    }
}
