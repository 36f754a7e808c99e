import CashierPlatform
import CashierSQLite
import Foundation

/// A store no process has open, on a full volume: SQLite cannot size a new `-shm` (the log's
/// shared index, 32 KiB; `SQLITE_IOERR_SHMSIZE`), and the file would not open at all, so the
/// cache could neither read nor remove the entries that would make room. The store then opens
/// in exclusive locking mode (sqlite.org/wal.html, "Use of WAL Without Shared-Memory": set
/// before the first access, the log's index lives in this process's memory and no `-shm` is
/// used). That connection alone can use the file: every call, reads included, goes through the
/// writer, and other processes wait for its lock.
///
/// The exclusive writer lives for one call: ``EntryStore/withWriter(until:_:)`` opens it and
/// closes it before it returns, its log copied into the store first (``closeIfExclusive()``),
/// so the lock never outlives a call and an app suspended between calls holds none (iOS ends
/// an app suspended with a lock on a file in an App Group container, `0xdead10cc`). Another
/// process may then use the store between this one's calls, exclusively as well, or as usual
/// once the volume has room. On a full volume the copy may fail (`SQLITE_FULL`): the log then
/// stays beside the store, whole, and the next opening, in any process, reads it back.
///
/// Each opening tries the usual way first when the volume has ``sharedMemoryRoom`` free (or a
/// full-sized `-shm` is there: another process has the store open as usual), so the store
/// leaves exclusive mode at the first call that finds room.
extension EntryStore {
    /// Opens the store as ``open(_:_:exclusive:)`` does, or, when SQLite cannot size a `-shm`
    /// for it (`SQLITE_IOERR_SHMSIZE`, a full volume), in exclusive locking mode, without one.
    /// `triesSharedMemory` false: exclusively at once (the volume has no room for a `-shm`).
    static func openFallingBack(_ path: String, _ options: Options, triesSharedMemory: Bool = true)
        throws(SQLiteError) -> StoreConnection
    {
        guard triesSharedMemory else { return try open(path, options, exclusive: true) }
        do throws(SQLiteError) {
            return try open(path, options)
        } catch  where error.code == SQLiteCode.ioErrorShmSize {
            return try open(path, options, exclusive: true)
        }
    }

    /// Free bytes on the volume for an opening to try the usual way (with a `-shm`) first: the
    /// `-shm`'s first 32 KiB and room for the log to grow, so that the store does not fall back
    /// again at its next write.
    static let sharedMemoryRoom = 256 << 10

    /// Opens the store again for a call when its writer is an exclusive one that an earlier call
    /// closed: as usual if it can (``sharedMemoryRoom``), else exclusively. The wait for another
    /// process's lock ends at `deadline` (the call's), if any, else after the busy timeout; a
    /// failure (another process's lock, an I/O error) leaves the writer closed and throws.
    /// ``generation`` moves on unless the store reopened exclusively, the same file, as the last
    /// exclusive writer left it: no other process wrote since. Called with `writeLock` held.
    func reopenExclusive(until deadline: MonotonicDeadline?) throws(StoreError) {
        guard connection.isPlaceholder else { return }
        let room = (Platform.availableBytes(path) ?? 0) >= Self.sharedMemoryRoom
        var opening = options
        opening.openDeadline = deadline
        let reopened: StoreConnection
        do throws(SQLiteError) {
            reopened = try Self.openFallingBack(path, opening, triesSharedMemory: room || hasSharedMemory)
        } catch {
            throw StoreError(error)
        }
        // The files are compared with the lock held (taken by the opening's first read).
        let unchanged =
            reopened.isExclusive && reopened.identity == connection.identity
            && closedFiles != nil && StoreFilesState(path) == closedFiles
        if !unchanged { replaceFile() }
        closedFiles = nil
        connection = reopened
    }

    /// Closes the writer if it is an exclusive one that is open, releasing its lock: its log goes
    /// into the store first, while the lock is still held (a checkpoint that does not wait; on a
    /// full volume it may find no room, and the log then stays for the next opening), and the
    /// files are noted as they are (``closedFiles``). Called with `writeLock` held (or from `init`).
    func closeIfExclusive() {
        guard connection.isExclusive, !connection.isPlaceholder,
            let placeholder = try? SQLiteConnection(path: ":memory:", flags: SQLiteCode.openReadWrite)
        else { return }
        if (try? connection.waitAtMost(0)) != nil {
            _ = try? connection.sqlite.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        closedFiles = StoreFilesState(path)
        // The lock goes with the connection.
        connection = StoreConnection(
            placeholder, identity: connection.identity, busyTimeout: options.busyTimeoutMilliseconds,
            isExclusive: true, isPlaceholder: true)
    }

    /// ``generation``, moved on first if the writer is an exclusive one that is closed and the
    /// store's files changed since it closed (another process wrote): one `lstat` of the store and
    /// one of its log, what a memory hit's check costs while the writer is closed. Called with
    /// `writeLock` held.
    func exclusiveGeneration() -> Int {
        guard connection.isPlaceholder, let closedFiles else { return generation }
        let now = StoreFilesState(path)
        if now != closedFiles {
            replaceFile()
            self.closedFiles = now
        }
        return generation
    }

    /// Whether the store has a full-sized `-shm` (another process has it open as usual).
    private var hasSharedMemory: Bool {
        var info = stat()
        return lstat(path + "-shm", &info) == 0 && info.st_size >= 32 << 10
    }

    /// The writer's `data_version`, told apart from an earlier connection's to the same file: a
    /// connection counts from scratch, and one opened after another closed (an exclusive writer
    /// reopened, or giving way to a shared one) may count as the closed one did although another
    /// process wrote in between: ``generation`` moves on whenever that may be so. An exclusive
    /// writer's own count says nothing (no other connection can commit while it is open): its
    /// version is the generation alone, which ``exclusiveGeneration()`` moves on when the files
    /// changed since it closed. Called with `writeLock` held.
    func dataVersion(of connection: StoreConnection) throws(SQLiteError) -> Int64 {
        if connection.isExclusive { return Int64(exclusiveGeneration()) << 32 }
        return try (connection.integer(.dataVersion) ?? 0) &+ Int64(generation) << 32
    }
}

/// What another process's commit changes in a store's files: the store file's and its log's
/// inode, size and status-change time (which every write sets). An empty log and none are one
/// state: a log copied whole into the store is cut to nothing, then deleted when it closes.
struct StoreFilesState: Equatable {
    var store: [Int64]?
    var log: [Int64]?

    init(_ path: String) {
        store = Self.state(path)
        log = Self.state(path + "-wal").flatMap { $0[1] == 0 ? nil : $0 }
    }

    private static func state(_ path: String) -> [Int64]? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return [Int64(truncatingIfNeeded: info.st_ino), Int64(info.st_size), Platform.changeNanoseconds(info)]
    }
}
