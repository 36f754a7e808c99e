import CashierEntryFormat
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// No payload's shape decides a recursion depth: what `PropertyListDecoder` would parse
/// recursively is refused first. (JSON payloads stop at 512 levels: PayloadDecoder and
/// `JSONDecoder` both limit nesting.)
@Suite struct PayloadShapeTests {
    let folder = TemporaryFolder()
    let events = EventLog()
    let key = CacheKey<[Int]>("numbers", codec: .propertyList)

    /// Writes `payload` as `key`'s property-list payload, with a sound header and checksum.
    private func plant(_ payload: Data) throws {
        try Cache(makeConfiguration(folder, storage: .files)).set([1], for: key)
        let header = EntryHeader(
            key: key.name, typeName: ValueCoding.typeName(of: [Int].self), format: .propertyList,
            createdAt: 1_800_000_000,
            validatedAt: 1_800_000_000, lifespan: .never, schemaVersion: nil, appVersion: "1.0", isLocked: false,
            payloadLength: payload.count)
        let options = DiskTier.WriteOptions(
            filePermissions: 0o600, folderPermissions: 0o700, synchronize: false, completeProtection: false)
        _ = try DiskTier(folder: folder.path).write(
            DiskTier.fileName(for: key.name), header: header, payload: payload, options: options)
    }

    /// Before: `PropertyListDecoder` parsed the XML recursively and overflowed the stack (SIGSEGV).
    @Test func aDeeplyNestedXMLPropertyListIsUndecodableNotACrash() throws {
        let depth = 50_000
        let xml =
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><plist version=\"1.0\">"
            + String(repeating: "<array>", count: depth) + String(repeating: "</array>", count: depth) + "</plist>"
        try plant(Data(xml.utf8))
        #expect(Cache(makeConfiguration(folder, events: events, storage: .files)).value(for: key) == nil)
        #expect(events.discards.map(\.1) == [.undecodable])
    }

    @Test func binaryPropertyListsCashierWroteStillRead() throws {
        try Cache(makeConfiguration(folder, storage: .files)).set([1, 2, 3], for: key)
        #expect(Cache(makeConfiguration(folder, events: events, storage: .files)).value(for: key) == [1, 2, 3])
        #expect(events.discards.isEmpty)
    }
}
