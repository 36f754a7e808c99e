import Cashier
import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Whether an entry can be used, as `list` and `--json` name it.
enum EntryStatus: String {
    case valid, expired, damaged
}

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
        guard problem == nil, let header else { return .damaged }
        return header.isExpired(at: now, lastUsedAt: lastUse) ? .expired : .valid
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
            throw ToolError("not a folder: \(directory) (give the cache's folder, which holds its .cache files)", status: .usage)
        }
    }

    /// Reads one entry file; `nil` when it does not exist or is not a regular file.
    static func readEntry(_ directory: String, _ name: String, keepPayload: Bool) -> EntryFile? {
        let path = directory + "/" + name
        let bytes: Data, info: stat
        switch readFile(path) {
        case .absent: return nil
        case .failed(let message):
            var st = stat()
            guard stat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return nil }
            return EntryFile(fileName: name, size: Int(st.st_size), lastUse: lastUse(st), problem: "cannot read: \(message)")
        case .read(let data, let st):
            bytes = data
            info = st
        }
        var entry = EntryFile(fileName: name, size: bytes.count, lastUse: lastUse(info))
        bytes.withUnsafeBytes { raw in
            do throws(EntryFormatError) {
                let (header, payload) = try EntryHeader.decode(file: raw)
                entry.header = header
                if keepPayload { entry.payload = bytes.subdata(in: payload) }
            } catch {
                entry.problem = error.description
                entry.header = try? EntryHeader.decodePrefix(raw, fileLength: raw.count)
            }
        }
        return entry
    }

    private enum ReadOutcome {
        case absent
        case failed(String)
        case read(Data, stat)
    }

    /// Reads a whole regular file without updating its access time where the system allows it.
    private static func readFile(_ path: String) -> ReadOutcome {
        // The library's flags: no access-time update, no waiting on a FIFO, no following a link.
        let fd = Platform.openForReading(path)
        guard fd >= 0 else {
            return errno == ENOENT ? .absent : .failed(String(cString: strerror(errno)))
        }
        defer { _ = close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return .failed(String(cString: strerror(errno))) }
        guard st.st_mode & S_IFMT == S_IFREG else { return .absent }
        var data = Data(count: Int(st.st_size))
        var filled = 0
        let failure: Int32? = data.withUnsafeMutableBytes { buffer in
            while filled < buffer.count {
                let count = read(fd, buffer.baseAddress! + filled, buffer.count - filled)
                if count < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                if count == 0 { break }
                filled += count
            }
            return nil
        }
        if let failure { return .failed(String(cString: strerror(failure))) }
        if filled < data.count { data.count = filled }
        return .read(data, st)
    }

    /// The later of the access and modification times, read through the library's one
    /// platform branch for stat times (Platform+StatTimes.swift).
    private static func lastUse(_ st: stat) -> Double {
        let info = FileInfo(st)
        return max(info.accessedAt, info.modifiedAt)
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
            console.printError("cashier: note: \(directory) holds no cache entries, only \(count) of other kinds (\(shown)); is it a Cashier cache folder?")
        } else {
            console.printError("cashier: note: \(count) in \(directory) \(foreign.count == 1 ? "is" : "are") not cache entries and left alone: \(shown)")
        }
    }
}
