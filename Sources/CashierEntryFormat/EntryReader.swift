import Foundation

/// How an entry file is read, by the cache and the `cashier-tool` alike: the one reader,
/// fuzzed once (Tests/Fuzz/EntryFuzzer.swift links this module, CashierEntryFormat).
///
/// No byte of the file decides an allocation before it is checked:
/// 1. the first ``prefixLength`` bytes (at most; the whole file for most entries) are read
///    into a block of that size, or, when the payload is wanted, the whole file if `fstat`
///    says it is at most ``wholeReadLength`` (the file system's length, not a field of the
///    file: one read instead of two);
/// 2. ``EntryHeader/decodePrefix(_:fileLength:)`` checks the declared header and payload
///    lengths against the file's size and ``EntryHeader/maximumEntryLength``;
/// 3. only then is the block grown to exactly header plus payload (`realloc`: no zero-fill),
///    the rest read into it, and the checksum verified over it;
/// 4. the payload is handed out as a `Data` over that same block, from the payload's first
///    byte (indices start at 0), freed with the `Data`: one copy from the kernel, no more.
///
/// A failed allocation is ``Outcome/outOfMemory``, never a trap. Files are never mapped:
/// another program truncating a mapped file would turn a read into a SIGBUS.
package enum EntryReader {
    /// How much is read before the header is judged: the header and payload of most entries.
    package static let prefixLength = 4096
    /// Files up to this long are read in one piece when their payload is wanted: 1 MiB.
    package static let wholeReadLength = 1 << 20

    package enum Outcome {
        /// A sound entry, checksum verified when the payload was read; the payload when asked for.
        case entry(EntryHeader, payload: Data?)
        /// Damage, with the header when it decoded (a checksum mismatch, a file cut short).
        case damaged(EntryFormatError, header: EntryHeader?)
        /// An allocation of at most the validated entry's length failed: nothing is known of the file.
        case outOfMemory
    }

    /// Reads an entry from a file that `fstat` says is `size` bytes long.
    ///
    /// - Parameters:
    ///   - size: the file's length in bytes, from its `fstat`.
    ///   - wantsPayload: whether to read and verify the payload; `false` reads the header
    ///     only (no checksum: listings and housekeeping).
    ///   - read: fills a buffer from an offset of the file, answering how many bytes it
    ///     read (fewer only where the file ends); its errors are rethrown.
    package static func read<Failure: Error>(
        size: Int, wantsPayload: Bool,
        from read: (UnsafeMutableRawBufferPointer, Int) throws(Failure) -> Int
    ) throws(Failure) -> Outcome {
        let first = min(max(size, 0), wantsPayload && size <= wholeReadLength ? size : prefixLength)
        guard var block = malloc(max(first, 1)) else { return .outOfMemory }
        var ownsBlock = true
        defer { if ownsBlock { free(block) } }

        var filled = try read(UnsafeMutableRawBufferPointer(start: block, count: first), 0)
        // Shorter than `fstat` said: the file shrank meanwhile; judge what it is now.
        let fileLength = filled < first ? filled : size
        // The header, when the prefix held all of it.
        let known: EntryHeader?
        let wanted: Int
        switch decode(block, filled, fileLength: fileLength) {
        case .success(let decoded):
            known = decoded
            wanted = wantsPayload ? fileLength : filled
        case .failure(.needMoreBytes(let headerLength)):
            known = nil
            // decodePrefix checked the lengths first: the header is at most 16 MiB, and
            // header plus payload is the file's length, at most `maximumEntryLength`.
            wanted = wantsPayload ? fileLength : headerLength
        case .failure(let error):
            return .damaged(error, header: nil)
        }

        if wanted > filled {
            guard let grown = realloc(block, wanted) else { return .outOfMemory }
            block = grown
            let rest = UnsafeMutableRawBufferPointer(start: block + filled, count: wanted - filled)
            let count = try read(rest, filled)
            filled += count
            guard count == rest.count else {
                return .damaged(.lengthMismatch(expected: fileLength, actual: filled), header: known)
            }
        }
        let header: EntryHeader
        if let known {
            header = known
        } else {
            switch decode(block, filled, fileLength: fileLength) {
            case .success(let decoded): header = decoded
            case .failure(let error): return .damaged(error, header: nil)
            }
        }
        guard wantsPayload else { return .entry(header, payload: nil) }

        do throws(EntryFormatError) {
            try header.verifyChecksum(file: UnsafeRawBufferPointer(start: block, count: filled))
        } catch {
            return .damaged(error, header: header)
        }
        guard header.payloadLength > 0 else { return .entry(header, payload: Data()) }
        ownsBlock = false
        let owned = block
        let payload = Data(
            bytesNoCopy: block + header.length, count: header.payloadLength,
            deallocator: .custom { _, _ in free(owned) })
        return .entry(header, payload: payload)
    }

    private static func decode(_ block: UnsafeMutableRawPointer, _ count: Int, fileLength: Int) -> Result<
        EntryHeader, EntryFormatError
    > {
        Result { () throws(EntryFormatError) in
            try EntryHeader.decodePrefix(UnsafeRawBufferPointer(start: block, count: count), fileLength: fileLength)
        }
    }
}
