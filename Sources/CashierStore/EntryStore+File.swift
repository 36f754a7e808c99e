import CashierPlatform
import CashierSQLite
import Foundation

/// The store file's own steps, before SQLite opens it or after it is found damaged.
extension EntryStore {
    /// Creates the empty store file with exactly `permissions` (whatever the umask), refusing a
    /// symbolic link; an existing file is left as it is. SQLite copies the mode to `-wal` and `-shm`.
    /// Returns whether it created the file.
    static func createFile(_ path: String, permissions: mode_t) throws(SQLiteError) -> Bool {
        let fd = Foundation.open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, permissions)
        if fd < 0 {
            guard errno == EEXIST else { throw SQLiteError(systemCode: errno, operation: "create \(path)") }
            return false
        }
        defer { close(fd) }
        guard fchmod(fd, permissions) == 0 else {
            let code = errno
            unlink(path)
            throw SQLiteError(systemCode: code, operation: "fchmod \(path)")
        }
        return true
    }

    /// Moves the store and its `-wal` aside (`<name>.damaged`, replacing an earlier one) and
    /// removes its `-shm`, so the next open starts a fresh store; nil, doing nothing, when the
    /// file at `path` is no longer `expected` (another process set it aside and made a fresh
    /// store already, which must not be set aside in turn).
    ///
    /// The log goes first: a process opening the path between the steps finds the damaged store
    /// without its log (and sets it aside in turn), never a fresh store beside an old log, whose
    /// frames SQLite would replay into it.
    static func setAside(_ path: String, reason: String, expected: FileIdentity? = nil) -> StoreSetAside? {
        if let expected, FileIdentity(path: path) != expected { return nil }
        let aside = path + ".damaged"
        unlink(aside + "-wal")
        if rename(path + "-wal", aside + "-wal") != 0 { unlink(path + "-wal") }
        unlink(path + "-shm")
        var movedTo: String? = aside
        if rename(path, aside) != 0, errno != ENOENT {
            movedTo = nil
            if unlink(path) != 0 { rmdir(path) }
        }
        return StoreSetAside(path: path, movedTo: movedTo, reason: reason)
    }
}
