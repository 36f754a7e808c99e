import CashierStore
import CashierTestSupport
import Foundation
import Testing

/// A write that returned survives SIGKILL: SQLite's WAL has its frames in the file (the OS
/// keeps them) before the commit returns; `synchronous=NORMAL` leaves only power loss to fsync.
@Suite struct EntryStoreKillTests {
    let folder = TemporaryFolder()

    init() throws { try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true) }

    @Test(.timeLimit(.minutes(2)), arguments: [50, 300])
    func everyReturnedWriteSurvivesSIGKILL(_ writes: Int) throws {
        let child = Process()
        child.executableURL = try Self.writer()
        child.arguments = ["kill-writer", folder.path]
        let output = Pipe()
        child.standardOutput = output
        try child.run()
        var confirmed = -1
        var buffered = Data()
        while confirmed < writes {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { break }
            buffered.append(chunk)
            while let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                confirmed = Int(String(decoding: buffered[..<newline], as: UTF8.self)) ?? confirmed
                buffered.removeSubrange(...newline)
            }
        }
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        #expect(confirmed >= writes)
        let store = try EntryStore(folder: folder.path)
        #expect(store.setAsideAtOpen == nil)
        for index in 0...confirmed {
            let record = try #require(try store.record(for: "key-\(index)")).record
            #expect(record.starts(with: Array("key-\(index):\(index):".utf8)))
            #expect(record.count == "key-\(index):\(index):".utf8.count + 100 + index % 3000)
        }
        #expect(try store.structuralProblems() == [])
    }

    /// `CashierStoreChild`, built beside the test binary (Linux: `argv[0]`'s folder; Apple
    /// platforms: the folder holding the `.xctest` bundle).
    static func writer() throws -> URL {
        var folders = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()]
        var bundle = Bundle.main.bundleURL.resolvingSymlinksInPath()
        for _ in 0..<4 where bundle.pathExtension != "xctest" && bundle.path != "/" { bundle.deleteLastPathComponent() }
        folders.append(bundle.deletingLastPathComponent())
        for folder in folders {
            let candidate = folder.appendingPathComponent("CashierStoreChild")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "CashierStoreChild beside the tests"])
    }
}
