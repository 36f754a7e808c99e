import CashierPlatform
import CashierSQLite
import Foundation

/// Large entries' files, changed only inside the store transaction that changes their row.
extension EntryStore {
    /// Where a large entry's new file is and goes (``upsertFile(_:moving:until:)``).
    package struct FileMove: Sendable {
        /// The new file, complete, under a temporary name in the folder.
        package var temporary: String
        /// The key's file name in the folder: the file takes it inside the row's transaction.
        package var destination: String
        /// Where the file it replaces waits (in the folder) until the transaction commits, so a
        /// write that fails leaves the stored file as it was.
        package var backup: String
        /// Syncs the folder after the rename, before the commit (``Options/synchronized``).
        package var synchronizesFolder = false

        package init(temporary: String, destination: String, backup: String, synchronizesFolder: Bool = false) {
            self.temporary = temporary
            self.destination = destination
            self.backup = backup
            self.synchronizesFolder = synchronizesFolder
        }
    }

    /// Writes a large entry: `entry`'s row (``StoreLocation/file``) and its file, renamed from
    /// `move.temporary` to `move.destination`, in one `BEGIN IMMEDIATE` transaction. A reader
    /// sees the old row and file or the new ones; any other process's write or removal of the
    /// key waits for the store's lock, so none can unlink this file or rename another over it
    /// between the rename and the commit.
    ///
    /// When the write fails (another process's lock past `deadline`, a full volume at the
    /// commit), the file it replaced is back in place and the temporary is removed: nothing
    /// stored before is lost. A process killed inside the transaction leaves the new file under
    /// the key's name and its old row (SQLite rolls it back): a row that is a large entry's reads
    /// the new file, a row that is a record shadows it (the file is removed by the next import
    /// or garbage collection), and no row lets the next import index it.
    package func upsertFile(_ entry: StoreEntry, moving move: FileMove, until deadline: MonotonicDeadline? = nil)
        throws(StoreError)
    {
        precondition(entry.location == .file, "upsertFile writes large entries")
        try withWriter(until: deadline) { connection throws(SQLiteError) in
            // How the new file took the name: exchanged with the file it replaces (which then
            // waits under the temporary name), or renamed there (the one replaced, if any,
            // waiting under a second link).
            var exchanged = false
            var backedUp = false
            var moved = false
            do throws(SQLiteError) {
                try connection.waitUntilDeadline()
                try connection.step(.begin)
                _ = try self.write(entry, (entry.location.rawValue, nil), overFiles: true, connection)
                var info = stat()
                if lstat(move.destination, &info) == 0, info.st_mode & S_IFMT != S_IFREG {
                    // Something that is not an entry file has the name (a folder, a link): left alone.
                    throw SQLiteError(systemCode: EISDIR, operation: "replace \(move.destination)")
                }
                // One step where the platform can: replacing an existing file by rename makes ext4
                // allocate and start writing the new file's blocks inside the call (70 µs).
                if Platform.exchange(move.temporary, move.destination) == 0 {
                    exchanged = true
                } else {
                    // The file replaced keeps its name until the new one takes it in one step (a
                    // reader never finds the name missing); a second name holds it until the commit.
                    if link(move.destination, move.backup) == 0 {
                        backedUp = true
                    } else if errno != ENOENT, Foundation.rename(move.destination, move.backup) == 0 {
                        // No hard links on this volume: moved aside instead, missing for a moment.
                        backedUp = true
                    } else if errno != ENOENT {
                        throw SQLiteError(systemCode: errno, operation: "back up \(move.destination)")
                    }
                    guard Foundation.rename(move.temporary, move.destination) == 0 else {
                        throw SQLiteError(systemCode: errno, operation: "rename \(move.temporary)")
                    }
                    moved = true
                }
                if move.synchronizesFolder { try Self.synchronizeFolder(of: move.destination) }
                try connection.step(.commit)
            } catch {
                // The new file goes back to its temporary name (the caller's, or a second try's),
                // and the file it replaced back in place.
                if exchanged { _ = Platform.exchange(move.temporary, move.destination) }
                if moved { Foundation.rename(move.destination, move.temporary) }
                if backedUp { Foundation.rename(move.backup, move.destination) }
                _ = try? connection.step(.rollback)
                throw error
            }
            // The file replaced, no row naming it any more.
            if exchanged { unlink(move.temporary) }
            if backedUp { unlink(move.backup) }
        }
    }

    /// Removes the file at `path` (gone already is fine); throws its `errno` otherwise.
    static func removeFile(_ path: String) throws(SQLiteError) {
        guard unlink(path) == 0 || errno == ENOENT else {
            throw SQLiteError(systemCode: errno, operation: "unlink \(path)")
        }
    }

    /// Syncs the folder holding `path`, so a rename in it survives power loss.
    private static func synchronizeFolder(of path: String) throws(SQLiteError) {
        let folder = (path as NSString).deletingLastPathComponent
        let fd = Foundation.open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw SQLiteError(systemCode: errno, operation: "open \(folder)") }
        defer { close(fd) }
        guard Platform.synchronize(fd, dataOnly: false) == 0 else {
            throw SQLiteError(systemCode: errno, operation: "fsync \(folder)")
        }
    }
}
