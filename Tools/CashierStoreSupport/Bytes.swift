/// `count` pseudo-random bytes, the same for the same seed (xorshift): the records the store's
/// benchmark and its test child write.
package func bytes(_ count: Int, seed: Int) -> [UInt8] {
    var state = UInt64(truncatingIfNeeded: seed) &* 0x9e37_79b9_7f4a_7c15 | 1
    return (0..<count).map { _ in
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return UInt8(truncatingIfNeeded: state)
    }
}
