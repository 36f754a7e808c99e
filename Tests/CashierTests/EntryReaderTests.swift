import CashierEntryFormat
import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The one entry reader (EntryReader.swift): nothing on disk decides an allocation before
/// the header's lengths are checked, the payload is read once into the buffer handed out,
/// and damage of any size or shape is a miss.
@Suite struct EntryReaderTests {
    let folder = TemporaryFolder()
    let events = EventLog()
    let reads = ReadRecordingFileSystem()

    private func cache(memoryCountLimit: Int? = 0) -> Cache {
        var configuration = makeConfiguration(folder, events: events, storage: .files)
        configuration.fileSystem = reads
        configuration.memoryCountLimit = memoryCountLimit
        return Cache(configuration)
    }

    private func entryPath(_ key: String) -> String { folder.path + "/" + DiskTier.fileName(for: key) }

    /// Makes `key`'s entry file a sparse file of `size` bytes whose first bytes are `prefix`.
    private func plantSparseFile(_ key: String, size: Int64, prefix: [UInt8] = []) throws {
        let path = entryPath(key)
        unlink(path)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(fd >= 0)
        defer { close(fd) }
        _ = prefix.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        try #require(ftruncate(fd, off_t(size)) == 0)
    }

    /// A sound header for `key` that declares a payload of `payloadLength` bytes.
    private func header(_ key: String, payloadLength: Int) -> [UInt8] {
        let header = EntryHeader(
            key: key, typeName: ValueCoding.typeName(of: Data.self), format: .raw, createdAt: 1_800_000_000,
            validatedAt: 1_800_000_000, lifespan: .never, schemaVersion: nil, appVersion: "1.0", isLocked: false,
            payloadLength: payloadLength)
        // The checksum is not what is judged first: lengths are.
        let empty = [UInt8](repeating: 0, count: payloadLength <= 1 << 20 ? payloadLength : 0)
        var bytes = empty.withUnsafeBytes { payload in
            var copy = header
            copy.payloadLength = payload.count
            return copy.encode(payload: payload)
        }
        withUnsafeBytes(of: UInt64(payloadLength).littleEndian) {
            for (i, byte) in $0.enumerated() { bytes[48 + i] = byte }
        }
        return bytes
    }

    @Test func aFortyGigabyteSparseFileIsACorruptMissAndIsRemoved() throws {
        let cache = cache()
        let key = CacheKey<Data>("photo")
        try cache.set(Data([1, 2, 3]), for: key)
        try plantSparseFile(key.name, size: 40 << 30)
        reads.clear()
        #expect(cache.value(for: key) == nil)
        #expect(events.discards.map(\.0) == ["photo"])
        #expect(events.discards.map(\.1) == [.corrupt])
        #expect(!FileManager.default.fileExists(atPath: entryPath(key.name)))
        // Bounded: no more than the 4 KiB prefix was ever asked of the file.
        #expect(reads.largestRead <= EntryReader.prefixLength)
    }

    /// A header that is sound but claims 40 GB, in a file of 40 GB: the lengths agree, the maximum does not.
    @Test func aHeaderThatClaimsMoreThanTheMaximumEntryIsTooLarge() throws {
        let cache = cache()
        let key = CacheKey<Data>("huge")
        try cache.set(Data([1]), for: key)
        let bytes = header(key.name, payloadLength: 40 << 30)
        try plantSparseFile(key.name, size: Int64(bytes.count) + (40 << 30), prefix: bytes)
        reads.clear()
        guard case .damaged(let error, _, _) = reads.readEntry(entryPath(key.name)) else {
            Issue.record("read a 40 GB entry")
            return
        }
        #expect(error == .tooLarge(bytes.count + (40 << 30)))
        #expect(reads.largestRead <= EntryReader.prefixLength)
        #expect(cache.value(for: key) == nil)
        #expect(events.discards.map(\.1) == [.corrupt])
    }

    /// The header checks the declared payload against the maximum before the file's length.
    @Test func aDeclaredPayloadOverTheMaximumIsTooLargeWhateverTheFileHolds() throws {
        let bytes = header("k", payloadLength: EntryHeader.maximumEntryLength)
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(EntryFormatError) in try EntryHeader.decodePrefix(raw, fileLength: raw.count) }
        }
        #expect(throws: EntryFormatError.tooLarge(bytes.count + EntryHeader.maximumEntryLength)) { try result.get() }
    }

    @Test func aHeaderThatClaimsMoreThanTheFileHoldsAllocatesNothingForIt() throws {
        let cache = cache()
        let key = CacheKey<Data>("short")
        try cache.set(Data([1]), for: key)
        let bytes = header(key.name, payloadLength: 512 << 20) + [1, 2, 3]
        try plantSparseFile(key.name, size: Int64(bytes.count), prefix: bytes)
        reads.clear()
        guard case .damaged(let error, _, _) = reads.readEntry(entryPath(key.name)) else {
            Issue.record("read a short entry")
            return
        }
        #expect(error == .lengthMismatch(expected: bytes.count - 3 + (512 << 20), actual: bytes.count))
        #expect(reads.largestRead <= EntryReader.prefixLength)
    }

    /// Entries around the prefix's length, with short and long (over 4 KiB) keys, read back
    /// whole; their payloads' indices start at 0.
    @Test(arguments: [1, 5_000], [0, 1, 4_000, 4_095, 4_096, 4_097, 65_536, 1 << 20])
    func entriesOfEverySizeAroundThePrefixReadBack(keyLength: Int, payloadLength: Int) throws {
        let cache = cache()
        let key = CacheKey<Data>(String(repeating: "k", count: keyLength))
        let value = Data((0..<payloadLength).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try cache.set(value, for: key)
        let read = try #require(cache.value(for: key))
        #expect(read == value)
        #expect(read.startIndex == 0)
        #expect(cache.keys == [key.name])
        #expect(events.discards.isEmpty)
    }

    /// The payload handed out is the buffer the kernel filled: no zero-filled `Data(count:)`,
    /// no `subdata` copy. Its bytes lie in the block the reader asked `pread` to fill: the
    /// whole file's at once up to `wholeReadLength`, else the prefix's, grown for the rest.
    @Test(arguments: [100_000, EntryReader.wholeReadLength + 1])
    func thePayloadIsTheBufferTheKernelFilled(length: Int) throws {
        let cache = cache()
        let key = CacheKey<Data>("blob")
        try cache.set(Data(repeating: 7, count: length), for: key)
        reads.clear()
        guard case .entry(let header, let payload, let info) = reads.readEntry(entryPath(key.name)) else {
            Issue.record("no entry")
            return
        }
        let buffers = reads.buffers
        let payloadStart = payload.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
        let last = try #require(buffers.last)
        if info.size <= EntryReader.wholeReadLength {
            #expect(buffers.count == 1) // the whole file
            #expect(last.offset == 0)
            #expect(payloadStart == last.address + UInt(header.length))
        } else {
            #expect(buffers.count == 2) // the prefix, then the rest into the grown block
            #expect(last.offset == EntryReader.prefixLength)
            #expect(payloadStart == last.address - UInt(EntryReader.prefixLength) + UInt(header.length))
        }
        #expect(payload.count == length && payload.startIndex == 0)
    }

    /// The checksum is verified on every read from disk, large payloads included.
    @Test func aFlippedByteInALargePayloadIsACorruptMiss() throws {
        let cache = cache()
        let key = CacheKey<Data>("large")
        try cache.set(Data(repeating: 1, count: 300_000), for: key)
        let handle = try #require(FileHandle(forUpdatingAtPath: entryPath(key.name)))
        try handle.seek(toOffset: 200_000)
        try handle.write(contentsOf: Data([2]))
        try handle.close()
        #expect(cache.value(for: key) == nil)
        #expect(events.discards.map(\.1) == [.corrupt])
    }

    /// A file read whole (up to `wholeReadLength`) that comes back shorter is judged at the
    /// length read: its header's lengths do not match it. A longer one is cut after its header
    /// was read: damage with that header.
    @Test(arguments: [50_000, EntryReader.wholeReadLength + 1])
    func aFileThatShrinksBetweenStatAndReadIsDamageNotATrap(length: Int) throws {
        let cache = cache()
        let key = CacheKey<Data>("shrinking")
        try cache.set(Data(repeating: 3, count: length), for: key)
        reads.truncateAfterOpen = 20_000
        guard case .damaged(let error, let info, let header) = reads.readEntry(entryPath(key.name)) else {
            Issue.record("read a file cut short")
            return
        }
        #expect(info.size > length)
        #expect(header?.key == (length <= EntryReader.wholeReadLength ? nil : key.name))
        if case .lengthMismatch(_, let actual) = error { #expect(actual == 20_000) } else { Issue.record("\(error)") }
    }

    @Test func aFolderInAnEntrysPlaceIsACorruptMiss() throws {
        let cache = cache()
        let key = CacheKey<Data>("folder")
        try cache.set(Data([1]), for: key)
        unlink(entryPath(key.name))
        try #require(mkdir(entryPath(key.name), 0o700) == 0)
        #expect(cache.value(for: key) == nil)
        #expect(events.discards.map(\.1) == [.corrupt])
        guard case .damaged(.notAFile, _, _) = reads.readEntry(entryPath(key.name)) else {
            Issue.record("a folder read as something else than notAFile")
            return
        }
    }

    /// `set` refuses what no read would accept. The value is 1 GiB of untouched zero pages.
    @Test func settingAnEntryOverTheMaximumThrowsInvalidValueNamingTheLimit() throws {
        let cache = cache()
        let key = CacheKey<Data>("enormous")
        try cache.set(Data([1]), for: key)
        let value = Data(count: EntryHeader.maximumEntryLength)
        do {
            try cache.set(value, for: key)
            Issue.record("stored a value over the maximum")
        } catch let error as CacheError {
            #expect(error.kind == .invalidValue)
            #expect(error.key == "enormous")
            #expect(error.description.contains("\(EntryHeader.maximumEntryLength) bytes (1 GiB)"))
        }
        #expect(cache.value(for: key) == Data([1]))
    }

    @Test func aHeaderOnlyReadReadsNoMoreThanTheHeader() throws {
        let cache = cache()
        let key = CacheKey<Data>(String(repeating: "h", count: 10_000))
        try cache.set(Data(repeating: 9, count: 1 << 20), for: key)
        reads.clear()
        guard case .success(let (header, _)) = reads.readEntryHeader(entryPath(key.name)) else {
            Issue.record("no header")
            return
        }
        #expect(header.key == key.name)
        #expect(reads.buffers.reduce(0) { $0 + $1.count } == header.length)
    }
}

/// The real file system, recording each buffer the reader asks `pread` to fill; optionally
/// truncating a file right after it is opened (and `fstat`ed), as another program might.
final class ReadRecordingFileSystem: ForwardingFileSystem {
    struct Buffer: Sendable {
        var address: UInt
        var count: Int
        var offset: Int
    }

    let base = POSIXFileSystem()
    private let state = Locked<(buffers: [Buffer], truncateAfterOpen: Int?)>(([], nil))

    var buffers: [Buffer] { state.withLock { $0.buffers } }
    var largestRead: Int { buffers.map(\.count).max() ?? 0 }
    var truncateAfterOpen: Int? {
        get { state.withLock { $0.truncateAfterOpen } }
        set { state.withLock { $0.truncateAfterOpen = newValue } }
    }
    func clear() { state.withLock { $0.buffers.removeAll() } }

    func openForReading(_ path: String) throws(SystemError) -> OpenFile {
        let file = try base.openForReading(path)
        if let length = truncateAfterOpen { _ = truncate(path, off_t(length)) }
        return file
    }

    func readFile(_ file: OpenFile, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(SystemError)
        -> Int
    {
        state.withLock {
            $0.buffers.append(
                Buffer(address: UInt(bitPattern: buffer.baseAddress), count: buffer.count, offset: offset))
        }
        return try base.readFile(file, into: buffer, at: offset)
    }
}
