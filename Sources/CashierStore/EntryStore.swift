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
/// Invariant for `@unchecked Sendable`: `connection` and `identity` are read and written only
/// while `writeLock` is held; `readers` only while `poolLock` is held; `generation` is written
/// with both held (recovery, reopening) and read with either. A reader is used by one call at a
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
        /// How long a call waits for another process's lock before ``StoreError/failed(_:)``.
        package var busyTimeoutMilliseconds: Int32 = 5000
        /// Opens for reading only (what `cashier-tool`'s read-only commands need): creates nothing,
        /// never sets a file aside (damage is ``StoreError/failed(_:)``), and every write fails.
        package var readOnly = false

        package init() {}
    }

    /// The store file's path.
    package let path: String
    package let options: Options
    /// Set when opening found a file it could not use and moved it aside.
    package let setAsideAtOpen: StoreSetAside?

    private let writeLock = NSLock()
    private var connection: StoreConnection
    /// Device and inode of the file `connection` has open: another process may set it aside.
    private var identity: FileIdentity?
    private let poolLock = NSLock()
    /// Idle readers of the current file.
    private var readers: [StoreConnection] = []
    /// Counts the times the file was replaced (set aside, reopened): older readers are dropped.
    private var generation = 0

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
    /// Throws ``StoreError/unavailable(_:)`` when SQLite cannot be loaded (keep using files), or
    /// ``StoreError/failed(_:)`` when even a fresh store cannot be opened (a read-only folder).
    package init(folder: String, options: Options = Options()) throws(StoreError) {
        self.path = folder.hasSuffix("/") ? folder + options.fileName : folder + "/" + options.fileName
        self.options = options
        switch SQLiteLibrary.shared {
        case .failure(let error): throw .unavailable(error)
        case .success(let library):
            guard library.libversionNumber() >= EntryStore.minimumVersion else {
                throw .unavailable(
                    SQLiteError(unavailable: "SQLite \(library.libversionNumber()) is older than 3.31"))
            }
        }
        do {
            connection = StoreConnection(try Self.open(path, options))
            setAsideAtOpen = nil
        } catch let error where error.meansUnusableFile && !options.readOnly {
            let setAside = Self.setAside(path, reason: error.message)
            do { connection = StoreConnection(try Self.open(path, options)) } catch { throw .failed(error) }
            setAsideAtOpen = setAside
        } catch {
            throw error.isUnavailable ? .unavailable(error) : .failed(error)
        }
        identity = FileIdentity(path: path)
    }

    /// 3.31 (2020): `trusted_schema`, `SQLITE_OPEN_NOFOLLOW`; defensive mode is 3.26.
    static let minimumVersion: Int32 = 3_031_000

    /// Opens, configures and checks the store at `path`; a schema that is not ours throws `SQLITE_NOTADB`.
    private static func open(_ path: String, _ options: Options) throws(SQLiteError) -> SQLiteConnection {
        if !options.readOnly { try createFile(path, permissions: options.permissions) }
        let access =
            options.readOnly ? SQLiteCode.openReadOnly : SQLiteCode.openReadWrite | SQLiteCode.openCreate
        let connection = try SQLiteConnection(
            path: path, flags: access | SQLiteCode.openNoMutex | SQLiteCode.openNoFollow)
        try StoreSchema.configure(
            connection, synchronized: options.synchronized, busyTimeout: options.busyTimeoutMilliseconds)
        if let problem = try StoreSchema.prepare(connection, readOnly: options.readOnly) {
            throw SQLiteError(code: SQLiteCode.notADatabase, message: problem, operation: "schema check")
        }
        return connection
    }

    /// Creates the empty store file with exactly `permissions` (whatever the umask), refusing a
    /// symbolic link; an existing file is left as it is. SQLite copies the mode to `-wal` and `-shm`.
    private static func createFile(_ path: String, permissions: mode_t) throws(SQLiteError) {
        let fd = Foundation.open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, permissions)
        if fd < 0 {
            guard errno == EEXIST else {
                throw SQLiteError(
                    code: SQLiteCode.cantOpen, message: String(cString: strerror(errno)), operation: "create \(path)")
            }
            return
        }
        defer { close(fd) }
        guard fchmod(fd, permissions) == 0 else {
            throw SQLiteError(
                code: SQLiteCode.cantOpen, message: String(cString: strerror(errno)), operation: "fchmod \(path)")
        }
    }

    /// Moves the store and its `-wal` aside (`<name>.damaged`, replacing an earlier one) and
    /// removes its `-shm`, so the next open starts a fresh store.
    private static func setAside(_ path: String, reason: String) -> StoreSetAside {
        let aside = path + ".damaged"
        var movedTo: String? = aside
        if rename(path, aside) != 0, errno != ENOENT {
            movedTo = nil
            unlink(path)
        }
        unlink(aside + "-wal")
        if rename(path + "-wal", aside + "-wal") != 0 { unlink(path + "-wal") }
        unlink(path + "-shm")
        return StoreSetAside(path: path, movedTo: movedTo, reason: reason)
    }

    /// Runs `body` with the connection under the lock, turning SQLite's errors into ``StoreError``:
    /// damage sets the store aside and reopens a fresh one before the call throws.
    func withConnection<R>(_ body: (StoreConnection) throws(SQLiteError) -> R) throws(StoreError) -> R {
        writeLock.lock()
        defer { writeLock.unlock() }
        do {
            return try body(connection)
        } catch  where error.isCorruption && !options.readOnly {
            throw .setAside(recover(reason: error.message))
        } catch {
            throw .failed(error)
        }
    }

    /// Runs a read-only `body` on a reader from the pool, holding no lock while it runs; errors
    /// as ``withConnection(_:)``. A read-only store reads through its one connection.
    func withReader<R>(_ body: (StoreConnection) throws(SQLiteError) -> R) throws(StoreError) -> R {
        if options.readOnly { return try withConnection(body) }
        poolLock.lock()
        let pooled = readers.popLast()
        let readerGeneration = generation
        poolLock.unlock()
        do throws(SQLiteError) {
            let reader: StoreConnection
            if let pooled { reader = pooled } else { reader = StoreConnection(try Self.openReader(path, options)) }
            let result = try body(reader)
            poolLock.lock()
            if generation == readerGeneration, readers.count < Self.maximumIdleReaders { readers.append(reader) }
            poolLock.unlock()
            return result
        } catch  where error.isCorruption {
            writeLock.lock()
            defer { writeLock.unlock() }
            // Another call may have set this file aside already: then this one only failed.
            guard generation == readerGeneration else { throw .failed(error) }
            throw .setAside(recover(reason: error.message))
        } catch {
            throw .failed(error)
        }
    }

    /// A connection for reads of the store at `path`, which the writer has created and checked.
    private static func openReader(_ path: String, _ options: Options) throws(SQLiteError) -> SQLiteConnection {
        let reader = try SQLiteConnection(
            path: path, flags: SQLiteCode.openReadWrite | SQLiteCode.openNoMutex | SQLiteCode.openNoFollow)
        try StoreSchema.configure(
            reader, synchronized: options.synchronized, busyTimeout: options.busyTimeoutMilliseconds)
        // SQLite's default page cache (2 MiB) each: 1 MiB read 10% slower at 10,000 small entries.
        try reader.execute("PRAGMA query_only = ON")
        return reader
    }

    /// Drops the pooled readers: the file they have open is no longer the store. Called with
    /// `writeLock` held.
    private func replaceFile() {
        poolLock.lock()
        generation += 1
        readers.removeAll()
        poolLock.unlock()
    }

    /// Sets the damaged store aside and opens a fresh one. Called with `writeLock` held.
    private func recover(reason: String) -> StoreSetAside {
        replaceFile()
        // Close the damaged file before it moves: a placeholder connection to memory takes its place.
        if let placeholder = try? SQLiteConnection(path: ":memory:", flags: SQLiteCode.openReadWrite) {
            connection = StoreConnection(placeholder)
        }
        let setAside = Self.setAside(path, reason: reason)
        if let fresh = try? Self.open(path, options) {
            connection = StoreConnection(fresh)
            identity = FileIdentity(path: path)
        }
        return setAside
    }

    /// Reopens the store when its file is no longer the one open (another process set it aside).
    /// Called with `writeLock` held; returns true when it reopened.
    func reopenIfReplaced() throws(SQLiteError) -> Bool {
        let current = FileIdentity(path: path)
        guard current != identity else { return false }
        replaceFile()
        connection = StoreConnection(try Self.open(path, options))
        identity = FileIdentity(path: path)
        return true
    }
}

/// A file's device and inode: equal for the same file, whatever its name.
struct FileIdentity: Equatable {
    var device: UInt64
    var inode: UInt64

    init?(path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        device = UInt64(truncatingIfNeeded: info.st_dev)
        inode = UInt64(truncatingIfNeeded: info.st_ino)
    }
}

extension SQLiteError {
    /// What opening a store file that cannot be used fails with: damage (`SQLITE_CORRUPT`,
    /// `SQLITE_NOTADB`), a header or schema SQLite refuses (`SQLITE_ERROR` "unsupported file
    /// format", `SQLITE_SCHEMA`, `SQLITE_FORMAT`, `SQLITE_RANGE`, `SQLITE_MISMATCH`) or the schema
    /// check's verdict. Not a lock held elsewhere, an I/O error, a full disk or a refused open:
    /// those leave the file alone.
    var meansUnusableFile: Bool {
        isCorruption || [1, 17, 20, 24, 25].contains(primaryCode)
    }
}
