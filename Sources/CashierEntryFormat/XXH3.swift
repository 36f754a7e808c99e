/// XXH3-64, the 64-bit XXH3 by Yann Collet (xxHash 0.8), with the default secret: the
/// checksum of entry files of format version 2. Bit-exact with the reference
/// `XXH3_64bits_withSeed`; stable across processes, runs and platforms.
///
/// Inputs over 240 bytes go through the stripe loop, written with `SIMD8<UInt64>` so the
/// compiler keeps the eight accumulators in vector registers (`pmuludq` on x86-64, `umull`
/// on arm64). On a big-endian target it takes the scalar loop instead.
package enum XXH3 {
    private static let p32_1: UInt64 = 0x9E37_79B1
    private static let p32_2: UInt64 = 0x85EB_CA77
    private static let p32_3: UInt64 = 0xC2B2_AE3D
    private static let p64_1 = XXHash64.p1
    private static let p64_2 = XXHash64.p2
    private static let p64_3 = XXHash64.p3
    private static let p64_4 = XXHash64.p4
    private static let p64_5 = XXHash64.p5
    private static let mx1: UInt64 = 0x1656_6791_9E37_79F9
    private static let mx2: UInt64 = 0x9FB2_1C65_1E98_DF25

    private static let secretLength = 192
    private static let stripeLength = 64
    private static let stripesPerBlock = (secretLength - stripeLength) / 8
    private static let blockLength = stripeLength * stripesPerBlock

    /// The default secret, `XXH3_kSecret`.
    private static let defaultSecret: [UInt8] = [
        0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
        0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
        0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
        0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
        0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
        0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
        0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
        0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
        0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
        0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
        0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
        0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
    ]

    /// The hash of `bytes` with `seed` (`XXH3_64bits_withSeed`).
    package static func hash(_ bytes: UnsafeRawBufferPointer, seed: UInt64 = 0) -> UInt64 {
        defaultSecret.withUnsafeBytes { secret in
            hash(bytes, seed: seed, secret: secret, vectorized: true)
        }
    }

    /// The hash through the scalar stripe loop, the one big-endian targets take: tests compare the two.
    package static func hashScalar(_ bytes: UnsafeRawBufferPointer, seed: UInt64 = 0) -> UInt64 {
        defaultSecret.withUnsafeBytes { secret in
            hash(bytes, seed: seed, secret: secret, vectorized: false)
        }
    }

    private static func hash(
        _ bytes: UnsafeRawBufferPointer, seed: UInt64, secret: UnsafeRawBufferPointer, vectorized: Bool
    ) -> UInt64 {
        let count = bytes.count
        guard count > 0 else {
            return XXHash64.avalanche(seed ^ load64(secret, 56) ^ load64(secret, 64))
        }
        let input = bytes.baseAddress!
        let s = secret.baseAddress!
        switch count {
        case 1...3:
            let c1 = UInt32(input.load(as: UInt8.self))
            let c2 = UInt32(input.load(fromByteOffset: count >> 1, as: UInt8.self))
            let c3 = UInt32(input.load(fromByteOffset: count - 1, as: UInt8.self))
            let combined = (c1 << 16) | (c2 << 24) | c3 | (UInt32(count) << 8)
            let bitflip = UInt64(load32(s, 0) ^ load32(s, 4)) &+ seed
            return XXHash64.avalanche(UInt64(combined) ^ bitflip)
        case 4...8:
            let seed = seed ^ (UInt64(UInt32(truncatingIfNeeded: seed).byteSwapped) << 32)
            let input1 = load32(input, 0)
            let input2 = load32(input, count - 4)
            let bitflip = (load64(s, 8) ^ load64(s, 16)) &- seed
            let input64 = UInt64(input2) &+ (UInt64(input1) << 32)
            return rrmxmx(input64 ^ bitflip, length: UInt64(count))
        case 9...16:
            let bitflip1 = (load64(s, 24) ^ load64(s, 32)) &+ seed
            let bitflip2 = (load64(s, 40) ^ load64(s, 48)) &- seed
            let low = load64(input, 0) ^ bitflip1
            let high = load64(input, count - 8) ^ bitflip2
            let acc = UInt64(count) &+ low.byteSwapped &+ high &+ fold(low, high)
            return xxh3Avalanche(acc)
        case 17...128:
            var acc = UInt64(count) &* p64_1
            if count > 32 {
                if count > 64 {
                    if count > 96 {
                        acc &+= mix16(input, 48, s, 96, seed)
                        acc &+= mix16(input, count - 64, s, 112, seed)
                    }
                    acc &+= mix16(input, 32, s, 64, seed)
                    acc &+= mix16(input, count - 48, s, 80, seed)
                }
                acc &+= mix16(input, 16, s, 32, seed)
                acc &+= mix16(input, count - 32, s, 48, seed)
            }
            acc &+= mix16(input, 0, s, 0, seed)
            acc &+= mix16(input, count - 16, s, 16, seed)
            return xxh3Avalanche(acc)
        case 129...240:
            var acc = UInt64(count) &* p64_1
            for i in 0..<8 { acc &+= mix16(input, 16 * i, s, 16 * i, seed) }
            acc = xxh3Avalanche(acc)
            for i in 8..<(count / 16) { acc &+= mix16(input, 16 * i, s, 16 * (i - 8) + 3, seed) }
            acc &+= mix16(input, count - 16, s, 136 - 17, seed)
            return xxh3Avalanche(acc)
        default:
            guard seed != 0 else { return hashLong(input, count, s, vectorized: vectorized) }
            // A secret derived from the seed, as XXH3_initCustomSecret does.
            return withUnsafeTemporaryAllocation(byteCount: secretLength, alignment: 16) { custom in
                for i in 0..<(secretLength / 16) {
                    custom.storeBytes(
                        of: (load64(s, 16 * i) &+ seed).littleEndian, toByteOffset: 16 * i, as: UInt64.self)
                    custom.storeBytes(
                        of: (load64(s, 16 * i + 8) &- seed).littleEndian, toByteOffset: 16 * i + 8, as: UInt64.self)
                }
                return hashLong(input, count, UnsafeRawPointer(custom.baseAddress!), vectorized: vectorized)
            }
        }
    }

    /// Inputs over 240 bytes: 1 KiB blocks of 64-byte stripes into eight accumulators.
    private static func hashLong(_ input: UnsafeRawPointer, _ count: Int, _ secret: UnsafeRawPointer, vectorized: Bool)
        -> UInt64
    {
        var acc = SIMD8<UInt64>(p32_3, p64_1, p64_2, p64_3, p64_4, p32_2, p64_5, p32_1)
        #if _endian(little)
        if vectorized {
            hashLongVector(input, count, secret, &acc)
            return mergeAccumulators(acc, secret, count)
        }
        #endif
        hashLongScalar(input, count, secret, &acc)
        return mergeAccumulators(acc, secret, count)
    }

    private static func mergeAccumulators(_ acc: SIMD8<UInt64>, _ secret: UnsafeRawPointer, _ count: Int) -> UInt64 {
        var result = UInt64(count) &* p64_1
        for i in 0..<4 {
            result &+= fold(acc[2 * i] ^ load64(secret, 11 + 16 * i), acc[2 * i + 1] ^ load64(secret, 11 + 16 * i + 8))
        }
        return xxh3Avalanche(result)
    }

    /// One lane at a time, every load little-endian: right on any target.
    private static func hashLongScalar(
        _ input: UnsafeRawPointer, _ count: Int, _ secret: UnsafeRawPointer, _ acc: inout SIMD8<UInt64>
    ) {
        func accumulate(_ stripe: UnsafeRawPointer, _ key: UnsafeRawPointer) {
            for i in 0..<8 {
                let data = load64(stripe, 8 * i)
                let keyed = data ^ load64(key, 8 * i)
                acc[i ^ 1] &+= data
                acc[i] &+= (keyed & 0xFFFF_FFFF) &* (keyed >> 32)
            }
        }
        let blocks = (count - 1) / blockLength
        for block in 0..<blocks {
            let start = input + block * blockLength
            for stripe in 0..<stripesPerBlock { accumulate(start + stripe * stripeLength, secret + stripe * 8) }
            for i in 0..<8 {
                var value = acc[i]
                value ^= value >> 47
                value ^= load64(secret, secretLength - stripeLength + 8 * i)
                acc[i] = value &* p32_1
            }
        }
        let start = input + blocks * blockLength
        for stripe in 0..<(((count - 1) - blocks * blockLength) / stripeLength) {
            accumulate(start + stripe * stripeLength, secret + stripe * 8)
        }
        accumulate(input + count - stripeLength, secret + secretLength - stripeLength - 7)
    }

    #if _endian(little)
    /// Eight lanes at once; a lane's bytes are the little-endian `UInt64` they load as.
    private static func hashLongVector(
        _ input: UnsafeRawPointer, _ count: Int, _ secret: UnsafeRawPointer, _ acc: inout SIMD8<UInt64>
    ) {
        let low32 = SIMD8<UInt64>(repeating: 0xFFFF_FFFF)
        @inline(__always) func accumulate(_ stripe: UnsafeRawPointer, _ key: UnsafeRawPointer) {
            let data = stripe.loadUnaligned(as: SIMD8<UInt64>.self)
            let keyed = data ^ key.loadUnaligned(as: SIMD8<UInt64>.self)
            // Lanes swapped in pairs: acc[i ^ 1] += data[i].
            acc &+= SIMD8<UInt64>(data[1], data[0], data[3], data[2], data[5], data[4], data[7], data[6])
            acc &+= (keyed & low32) &* (keyed &>> 32)
        }
        let scrambleKey = (secret + secretLength - stripeLength).loadUnaligned(as: SIMD8<UInt64>.self)
        let prime = SIMD8<UInt64>(repeating: p32_1)
        let blocks = (count - 1) / blockLength
        for block in 0..<blocks {
            let start = input + block * blockLength
            for stripe in 0..<stripesPerBlock { accumulate(start + stripe * stripeLength, secret + stripe * 8) }
            acc = ((acc ^ (acc &>> 47)) ^ scrambleKey) &* prime
        }
        let start = input + blocks * blockLength
        for stripe in 0..<(((count - 1) - blocks * blockLength) / stripeLength) {
            accumulate(start + stripe * stripeLength, secret + stripe * 8)
        }
        accumulate(input + count - stripeLength, secret + secretLength - stripeLength - 7)
    }
    #endif

    @inline(__always) private static func mix16(
        _ input: UnsafeRawPointer, _ offset: Int, _ secret: UnsafeRawPointer, _ secretOffset: Int, _ seed: UInt64
    ) -> UInt64 {
        fold(
            load64(input, offset) ^ (load64(secret, secretOffset) &+ seed),
            load64(input, offset + 8) ^ (load64(secret, secretOffset + 8) &- seed))
    }

    /// The 128-bit product of `a` and `b`, its halves xored.
    @inline(__always) private static func fold(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let product = a.multipliedFullWidth(by: b)
        return product.high ^ product.low
    }

    @inline(__always) private static func xxh3Avalanche(_ h: UInt64) -> UInt64 {
        var h = h
        h ^= h >> 37
        h &*= mx1
        h ^= h >> 32
        return h
    }

    @inline(__always) private static func rrmxmx(_ h: UInt64, length: UInt64) -> UInt64 {
        var h = h
        h ^= XXHash64.rotl(h, 49) ^ XXHash64.rotl(h, 24)
        h &*= mx2
        h ^= (h >> 35) &+ length
        h &*= mx2
        h ^= h >> 28
        return h
    }

    @inline(__always) private static func load64(_ p: UnsafeRawPointer, _ offset: Int) -> UInt64 {
        UInt64(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    @inline(__always) private static func load64(_ b: UnsafeRawBufferPointer, _ offset: Int) -> UInt64 {
        load64(b.baseAddress!, offset)
    }

    @inline(__always) private static func load32(_ p: UnsafeRawPointer, _ offset: Int) -> UInt32 {
        UInt32(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }
}
