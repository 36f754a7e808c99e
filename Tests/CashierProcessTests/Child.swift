import Cashier
import CashierTestSupport
import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A running `CashierStress` process, with its standard input and output as lines.
final class Child {
    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var buffered = Data()

    init(_ arguments: [String]) throws {
        process.executableURL = try Self.executable()
        process.arguments = arguments
        // Under AddressSanitizer the child would leak-check itself at exit and report
        // the values its cache still holds (Data behind tagged pointers LeakSanitizer
        // cannot follow) as leaks, failing its exit status. The children's job is the
        // workload; leak checking stays on in the test process itself.
        var environment = ProcessInfo.processInfo.environment
        environment["ASAN_OPTIONS"] = (environment["ASAN_OPTIONS"].map { $0 + ":" } ?? "") + "detect_leaks=0"
        process.environment = environment
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    /// The next line the child prints, or `nil` once it has closed its output.
    func readLine() -> String? {
        while true {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeSubrange(...newline)
                return line
            }
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { return nil }
            buffered.append(chunk)
        }
    }

    /// Writes `line` to the child; a child that has exited is not written to (its pipe is
    /// closed: the write fails, and the test's expectations on what it answers say so).
    func send(_ line: String) {
        Self.ignoreBrokenPipes
        try? input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }

    /// A write to a child that has exited fails with `EPIPE` instead of killing the test process.
    private static let ignoreBrokenPipes: Void = { signal(SIGPIPE, SIG_IGN) }()

    /// SIGKILL, as the system kills an app: no handler runs, nothing is flushed.
    func killAndReap() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Waits for the child to exit and returns its status.
    func wait() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// `CashierStress`, built beside the test bundle (SwiftPM builds it because this target depends on it).
    static func executable() throws -> URL {
        let bundles = [Bundle(for: Child.self).bundleURL, Bundle.main.bundleURL]
        for folder in searchFolders(bundles: bundles, argument0: CommandLine.arguments[0]) {
            let candidate = folder.appendingPathComponent("CashierStress")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw CocoaError(
            .fileNoSuchFile,
            userInfo: [NSFilePathErrorKey: "CashierStress beside the test bundle or \(CommandLine.arguments[0])"])
    }

    /// Where `CashierStress` may be, best first. On macOS `xctest` or `swiftpm-testing-helper`
    /// loads the test bundle (`.build/debug/CashierPackageTests.xctest`, a folder), so
    /// `argv[0]` is that tool, far from `.build`: the folder holding a `.xctest` bundle comes
    /// first. Then `argv[0]`'s folder and three above it, which finds it on Linux, where the
    /// test binary itself is `.build/debug/CashierPackageTests.xctest`.
    static func searchFolders(bundles: [URL], argument0: String) -> [URL] {
        var folders: [URL] = []
        for bundle in bundles {
            let resolved = bundle.resolvingSymlinksInPath()
            // The bundle itself, or (when it is the bundle's executable) the bundle it sits in.
            var candidate = resolved
            for _ in 0..<4 where candidate.pathExtension != "xctest" && candidate.path != "/" {
                candidate.deleteLastPathComponent()
            }
            if candidate.pathExtension == "xctest" { folders.append(candidate.deletingLastPathComponent()) }
        }
        var folder = URL(fileURLWithPath: argument0).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<4 {
            folders.append(folder)
            folder.deleteLastPathComponent()
        }
        return folders
    }
}

/// What the process tests look at in a shared folder.
extension TemporaryFolder {
    /// Bytes of the entry files, by `stat`, as the folder holds them now.
    var entryBytes: Int {
        entryFiles.reduce(0) { total, name in
            let attributes = try? FileManager.default.attributesOfItem(atPath: url.appendingPathComponent(name).path)
            return total + ((attributes?[.size] as? Int) ?? 0)
        }
    }

    /// Bytes of the folder's store file and its log, by `stat`.
    var storeBytes: Int {
        [DiskTier.storeFileName, DiskTier.storeFileName + "-wal"].reduce(0) { total, name in
            let attributes = try? FileManager.default.attributesOfItem(atPath: url.appendingPathComponent(name).path)
            return total + ((attributes?[.size] as? Int) ?? 0)
        }
    }

    /// What a size limit bounds, and `totalSize` reports: the store file, its `-wal` and `-shm`,
    /// and the entry files.
    var occupiedBytes: Int {
        let store = DiskTier.storeFileName
        return [store, store + "-wal", store + "-shm"].reduce(entryBytes) { total, name in
            let attributes = try? FileManager.default.attributesOfItem(atPath: url.appendingPathComponent(name).path)
            return total + ((attributes?[.size] as? Int) ?? 0)
        }
    }

    func configuration(sizeLimit: Int? = nil) -> Cache.Configuration {
        var configuration = Cache.Configuration(name: "stress")
        configuration.location = .directory(url)
        configuration.appVersion = "stress"
        configuration.diskSizeLimit = sizeLimit
        return configuration
    }
}

/// A whole number from the environment, for runs longer than CI's.
func environmentNumber(_ name: String, default value: Int) -> Int {
    ProcessInfo.processInfo.environment[name].flatMap { Int($0) } ?? value
}
