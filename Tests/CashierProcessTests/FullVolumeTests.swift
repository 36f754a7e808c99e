import CashierStress
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Where the full-volume tests write: the folder `CASHIER_FULL_VOLUME` names, on a small volume
/// of its own (`.ci/full-volume.sh` mounts a 2 MiB tmpfs below a symbolic link).
enum FullVolume {
    static let variable = "CASHIER_FULL_VOLUME"
    /// The most a volume may hold for the tests to fill it: never a real disk.
    static let largestVolume = 64 << 20

    static var named: String? {
        ProcessInfo.processInfo.environment[variable].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The folder, when it is on a volume of at most ``largestVolume`` bytes.
    static let folder: String? = {
        guard let named else { return nil }
        try? FileManager.default.createDirectory(atPath: named, withIntermediateDirectories: true)
        return (volumeSize(named) ?? Int.max) <= largestVolume ? named : nil
    }()

    static func volumeSize(_ path: String) -> Int? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return Int(info.f_blocks) * Int(info.f_frsize)
    }

    /// The folder's store files' sizes and its entry files' count and bytes, for messages.
    static func describe(_ folder: URL) -> String {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
        func size(_ name: String) -> Int {
            var info = stat()
            return lstat(folder.path + "/" + name, &info) == 0 ? Int(info.st_size) : 0
        }
        let entries = names.filter(DiskTier.isEntryFileName)
        let others = names.filter { !DiskTier.isEntryFileName($0) }.map { "\($0) \(size($0))" }
        let entryBytes = entries.reduce(0) { $0 + size($1) }
        return (others + ["\(entries.count) entry files \(entryBytes)"]).joined(separator: ", ")
    }

    /// What the volume holding `path` uses beyond the files found on it (their blocks): the
    /// room of files removed while still open somewhere. `path` must be the volume's root or a
    /// folder all its files are below.
    static func unlistedBytes(_ path: String) -> Int {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return 0 }
        let used = Int(info.f_blocks - info.f_bfree) * Int(info.f_frsize)
        var listed = 0
        let enumerator = FileManager.default.enumerator(atPath: path)
        while let name = enumerator?.nextObject() as? String {
            var file = stat()
            if lstat(path + "/" + name, &file) == 0 { listed += Int(file.st_blocks) * 512 }
        }
        return used - listed
    }

    static func freeBytes(_ path: String) -> Int {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return 0 }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }
}

@Suite("The variable naming a full volume")
struct FullVolumeSetupTests {
    @Test(
        "CASHIER_FULL_VOLUME, when set, names a folder on a small volume",
        .enabled(if: FullVolume.named != nil, "CASHIER_FULL_VOLUME is not set: the full-volume tests are skipped"))
    func theNamedFolderIsOnASmallVolume() {
        let named = FullVolume.named ?? ""
        #expect(
            FullVolume.folder != nil,
            "\(named) is on a volume of \(FullVolume.volumeSize(named).map(String.init) ?? "unknown size") bytes, over \(FullVolume.largestVolume): not filled"
        )
    }
}

/// A full volume (issue 34, item 5): every write that returned reads back whole, and after
/// entries are removed, space comes back and writes resume in this process, in a fresh one, and
/// through `cashier-tool prune`. Runs only when `CASHIER_FULL_VOLUME` names a folder on a small
/// volume (`.ci/full-volume.sh`); one case at a time, each in a folder of its own that it removes.
@Suite(
    "A full volume",
    .serialized,
    .enabled(
        if: FullVolume.folder != nil,
        "CASHIER_FULL_VOLUME does not name a folder on a small mounted volume: the full-volume tests are skipped"))
struct FullVolumeTests {
    enum Removal: String, CaseIterable, Sendable {
        case removeValue
        case removeAllWhere
    }

    /// A cache on `folder` as the stress child makes its own (same name and app version), so each reads the other's values.
    static func configuration(_ folder: URL, memoryCountLimit: Int? = nil) -> Cache.Configuration {
        var configuration = Cache.Configuration(name: "stress")
        configuration.location = .directory(folder)
        configuration.appVersion = "stress"
        configuration.diskSizeLimit = nil
        configuration.memoryCountLimit = memoryCountLimit
        return configuration
    }

    /// Values alternate between small ones (rows) and large ones (files).
    static func length(_ index: Int) -> Int { index % 3 == 0 ? 20 * 1024 : 2_000 }

    /// Writes `prefix-0`, `prefix-1`, … until a write throws `.noSpace`; returns the keys of the
    /// writes that returned, with their lengths and seeds.
    static func fill(_ cache: Cache, prefix: String) -> [(key: String, length: Int, seed: UInt64)] {
        var written: [(key: String, length: Int, seed: UInt64)] = []
        for index in 0..<20_000 {
            let key = "\(prefix)-\(index)"
            let length = length(index)
            do {
                try cache.set(
                    StressSession.value(for: key, bytes: length, seed: UInt64(index)), for: CacheKey<Data>(key))
                written.append((key, length, UInt64(index)))
            } catch let error as CacheError {
                #expect(error.kind == .noSpace, "\(key): a full volume gave \(error)")
                return written
            } catch {
                Issue.record("\(key): \(error)")
                return written
            }
        }
        Issue.record("20,000 writes did not fill the volume: it is not small")
        return written
    }

    @Test(
        "After a full volume, removing entries gives space back and writes resume: here, in a fresh process, and after cashier-tool prune",
        arguments: Removal.allCases)
    func writesResumeAfterAFullVolume(_ removal: Removal) throws {
        let volume = try #require(FullVolume.folder)
        let folder = URL(fileURLWithPath: volume).appendingPathComponent("full-\(removal)-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = Cache(Self.configuration(folder))
        let reader = Cache(Self.configuration(folder, memoryCountLimit: 0))

        // Full: every write that returned reads back whole.
        let written = Self.fill(cache, prefix: "first")
        #expect(written.count > 10, "only \(written.count) writes fit on the volume")
        let torn = written.filter {
            reader.value(for: CacheKey<Data>($0.key))
                != StressSession.value(for: $0.key, bytes: $0.length, seed: $0.seed)
        }
        #expect(torn.isEmpty, "writes that returned do not read back whole: \(torn.map(\.key))")

        // Half the entries removed: their space comes back.
        let freeWhenFull = FullVolume.freeBytes(volume)
        let whenFull = FullVolume.describe(folder)
        let removed = Set(written.enumerated().filter { $0.offset.isMultiple(of: 2) }.map(\.element.key))
        switch removal {
        case .removeValue: for key in removed { cache.removeValue(for: CacheKey<Data>(key)) }
        case .removeAllWhere: cache.removeAll(where: { removed.contains($0) })
        }
        cache.waitForBackgroundWork()
        let back = removed.filter { reader.value(for: CacheKey<Data>($0)) != nil }
        #expect(back.isEmpty, "removed entries still read: \(back.sorted())")
        #expect(Set(cache.keys).isDisjoint(with: removed), "keys still lists removed entries")
        let freeAfterRemoval = FullVolume.freeBytes(volume)
        let removalSummary =
            "\(freeWhenFull) bytes free before, \(freeAfterRemoval) after; the folder held \(whenFull), now "
            + FullVolume.describe(folder)
        #expect(
            freeAfterRemoval > freeWhenFull, "removing \(removed.count) entries freed nothing (\(removalSummary))"
        )

        // Writes resume in this process, small and large.
        for index in 0..<10 {
            let key = "resumed-\(index)"
            let value = StressSession.value(for: key, bytes: Self.length(index), seed: 5)
            #expect(throws: Never.self, "\(key) after the removals") { try cache.set(value, for: CacheKey<Data>(key)) }
            #expect(reader.value(for: CacheKey<Data>(key)) == value)
        }

        // Full again; a fresh process removes entries and writes.
        let second = Self.fill(cache, prefix: "second")
        let session = try StressSession(folderPath: folder.path)
        for entry in second.enumerated() where entry.offset.isMultiple(of: 2) {
            #expect(session.ask("remove \(entry.element.key)") == "ok")
        }
        #expect(session.ask("fill fresh-small 2000 1") == "ok", "a fresh process could not write a row")
        #expect(session.ask("fill fresh-large \(20 * 1024) 2") == "ok", "a fresh process could not write a file")
        #expect(session.ask("check fresh-large \(20 * 1024) 2") == "whole")
        session.close()
        #expect(
            reader.value(for: CacheKey<Data>("fresh-small"))
                == StressSession.value(for: "fresh-small", bytes: 2_000, seed: 1))

        // Full again; cashier-tool prune brings the folder down to half its size and frees space.
        _ = Self.fill(cache, prefix: "third")
        let totalBefore = cache.totalSize
        let freeBefore = FullVolume.freeBytes(volume)
        let tool = try ToolRun(["prune", "--max-size", String(totalBefore / 2), folder.path])
        #expect(tool.status == 0, "cashier-tool prune failed on a full volume: \(tool.output)")
        #expect(FullVolume.freeBytes(volume) > freeBefore, "prune freed nothing: \(tool.output)")
        #expect(cache.totalSize <= totalBefore / 2, "prune left \(cache.totalSize) of \(totalBefore) bytes")
        let afterPrune = StressSession.value(for: "after-prune", bytes: 20 * 1024, seed: 3)
        #expect(throws: Never.self, "a write after prune") {
            try cache.set(afterPrune, for: CacheKey<Data>("after-prune"))
        }
        #expect(reader.value(for: CacheKey<Data>("after-prune")) == afterPrune)
        print(
            "full volume (\(removal)): \(written.count) writes filled it, \(removed.count) removed freed \(freeAfterRemoval - freeWhenFull) bytes; "
                + "prune took the folder from \(totalBefore) to \(cache.totalSize) bytes")
    }
}

extension StressSession {
    /// A session on a folder that is not a ``TemporaryFolder``.
    convenience init(folderPath: String) throws {
        try self.init(arguments: ["session", folderPath, "0"])
    }
}

/// One run of the built `cashier-tool` (beside `CashierStress`), as a shell would run it.
struct ToolRun {
    let status: Int32
    let output: String

    init(_ arguments: [String]) throws {
        let executable = try Child.executable().deletingLastPathComponent().appendingPathComponent("cashier-tool")
        guard FileManager.default.isExecutableFile(atPath: executable.path) else {
            throw CocoaError(
                .fileNoSuchFile, userInfo: [NSFilePathErrorKey: executable.path + " (run swift build first)"])
        }
        let process = Process()
        let pipe = Pipe()
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        status = process.terminationStatus
        output = "cashier-tool \(arguments.joined(separator: " ")): " + String(decoding: data, as: UTF8.self)
    }
}
