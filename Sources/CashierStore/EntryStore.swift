import CashierPlatform
import CashierSQLite
import Foundation

/// The small entries of one cache folder and the index of all its entries, in one SQLite file.
///
/// One file per folder (``Options/fileName``, `store.sqlite`, with SQLite's `-wal` and `-shm`
/// beside it). A small entry is a row holding its record, the same checksummed header and
/// payload a file holds, stored verbatim: the caller checks it as it checks a file. A large
/// entry stays a file; its row (``StoreLocation/file``) carries no blob, so one index lists
/// every entry and `count`, `keys`, `totalSize` and eviction never scan the folder.
///
/// Every call is one statement or one transaction, begun and ended inside the call: no SQLite
/// lock outlives a call, so an app suspended between calls holds none (the `0xdead10cc` rule
/// of App Groups). Calls are serialized by one lock per store; several processes share the
/// file through SQLite's own locking (WAL: readers never wait for the writer), waiting at
/// most the busy timeout.
///
/// A file that is damaged, truncated, not SQLite, not Cashier's or carrying objects of its
/// own (a trigger, a view) is never trusted: it is moved aside (``StoreSetAside``), a fresh
/// store starts in its place and the call reports ``StoreError/setAside(_:)``. Defensive
/// mode, `cell_size_check` and `trusted_schema=OFF` keep a hostile file from doing more than
/// failing a call.
///
/// Connections: one writer, behind `writeLock`, for every write and for `data_version`; and
/// up to ``maximumIdleReaders`` readers (`PRAGMA query_only`), taken from a pool for reads, so
/// reads run beside each other and beside a write (WAL), and no lock is held across a read's I/O.
///
/// A store no process has open, on a full volume: SQLite cannot size a new `-shm`, and the
/// store opens in exclusive locking mode instead (EntryStore+Exclusive.swift): every call,
/// reads included, goes through the writer, which is opened for the call and closed (its lock
/// released) before the call returns, so no lock outlives a call there either.
///
/// Invariant for `@unchecked Sendable`: `connection` is read and written only
/// while `writeLock` is held; `readers` only while `poolLock` is held; `generation` is written
/// with both held (recovery, reopening) and read with either; `openedIdentity` and
/// `openedExclusively` are written with both held (in `connection`'s `didSet`) and read under
/// `poolLock`; `closedFiles` and `tightVolume` only under `writeLock`. A reader is used by one call at a
/// time: it is out of the pool while in use. The `let`s never change.
package final class EntryStore: @unchecked Sendable {
    /// How the store is opened.
    package struct Options: Sendable {
        /// The store's file name in the folder.
        package var fileName = "store.sqlite"
        /// Mode of the store file when this call creates it; SQLite gives `-wal` and `-shm` the same.
        package var permissions: mode_t = 0o600
        /// `synchronous=FULL` (and `fullfsync` on Apple platforms): a returned write survives power loss.
        /// Otherwise `NORMAL`: a returned write survives the process being killed.
        package var synchronized = false
        /// How long a call waits for another process's lock before ``StoreError/busy(_:)``.
        package var busyTimeoutMilliseconds: Int32 = 5000
        /// Opens for reading only (what `cashier-tool`'s read-only commands need): creates nothing,
        /// never sets a file aside (damage is ``StoreError/failed(_:)``), and every write fails.
        package var readOnly = false
        /// Whether the volume has little room (a few tens of MiB): the log is kept small
        /// (``StoreSchema/setLogBounds(_:tightVolume:)``). ``adjustLog(tightVolume:)`` changes it.
        package var tightVolume = false
        /// The latest moment opening may wait for another process's lock (a write's wait, shared
        /// with its statements); nil: the busy timeout. Later calls wait as they each say.
        package var openDeadline: MonotonicDeadline?
        /// Shortens the openings' waits after one found another process's lock held past it
        /// (shared by every opening of the folder's store in the process); nil: each waits.
        package var openBackoff: StoreOpenBackoff?

        package init() {}
    }

    /// The store file's path.
    package let path: String
    package let options: Options
    /// Set when opening found a file it could not use and moved it aside.
    package let setAsideAtOpen: StoreSetAside?

    let writeLock = NSLock()
    /// The writer; its ``StoreConnection/identity`` is the file it has open, which another
    /// process may set aside or delete.
    var connection: StoreConnection {
        didSet {
            poolLock.lock()
            openedIdentity = connection.identity
            openedExclusively = connection.isExclusive
            poolLock.unlock()
        }
    }
    /// The writer's ``StoreConnection/identity``, read without the write lock (under `poolLock`).
    private var openedIdentity: FileIdentity?
    /// The writer's ``StoreConnection/isExclusive``, read without the write lock (under `poolLock`):
    /// reads then go through the writer.
    private var openedExclusively = false
    /// The store's files as an exclusive writer left them when it closed (under `writeLock`):
    /// what its next opening, or a memory hit's check, compares to tell whether another process
    /// wrote meanwhile (``StoreFilesState``).
    var closedFiles: StoreFilesState?
    /// Free and all pages as the last removal of one key left them, and whether the store kept
    /// its log small then, under `removalLock`: what ``mayGiveSpaceBack(volumeIsTight:)``
    /// decides by (nil before any).
    var pagesAfterRemoval: (free: Int64, pages: Int64, tight: Bool)?
    let removalLock = NSLock()
    /// Whether the writer keeps the log small (``Options/tightVolume``), under `writeLock`.
    /// Read outside this file by `keepsLogSmall`, under `writeLock`.
    var tightVolume: Bool
    /// Set (under `poolLock`) when a read met a row whose shape the file lost: the writer forgets
    /// the shapes it knows before its next call, and finds or adds them anew.
    private var shapesLost = false
    /// Counts ``forgetShapes()`` calls (under `poolLock`): a reader out of the pool meanwhile is
    /// not put back.
    private var shapeEpoch = 0
    private let poolLock = NSLock()
    /// Idle readers of the current file.
    private var readers: [StoreConnection] = []
    /// Counts the times the file was replaced (set aside, reopened): older readers are dropped.
    var generation = 0

    /// Readers kept open between reads; more run at once when more threads read, then close.
    package static let maximumIdleReaders = 4

    /// The largest record kept in a row; a larger entry is a file with a row of its own.
    ///
    /// Chosen by measurement (`swift run -c release CashierStoreBench threshold`): up to 8 KiB
    /// a row reads as fast as a file or faster and writes faster; from 12 KiB a file reads
    /// faster, and a row's overflow pages cost more disk than a file's blocks.
    package static let recordSizeLimit = 8192

    /// The highest ``StoreEntry/frequency`` recorded.
    package static let maximumFrequency = 255

    /// Opens the store of `folder` (which must exist), creating it if missing and setting aside
    /// a file it cannot use.
    ///
    /// The folder is opened by its resolved path (`realpath`): SQLite refuses a symbolic link in
    /// any component of a path opened with `SQLITE_OPEN_NOFOLLOW`, and every path an iOS app is
    /// given lies below one (`/var` is a link to `/private/var`), as does every macOS temporary
    /// folder. The store's own files are still never followed: a link, FIFO, directory or other
    /// file that is not a regular file in place of the store is set aside like a damaged one.
    ///
    /// Throws ``StoreError/unavailable(_:)`` when SQLite cannot be loaded (keep using files), or
    /// ``StoreError/failed(_:)`` when even a fresh store cannot be opened (a read-only folder,
    /// another process's lock past the busy timeout); a store file this call created is then
    /// removed again, so a failed open leaves nothing behind.
    package init(folder: String, options: Options = Options()) throws(StoreError) {
        guard let resolved = Self.resolve(folder) else {
            throw .failed(SQLiteError(systemCode: errno, operation: "resolve the folder \(folder)"))
        }
        self.path = resolved.hasSuffix("/") ? resolved + options.fileName : resolved + "/" + options.fileName
        // Opening waits what the caller has left; later reopenings wait the busy timeout.
        var kept = options
        kept.openDeadline = nil
        self.options = kept
        tightVolume = options.tightVolume
        switch SQLiteLibrary.shared {
        case .failure(let error): throw .unavailable(error)
        case .success(let library):
            guard library.libversionNumber() >= EntryStore.minimumVersion else {
                throw .unavailable(
                    SQLiteError(unavailable: "SQLite \(library.libversionNumber()) is older than 3.31"))
            }
        }
        do {
            connection = try Self.openFallingBack(path, options)
            setAsideAtOpen = nil
        } catch let error where error.meansUnusableFile && !options.readOnly {
            let setAside = Self.setAside(path, reason: error.message)
            do { connection = try Self.openFallingBack(path, options) } catch { throw StoreError(error) }
            setAsideAtOpen = setAside
        } catch {
            throw error.isUnavailable ? .unavailable(error) : StoreError(error)
        }
        openedIdentity = connection.identity
        openedExclusively = connection.isExclusive
        closeIfExclusive()
    }

    /// 3.31 (2020): `trusted_schema`, `SQLITE_OPEN_NOFOLLOW`; defensive mode is 3.26.
    static let minimumVersion: Int32 = 3_031_000

    /// The folder's path with every symbolic link resolved; nil when it does not exist.
    private static func resolve(_ folder: String) -> String? {
        guard let resolved = realpath(folder, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Opens, configures and checks the store at `path`; a schema that is not ours throws
    /// `SQLITE_NOTADB`, and so does anything but a regular file at `path`. A store file this
    /// call created and could not open is removed again (with any `-wal` and `-shm` SQLite made).
    /// `exclusive`: in exclusive locking mode, set before the first access so that SQLite keeps
    /// the log's index in memory and never opens a `-shm` (sqlite.org/wal.html). The exclusive
    /// lock needs the file open for writing: a read-only store is then opened read-write, and
    /// `query_only` keeps its statements from writing (closing it still folds the log into the
    /// file, as the last connection to a store does).
    static func open(_ path: String, _ options: Options, exclusive: Bool = false)
        throws(SQLiteError) -> StoreConnection
    {
        let created = options.readOnly ? false : try createFile(path, permissions: options.permissions)
        do throws(SQLiteError) {
            var info = stat()
            guard lstat(path, &info) == 0 else { throw SQLiteError(systemCode: errno, operation: "lstat \(path)") }
            guard info.st_mode & S_IFMT == S_IFREG else {
                throw SQLiteError(
                    code: SQLiteCode.notADatabase, message: "not a regular file (a link, a FIFO or a folder)",
                    operation: "open \(path)")
            }
            let access =
                !options.readOnly
                ? SQLiteCode.openReadWrite | SQLiteCode.openCreate
                : exclusive ? SQLiteCode.openReadWrite : SQLiteCode.openReadOnly
            let planned = options.openDeadline?.remainingMilliseconds ?? options.busyTimeoutMilliseconds
            let wait = options.openBackoff?.wait(planned) ?? planned
            // In exclusive locking mode two openings at once each hold a shared lock while
            // SQLite's busy handler waits for the exclusive one: both wait out the timeout and
            // fail (two processes opening a store of a few rows together: 40 pairs of 40). So an
            // exclusive opening does not wait in SQLite: it tries again from scratch, its
            // connection closed (its shared lock gone) in between, every few milliseconds until
            // `wait` has passed (the same 40 pairs: every opening then succeeded).
            // A shared opening tries again so too: SQLite answers some steps busy without its busy
            // handler (the switch to WAL upgrades a read transaction: two processes creating one
            // store at once), and only a wait that passed may count for the backoff (the S5 race
            // test's "sets=1477 nil=23 errors=23": the backoff made a second of openings fail).
            let until = MonotonicDeadline(milliseconds: wait)
            while true {
                // What is left of the wait: an earlier try may have spent some in the busy handler.
                let busyTimeout = exclusive ? 0 : until.remainingMilliseconds
                do throws(SQLiteError) {
                    let connection = try SQLiteConnection(
                        path: path, flags: access | SQLiteCode.openNoMutex | SQLiteCode.openNoFollow)
                    if exclusive {
                        try connection.execute("PRAGMA locking_mode = EXCLUSIVE")
                        // Closed at the end of each call, after its own checkpoint, with the
                        // files noted (EntryStore+Exclusive.swift): a checkpoint by the close
                        // itself would change them after the note, and the next call would take
                        // its own close for another process's write and empty the memory tier.
                        if !options.readOnly { try? connection.disableCheckpointOnClose() }
                    }
                    try StoreSchema.configure(
                        connection, synchronized: options.synchronized, busyTimeout: busyTimeout,
                        tightVolume: options.tightVolume)
                    if let problem = try StoreSchema.prepare(connection, readOnly: options.readOnly) {
                        throw SQLiteError(code: SQLiteCode.notADatabase, message: problem, operation: "schema check")
                    }
                    if exclusive && options.readOnly { try connection.execute("PRAGMA query_only = ON") }
                    if busyTimeout != options.busyTimeoutMilliseconds {
                        try connection.setBusyTimeout(milliseconds: options.busyTimeoutMilliseconds)
                    }
                    options.openBackoff?.note(busy: false, waited: wait)
                    return StoreConnection(
                        connection, identity: FileIdentity(device: info.st_dev, inode: info.st_ino),
                        busyTimeout: options.busyTimeoutMilliseconds, isExclusive: exclusive)
                } catch {
                    let busy = error.primaryCode == SQLiteCode.busy || error.primaryCode == SQLiteCode.locked
                    if busy, until.remainingMilliseconds > 0 {
                        usleep(UInt32.random(in: 1_000...5_000))
                        continue
                    }
                    if busy { options.openBackoff?.note(busy: true, waited: wait) }
                    throw error
                }
            }
        } catch {
            // The file this call created, if still empty: another process may have opened it
            // since and begun a store in it, which stays.
            var info = stat()
            if created, lstat(path, &info) == 0, info.st_size == 0 { unlink(path) }
            throw error
        }
    }

    /// Runs `body` with the writer under the lock, turning SQLite's errors into ``StoreError``:
    /// damage sets the store aside and reopens a fresh one before the call throws, unless another
    /// process has already replaced the file, in which case the writer reopens it and `body` runs
    /// once more there.
    ///
    /// `deadline` (``MonotonicDeadline``): the latest moment, for all of a caller's calls
    /// together, that a statement may wait for another process's lock; nil: the busy timeout.
    /// `room`: what else a call that finds the volume full may draw on (EntryStore+Reserve.swift).
    func withWriter<R>(
        until deadline: MonotonicDeadline? = nil, room: RoomSource = .log,
        _ body: (StoreConnection) throws(SQLiteError) -> R
    ) throws(StoreError) -> R {
        // This process's other calls count against the deadline too: one holding the writer
        // while SQLite waits for another process is waited for no longer than what is left.
        if !writeLock.try() {
            if let deadline {
                guard writeLock.lock(before: Date(timeIntervalSinceNow: Double(deadline.remainingMilliseconds) / 1000))
                else {
                    throw .busy(
                        SQLiteError(
                            code: SQLiteCode.busy, message: "this process's store writer stayed busy past the wait",
                            operation: "wait for the writer"))
                }
            } else {
                writeLock.lock()
            }
        }
        defer { writeLock.unlock() }
        // An exclusive writer is opened for the call and closed before it returns (the lock with it).
        if connection.isExclusive { try reopenExclusive(until: deadline) }
        defer {
            connection.evictsForRoom = false
            closeIfExclusive()
        }
        if takeShapesLost() { connection.forgetShapes() }
        var reopened = false
        var roomAttempts = 0
        while true {
            do throws(SQLiteError) {
                // Every statement that may wait for another process waits only what is left
                // (``StoreConnection/deadline``).
                connection.deadline = deadline
                defer {
                    connection.deadline = nil
                    try? connection.waitAtMost(options.busyTimeoutMilliseconds)
                }
                try connection.waitUntilDeadline()
                return try body(connection)
            } catch  where error.primaryCode == SQLiteCode.full && !options.readOnly {
                // A full volume: room is made (EntryStore+Reserve.swift) and the call runs once
                // more (a removal's files, unlinked the first time, have made room too).
                roomAttempts += 1
                guard makeRoom(connection, attempt: roomAttempts, room: room) else {
                    throw StoreError(error)
                }
                continue
            } catch  where error.isCorruption && !options.readOnly {
                if !reopened, (try? reopenIfReplaced()) == true {
                    reopened = true
                    continue
                }
                throw .setAside(recover(reason: error.message))
            } catch {
                throw StoreError(error)
            }
        }
    }

    /// Keeps the log small, or not, from now on (see ``Options/tightVolume``): what the volume's
    /// free space says, measured by the caller off the caller's thread.
    package func adjustLog(tightVolume tight: Bool) {
        _ = try? withWriter { connection throws(SQLiteError) in
            guard tight != tightVolume else { return }
            try StoreSchema.setLogBounds(connection.sqlite, tightVolume: tight)
            tightVolume = tight
        }
    }

    /// Copies the log into the store and cuts it back to nothing, without waiting for readers
    /// (`wal_checkpoint(TRUNCATE)` with no busy wait; a reader still using the log keeps it):
    /// on a full volume, the room the log took is free again.
    func truncateLog(_ connection: StoreConnection) {
        guard (try? connection.waitAtMost(0)) != nil else { return }
        _ = try? connection.sqlite.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        try? connection.waitAtMost(options.busyTimeoutMilliseconds)
    }

    /// Runs `body` with the writer if no other call of this process holds it now, else returns
    /// nil at once: for work that gives up its turn rather than wait (a memory hit's check of the
    /// store). `body`'s statements do not wait for another process's lock either. Damage is not
    /// recovered from here (that is I/O): it is ``StoreError/failed(_:)``, and the next write sets it aside.
    /// An exclusive writer is closed between calls and not opened here (opening is I/O that may
    /// wait): nil, unless `evenClosed`, when `body` gets the closed writer (a placeholder).
    func withWriterIfFree<R>(evenClosed: Bool = false, _ body: (StoreConnection) throws(SQLiteError) -> R)
        throws(StoreError) -> R?
    {
        guard writeLock.try() else { return nil }
        defer { writeLock.unlock() }
        guard !connection.isPlaceholder || evenClosed else { return nil }
        do throws(SQLiteError) {
            try connection.waitAtMost(0)
            defer { try? connection.waitAtMost(options.busyTimeoutMilliseconds) }
            return try body(connection)
        } catch {
            throw StoreError(error)
        }
    }

    /// Runs a read-only `body` on a reader from the pool, holding no lock while it runs; errors
    /// as ``withWriter(until:_:)``. A read-only store reads through its one connection, and so
    /// does an exclusive one (see the type's overview): `body` then runs under the write lock,
    /// and must not call the store.
    func withReader<R>(_ body: (StoreConnection) throws(SQLiteError) -> R) throws(StoreError) -> R {
        if options.readOnly { return try withWriter(body) }
        poolLock.lock()
        if openedExclusively {
            poolLock.unlock()
            return try withWriter(body)
        }
        let pooled = readers.popLast()
        let readerGeneration = generation
        let readerShapeEpoch = shapeEpoch
        poolLock.unlock()
        var reader = pooled
        do throws(SQLiteError) {
            if reader == nil { reader = try Self.openReader(path, options) }
            let result = try body(reader!)
            poolLock.lock()
            if generation == readerGeneration, shapeEpoch == readerShapeEpoch, readers.count < Self.maximumIdleReaders {
                readers.append(reader!)
            }
            poolLock.unlock()
            return result
        } catch  where error.isCorruption {
            writeLock.lock()
            defer { writeLock.unlock() }
            // Another call may have set this file aside already, or another process replaced it:
            // then this one only failed, and the next call reads the file now in place.
            defer { closeIfExclusive() }
            guard generation == readerGeneration, reader?.identity == identity,
                (try? reopenIfReplaced()) == false
            else { throw .failed(error) }
            throw .setAside(recover(reason: error.message))
        } catch {
            throw StoreError(error)
        }
    }

    /// A connection for reads of the store at `path`, which the writer has created and checked.
    private static func openReader(_ path: String, _ options: Options) throws(SQLiteError) -> StoreConnection {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw SQLiteError(systemCode: errno, operation: "lstat \(path)") }
        let reader = try SQLiteConnection(
            path: path, flags: SQLiteCode.openReadWrite | SQLiteCode.openNoMutex | SQLiteCode.openNoFollow)
        try StoreSchema.configure(
            reader, synchronized: options.synchronized, busyTimeout: options.busyTimeoutMilliseconds)
        // SQLite's default page cache (2 MiB) each: 1 MiB read 10% slower at 10,000 small entries.
        try reader.execute("PRAGMA query_only = ON")
        return StoreConnection(
            reader, identity: FileIdentity(device: info.st_dev, inode: info.st_ino),
            busyTimeout: options.busyTimeoutMilliseconds)
    }

    /// Drops the pooled readers: the file they have open is no longer the store. Called with
    /// `writeLock` held.
    func replaceFile() {
        poolLock.lock()
        generation += 1
        readers.removeAll()
        poolLock.unlock()
    }

    /// Sets the damaged store aside and opens a fresh one. Called with `writeLock` held, after
    /// ``reopenIfReplaced()`` found the file at the path still the writer's: the damage is this file's.
    private func recover(reason: String) -> StoreSetAside {
        replaceFile()
        let damaged = identity
        // Close the damaged file before it moves: a placeholder connection to memory takes its place.
        if let placeholder = try? SQLiteConnection(path: ":memory:", flags: SQLiteCode.openReadWrite) {
            connection = StoreConnection(
                placeholder, identity: nil, busyTimeout: options.busyTimeoutMilliseconds, isPlaceholder: true)
        }
        let setAside =
            Self.setAside(path, reason: reason, expected: damaged)
            ?? StoreSetAside(path: path, movedTo: nil, reason: reason + " (already replaced by another process)")
        if let fresh = try? Self.openFallingBack(path, options) { connection = fresh }
        return setAside
    }

    /// Reopens the store when its file is no longer the one open (another process set it aside
    /// or deleted it). Called with `writeLock` held; returns true when it reopened.
    func reopenIfReplaced() throws(SQLiteError) -> Bool {
        guard !opensItsPath(connection) else { return false }
        replaceFile()
        connection = try Self.openFallingBack(path, options)
        return true
    }

    /// Device and inode of the file the writer has open. Called with `writeLock` held.
    private var identity: FileIdentity? { connection.identity }

    /// Makes every connection forget the shapes it knows (the writer before its next call, the
    /// pooled readers by closing): a read met a row whose shape is gone or damaged, and no
    /// connection may go on writing or reading rows by a shape the file no longer has as it was.
    package func forgetShapes() {
        poolLock.lock()
        shapesLost = true
        shapeEpoch += 1
        readers.removeAll()
        poolLock.unlock()
    }

    private func takeShapesLost() -> Bool {
        poolLock.lock()
        defer { poolLock.unlock() }
        defer { shapesLost = false }
        return shapesLost
    }

    /// Device and inode of the file the writer has open, without the write lock.
    package var writerIdentity: FileIdentity? {
        poolLock.lock()
        defer { poolLock.unlock() }
        return openedIdentity
    }
}
