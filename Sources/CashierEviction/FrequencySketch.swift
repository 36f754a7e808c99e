/// An approximate count of recent requests per key (Caffeine's TinyLFU sketch): a
/// count-min sketch of four rows of 4-bit counters, halved every `sampleSize`
/// increments so old popularity fades.
///
/// As in Caffeine since 3.0, a key's four counters sit in one 64-byte block (a word
/// pair per row), so counting a request touches one cache line, not four.
///
/// Counters saturate at 15, which is all an admission comparison needs; the table
/// grows with the number of keys the policy holds and starts empty when it does.
struct FrequencySketch {
    private var table: [UInt64] = []
    /// Blocks in the table, less one (a power of two, less one).
    private var blockMask = 0
    private var additions = 0
    private(set) var sampleSize = 0

    /// The most keys the sketch was sized for.
    private(set) var capacity = 0

    /// Sizes the sketch for `keys` keys, if it is smaller: the sample grows at once, the
    /// table (emptied) when it needs another power of two.
    mutating func ensureCapacity(_ keys: Int) {
        guard keys > capacity else { return }
        capacity = keys
        sampleSize = 10 * max(keys, 16)
        // Caffeine's size: sixteen counters a key in all, four a row, so keys read once in a
        // sample seldom collide enough to look frequent.
        let width = 4 * max(16, (keys - 1).nextPowerOfTwo)
        guard width > table.count * 4 else { return }
        // `width` counters a row, four rows, sixteen counters a word, eight words a block.
        table = [UInt64](repeating: 0, count: width / 4)
        blockMask = table.count / 8 - 1
        additions = 0
    }

    var isEmpty: Bool { table.isEmpty }

    /// The estimated number of recent requests for `hash`, 0 to 15.
    func frequency(_ hash: Int) -> Int {
        guard !table.isEmpty else { return 0 }
        let (block, bits) = spread(hash)
        var result = 15
        for row in 0..<4 {
            let (word, shift) = position(block, bits, row: row)
            result = min(result, Int((table[word] >> shift) & 0xF))
        }
        return result
    }

    /// Counts a request for `hash`.
    mutating func increment(_ hash: Int) {
        guard !table.isEmpty else { return }
        let (block, bits) = spread(hash)
        var added = false
        for row in 0..<4 {
            let (word, shift) = position(block, bits, row: row)
            if (table[word] >> shift) & 0xF < 15 {
                table[word] += 1 << shift
                added = true
            }
        }
        if added {
            additions += 1
            if additions >= sampleSize { halve() }
        }
    }

    private mutating func halve() {
        for i in table.indices { table[i] = (table[i] >> 1) & 0x7777_7777_7777_7777 }
        additions /= 2
    }

    /// The first word of `hash`'s block, and the bits that pick its counters there.
    private func spread(_ hash: Int) -> (block: Int, bits: UInt64) {
        var h = UInt64(bitPattern: Int64(hash))
        h = (h ^ (h >> 33)) &* 0xff51_afd7_ed55_8ccd
        h = (h ^ (h >> 33)) &* 0xc4ce_b9fe_1a85_ec53
        h ^= h >> 33
        let block = (Int(truncatingIfNeeded: h) & blockMask) << 3
        var bits = h &* 0x9e37_79b9_7f4a_7c15
        bits ^= bits >> 29
        return (block, bits)
    }

    /// Row `row`'s counter: one word of the row's pair in the block, one nibble of that word.
    private func position(_ block: Int, _ bits: UInt64, row: Int) -> (word: Int, shift: UInt64) {
        let word = block + row << 1 + Int((bits >> UInt64(row)) & 1)
        let nibble = (bits >> UInt64(8 + 4 * row)) & 0xF
        return (word, nibble << 2)
    }
}

extension Int {
    /// The smallest power of two at least `self + 1`.
    fileprivate var nextPowerOfTwo: Int { self <= 0 ? 1 : 1 << (Int.bitWidth - (self).leadingZeroBitCount) }
}
