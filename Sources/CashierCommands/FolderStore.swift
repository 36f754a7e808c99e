import Cashier
import CashierEntryFormat
import CashierSQLite
import CashierStore
import Foundation

/// The folder's SQLite store (`store.sqlite`, with its `-wal` and `-shm`) as the tool sees it.
///
/// The commands that change nothing open it read-only (``EntryStore/Options/readOnly``): no
/// write, no recorded use, nothing set aside, and never a store made where there is none. A
/// store that cannot be read is reported as damaged and the files are still shown; without
/// SQLite the tool shows the files alone. `prune` and `remove` open it read-write.
enum FolderStore {
    /// The store's file name in a cache folder.
    static let fileName = EntryStore.Options().fileName

    /// The names of the store's files: the store, SQLite's `-wal`, `-shm` and `-journal`, the
    /// room kept for removals on a tight volume (`-reserve`), and a damaged store the cache set
    /// aside (`store.sqlite.damaged`, with its `-wal`).
    static let fileNames: Set<String> = [
        fileName, fileName + "-wal", fileName + "-shm", fileName + "-journal", fileName + "-reserve",
        fileName + ".damaged", fileName + ".damaged-wal",
    ]

    /// What the tool found of the store.
    enum State: Equatable {
        /// No store file: a folder of 0.1.0, or one no write of a newer cache has reached.
        case absent
        /// The store opened and its index read.
        case sound
        /// The store file is there but is damaged, not SQLite or not Cashier's.
        case damaged(String)
        /// The store file is there but could not be read now: another process's lock past the
        /// busy timeout, an I/O error, no permission. Not damage: nothing sets it aside.
        case unreadable(String)
        /// SQLite cannot be loaded here: the store's rows are not shown.
        case unavailable(String)

        var name: String {
            switch self {
            case .absent: "absent"
            case .sound: "sound"
            case .damaged: "damaged"
            case .unavailable: "unavailable"
            case .unreadable: "unreadable"
            }
        }

        /// Why the store is damaged; `nil` when it is not (absent, sound, or SQLite missing).
        var damage: String? {
            if case .damaged(let reason) = self { return reason }
            return nil
        }

        var problem: String? {
            switch self {
            case .absent, .sound: nil
            case .damaged(let reason), .unavailable(let reason), .unreadable(let reason): reason
            }
        }
    }

    /// Tells standard error that the store's rows are not shown, and why.
    static func note(_ state: State, directory: String, console: Console) {
        switch state {
        case .absent, .sound: break
        case .damaged(let reason):
            console.printError(
                "cashier-tool: note: the store \(fileName) in \(directory) is damaged (\(Format.escaped(reason))); "
                    + "only entry files are shown")
        case .unreadable(let reason):
            console.printError(
                "cashier-tool: note: the store \(fileName) in \(directory) cannot be read (\(Format.escaped(reason))); "
                    + "only entry files are shown")
        case .unavailable(let reason):
            console.printError(
                "cashier-tool: note: SQLite is unavailable (\(reason)); the rows of \(fileName) are not shown")
        }
    }

    static func path(in directory: String) -> String { directory + "/" + fileName }

    /// Whether `directory` holds a store file (of any kind: a link or a folder there is damage).
    static func exists(in directory: String) -> Bool {
        var info = stat()
        return lstat(path(in: directory), &info) == 0
    }

    /// Opens the store of `directory`, or says why not. Never creates a store: no file, no store.
    ///
    /// Read-write (`readOnly: false`) sets a damaged store aside, as the cache does: only
    /// `prune --damaged` asks for that; other writers probe read-only first.
    static func open(_ directory: String, readOnly: Bool) -> (EntryStore?, State) {
        guard exists(in: directory) else { return (nil, .absent) }
        var options = EntryStore.Options()
        options.readOnly = readOnly
        do throws(StoreError) {
            let store = try EntryStore(folder: directory, options: options)
            return (store, .sound)
        } catch .failed(let error) where readOnly && error.meansNoStoreYet {
            // A store file a writer has made and not yet given its schema: no rows yet.
            return (nil, .absent)
        } catch {
            return (nil, state(of: error))
        }
    }

    /// The state a failed call leaves the tool in.
    static func state(of error: StoreError) -> State {
        switch error {
        case .unavailable(let reason): .unavailable("\(reason)")
        case .setAside(let setAside): .damaged(setAside.reason)
        case .busy(let error): .unreadable("\(error) (another process holds the store)")
        case .failed(let error) where error.meansDamage: .damaged("\(error)")
        case .failed(let error): .unreadable("\(error)")
        }
    }

    /// Reads a row's record exactly as a file is read (``EntryReader``: header, lengths,
    /// checksum), and checks it is the record of the row's key.
    static func entry(_ stored: StoredRecord, keepPayload: Bool) -> EntryFile {
        let record = stored.record
        let outcome = EntryReader.read(size: record.count, wantsPayload: true) { buffer, offset in
            let count = max(0, min(buffer.count, record.count - offset))
            guard count > 0, let base = buffer.baseAddress else { return 0 }
            record.withUnsafeBytes { bytes in base.copyMemory(from: bytes.baseAddress! + offset, byteCount: count) }
            return count
        }
        var entry = EntryFile(
            fileName: nil, size: record.count, lastUse: Double(stored.entry.lastUse), location: .row,
            rowKey: stored.entry.key)
        switch outcome {
        case .entry(var header, let payload):
            // A lock the store records for the row counts as the header's.
            header.isLocked = header.isLocked || stored.entry.isLocked
            entry.header = header
            entry.payload = keepPayload ? payload : nil
            if header.key != stored.entry.key {
                entry.problem = "the row of \"\(Format.escaped(stored.entry.key))\" holds another key's record"
            }
        case .damaged(let error, let header):
            entry.header = header
            entry.problem = error.description
        case .outOfMemory:
            entry.problem = "cannot read: out of memory"
        }
        return entry
    }

    /// An entry of the index whose record could not be read.
    static func unreadable(_ indexed: StoreEntry, _ problem: String) -> EntryFile {
        EntryFile(
            fileName: indexed.location == .file ? DiskTier.fileName(for: indexed.key) : nil, size: indexed.size,
            lastUse: Double(indexed.lastUse), problem: problem, location: indexed.location == .row ? .row : .file,
            rowKey: indexed.key)
    }
}

/// What the store holds, for `list`, `stats` and `report`.
struct StoreSummary {
    var state: FolderStore.State = .absent
    /// The store's own files on disk (store and `-wal`), free pages included.
    var bytes = 0
    /// Findings of SQLite's structural check (`verify` only: it reads the whole file).
    var structuralProblems: [String] = []
}

extension Inventory {
    /// The `store` object of `--json`: the store's state and files, and what is in rows and in files.
    var storeJSON: JSONValue {
        let rows = rows
        let rowBytes = rows.reduce(0) { $0 + $1.size }
        return .object([
            "file": .string(FolderStore.fileName),
            "status": .string(store.state.name),
            "problem": .string(store.state.problem),
            "bytes": .int(store.bytes),
            "rows": .int(rows.count),
            "rowBytes": .int(rowBytes),
            "files": .int(entries.count - rows.count),
            "fileBytes": .int(totalSize - rowBytes),
        ])
    }
}

extension SQLiteError {
    /// What opening or reading a store fails with when the file itself is at fault (as the
    /// store's own rule for setting a file aside): damage, a header or schema SQLite refuses,
    /// the schema check's verdict. Not a lock held elsewhere, an I/O error or a refused open.
    var meansDamage: Bool {
        isCorruption || [1, 17, 20, 24, 25].contains(primaryCode)
    }

    /// A read-only open of a store file that has no schema yet (``EntryStore``'s "no store yet").
    var meansNoStoreYet: Bool { primaryCode == SQLiteCode.cantOpen && message == "no store yet" }
}
