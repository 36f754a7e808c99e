import CashierEntryFormat
import CashierPlatform
import CashierStore
import Foundation

/// One cache folder: entry files, their index, and the housekeeping on them.
///
/// This file holds the reads and writes of one entry; its other jobs have files of their
/// own: names (`DiskTier+Names.swift`), the in-process index of files (`+Index`), recency
/// (`+Recency`), housekeeping plans and their application (`+Housekeeping`), size sweeps
/// (`+Sweeps`), the store's opening and state (`+Store`).
///
/// Every operation goes through the folder's ``EntryIndex`` (EntryIndex.swift), one of two:
/// with SQLite (every supported system), ``StoreIndex``: small entries are rows of the
/// folder's store and large ones are files indexed by a row of their own; the store is the
/// index `count`, `keys`, `totalSize` and eviction read. Without it, ``FileIndex``: every
/// entry is a file and the index is loaded by one folder scan the first time it is needed,
/// never on the read path. Decisions that must be made by one process at a time (eviction, garbage
/// collection) hold an advisory `flock` on the folder's `.lock` file; plain reads take no lock.
package final class DiskTier: Sendable {
    package let folder: String
    package let fileSystem: any FileSystem
    /// The index, and the store's other in-process state (DiskTier+Index.swift).
    let state = Locked(IndexState())
    /// The folder's owner and mode as last judged (see `FolderTrust.swift`).
    let folderCheck = Locked(FolderCheck())
    /// Per-key locks of every cache on this folder in this process, and the barrier bulk removals take.
    let keyLocks = KeyLocks()
    let sweepQueue = DispatchQueue(label: "Cashier.DiskTier.sweep", qos: .utility)
    /// Every sweep scheduled and not yet finished, retries included: what ``waitForSweeps()`` waits for.
    let pendingSweeps = DispatchGroup()
    /// Serializes folder scans in this process so concurrent first questions share one scan.
    let scanLock = NSLock()
    /// The folder's store of small entries and index of all (DiskTier+Store.swift), once opened.
    let storeState = Locked(StoreState())
    /// Held while gathered uses are taken and written (``flushUses()``).
    let usesFlushing = NSLock()
    /// Serializes opening the store in this process.
    let storeOpenLock = NSLock()
    /// Whether small entries go to the store and the index is the store's; otherwise every
    /// entry is a file and the index is this process's, built by a folder scan.
    package let usesStore: Bool
    /// The largest record kept as a row; larger entries are files (see ``rowSizeLimit``).
    package let rowLimit: Int
    /// How often at most, in nanoseconds, a row write judges the folder and the store file
    /// anew (``judgesAnew(rowWrite:)``); 0 at every write.
    package let recheckInterval: UInt64
    /// How long an opening of the store waits for another process's lock when its call says
    /// nothing (a read's), in milliseconds: the first cache's ``Cache/Configuration-swift.struct/busyTimeout``.
    package let storeBusyTimeoutMilliseconds: Int32
    /// Shared by every opening of the store in this process: after one waited in vain, the
    /// others try without waiting for a while (`StoreOpenBackoff`).
    package let storeOpenBackoff: StoreOpenBackoff

    /// `usesStore`: `nil` uses the store with the real file system, and not with a test double
    /// of it (the store's I/O is SQLite's, which a double does not see).
    /// `rowSizeLimit`: `nil` for ``rowSizeLimit``; 0 keeps every entry a file, indexed by the store.
    package init(
        folder: String, fileSystem: any FileSystem = POSIXFileSystem(), usesStore: Bool? = nil,
        rowSizeLimit: Int? = nil,
        recheckInterval: UInt64 = DiskTier.defaultRecheckInterval,
        storeBusyTimeoutMilliseconds: Int32 = EntryStore.Options().busyTimeoutMilliseconds,
        storeOpenBackoff: StoreOpenBackoff = StoreOpenBackoff()
    ) {
        self.folder = folder
        self.fileSystem = fileSystem
        self.usesStore = usesStore ?? (fileSystem is POSIXFileSystem)
        self.rowLimit = rowSizeLimit ?? Self.rowSizeLimit
        self.recheckInterval = recheckInterval
        self.storeBusyTimeoutMilliseconds = storeBusyTimeoutMilliseconds
        self.storeOpenBackoff = storeOpenBackoff
    }

    // MARK: Reading

    package enum ReadResult: Sendable {
        case absent
        case entry(EntryHeader, payload: Data, info: FileInfo)
        /// Damage: why, the file's size, and its header when that decoded (a checksum mismatch).
        case damaged(EntryFormatError, info: FileInfo, header: EntryHeader? = nil)
        case failed(SystemError)
    }

    /// Reads and verifies one entry file (FileSystem+Entries.swift): open, fstat, pread,
    /// close; no write (recency is recorded by the caller, through ``noteRead(_:key:info:isLocked:at:foundSlidingLifespanOver:sliding:)``).
    /// The payload is the buffer the kernel filled, indices from 0; nothing is allocated
    /// before the header's lengths are checked against the file and the maximum entry size.
    package func read(_ fileName: String) -> ReadResult {
        fileSystem.readEntry(path(fileName))
    }

    /// Reads and verifies `key`'s entry wherever it is: its row in the store (checked as a
    /// file is), or its file (a large entry, or one written before the folder had a store).
    ///
    /// With a store, a key without a row is absent: its file, if any, is read only while the
    /// folder's files older than the store may still lack rows (an import is under way). A
    /// store that is there but cannot be opened now is a failed read, never the files it indexes
    /// (one may be a removed or shadowed entry's).
    ///
    /// `fileName`: ``fileName(for:)`` of `key`, when the caller has it already (hashing the key
    /// again cost a read two hashes and an allocation).
    package func read(key: String, fileName: String? = nil) -> ReadResult {
        switch indexForReading() {
        case .success(let index): index.read(key: key, fileName: fileName ?? Self.fileName(for: key))
        case .failure(let error): .failed(error)
        }
    }

    /// Records a read at `now` (the cache's clock), for least-recently-used order: exactly
    /// in this process's index, and in the file's access time when that is a granularity
    /// or more off (see ``recencyGranularity``). Returns the access time the file keeps now.
    ///
    /// `foundSlidingLifespanOver`: the read found a ``Lifespan/sinceLastUse(_:)`` lifespan over
    /// and `now` is its last use. Where reading moves access times (no `O_NOATIME`, a mount
    /// without `noatime`), the read itself may have moved the file's, and it must not count as
    /// a use in the next launch: the access time is set to `now` whatever `info` says.
    ///
    /// With the store, the use goes to `key`'s row instead, on the same terms (see
    /// ``persistStoreUses(_:_:exactly:)``).
    @discardableResult
    package func noteRead(
        _ fileName: String, key: String, info: FileInfo, isLocked: Bool, at now: Double,
        foundSlidingLifespanOver: Bool = false, sliding: Bool = false
    ) -> Double {
        openedIndex.noteRead(
            fileName, key: key, info: info, isLocked: isLocked, at: now,
            foundSlidingLifespanOver: foundSlidingLifespanOver, sliding: sliding)
    }

    /// Reads just the header of an entry file (checksum not verified).
    package func readHeader(_ fileName: String) -> Result<(EntryHeader, FileInfo), HeaderFailure> {
        fileSystem.readEntryHeader(path(fileName))
    }

    /// Reads just the header of `key`'s entry, row or file (checksum not verified).
    package func readHeader(key: String) -> Result<(EntryHeader, FileInfo), HeaderFailure> {
        switch indexForReading() {
        case .success(let index): index.readHeader(key: key, fileName: Self.fileName(for: key))
        case .failure(let error): .failure(.failed(error))
        }
    }

    package enum HeaderFailure: Error, Sendable {
        case absent
        case damaged(EntryFormatError, size: Int)
        case failed(SystemError)
    }

    // MARK: Writing

    package struct WriteOptions: Sendable {
        package var filePermissions: mode_t
        package var folderPermissions: mode_t
        package var synchronize: Bool
        package var completeProtection: Bool
        /// Who else may write the folder: a folder this refuses is never written to.
        package var sharing: Cache.Sharing = .owner
        /// Whether a folder made for the cache is excluded from iCloud and device backups (`.persistent`).
        package var excludesFromBackup = false
        /// The moment of the write by the cache's clock, recorded as the entry's last use; `nil`: the real clock.
        package var usedAt: Double?
        /// Whether the write keeps the lock of the key's stored entry, which the caller has not
        /// looked at: a row finds it in its own statement, a file reads the stored header first.
        package var keepsStoredLock = false
        /// The longest the write waits in all for another process's lock on the store
        /// (``Cache/Configuration-swift.struct/busyTimeout``), in milliseconds.
        package var busyTimeoutMilliseconds: Int32 = EntryStore.Options().busyTimeoutMilliseconds
        package init(filePermissions: mode_t, folderPermissions: mode_t, synchronize: Bool, completeProtection: Bool) {
            self.filePermissions = filePermissions
            self.folderPermissions = folderPermissions
            self.synchronize = synchronize
            self.completeProtection = completeProtection
        }
    }

    /// Whether `key`'s stored entry is locked, from its header (checksum unverified); false
    /// when there is none, or the one stored under its name has another key.
    func storedLock(of key: String) -> Bool {
        guard case .success(let (header, _)) = readHeader(key: key), header.key == key else { return false }
        return header.isLocked
    }

    /// Writes an entry: a temporary file in the folder, renamed over `fileName`.
    ///
    /// Either the new entry is in place when this returns, or it throws and the
    /// old entry (if any) is untouched and no temporary file is left. Returns the
    /// entry's size in bytes and whether it is locked: with ``WriteOptions/keepsStoredLock``, an
    /// unlocked write over a locked entry is written locked.
    package func write(_ fileName: String, header: EntryHeader, payload: Data, options: WriteOptions)
        throws(SystemError) -> (size: Int, isLocked: Bool)
    {
        let size = header.length + payload.count
        // One lstat, at every file write and at most every recheck interval for rows: a folder
        // whose owner or mode changed, or that was replaced, is judged anew.
        let judgesAnew = judgesAnew(rowWrite: openedIndex.keepsAsRow(size: size))
        if let refusal = refusal(for: options.sharing, fresh: judgesAnew) { throw refusal }
        // Never an entry no read accepts (``EntryHeader/checkWritable()``; `set` says why first).
        guard (try? header.checkWritable()) != nil else {
            throw SystemError(code: EFBIG, operation: "write", path: path(fileName))
        }
        // One wait for other processes' locks, shared by every store call of this write.
        let deadline = MonotonicDeadline(milliseconds: options.busyTimeoutMilliseconds)
        let index = try indexForWriting(options, judgesAnew: judgesAnew, until: deadline)
        return try index.write(fileName, header: header, payload: payload, options: options, until: deadline)
    }

    /// Writes the entry into a new temporary file in the folder (made first if missing), with
    /// the write's time as its access time; returns the file's path.
    func writeTemporaryFile(header: EntryHeader, payload: Data, options: WriteOptions) throws(SystemError) -> String {
        let temporary = path(Self.temporaryPrefix + "\(getpid())-\(state.withLock { $0.nextTemporary() })")
        do {
            try writeTemporary(temporary, header: header, payload: payload, options: options)
        } catch  where error.code == ENOENT {
            // The folder is missing (first write, or deleted under us): make it and try once more.
            state.withLock { $0.folderReady = false }
            try writeTemporary(temporary, header: header, payload: payload, options: options)
        }
        stampWrite(temporary, at: options.usedAt)
        return temporary
    }

    private func writeTemporary(_ temporary: String, header: EntryHeader, payload: Data, options: WriteOptions)
        throws(SystemError)
    {
        try prepareFolder(options)
        let written = payload.withUnsafeBytes { payloadBytes in
            let headerBytes = header.encode(payload: payloadBytes)
            return headerBytes.withUnsafeBytes { headerBytes in
                Result { () throws(SystemError) in
                    try fileSystem.writeNewFile(
                        temporary, permissions: options.filePermissions, completeProtection: options.completeProtection,
                        header: headerBytes,
                        payload: payloadBytes, synchronize: options.synchronize)
                }
            }
        }
        if case .failure(let error) = written {
            try? fileSystem.removeFile(temporary)
            throw error
        }
    }

    /// Makes the folder unless this process knows it is there.
    func prepareFolder(_ options: WriteOptions) throws(SystemError) {
        guard !state.withLock({ $0.folderReady }) else { return }
        try createFolder(options)
        // Another user may have made it first, between the check and the mkdir.
        if let refusal = refusal(for: options.sharing, fresh: true) { throw refusal }
        state.withLock { $0.folderReady = true }
    }

    /// Makes the folder (and any missing parent). A folder made here gets complete data
    /// protection before any file is created in it (when asked), is excluded from backups
    /// (when asked), and with `synchronize` each new folder's entry in its parent is synced:
    /// otherwise a power loss could lose the folder, and with it a returned `.synchronized` set.
    private func createFolder(_ options: WriteOptions) throws(SystemError) {
        var missing: [String] = []
        var current = folder
        while true {
            let parent = (current as NSString).deletingLastPathComponent
            guard !parent.isEmpty, parent != current,
                fileSystem.info((current as NSString).lastPathComponent, in: parent) == nil
            else { break }
            missing.append(current)
            current = parent
        }
        try fileSystem.createDirectory(folder, permissions: options.folderPermissions)
        guard missing.first == folder else { return }
        if options.completeProtection, let code = Platform.protectCompletely(folder) {
            throw SystemError(code: code, operation: "set complete data protection", path: folder)
        }
        if options.excludesFromBackup { Platform.excludeFromBackup(folder) }
        if options.synchronize {
            for created in missing {
                try fileSystem.synchronizeDirectory((created as NSString).deletingLastPathComponent)
            }
        }
    }

    /// Rewrites an entry's header, keeping its payload (refresh, lock, unlock).
    ///
    /// Returns the new header, or `nil` when there is no sound entry for `key`.
    package func rewriteHeader(
        _ fileName: String, key: String, options: WriteOptions,
        _ change: (inout EntryHeader) -> Void
    ) throws(SystemError) -> (EntryHeader, Int)? {
        // A file another user planted is not rewritten as this user's: taken as absent.
        guard case .entry(var header, let payload, let info) = read(key: key), header.key == key,
            untrustedEntry(fileName, info: info, sharing: options.sharing) == nil
        else { return nil }
        change(&header)
        return (header, try write(fileName, header: header, payload: payload, options: options).size)
    }

    /// Removes an entry file.
    package func remove(_ fileName: String) throws(SystemError) {
        try fileSystem.removeFile(path(fileName))
        state.withLock { $0.note(fileName, nil) }
    }

    /// Removes `key`'s entry: its row, and its file (a large entry's, or one older than the
    /// store), the file first, both in one store transaction.
    package func remove(key: String, busyTimeoutMilliseconds: Int32 = EntryStore.Options().busyTimeoutMilliseconds)
        throws(SystemError)
    {
        switch indexForReading() {
        case .success(let index):
            try index.remove(
                key: key, fileName: Self.fileName(for: key), busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        case .failure(let error): throw error
        }
    }

    /// Runs `body` holding the folder's advisory lock, shared with other processes.
    /// Without a folder (nothing written yet) there is nothing to protect: `body` runs unlocked.
    func withFolderLock<R>(_ body: () -> R) -> R {
        guard let token = try? fileSystem.lockExclusively(path(Self.lockFileName)) else { return body() }
        defer { fileSystem.unlock(token) }
        return body()
    }

    /// The same, but `nil` at once, without running `body`, when another process holds the
    /// lock and `waiting` is false: background work never blocks on the lock.
    func withFolderLock<R>(waiting: Bool, _ body: () -> R) -> R? {
        if waiting { return withFolderLock(body) }
        let token: Int32?
        do throws(SystemError) {
            token = try fileSystem.tryLockExclusively(path(Self.lockFileName))
        } catch {
            return body()
        }
        guard let token else { return nil }
        defer { fileSystem.unlock(token) }
        return body()
    }
}
