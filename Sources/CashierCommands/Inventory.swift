import Cashier
import CashierEntryFormat
import CashierPlatform
import Foundation

/// Whether an entry can be used, as `list` and `--json` name it: the library's judgement
/// of an entry without a key (EntryJudgement.swift).
typealias EntryStatus = EntryStanding

/// One entry file, read without changing anything: not its bytes, and on Linux not
/// even its access time, which the cache uses as "last used" for eviction.
struct EntryFile {
    var fileName: String
    var size: Int
    /// Seconds since 1970 of the last access or modification, as found before this read.
    var lastUse: Double
    /// The header, when it reads (also for a file whose checksum fails).
    var header: EntryHeader?
    /// The payload of a sound entry, when asked for.
    var payload: Data?
    /// Why the file is damaged; `nil` when header and checksum are sound.
    var problem: String?

    var isDamaged: Bool { problem != nil }

    func status(at now: Double) -> EntryStatus {
        EntryJudgement.standing(of: header, isDamaged: problem != nil, at: now, lastUsedAt: lastUse)
    }

    /// The key, or the file name in brackets when the header does not read.
    var displayKey: String { header?.key ?? "[\(fileName)]" }
}

/// Everything in a cache folder: its entry files and the names of files that are not entries.
struct Inventory {
    var directory: String
    var entries: [EntryFile]
    /// Files and folders that are neither entries, the lock file nor a writer's temporary file.
    var foreign: [String]

    /// Reads every entry file of `directory`.
    ///
    /// - Throws: ``ToolError`` with the usage status when `directory` is missing or not a folder.
    static func load(_ directory: String) throws(ToolError) -> Inventory {
        try checkFolder(directory)
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        } catch {
            throw ToolError("cannot read the folder \(directory): \(reason(error))")
        }
        var entries: [EntryFile] = []
        var foreign: [String] = []
        for name in names {
            if name == DiskStore.lockFileName || name.hasPrefix(DiskStore.temporaryPrefix) { continue }
            guard DiskStore.isEntryFileName(name), let entry = readEntry(directory, name, keepPayload: false) else {
                foreign.append(name)
                continue
            }
            entries.append(entry)
        }
        return Inventory(directory: directory, entries: entries, foreign: foreign)
    }

    /// Fails unless `directory` exists and is a folder.
    static func checkFolder(_ directory: String) throws(ToolError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) else {
            throw ToolError("no such folder: \(directory)", status: .usage)
        }
        guard isDirectory.boolValue else {
            throw ToolError(
                "not a folder: \(directory) (give the cache's folder, which holds its .cache files)", status: .usage)
        }
    }

    /// Reads one entry file through the library's reader (FileSystem+Entries.swift): no
    /// waiting on a FIFO, no link followed, no access-time update where the system allows
    /// it, and nothing allocated past what the checked header claims (at most
    /// `EntryHeader.maximumEntryLength`), so a 40 GB file is a damaged entry, not a crash.
    /// `nil` when the file does not exist or is not a regular file.
    static func readEntry(_ directory: String, _ name: String, keepPayload: Bool) -> EntryFile? {
        let path = directory + "/" + name
        switch POSIXFileSystem().readEntry(path) {
        case .absent, .damaged(.notAFile, _, _):
            return nil
        case .failed(let error):
            var st = stat()
            guard stat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return nil }
            let info = FileInfo(st)
            return EntryFile(
                fileName: name, size: info.size, lastUse: lastUse(info),
                problem: "cannot read: \(String(cString: strerror(error.code)))")
        case .damaged(let error, let info, let header):
            // Size and times as the reader's `fstat` gave them: no second look at a file that may have changed.
            return EntryFile(
                fileName: name, size: info.size, lastUse: lastUse(info), header: header, problem: error.description)
        case .entry(let header, let payload, let info):
            return EntryFile(
                fileName: name, size: info.size, lastUse: lastUse(info), header: header,
                payload: keepPayload ? payload : nil)
        }
    }

    /// The later of the access and modification times, read through the library's one
    /// platform branch for stat times (Platform+StatTimes.swift).
    private static func lastUse(_ info: FileInfo) -> Double {
        max(info.accessedAt, info.modifiedAt)
    }

    static func reason(_ error: any Error) -> String {
        error.localizedDescription
    }

    /// Tells standard error about files that are not cache entries (never touched by any command).
    func noteForeignFiles(_ console: Console) {
        guard !foreign.isEmpty else { return }
        let shown = foreign.prefix(5).joined(separator: ", ") + (foreign.count > 5 ? ", …" : "")
        let count = foreign.count == 1 ? "1 file" : "\(foreign.count) files"
        if entries.isEmpty {
            console.printError(
                "cashier-tool: note: \(directory) holds no cache entries, only \(count) of other kinds (\(shown)); is it a Cashier cache folder?"
            )
        } else {
            console.printError(
                foreign.count == 1
                    ? "cashier-tool: note: 1 file in \(directory) is not a cache entry and is left alone: \(shown)"
                    : "cashier-tool: note: \(count) in \(directory) are not cache entries and left alone: \(shown)"
            )
        }
    }
}
