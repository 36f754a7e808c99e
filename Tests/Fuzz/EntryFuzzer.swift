// libFuzzer entry point over the entry-file parser (EntryHeader.decode and
// decodePrefix). Compiled by .ci/fuzz.sh together with the library's format
// sources into one module, so nothing here is part of the package's targets.
//
// Each input is tried twice: as it is, and with its checksum field recomputed,
// so that mutations get past the checksum and reach every field check.
// It traps (and libFuzzer reports the input) when the parser breaks a promise:
// - decode(file:) and decodePrefix(_:fileLength:) must never trap, whatever the bytes;
// - what decode(file:) accepts, decodePrefix accepts too and reads the same;
// - an accepted entry re-encodes to a header of the length it claims, whose
//   checksum matches, and which decodes back to the same entry.
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

func check(_ file: UnsafeRawBufferPointer) {
    let size = file.count

    // Any prefix length, as listing reads a prefix of the file before the rest.
    let prefixLength = size == 0 ? 0 : Int(file[size - 1]) * 3 % (size + 1)
    _ = try? EntryHeader.decodePrefix(UnsafeRawBufferPointer(rebasing: file[0..<prefixLength]), fileLength: size)

    guard let (header, payloadRange) = try? EntryHeader.decode(file: file) else { return }
    guard payloadRange.upperBound == size, payloadRange.lowerBound == header.length,
          payloadRange.count == header.payloadLength else {
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
