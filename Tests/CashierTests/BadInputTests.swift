import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

@Suite struct BadInputTests {
    let folder = TemporaryFolder()

    static let hostileKeys: [HostileKey] = [
        "", ".", "..", "/", "../../../../tmp/escape", "a/b/c", "\0", "nul\0inside", "line\nbreak\r\n",
        HostileKey(String(repeating: "k", count: 10_000)), "🧀💾", "~", "$HOME", "\\..\\..", " ", "é\u{301}",
    ]

    @Test(arguments: hostileKeys)
    func anyStringIsAKeyAndStaysInTheFolder(hostile: HostileKey) throws {
        let name = hostile.name
        let cache = Cache(makeConfiguration(folder, storage: .files))
        let key = CacheKey<String>(name)
        try cache.set("value of \(name.count)", for: key)
        #expect(Cache(makeConfiguration(folder, storage: .files)).value(for: key) == "value of \(name.count)")
        #expect(Cache(makeConfiguration(folder, storage: .files)).keys == [name])
        let files = folder.fileNames.filter { !$0.hasPrefix(".") && !$0.hasPrefix(DiskTier.storeFileName) }
        #expect(files == [DiskTier.fileName(for: name)])
        cache.removeValue(for: key)
        #expect(folder.entryFiles.isEmpty)
    }

    @Test func keysThatDifferOnlyByNormalizationAreOneKey() throws {
        let cache = Cache(makeConfiguration(folder, storage: .files))
        try cache.set(1, for: CacheKey<Int>("\u{E9}"))
        try cache.set(2, for: CacheKey<Int>("e\u{301}"))
        // Swift's String == treats these as equal, and so does the cache, on disk too (KeyIdentityTests).
        #expect(Cache(makeConfiguration(folder, storage: .files)).count == 1)
        #expect(Cache(makeConfiguration(folder, storage: .files)).value(for: CacheKey<Int>("\u{E9}")) == 2)
    }

    @Test(arguments: ["", ".", "..", "a/../../b", "name with spaces", "🧀"])
    func cacheNamesBecomeOneSafeFolder(name: String) {
        var configuration = Cache.Configuration(name: name)
        configuration.location = .caches
        let path = Cache.folderPath(for: configuration)!
        let component = (path as NSString).lastPathComponent
        #expect(!component.contains("/"))
        #expect(component != "." && component != "..")
        #expect((path as NSString).deletingLastPathComponent.hasSuffix("/Cashier"))
    }

    @Test func folderThatIsAFileMakesSetThrowNamingKeyAndCause() throws {
        try Data("x".utf8).write(to: folder.url)
        let events = EventLog()
        let cache = Cache(makeConfiguration(folder, events: events, storage: .files))
        #expect {
            try cache.set(1, for: CacheKey<Int>("k"))
        } throws: { error in
            guard let error = error as? CacheError else { return false }
            return error.key == "k" && error.kind == .folderUnavailable && error.description.contains("\"k\"")
        }
        #expect(cache.value(for: CacheKey<Int>("k")) == nil)
        #expect(events.failures.count == 1)
        #expect(try Data(contentsOf: folder.url) == Data("x".utf8))
    }

    @Test func folderDeletedWhileInUseIsRecreatedByTheNextWrite() throws {
        let cache = Cache(makeConfiguration(folder, storage: .files))
        try cache.set(1, for: CacheKey<Int>("a"))
        try FileManager.default.removeItem(at: folder.url)
        #expect(cache.value(for: CacheKey<Int>("b")) == nil)
        try cache.set(2, for: CacheKey<Int>("b"))
        #expect(Cache(makeConfiguration(folder, storage: .files)).value(for: CacheKey<Int>("b")) == 2)
    }

    @Test func valueThatCannotBeEncodedThrowsEncodingFailed() {
        let cache = Cache(makeConfiguration(folder, storage: .files))
        #expect {
            try cache.set(Double.nan, for: CacheKey<Double>("nan"))
        } throws: { error in
            (error as? CacheError)?.kind == .encodingFailed && (error as? CacheError)?.key == "nan"
        }
        #expect(folder.entryFiles.isEmpty)
    }

    @Test func failedWriteKeepsThePreviousValue() throws {
        let cache = Cache(makeConfiguration(folder, storage: .files))
        let key = CacheKey<Double>("x")
        try cache.set(1.5, for: key)
        #expect(throws: CacheError.self) { try cache.set(.infinity, for: key) }
        #expect(cache.value(for: key) == 1.5)
        #expect(Cache(makeConfiguration(folder, storage: .files)).value(for: key) == 1.5)
    }

    @Test func completeProtectionWritesOwnerOnlyFilesAndFolder() throws {
        var configuration = makeConfiguration(folder, storage: .files)
        configuration.fileProtection = .complete
        try Cache(configuration).set(1, for: CacheKey<Int>("k"))
        let folderMode = try #require(
            FileManager.default.attributesOfItem(atPath: folder.path)[.posixPermissions] as? Int)
        let fileMode = try #require(
            FileManager.default.attributesOfItem(atPath: folder.path + "/" + folder.entryFiles[0])[.posixPermissions]
                as? Int)
        #expect(folderMode & 0o777 == 0o700)
        #expect(fileMode & 0o777 == 0o600)
    }

    @Test func noTemporaryFileIsLeftAfterWrites() throws {
        let cache = Cache(makeConfiguration(folder, storage: .files))
        for i in 0..<20 { try cache.set(i, for: CacheKey<Int>("k\(i % 3)")) }
        #expect(folder.fileNames.allSatisfy { !$0.hasPrefix(DiskTier.temporaryPrefix) })
    }

    @Test func abandonedTemporaryFilesAreRemovedByGarbageCollection() throws {
        let cache = Cache(makeConfiguration(folder, storage: .files))
        try cache.set(1, for: CacheKey<Int>("k"))
        // A writer that died: a pid that cannot be running.
        try Data("half".utf8).write(to: folder.url.appendingPathComponent(".tmp-2147483646-1"))
        cache.collectGarbage()
        #expect(folder.fileNames.allSatisfy { !$0.hasPrefix(DiskTier.temporaryPrefix) })
        #expect(cache.value(for: CacheKey<Int>("k")) == 1)
    }
}

/// A key name as a test argument, described readably: Swift Testing prints an argument's
/// description in the console, where a NUL, a newline or 10,000 `k`s would garble the line.
struct HostileKey: Sendable, ExpressibleByStringLiteral, CustomTestStringConvertible {
    let name: String

    init(_ name: String) { self.name = name }
    init(stringLiteral name: String) { self.init(name) }

    /// The name as a Swift literal with control characters escaped (`"nul\0inside"`), cut
    /// after 40 characters with its length.
    var testDescription: String {
        let shown = name.count > 40 ? String(name.prefix(40)) : name
        let escaped = shown.unicodeScalars.map { scalar -> String in
            switch scalar {
            case "\0": return "\\0"
            case "\n": return "\\n"
            case "\r": return "\\r"
            case "\t": return "\\t"
            case "\\": return "\\\\"
            case "\"": return "\\\""
            default:
                return scalar.properties.generalCategory == .control
                    || scalar.properties.generalCategory == .nonspacingMark
                    ? "\\u{\(String(scalar.value, radix: 16, uppercase: true))}" : String(scalar)
            }
        }.joined()
        return name.count > 40 ? "\"\(escaped)…\" (\(name.count) characters)" : "\"\(escaped)\""
    }
}
