extension UnsafeRawBufferPointer {
    /// Whether every byte is below 0x80, tested eight at a time. Such bytes are ASCII, which is
    /// UTF-8 that `String(decoding:as:)` takes as it is, with nothing to validate or repair.
    @inlinable package var isASCII: Bool {
        var index = 0
        var high: UInt64 = 0
        while index + 8 <= count {
            high |= loadUnaligned(fromByteOffset: index, as: UInt64.self)
            index += 8
        }
        while index < count {
            high |= UInt64(self[index])
            index += 1
        }
        return high & 0x8080_8080_8080_8080 == 0
    }
}
