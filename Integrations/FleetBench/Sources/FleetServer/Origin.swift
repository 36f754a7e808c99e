import Foundation
import Synchronization

/// The source of truth every instance fetches from on a miss: a folder with a file per item
/// holding its version (absent: version 0), replaced whole by each PUT (a new file renamed over
/// the old). It stands for the database or service a real cache sits in front of; every
/// instance on this machine shares it, and each counts its own fetches.
final class Origin: Sendable {
    let folder: URL
    /// How long a fetch takes on top of reading the file: what the cache saves.
    let delay: Duration
    private let counter = Atomic<Int>(0)

    init(folder: URL, delay: Duration) throws {
        self.folder = folder
        self.delay = delay
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    /// How many fetches this instance made.
    var fetches: Int { counter.load(ordering: .relaxed) }

    /// The item's version now; counted as one fetch.
    func fetchVersion(of id: Int) async throws -> Int {
        counter.add(1, ordering: .relaxed)
        if delay > .zero { try await Task.sleep(for: delay) }
        guard let data = FileManager.default.contents(atPath: file(id).path) else { return 0 }
        return Int(String(decoding: data, as: UTF8.self)) ?? 0
    }

    /// Replaces the item's version.
    func write(version: Int, of id: Int) throws {
        let temporary = folder.appendingPathComponent(".\(id).\(UUID().uuidString)")
        try Data(String(version).utf8).write(to: temporary)
        guard rename(temporary.path, file(id).path) == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: file(id).path])
        }
    }

    private func file(_ id: Int) -> URL { folder.appendingPathComponent(String(id)) }
}
