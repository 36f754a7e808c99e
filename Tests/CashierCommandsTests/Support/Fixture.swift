import Cashier
import CashierTestSupport
import Foundation

@testable import CashierCommands

/// What the tool's tests look at in a folder.
extension TemporaryFolder {
    /// The size in bytes of `key`'s entry file.
    func size(of key: String) -> Int {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path + "/" + DiskTier.fileName(for: key))
        return (attributes?[.size] as? NSNumber)?.intValue ?? -1
    }

    var totalSize: Int { ["avatar", "blob", "feed", "note", "profile"].reduce(0) { $0 + size(of: $1) } }

    /// Every file's bytes and access and modification times, to compare before and after a command.
    func snapshot() -> [String: FileSnapshot] {
        var result: [String: FileSnapshot] = [:]
        for name in fileNames {
            let full = path + "/" + name
            var st = stat()
            _ = stat(full, &st)
            let attributes = try? FileManager.default.attributesOfItem(atPath: full)
            result[name] = FileSnapshot(
                bytes: readWithoutTouching(full), modified: attributes?[.modificationDate] as? Date,
                accessed: accessTime(st))
        }
        return result
    }

    func write(_ name: String, _ bytes: Data) {
        _ = FileManager.default.createFile(atPath: path + "/" + name, contents: bytes)
    }
}

/// The file's bytes, read without updating its access time (O_NOATIME on Linux), so snapshots do not disturb what they compare.
private func readWithoutTouching(_ path: String) -> Data {
    #if os(Linux)
    let flags = O_RDONLY | 0o1000000
    #else
    let flags = O_RDONLY
    #endif
    let fd = open(path, flags)
    guard fd >= 0 else { return Data() }
    defer { _ = close(fd) }
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = read(fd, &buffer, buffer.count)
        if count <= 0 { break }
        data.append(contentsOf: buffer[0..<count])
    }
    return data
}

private func accessTime(_ st: stat) -> Double {
    #if canImport(Darwin)
    Double(st.st_atimespec.tv_sec) + Double(st.st_atimespec.tv_nsec) / 1e9
    #else
    Double(st.st_atim.tv_sec) + Double(st.st_atim.tv_nsec) / 1e9
    #endif
}

struct FileSnapshot: Equatable {
    var bytes: Data
    var modified: Date?
    var accessed: Double
}

/// What one in-process run of the tool printed and returned.
struct RunResult {
    var status: ExitStatus
    var output: String
    var error: String

    /// Standard output parsed as the one JSON document `--json` promises.
    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(output.utf8))) as? [String: Any] ?? [:]
    }
}

/// The moment the fixture's entries are written; commands run ten minutes later.
let writtenAt = Date(timeIntervalSince1970: 1_800_000_000)
let inspectedAt = writtenAt.addingTimeInterval(600)

func cashier(_ arguments: String..., now: Date = inspectedAt) -> RunResult {
    cashier(arguments, now: now)
}

func cashier(_ arguments: [String], now: Date = inspectedAt) -> RunResult {
    final class Buffer: @unchecked Sendable { // used by one thread: the command's own
        var output = "", error = ""
    }
    let buffer = Buffer()
    let console = Console(output: { buffer.output += $0 }, error: { buffer.error += $0 })
    let status = CashierCommands.run(arguments, console: console, now: now)
    return RunResult(status: status, output: buffer.output, error: buffer.error)
}

struct TestUser: Codable, Sendable, Equatable {
    var name: String
    var age: Int
}

enum FixtureKeys {
    static let profile = CacheKey<TestUser>("profile", schemaVersion: 2, lifespan: .hours(1))
    static let feed = CacheKey<[String]>("feed", lifespan: .minutes(5), codec: .propertyList)
    static let blob = CacheKey<Data>("blob")
    static let avatar = "avatar"
    static let note = "note"
}

/// A 1 × 1 PNG (the smallest complete one).
let onePixelPNG = Data([
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0xF8, 0xCF, 0xC0, 0xF0,
    0x1F, 0x00, 0x05, 0x00, 0x01, 0xFF, 0x89, 0x99, 0x3D, 0x1D, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
])

/// A cache folder written through the library: five entries, one expired (feed),
/// one locked (avatar), one JSON, one property list, raw bytes and a PNG.
func makeFixture(_ folder: TemporaryFolder, at date: Date = writtenAt) throws -> Cache {
    var configuration = Cache.Configuration(name: "fixture")
    configuration.location = .directory(folder.url)
    // A folder without a store (as 0.1.0 and SQLite's absence leave one): these tests read and
    // damage entry files; StoreRowsTests cover folders with a store.
    configuration.usesStore = false
    configuration.appVersion = "1.0"
    configuration.now = { date }
    let cache = Cache(configuration)
    try cache.set(TestUser(name: "Ada", age: 36), for: FixtureKeys.profile)
    try cache.set(["one", "two"], for: FixtureKeys.feed)
    try cache.set(Data((0..<1000).map { UInt8(truncatingIfNeeded: $0) }), for: FixtureKeys.blob)
    try cache.setImage(pngData: onePixelPNG, forKey: FixtureKeys.avatar)
    cache.lock(CacheKey<Data>(FixtureKeys.avatar))
    try cache.setString("hello", forKey: FixtureKeys.note)
    return cache
}

/// Flips one payload byte of `key`'s entry file: its checksum no longer matches.
func damage(_ key: String, in folder: TemporaryFolder) throws {
    let path = folder.path + "/" + DiskTier.fileName(for: key)
    var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
    bytes[bytes.count - 1] ^= 0xFF
    try bytes.write(to: URL(fileURLWithPath: path))
}
