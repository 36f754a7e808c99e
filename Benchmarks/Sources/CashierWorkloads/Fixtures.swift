import Cashier
import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The value every benchmark stores: 187 bytes of JSON, as in the measurements.
public struct User: Codable, Sendable, Equatable {
    public var id: Int
    public var name: String
    public var email: String
    public var bio: String
    public var tags: [String]
    public var score: Double
    public var verified: Bool

    public static let sample = User(
        id: 42, name: "Ada Lovelace", email: "ada@analytical.engine",
        bio: "Wrote the first program for a machine that did not exist yet.",
        tags: ["math", "poetry", "engines"], score: 98.5, verified: true)
}

/// A folder under the system's temporary directory, removed with the value.
///
/// Every scratch folder of a process lies in one folder of its own, `cashier-bench-<pid>-<id>`,
/// removed when the process exits: fixtures held by globals (package-benchmark registers every
/// pair in each of its benchmark processes) are never deinitialized, and their folders, about
/// 90 MB a process, once filled the volume of a CI machine. Folders left by processes that
/// died are removed by the next process that makes one.
public final class Scratch: @unchecked Sendable {
    public let url: URL
    public var path: String { url.path }

    public init(_ label: String) {
        url = Self.processFolder.appendingPathComponent(
            "\(label)-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// This process's folder of scratch folders, made (and set to be removed at exit) on first use.
    private static let processFolder: URL = {
        let temporary = URL(fileURLWithPath: NSTemporaryDirectory())
        removeFoldersOfDeadProcesses(in: temporary)
        let folder = temporary.appendingPathComponent(
            "cashier-bench-\(getpid())-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        processFolderPath = folder.path
        atexit { if let path = processFolderPath { try? FileManager.default.removeItem(atPath: path) } }
        return folder
    }()

    /// Read by the `atexit` handler, which can capture nothing; set once, before the handler is.
    nonisolated(unsafe) private static var processFolderPath: String?

    /// Removes the folders of processes that no longer run (killed or crashed): this layout's
    /// `cashier-bench-<pid>-<id>` and the earlier `cashier-bench-<label>-<pid>-<id>`.
    private static func removeFoldersOfDeadProcesses(in temporary: URL) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? []
        for name in names where name.hasPrefix("cashier-bench-") {
            let fields = name.split(separator: "-")
            guard fields.count >= 4, fields[fields.count - 1].count == 8,
                let pid = pid_t(fields[fields.count - 2]), pid > 0, pid != getpid()
            else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH {
                try? FileManager.default.removeItem(at: temporary.appendingPathComponent(name))
            }
        }
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// A configuration of a cache in this folder.
    public func configuration(
        memoryCountLimit: Int? = nil, durability: Cache.Durability = .standard,
        diskSizeLimit: Int? = nil
    ) -> Cache.Configuration {
        var configuration = Cache.Configuration(name: "bench")
        configuration.location = .directory(url)
        configuration.appVersion = "bench"
        configuration.memoryCountLimit = memoryCountLimit
        configuration.durability = durability
        configuration.diskSizeLimit = diskSizeLimit
        return configuration
    }
}

/// Fills `scratch` with `count` entries of `User.sample` through Cashier, keys `user-0`…,
/// written an hour ago by the cache's clock: as an app finds its entries at launch, each read
/// is a use its row has not recorded yet.
public func fill(_ scratch: Scratch, count: Int) {
    var configuration = scratch.configuration(memoryCountLimit: 0)
    configuration.now = { Date(timeIntervalSinceNow: -3_600) }
    let cache = Cache(configuration)
    for index in 0..<count { try? cache.set(User.sample, for: userKey(index)) }
    cache.waitForBackgroundWork()
}

public func userKey(_ index: Int) -> CacheKey<User> { CacheKey("user-\(index)", schemaVersion: 1) }

/// The `readdir` + `fstatat` pass a scan of a folder costs at least: names and sizes of its files.
public func scanFolder(_ path: String) -> (count: Int, bytes: Int) {
    guard let directory = opendir(path) else { return (0, 0) }
    defer { closedir(directory) }
    let descriptor = dirfd(directory)
    var count = 0
    var bytes = 0
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) {
            String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
        }
        guard name.hasSuffix(".cache") else { continue }
        var info = stat()
        if fstatat(descriptor, name, &info, 0) == 0 {
            count += 1
            bytes += Int(info.st_size)
        }
    }
    return (count, bytes)
}

/// Keeps the optimizer from removing work whose result is unused.
@inline(never)
public func consume<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// The length of the file at `path` (0 when there is none).
public func fileSize(_ path: String) -> Int {
    var info = stat()
    return stat(path, &info) == 0 ? Int(info.st_size) : 0
}

/// A folder of `count` files of an entry's size, named as entries: what 0.1.0 scanned to know
/// what it held (and any file-per-entry cache must), now that entries are rows of the store.
public func entryFiles(_ count: Int, label: String) -> Scratch {
    let files = Scratch(label)
    try? FileManager.default.createDirectory(at: files.url, withIntermediateDirectories: true)
    for index in 0..<count {
        _ = FileManager.default.createFile(atPath: files.path + "/\(index).cache", contents: Data(count: 256))
    }
    return files
}
