import CashierEntryFormat
import CashierPlatform
import CashierStore
import Foundation

/// The folder's store (`store.sqlite`, CashierStore's `EntryStore`): small entries as rows,
/// and one index of every entry, small or large, that `count`, `keys`, `totalSize` and
/// eviction read instead of scanning the folder.
///
/// An entry whose record (header and payload, the bytes a file would hold) is at most
/// ``rowSizeLimit`` is a row; a larger one is a file, as in 0.1.0, with a row of its own that
/// holds no record. A read asks the store first: a row is read and checked like a file; a
/// file entry's row, or no row (a file written before the store existed), sends it to the file.
///
/// The store is opened the first time the folder is written, or read once it has a store;
/// never by a read of a folder without one. When SQLite cannot be loaded the folder is used as
/// in 0.1.0, every entry a file; a store that cannot be used is set aside by the store itself
/// (`StoreSetAside`) and reported, and the cache goes on with a fresh one.
extension DiskStore {
    /// The store's file name in the folder (its `-wal` and `-shm` beside it).
    package static let storeFileName = "store.sqlite"

    /// The largest record kept as a row; larger entries are files (`EntryStore.recordSizeLimit`).
    package static let rowSizeLimit = EntryStore.recordSizeLimit

    /// What happened to the store that the cache reports as an event once the call returns.
    package enum StoreNotice: Sendable, Equatable {
        /// The store could not be used and was set aside: its small entries are gone.
        case setAside(StoreSetAside)
        /// SQLite cannot be loaded: every entry is a file.
        case unavailable(String)
    }

    /// The store's phase and what is still to be reported.
    struct StoreState {
        enum Phase {
            case closed
            case open(EntryStore)
            case unavailable
        }
        var phase = Phase.closed
        var notices: [StoreNotice] = []
        /// Whether the store's writes are synchronized (`synchronous=FULL`) now.
        var synchronized = false
        /// What the folder occupied at the last count plus what this process wrote since;
        /// `nil` until counted. A sweep is scheduled when it passes the size limit.
        var occupiedEstimate: Int?
        /// The last use this process wrote into each row it used lately (a bounded memo:
        /// forgotten wholesale past 4,096 keys), so a granularity's repeated uses cost nothing.
        var persistedUses: [String: Double] = [:]
        /// Whether files older than the store may lack rows still (an import is under way): a
        /// row written meanwhile removes its key's file, which no row would announce.
        var importPending = false
    }

    /// The open store, opening it if the folder has one (or, with `options`, creating it);
    /// `nil` when the folder has none yet, or SQLite cannot be used.
    func entryStore(creatingWith options: WriteOptions? = nil) -> EntryStore? {
        switch storeState.withLock({ $0.phase }) {
        case .open(let store): return store
        case .unavailable: return nil
        case .closed: break
        }
        guard usesStore else { return nil }
        return openStore(creatingWith: options)
    }

    /// The store when it is open, without opening it.
    var openedStore: EntryStore? {
        guard case .open(let store) = storeState.withLock({ $0.phase }) else { return nil }
        return store
    }

    private func openStore(creatingWith options: WriteOptions?) -> EntryStore? {
        storeOpenLock.lock()
        defer { storeOpenLock.unlock() }
        if case .open(let store) = storeState.withLock({ $0.phase }) { return store }
        let existed = fileSystem.info(Self.storeFileName, in: folder) != nil
        // A read never creates a store: a folder without one is read as files.
        guard existed || options != nil else { return nil }
        var storeOptions = EntryStore.Options()
        storeOptions.fileName = Self.storeFileName
        storeOptions.permissions = options?.filePermissions ?? 0o600
        storeOptions.synchronized = options?.synchronize ?? false
        let store: EntryStore
        do throws(StoreError) {
            store = try EntryStore(folder: folder, options: storeOptions)
        } catch {
            if case .unavailable(let failure) = error {
                storeState.withLock {
                    $0.phase = .unavailable
                    $0.notices.append(.unavailable("\(failure)"))
                }
            }
            // Otherwise (a read-only folder, a lock held past the timeout) files serve this call
            // and the next one tries again.
            return nil
        }
        storeState.withLock {
            $0.phase = .open(store)
            $0.synchronized = storeOptions.synchronized
            if let setAside = store.setAsideAtOpen { $0.notices.append(.setAside(setAside)) }
        }
        // Writers killed mid-write left their temporary files: the folder holds few files now
        // (large entries), so listing it once a launch costs little.
        for name in (try? fileSystem.contentsOfDirectory(folder)) ?? [] where name.hasPrefix(Self.temporaryPrefix) {
            removeIfAbandoned(temporary: name)
        }
        // The files already in the folder (an older version's, or large entries a set-aside
        // store indexed) get rows, off the caller's thread; until then reads find them as files.
        if !existed || store.setAsideAtOpen != nil { scheduleImport(into: store) }
        return store
    }

    /// Before a write: when the open store's file was replaced (set aside by another process)
    /// or deleted, the store is opened again, a fresh one made in the deleted one's place and
    /// large entries' files indexed anew; when its folder is gone too, the store is forgotten
    /// and the write makes both again. One `lstat` when nothing changed.
    func checkStoreFile() {
        guard let store = openedStore else { return }
        do throws(StoreError) {
            if try store.reopenIfMoved() {
                storeState.withLock { $0.occupiedEstimate = nil }
                scheduleImport(into: store)
            }
        } catch {
            storeState.withLock { $0 = StoreState() }
            state.withLock { $0.folderReady = false }
        }
    }

    /// Why a write cannot go on without the store: the folder has a store file that could not
    /// be opened. `nil` when the store is open, or SQLite is unavailable (every entry a file).
    func storeOpenFailure() -> SystemError? {
        guard case .closed = storeState.withLock({ $0.phase }),
            fileSystem.info(Self.storeFileName, in: folder) != nil
        else { return nil }
        return SystemError(code: EIO, operation: "open the folder's store", path: path(Self.storeFileName))
    }

    /// Hands over what is still to be reported of the store (for the cache's events).
    package func takeStoreNotices() -> [StoreNotice] {
        storeState.withLock { state in
            guard !state.notices.isEmpty else { return [] }
            defer { state.notices.removeAll() }
            return state.notices
        }
    }

    /// Notes that `store` was found damaged by a call and set aside (a fresh store replaced it),
    /// and indexes the large entries' files again.
    func noteSetAside(_ setAside: StoreSetAside, of store: EntryStore) {
        storeState.withLock {
            $0.notices.append(.setAside(setAside))
            $0.occupiedEstimate = nil
        }
        scheduleImport(into: store)
    }

    /// Gives every entry file of the folder that has no row one (`StoreLocation.file`), on the
    /// sweep queue, holding the folder lock, inside an expiring background activity as a sweep
    /// is: it never waits for the lock (another process holding it: tried again a second later),
    /// so a suspended app neither holds nor waits on it. An import the system refuses is left to
    /// garbage collection, which indexes unindexed files too.
    private func scheduleImport(into store: EntryStore, after delay: Double? = nil) {
        storeState.withLock { $0.importPending = true }
        pendingSweeps.enter()
        let work: @Sendable () -> Void = { [self] in
            defer { pendingSweeps.leave() }
            let outcome: Void?? = withBackgroundActivity("Cashier store import") {
                withFolderLock(waiting: false) { importFiles(into: store) }
            }
            if case .some(.some) = outcome { storeState.withLock { $0.importPending = false } }
            if case .some(.none) = outcome { scheduleImport(into: store, after: 1) }
        }
        if let delay {
            sweepQueue.asyncAfter(deadline: .now() + delay, execute: work)
        } else {
            sweepQueue.async(execute: work)
        }
    }

    /// Rows for entry files that have none: each file's header says its key. Each row is
    /// written under its key's lock, once the file is found still there: a removal or a write
    /// of the key since the folder was listed is never undone by a row for a file now gone.
    func importFiles(into store: EntryStore) {
        guard let found = try? fileSystem.scan(folder, statting: Self.isEntryFileName) else { return }
        for (name, info) in found {
            guard let info, info.isRegularFile, case .success(let (header, _)) = readHeader(name),
                Self.isHome(name, of: header.key)
            else { continue }
            let row = Self.fileRow(header, size: info.size, lastUse: info.accessedAt)
            keyLocks.withLock(header.key) {
                guard fileSystem.info(name, in: folder) != nil else { return }
                _ = try? store.insertIfAbsent([row])
            }
        }
    }

    /// The key a row is stored under: the spelling file names are hashed from (NFC, see
    /// ``canonicalSpelling(of:)``), so equivalent spellings are one row as they are one file.
    static func storeKey(_ key: String) -> String { canonicalSpelling(of: key) }

    /// The row of a large entry: its file's size and the header's lock and fixed expiry.
    static func fileRow(_ header: EntryHeader, size: Int, lastUse: Double) -> StoreEntry {
        StoreEntry(
            key: storeKey(header.key), location: .file, size: size, lastUse: Int64(lastUse.rounded(.down)),
            expiry: fixedExpiry(header), isLocked: header.isLocked)
    }

    /// When the entry expires whatever its uses, in whole seconds; `nil` for never or for a
    /// lifespan that runs from the last use.
    static func fixedExpiry(_ header: EntryHeader) -> Int64? {
        guard header.lifespan.slidingSeconds == nil, let expiresAt = header.expiresAt(lastUsedAt: nil),
            expiresAt.isFinite
        else { return nil }
        return Int64(clamping: Int64(exactly: expiresAt.rounded(.up)) ?? Int64.max)
    }

    // MARK: Rows

    /// Reads `key`'s entry from the store: a row checked like a file, a large entry's file,
    /// or `nil` when the store has no row for it (the caller then reads the file).
    func readFromStore(_ store: EntryStore, key: String, fileName: String, headerOnly: Bool = false) -> ReadResult? {
        let stored: StoredRecord?
        do throws(StoreError) {
            stored = try store.record(for: Self.storeKey(key))
        } catch {
            return storeFailure(error, of: store, operation: "read")
        }
        guard let stored else { return nil }
        guard stored.entry.location == .row else {
            // A large entry: its header is its file's.
            if headerOnly { return nil }
            switch fileSystem.readEntry(path(fileName)) {
            case .absent:
                // The row of a file that is gone: the entry is.
                _ = try? store.remove(unchanged: [stored.entry])
                return .absent
            case .entry(let header, let payload, var info):
                // Uses are kept in the row, not the file's access time.
                info.accessedAt = max(info.accessedAt, Double(stored.entry.lastUse))
                return .entry(header, payload: payload, info: info)
            case let other:
                return other
            }
        }
        let info = Self.rowInfo(stored.entry)
        switch Self.readEntry(fromRecord: stored.record, wantsPayload: !headerOnly) {
        case .entry(let header, let payload): return .entry(header, payload: payload ?? Data(), info: info)
        case .damaged(let error, let header): return .damaged(error, info: info, header: header)
        case .outOfMemory: return .failed(SystemError(code: ENOMEM, operation: "read", path: store.path))
        }
    }

    /// Reads a row's record as `EntryReader` reads a file: the same checks, from bytes in memory.
    static func readEntry(fromRecord record: [UInt8], wantsPayload: Bool) -> EntryReader.Outcome {
        EntryReader.read(size: record.count, wantsPayload: wantsPayload) { buffer, offset in
            let count = min(buffer.count, max(0, record.count - offset))
            if count > 0 {
                record.withUnsafeBytes {
                    buffer.baseAddress!.copyMemory(from: $0.baseAddress! + offset, byteCount: count)
                }
            }
            return count
        }
    }

    /// What a row says of itself, in the shape a file's `stat` has: its size, its last use as
    /// its access time, and this user as its owner (the store's files are checked with the folder).
    static func rowInfo(_ entry: StoreEntry) -> FileInfo {
        FileInfo(
            size: entry.size, accessedAt: Double(entry.lastUse), modifiedAt: Double(entry.lastUse),
            isRegularFile: true, isDirectory: false, owner: processUser)
    }

    /// This process's effective user, read once: a row's owner (``rowInfo(_:)``), which every
    /// read of a row asks for (`geteuid` is a system call on Linux).
    static let processUser = geteuid()

    /// Writes `header` and `payload` as `header.key`'s row, and removes the large entry's file
    /// it replaces. Returns whether the entry is locked: `keepingLock`, an unlocked write over a
    /// locked row is written again, locked.
    func writeRow(_ store: EntryStore, header: EntryHeader, payload: Data, options: WriteOptions, keepingLock: Bool)
        throws(SystemError) -> Bool
    {
        synchronize(store, options.synchronize)
        var header = header
        var outcome = try upsertRow(store, header: header, payload: payload, options: options, keepingLock: keepingLock)
        if outcome == .locked {
            header.isLocked = true
            outcome = try upsertRow(store, header: header, payload: payload, options: options, keepingLock: false)
        }
        let replacedFile = if case .written(replacedFile: .some) = outcome { true } else { false }
        if replacedFile || storeState.withLock({ $0.importPending }) {
            try? fileSystem.removeFile(path(Self.fileName(for: header.key)))
        }
        noteGrowth(header.length + payload.count)
        return header.isLocked
    }

    /// The record of `header` and `payload`, as an entry file holds it.
    static func record(_ header: EntryHeader, payload: Data) -> [UInt8] {
        payload.withUnsafeBytes { payloadBytes in
            var record = header.encode(payload: payloadBytes)
            record.append(contentsOf: payloadBytes)
            return record
        }
    }

    private func upsertRow(
        _ store: EntryStore, header: EntryHeader, payload: Data, options: WriteOptions, keepingLock: Bool
    ) throws(SystemError) -> EntryStore.KeepingLockOutcome {
        let record = Self.record(header, payload: payload)
        let entry = StoreEntry(
            key: Self.storeKey(header.key), location: .row, size: record.count,
            lastUse: Int64((options.usedAt ?? Date().timeIntervalSince1970).rounded(.down)),
            expiry: Self.fixedExpiry(header), isLocked: header.isLocked)
        do throws(StoreError) {
            return try store.upsert(entry, record: record, keepingLock: keepingLock)
        } catch {
            guard case .setAside(let setAside) = error else { throw Self.systemError(error, store, "write") }
            // The store was damaged and a fresh one took its place: the write goes there.
            noteSetAside(setAside, of: store)
            do throws(StoreError) {
                return try store.upsert(entry, record: record, keepingLock: keepingLock)
            } catch {
                throw Self.systemError(error, store, "write")
            }
        }
    }

    /// Writes the row of a large entry whose file was just put in place. When the row cannot
    /// be written, a row that still holds an older small value would hide the new file: the
    /// file goes, and the write fails with the old value still readable.
    func writeFileRow(_ store: EntryStore, header: EntryHeader, fileName: String, size: Int, options: WriteOptions)
        throws(SystemError)
    {
        synchronize(store, options.synchronize)
        let entry = Self.fileRow(header, size: size, lastUse: options.usedAt ?? Date().timeIntervalSince1970)
        do throws(StoreError) {
            try store.upsert(entry)
        } catch {
            if case .setAside(let setAside) = error {
                noteSetAside(setAside, of: store)
                if (try? store.upsert(entry)) != nil { return }
            }
            if (try? store.entry(for: entry.key))?.location == .row { try? fileSystem.removeFile(path(fileName)) }
            throw Self.systemError(error, store, "write")
        }
        noteGrowth(size)
    }

    /// Sets the store's durability to what this write asks: `synchronous=FULL` for a
    /// synchronized cache (and the full syncs of Apple platforms), `NORMAL` otherwise.
    private func synchronize(_ store: EntryStore, _ wanted: Bool) {
        guard storeState.withLock({ $0.synchronized }) != wanted else { return }
        if (try? store.setSynchronized(wanted)) != nil { storeState.withLock { $0.synchronized = wanted } }
    }

    /// Counts `bytes` written towards the estimate a sweep is scheduled by.
    private func noteGrowth(_ bytes: Int) {
        storeState.withLock { state in state.occupiedEstimate = state.occupiedEstimate.map { $0 + bytes } }
    }

    /// Removes `key`'s row (and its file, for a large entry); `false` when the store failed.
    func removeFromStore(_ store: EntryStore, key: String) throws(SystemError) {
        do throws(StoreError) {
            try store.remove(Self.storeKey(key))
        } catch {
            if case .setAside(let setAside) = error {
                noteSetAside(setAside, of: store)
                return
            }
            throw Self.systemError(error, store, "remove")
        }
    }

    /// A read's answer to a store that failed: a damaged store set aside is an empty one.
    private func storeFailure(_ error: StoreError, of store: EntryStore, operation: String) -> ReadResult {
        switch error {
        case .setAside(let setAside):
            noteSetAside(setAside, of: store)
            return .absent
        case .unavailable, .failed:
            return .failed(Self.systemError(error, store, operation))
        }
    }

    /// The system error a store failure is reported as: SQLite's result code as the nearest `errno`.
    static func systemError(_ error: StoreError, _ store: EntryStore, _ operation: String) -> SystemError {
        let code: Int32
        switch error {
        case .unavailable: code = ENOSYS
        case .setAside: code = EIO
        case .failed(let failure):
            switch failure.primaryCode {
            case 13: code = ENOSPC // SQLITE_FULL
            case 8, 23: code = EACCES // SQLITE_READONLY, SQLITE_AUTH
            case 3: code = EPERM // SQLITE_PERM
            case 5, 6: code = EBUSY // SQLITE_BUSY, SQLITE_LOCKED
            case 14: code = ENOENT // SQLITE_CANTOPEN
            case 7: code = ENOMEM // SQLITE_NOMEM
            default: code = EIO
            }
        }
        return SystemError(code: code, operation: "\(operation) in the store (\(error))", path: store.path)
    }
}
