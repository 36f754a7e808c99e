import CashierEntryFormat
import CashierPlatform
import CashierSQLite
import CashierStore
import Foundation

/// The folder's store (`store.sqlite`, CashierStore's `EntryStore`): small entries as rows,
/// and one index of every entry, small or large, that `count`, `keys`, `totalSize` and
/// eviction read instead of scanning the folder.
///
/// An entry whose record (header and payload, the bytes a file would hold) is at most
/// ``rowSizeLimit`` is a row; a larger one is a file, as in 0.1.0, with a row of its own that
/// holds no record. A read asks the store first: a row is read and checked like a file; a
/// file entry's row sends it to the file; no row is a miss, unless files older than the store
/// may still lack rows (an import, which every process's first open of the store starts).
///
/// A large entry's file is only changed under the store's write lock, inside the transaction
/// that changes its row (EntryStore's `upsertFile`, `upsert`, `remove`, `reconcile`): the
/// write's rename, the removal's unlink (before its row goes), a row's unlink of the file it
/// replaces. So every process sees a row and its file change together, and a file is deleted
/// only by the write or removal that owns it.
///
/// The store is opened the first time the folder is written, or read once it has a store;
/// never by a read of a folder without one. While it is open the disk tier goes through
/// ``StoreIndex`` (its reads, writes and housekeeping); when SQLite cannot be loaded, or the
/// folder has no store yet, through ``FileIndex``, every entry a file as in 0.1.0. A store that cannot be used is set aside by the store itself
/// (`StoreSetAside`) and reported, and the cache goes on with a fresh one.
extension DiskTier {
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
        /// The folder's store could not be opened (reads miss, writes throw it until it can).
        case openFailed(SystemError)
        /// A bulk removal left the entry of `key`: the volume had no room for its removal.
        case removalAwaitingRoom(key: String, SystemError)
        /// The entry of `key` (`bytes` large, kept as a file) was evicted to make room for a
        /// removal on a full volume (EntryStore+Reserve.swift): not a failure.
        case evictedForRoom(key: String, bytes: Int)

        /// The key the notice is about, if one.
        package var key: String? {
            switch self {
            case .removalAwaitingRoom(let key, _), .evictedForRoom(let key, _): key
            default: nil
            }
        }
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
        /// Uses of rows waiting for their write off the caller's thread (``flushUses()``):
        /// coarse ones, written if a granularity after the row's last use, and exact ones (a
        /// ``Lifespan/sinceLastUse(_:)`` entry's last use, which its expiry runs from).
        var pendingUses: [(key: String, time: Int64)] = []
        /// How far apart, in seconds, two uses of a row gathered without their own moment must
        /// be for the later to be written: ``recencyGranularity``, or less once size sweeps evict
        /// entries within minutes of their last use (``adaptUseGranularity(toVictims:at:)``).
        var useGranularity = DiskTier.recencyGranularity
        var pendingExactUses: [(key: String, time: Int64)] = []
        /// First uses of rows never used since written, by store key: the use's second and the
        /// row's write (``persistFirstUse(of:at:writtenAt:)``), one a row a window.
        var pendingFirstUses: [String: (time: Int64, written: Int64)] = [:]

        /// Takes every use gathered for the rows (coarse, exact, first), leaving none.
        mutating func takePendingUses() -> (
            coarse: [(key: String, time: Int64)], exact: [(key: String, time: Int64)],
            first: [String: (time: Int64, written: Int64)]
        ) {
            defer {
                pendingUses.removeAll()
                pendingExactUses.removeAll()
                pendingFirstUses.removeAll()
            }
            return (pendingUses, pendingExactUses, pendingFirstUses)
        }
        /// Whether a write of the pending uses is scheduled (`scheduleUsesFlush()`).
        var usesFlushScheduled = false

        /// Gathers a use of `key`'s row at `time` without its own moment, unless this process
        /// sent one less than a granularity before it (see ``persistStoreUses(_:_:exactly:)``).
        mutating func gatherCoarseUse(of key: String, at time: Double) {
            if persistedUses.count > 4096 { persistedUses.removeAll(keepingCapacity: true) }
            if let last = persistedUses[key], time - last < useGranularity, time >= last { return }
            persistedUses[key] = time
            pendingUses.append((DiskTier.storeKey(key), Int64(time.rounded(.down))))
        }

        /// Notes that `key`'s row was last used at `time` as far as this process knows
        /// (``noteStoredUse(_:at:)``).
        mutating func noteStoredUse(of key: String, at time: Double) {
            if persistedUses.count > 4096 { persistedUses.removeAll(keepingCapacity: true) }
            if (persistedUses[key] ?? -.infinity) < time { persistedUses[key] = time }
        }

        /// Whether the caller is to schedule the write of the pending uses: some are pending and
        /// none is scheduled (it then counts as scheduled).
        mutating func claimUsesFlush() -> Bool {
            guard !usesFlushScheduled, !pendingUses.isEmpty || !pendingExactUses.isEmpty else { return false }
            usesFlushScheduled = true
            return true
        }
        /// Whether files older than the store may lack rows still (an import is under way): a
        /// row written meanwhile removes its key's file, which no row would announce.
        var importPending = false
        /// Why the store could not be opened the last time it was tried; nil once it is open.
        var openFailure: SystemError?
        /// When a read last checked that the store file is still the one open (``MonotonicClock``).
        var lastReplacementCheck: UInt64 = 0
        /// What the folder occupied after a sweep that could not bring it under its limit (every
        /// entry left locked, or a limit under an empty store's size): the next sweep waits until
        /// the folder has grown past it by a tenth of the limit, instead of running after every write.
        var fruitlessSweepAt: Int?
        /// Whether a reclaim is scheduled (``scheduleReclaim(foldingLog:)``), and one folding the log.
        var reclaimScheduled = false
        var reclaimFoldsLog = false
        /// Entries whose removal found the volume full, by key, as their rows were then: removed by
        /// the next reclaim, once other removals may have made room, if their rows are unchanged
        /// (another process's later write of the key stays).
        var removalsAwaitingRoom: [String: StoreEntry] = [:]
        /// Bytes written since the volume's free space was last measured for a write
        /// (``DiskTier/volumeCheckGrowth``).
        var grownSinceVolumeCheck = 0

        /// The row `key`'s removal awaiting room noted, if any: one dictionary lookup only
        /// while some removal awaits room (a full volume), none on every other read.
        func removalAwaitingRoom(of key: String) -> StoreEntry? {
            removalsAwaitingRoom.isEmpty ? nil : removalsAwaitingRoom[key]
        }
    }

    /// The open store, opening it if the folder has one (or, with `options`, creating it);
    /// `nil` when the folder has none yet, or SQLite cannot be used.
    func entryStore(creatingWith options: WriteOptions? = nil, until deadline: MonotonicDeadline? = nil)
        -> EntryStore?
    {
        switch storeState.withLock({ $0.phase }) {
        case .open(let store): return store
        case .unavailable: return nil
        case .closed: break
        }
        guard usesStore else { return nil }
        return openStore(creatingWith: options, until: deadline)
    }

    // MARK: Which index the folder has (EntryIndex.swift)

    /// The index the folder has now, without opening a store: the store's if open, else the files'.
    var openedIndex: any EntryIndex {
        if let store = openedStore { return StoreIndex(disk: self, store: store) }
        return FileIndex(disk: self)
    }

    /// The index the folder has, opening its store if it has one.
    func currentIndex() -> any EntryIndex {
        if let store = entryStore() { return StoreIndex(disk: self, store: store) }
        return FileIndex(disk: self)
    }

    /// The index for housekeeping that removes (``Cache/removeAll()``, `removeAll(where:)`,
    /// garbage collection, size sweeps): the store's, opened if the folder has one; the files'
    /// only when the folder has no store (or SQLite is missing). Nil while the folder has a store
    /// this process cannot open now (another process's lock, as an exclusive one on a full
    /// volume, or an I/O error): working from the files alone would remove large entries' files
    /// behind their rows and leave every row, whose values a later read would find again.
    /// ``indexForReading()``'s index, without its reason for none. The store file is judged
    /// anew each time (one `lstat`), not once a ``recheckInterval``: a removal's plan comes from
    /// the store it scans, and one made from a store another process replaced (its folder
    /// removed and made again) would leave the replacing store's rows, read again after.
    func indexForChanging() -> (any EntryIndex)? {
        checkStoreFile()
        return try? indexForReading().get()
    }

    /// The index for a read or a removal: the store's, opened if the folder has one, or why a
    /// store the folder has cannot be used now (never the files it indexes instead: one may be
    /// a removed or shadowed entry's), or the files' (no store yet, SQLite missing).
    ///
    /// At most every ``recheckInterval`` it also checks (one `lstat`) that the store file is
    /// still the one open: a process that only reads notices a store another process set aside
    /// or deleted as soon as one that writes.
    func indexForReading() -> Result<any EntryIndex, SystemError> {
        guard let store = entryStore() else {
            if let failure = storeOpenFailure() { return .failure(failure) }
            return .success(FileIndex(disk: self))
        }
        let now = MonotonicClock.nanoseconds()
        let due = storeState.withLock { state in
            guard now &- state.lastReplacementCheck >= recheckInterval else { return false }
            state.lastReplacementCheck = now
            return true
        }
        if due, store.isReplaced { checkStoreFile() }
        return .success(StoreIndex(disk: self, store: store))
    }

    /// The index for a write: the store's, created if the folder has none yet (the folder made
    /// first), or the files' where SQLite cannot be used.
    ///
    /// A store that is there but cannot be opened now (another process's lock past the wait, an
    /// I/O error) may hold an older row of the key, which reads find first: a file written
    /// instead would be hidden by it. The write fails; nothing is lost.
    func indexForWriting(_ options: WriteOptions, judgesAnew: Bool, until deadline: MonotonicDeadline)
        throws(SystemError) -> any EntryIndex
    {
        guard usesStore else { return FileIndex(disk: self) }
        if judgesAnew { checkStoreFile() }
        try prepareFolder(options)
        if let store = entryStore(creatingWith: options, until: deadline) {
            return StoreIndex(disk: self, store: store)
        }
        if let failure = storeOpenFailure() { throw failure }
        return FileIndex(disk: self)
    }

    /// The store when it is open, without opening it.
    var openedStore: EntryStore? {
        guard case .open(let store) = storeState.withLock({ $0.phase }) else { return nil }
        return store
    }

    private func openStore(creatingWith options: WriteOptions?, until deadline: MonotonicDeadline?) -> EntryStore? {
        // Another thread opening the store may be waiting for another process's lock: a call
        // with a deadline waits for it no longer than that (then fails as that opening would).
        if let deadline {
            let limit = Date(timeIntervalSinceNow: Double(deadline.remainingMilliseconds) / 1000)
            guard storeOpenLock.lock(before: limit) else {
                storeState.withLock {
                    if $0.openFailure == nil {
                        $0.openFailure = SystemError(
                            code: EBUSY, operation: "wait for this process's opening of the folder's store",
                            path: path(Self.storeFileName))
                    }
                }
                return nil
            }
        } else {
            storeOpenLock.lock()
        }
        defer { storeOpenLock.unlock() }
        if case .open(let store) = storeState.withLock({ $0.phase }) { return store }
        let existed = fileSystem.info(Self.storeFileName, in: folder) != nil
        // A read never creates a store: a folder without one is read as files.
        guard existed || options != nil else { return nil }
        var storeOptions = EntryStore.Options()
        storeOptions.fileName = Self.storeFileName
        storeOptions.permissions = options?.filePermissions ?? 0o600
        storeOptions.synchronized = options?.synchronize ?? false
        storeOptions.openDeadline = deadline
        storeOptions.busyTimeoutMilliseconds = storeBusyTimeoutMilliseconds
        storeOptions.openBackoff = storeOpenBackoff
        storeOptions.tightVolume = isVolumeTight
        let store: EntryStore
        do throws(StoreError) {
            store = try EntryStore(folder: folder, options: storeOptions)
        } catch {
            if case .unavailable(let failure) = error {
                storeState.withLock {
                    $0.phase = .unavailable
                    $0.notices.append(.unavailable("\(failure)"))
                }
                return nil
            }
            // Otherwise (a read-only folder, a lock held past the wait) the call fails, saying
            // why, and the next one tries again; an event tells it once per cause.
            let failure = Self.systemError(error, path: path(Self.storeFileName), "open the folder's store")
            storeState.withLock {
                if $0.openFailure != failure { $0.notices.append(.openFailed(failure)) }
                $0.openFailure = failure
            }
            return nil
        }
        storeState.withLock {
            $0.phase = .open(store)
            $0.openFailure = nil
            $0.synchronized = storeOptions.synchronized
            if let setAside = store.setAsideAtOpen { $0.notices.append(.setAside(setAside)) }
        }
        // Writers killed mid-write left their temporary files: the folder holds few files now
        // (large entries), so listing it once a launch costs little.
        var holdsEntryFiles = false
        for name in (try? fileSystem.contentsOfDirectory(folder)) ?? [] {
            if name.hasPrefix(Self.temporaryPrefix) {
                removeIfAbandoned(temporary: name)
            } else if Self.isEntryFileName(name) {
                holdsEntryFiles = true
            }
        }
        // The files already in the folder get rows, off the caller's thread (reads find them as
        // files until then), at every first open of a process: an import cut short by a kill
        // resumes, and files a row shadows go. A folder of rows alone has nothing to import, and
        // `keys` need not compare the index with the folder (half of a fresh `count` + `keys` at
        // 100,000). Files another process puts there later are its to index, or garbage
        // collection's. On a tight volume, room for removals (EntryStore+Reserve.swift); on a
        // roomy one, none (one `lstat`).
        if holdsEntryFiles { scheduleImport(into: store) }
        store.keepReserve(tight: storeOptions.tightVolume)
        return store
    }

    /// Whether the folder's volume has little room left (under ``tightVolumeBytes`` free): the
    /// store then keeps its log small, so a full volume stays survivable.
    var isVolumeTight: Bool {
        (fileSystem.availableCapacity(folder) ?? .max) < Self.tightVolumeBytes
    }

    /// Free bytes under which a volume has little room: 64 MiB.
    static let tightVolumeBytes = 64 << 20

    /// Before a write: when the open store's file was replaced (set aside by another process)
    /// or deleted, the store is opened again, a fresh one made in the deleted one's place and
    /// large entries' files indexed anew; when its folder is gone too, the store is forgotten
    /// and the write makes both again. One `lstat` when nothing changed.
    func checkStoreFile() {
        // The `lstat` first, without the store's writer (which a call waiting for another
        // process may hold): it is taken only when there is something to reopen.
        guard let store = openedStore, store.isReplaced else { return }
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

    /// What a removal that found its store replaced by another process (`ESTALE`) removes
    /// through instead: the store reopened, nothing (the folder is gone, or holds no store), or
    /// the failure to open the one it holds now.
    enum StoreReplacement {
        case reopened(EntryStore)
        case gone
        case unopenable(SystemError)
    }

    /// After a removal found the open store no longer the folder's: reopens it (``checkStoreFile()``).
    func storeAfterReplacement() -> StoreReplacement {
        checkStoreFile()
        if let reopened = openedStore {
            guard reopened.isReplaced else { return .reopened(reopened) }
            return .unopenable(
                SystemError(code: ESTALE, operation: "reopen the folder's store: replaced again", path: reopened.path))
        }
        if let failure = storeOpenFailure() { return .unopenable(failure) }
        return .gone
    }

    /// Why a write cannot go on without the store: the folder has a store file that could not
    /// be opened. `nil` when the store is open, or SQLite is unavailable (every entry a file).
    func storeOpenFailure() -> SystemError? {
        guard case .closed = storeState.withLock({ $0.phase }),
            fileSystem.info(Self.storeFileName, in: folder) != nil
        else { return nil }
        return storeState.withLock { $0.openFailure }
            ?? SystemError(code: EIO, operation: "open the folder's store", path: path(Self.storeFileName))
    }

    /// Puts back notices a report could not finish now, before any noted since.
    func requeueStoreNotices(_ notices: [StoreNotice]) {
        storeState.withLock { $0.notices.insert(contentsOf: notices, at: 0) }
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
    /// its access time, this user as its owner (the store's files are checked with the folder),
    /// and whether it was used since it was written.
    static func rowInfo(_ entry: StoreEntry) -> FileInfo {
        FileInfo(
            size: entry.size, accessedAt: Double(entry.lastUse), modifiedAt: Double(entry.lastUse),
            isRegularFile: true, isDirectory: false, owner: processUser,
            unusedSinceWrite: entry.frequency == 0 ? entry.lastUse : nil)
    }

    /// This process's effective user, read once: a row's owner (``rowInfo(_:)``), which every
    /// read of a row asks for (`geteuid` is a system call on Linux).
    static let processUser = geteuid()

    /// The system error a store failure is reported as: SQLite's result code as the nearest `errno`.
    /// A file operation the store made itself (a large entry's rename or unlink) keeps its `errno`.
    static func systemError(_ error: StoreError, path: String, _ operation: String) -> SystemError {
        let code: Int32
        switch error {
        case .unavailable: code = ENOSYS
        case .setAside: code = EIO
        case .busy: code = EBUSY
        case .failed(let failure):
            if let systemCode = failure.systemCode {
                code = systemCode
            } else {
                switch failure.primaryCode {
                case SQLiteCode.full: code = ENOSPC
                case SQLiteCode.readOnly, SQLiteCode.auth: code = EACCES
                case SQLiteCode.permission: code = EPERM
                case SQLiteCode.busy, SQLiteCode.locked: code = EBUSY
                case SQLiteCode.cantOpen: code = ENOENT
                case SQLiteCode.noMemory: code = ENOMEM
                default: code = EIO
                }
            }
        }
        return SystemError(code: code, operation: "\(operation) in the store (\(error))", path: path)
    }
}
