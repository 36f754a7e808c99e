// libFuzzer entry point over the entry-file parser (EntryHeader.decode and
// decodePrefix) and the one reader the cache and the tool share (EntryReader.read).
// Built by .ci/fuzz.sh against the CashierEntryFormat target (compiled whole, with the
// fuzzer's instrumentation); nothing here is part of the package's targets.
//
// Each input is tried twice: as it is, and with its checksum field recomputed,
// so that mutations get past the checksum and reach every field check.
// It traps (and libFuzzer reports the input) when the parser breaks a promise:
// - decode(file:) and decodePrefix(_:fileLength:) must never trap, whatever the bytes;
// - what decode(file:) accepts, decodePrefix accepts too and reads the same;
// - an accepted entry re-encodes to a header of the length it claims, whose
//   checksum matches, and which decodes back to the same entry;
// - EntryReader.read, over the input as a file whose `fstat` size is the input's
//   length, or one the last bytes choose (up to 40 GB: a sparse file, a file that
//   shrank or grew since), never asks to read past what the header's checked lengths
//   allow, never reads more than a 4 KiB prefix of a file that is not a sound length,
//   accepts exactly what decode(file:) accepts, and hands out the same payload.
//   Oversized allocations are caught by libFuzzer's -malloc_limit_mb.
import CashierEntryFormat
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEntryFile(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let file = UnsafeRawBufferPointer(start: data, count: size)
    check(file)
    guard size >= EntryHeader.fixedLength else { return 0 }
    var resealed = Array(file)
    resealed.withUnsafeMutableBytes { bytes in
        let claimed = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self)))
        let headerLength = min(max(claimed, EntryHeader.fixedLength), size)
        let sum = EntryHeader.checksum(
            header: UnsafeRawBufferPointer(rebasing: bytes[0..<headerLength]),
            payload: UnsafeRawBufferPointer(rebasing: bytes[headerLength...]))
        bytes.storeBytes(of: sum.littleEndian, toByteOffset: 72, as: UInt64.self)
        check(UnsafeRawBufferPointer(bytes))
    }
    return 0
}

/// Runs the reader over `file` as if `fstat` said it is `claimedSize` bytes long.
func checkReader(_ file: UnsafeRawBufferPointer, claimedSize: Int, wantsPayload: Bool) {
    var requested = 0
    let outcome = EntryReader.read(size: claimedSize, wantsPayload: wantsPayload) {
        (buffer: UnsafeMutableRawBufferPointer, offset: Int) -> Int in
        requested = max(requested, offset + buffer.count)
        guard offset < file.count else { return 0 }
        let count = min(buffer.count, file.count - offset)
        buffer.baseAddress!.copyMemory(from: file.baseAddress! + offset, byteCount: count)
        return count
    }
    // Past the prefix, only the lengths a checked header declares are read.
    if requested > EntryReader.prefixLength {
        guard claimedSize <= EntryHeader.maximumEntryLength, requested <= claimedSize else {
            fatalError("the reader asked for \(requested) bytes of a file claimed to be \(claimedSize)")
        }
    }
    guard wantsPayload else {
        if case .entry(_, let payload?) = outcome {
            fatalError("a header-only read returned a payload (\(payload.count) bytes)")
        }
        return
    }
    // What the reader sees: the first `claimedSize` bytes of a file that grew since `fstat`;
    // of one that shrank, the whole file when it is shorter than the first read, else nothing sound.
    let visible: UnsafeRawBufferPointer?
    if claimedSize <= file.count {
        visible = UnsafeRawBufferPointer(rebasing: file[0..<claimedSize])
    } else {
        visible = file.count < min(claimedSize, EntryReader.prefixLength) ? file : nil
    }
    let decoded = visible.flatMap { try? EntryHeader.decode(file: $0) }
    switch outcome {
    case .entry(let header, let payload):
        guard let visible, let decoded, decoded.header == header, let payload, payload.startIndex == 0,
            payload.elementsEqual(visible[decoded.payload])
        else {
            fatalError("the reader accepted what decode(file:) does not, or read another payload")
        }
    case .damaged:
        if decoded != nil { fatalError("the reader refused what decode(file:) accepts") }
    case .outOfMemory:
        break
    }
}

func check(_ file: UnsafeRawBufferPointer) {
    let size = file.count

    // The reader, over the file as it is and as a file of another claimed size: the input's
    // last two bytes pick a size around its length, or one past the maximum entry (40 GB).
    checkReader(file, claimedSize: size, wantsPayload: true)
    checkReader(file, claimedSize: size, wantsPayload: false)
    if size >= 2 {
        let choice = Int(file[size - 2]) << 8 | Int(file[size - 1])
        let claimed =
            choice & 1 == 0
            ? size + choice % 8_192 - 4_096 : (choice & 2 == 0 ? 40 << 30 : EntryHeader.maximumEntryLength + choice)
        checkReader(file, claimedSize: max(claimed, 0), wantsPayload: choice & 4 == 0)
    }
    // decodePrefix against any claimed file length, the maximum's neighbours included.
    for fileLength in [EntryHeader.maximumEntryLength, EntryHeader.maximumEntryLength + 1, 40 << 30, Int.max] {
        _ = try? EntryHeader.decodePrefix(file, fileLength: fileLength)
    }

    // Any prefix length, as listing reads a prefix of the file before the rest.
    let prefixLength = size == 0 ? 0 : Int(file[size - 1]) * 3 % (size + 1)
    _ = try? EntryHeader.decodePrefix(UnsafeRawBufferPointer(rebasing: file[0..<prefixLength]), fileLength: size)

    guard let (header, payloadRange) = try? EntryHeader.decode(file: file) else { return }
    guard payloadRange.upperBound == size, payloadRange.lowerBound == header.length,
        payloadRange.count == header.payloadLength
    else {
        fatalError("decode accepted a file whose payload range \(payloadRange) disagrees with its header")
    }
    guard let prefixHeader = try? EntryHeader.decodePrefix(file, fileLength: size), prefixHeader == header else {
        fatalError("decodePrefix disagrees with decode on an accepted file")
    }
    let payload = UnsafeRawBufferPointer(rebasing: file[payloadRange])
    var encoded = header.encode(payload: payload)
    guard encoded.count == header.length else { fatalError("re-encoded header has the wrong length") }
    encoded.append(contentsOf: payload)
    encoded.withUnsafeBytes { bytes in
        guard let (again, _) = try? EntryHeader.decode(file: bytes) else {
            fatalError("a re-encoded entry does not decode")
        }
        var expected = header
        expected.checksum = again.checksum
        guard again == expected else { fatalError("a re-encoded entry decodes to another entry") }
    }
}
