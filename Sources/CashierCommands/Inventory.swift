import Cashier
import CashierEntryFormat
import CashierPlatform
import CashierStore
import Foundation

/// Whether an entry can be used, as `list` and `--json` name it: the library's judgement
/// of an entry without a key (EntryJudgement.swift).
typealias EntryStatus = EntryStanding

/// One entry, a file or a row of the folder's store, read without changing anything: not
/// its bytes, not its row, and on Linux not even a file's access time, which the cache uses
/// as "last used" for eviction.
struct EntryFile {
    /// Where an entry's record lives.
    enum Location: String {
        /// A row of the folder's store (`store.sqlite`): a small entry.
        case row
        /// A file of the folder: a large entry, or one written before the store.
        case file
    }

    /// The entry's file; `nil` for a row.
    var fileName: String?
    var size: Int
    /// Seconds since 1970 of the last use: a file's later access or modification time, a
    /// row's recorded last use (the later of the two for a file with a row), as found before this read.
    var lastUse: Double
    /// The header, when it reads (also for a record whose checksum fails).
    var header: EntryHeader?
    /// The payload of a sound entry, when asked for.
    var payload: Data?
    /// Why the entry is damaged; `nil` when header and checksum are sound.
    var problem: String?
    var location: Location = .file
    /// The key of the entry's row in the store, when it has one (a row, or a large entry's index row).
    var rowKey: String?

    var isDamaged: Bool { problem != nil }

    /// Takes in what a large entry's index row knows: its key, its recorded last use and lock.
    mutating func join(_ indexed: StoreEntry) {
        rowKey = indexed.key
        lastUse = max(lastUse, Double(indexed.lastUse))
        if indexed.isLocked { header?.isLocked = true }
    }

    /// Names the entry in messages: its file, or its row.
    var place: String { fileName ?? "row in \(FolderStore.fileName)" }

    /// Tells entries apart where keys may not read: the file name, or the row's key.
    var identity: String { fileName ?? "row:" + (rowKey ?? "") }

    /// The key as the entry's row says (a row is found by it), else as the header says.
    var key: String? { rowKey ?? header?.key }

    func status(at now: Double) -> EntryStatus {
        EntryJudgement.standing(of: header, isDamaged: problem != nil, at: now, lastUsedAt: lastUse)
    }

    /// The key, or the file name in brackets when neither the header nor a row names it.
    var displayKey: String { key ?? "[\(fileName ?? "")]" }
}

/// Everything in a cache folder: its entries (rows of its store and files, one per key) and
/// the names of files that are not entries.
struct Inventory {
    var directory: String
    var entries: [EntryFile]
    /// Files and folders that are neither entries, the store's files, the lock file nor a
    /// writer's temporary file.
    var foreign: [String]
    var store = StoreSummary()
    /// Sound entry files of keys whose row holds the entry (left by a write that moved a small
    /// value into the store): not the entry, so not listed; `remove` and `prune` remove them with it.
    var shadowed: [String: String] = [:]

    /// Reads every entry of `directory`: the rows of its store, opened read-only, and its files.
    ///
    /// - Parameter checkStore: also run SQLite's structural check of the store (`verify`).
    /// - Throws: ``ToolError`` with the usage status when `directory` is missing or not a folder.
    static func load(_ directory: String, checkStore: Bool = false) throws(ToolError) -> Inventory {
        try checkFolder(directory)
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        } catch {
            throw ToolError("cannot read the folder \(directory): \(reason(error))")
        }
        var inventory = Inventory(directory: directory, entries: [], foreign: [])
        // The large entries' index rows, by the name of the file each stands for.
        var fileRows: [String: StoreEntry] = [:]
        // The files that rows' keys would have, so a left-over file of the same key is not listed twice.
        var rowFiles: [String: String] = [:]
        let (store, state) = FolderStore.open(directory, readOnly: true)
        inventory.store.state = state
        if let store {
            inventory.store.bytes = store.storeFileBytes()
            do throws(StoreError) {
                for indexed in try store.entries() {
                    if indexed.location == .file {
                        fileRows[DiskTier.fileName(for: indexed.key)] = indexed
                        continue
                    }
                    rowFiles[DiskTier.fileName(for: indexed.key)] = indexed.key
                    inventory.entries.append(row(indexed, in: store, keepPayload: false))
                }
                if checkStore { inventory.store.structuralProblems = try store.structuralProblems() }
            } catch {
                inventory.store.state = FolderStore.state(of: error)
            }
        }
        for name in names {
            if name == DiskTier.lockFileName || name.hasPrefix(DiskTier.temporaryPrefix)
                || FolderStore.fileNames.contains(name)
            {
                continue
            }
            guard DiskTier.isEntryFileName(name), var entry = readEntry(directory, name, keepPayload: false) else {
                inventory.foreign.append(name)
                continue
            }
            // A sound file of a row's key is the row's stale copy; a damaged one is listed, as damage.
            if let key = rowFiles[name], !entry.isDamaged, entry.header?.key == key {
                inventory.shadowed[key] = name
                continue
            }
            if let indexed = fileRows.removeValue(forKey: name) { entry.join(indexed) }
            inventory.entries.append(entry)
        }
        // Index rows whose file is gone: the index is wrong about them.
        for indexed in fileRows.values.sorted(by: { $0.key < $1.key }) {
            inventory.entries.append(FolderStore.unreadable(indexed, "its row names a file that is missing"))
        }
        return inventory
    }

    /// The entry of one row of the index, its record read and checked.
    static func row(_ indexed: StoreEntry, in store: EntryStore, keepPayload: Bool) -> EntryFile {
        do throws(StoreError) {
            guard let stored = try store.record(for: indexed.key) else {
                return FolderStore.unreadable(indexed, "its row is not found by its key (a damaged index)")
            }
            return FolderStore.entry(stored, keepPayload: keepPayload)
        } catch {
            return FolderStore.unreadable(indexed, "cannot read its row: \(error)")
        }
    }

    /// The entry of `key`: its row when the store holds its record, else its file (with the
    /// key's index row, when there is one). `nil` when neither holds it. Opens the store
    /// read-only; a store that does not read is noted on `console` and the file is looked at.
    static func entry(for key: String, in directory: String, keepPayload: Bool, console: Console) -> EntryFile? {
        let (store, state) = FolderStore.open(directory, readOnly: true)
        var indexed: StoreEntry?
        if let store {
            do throws(StoreError) {
                indexed = try store.entry(for: key)
                if let indexed, indexed.location == .row { return row(indexed, in: store, keepPayload: keepPayload) }
            } catch {
                FolderStore.note(FolderStore.state(of: error), directory: directory, console: console)
            }
        } else {
            FolderStore.note(state, directory: directory, console: console)
        }
        // A file named for the key that holds another key is a hash collision: not this key's entry.
        guard var entry = readEntry(directory, DiskTier.fileName(for: key), keepPayload: keepPayload),
            entry.header == nil || entry.header?.key == key
        else {
            // An index row whose file is missing: shown as the damage it is.
            return indexed.map { FolderStore.unreadable($0, "its row names a file that is missing") }
        }
        if let indexed { entry.join(indexed) }
        return entry
    }

    /// `entry` read again with its payload, from its file or its row (read-only).
    static func reread(_ entry: EntryFile, in directory: String) -> EntryFile? {
        if let fileName = entry.fileName { return readEntry(directory, fileName, keepPayload: true) }
        guard let key = entry.rowKey, let store = FolderStore.open(directory, readOnly: true).0,
            let indexed = try? store.entry(for: key), indexed.location == .row
        else { return nil }
        return row(indexed, in: store, keepPayload: true)
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

    /// Tells standard error about files that are not cache entries (never touched by any
    /// command), and about a store that cannot be read.
    func noteForeignFiles(_ console: Console) {
        FolderStore.note(store.state, directory: directory, console: console)
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
