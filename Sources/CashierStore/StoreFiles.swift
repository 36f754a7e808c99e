import CashierPlatform
import CashierSQLite
import Foundation

// What the store knows of the files it opens and the time it may wait: a deadline for a
// caller's waits, a file's identity and version, and which SQLite errors mean the file.

/// A moment of the monotonic clock by which a caller's waits for other processes' locks end.
package struct MonotonicDeadline: Sendable {
    /// Nanoseconds of `CLOCK_MONOTONIC`.
    package let nanoseconds: UInt64

    /// `milliseconds` from now.
    package init(milliseconds: Int32) {
        nanoseconds = Self.now() &+ UInt64(max(0, milliseconds)) &* 1_000_000
    }

    /// What is left, in whole milliseconds (0 once passed: a lock held elsewhere then fails at once).
    package var remainingMilliseconds: Int32 {
        let now = Self.now()
        guard nanoseconds > now else { return 0 }
        return Int32(clamping: (nanoseconds - now) / 1_000_000)
    }

    /// `CLOCK_MONOTONIC` now, in nanoseconds.
    @Sendable package static func nanosecondsNow() -> UInt64 { now() }

    private static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}

/// One version of a file: its device, inode and status-change time. Unlike ``FileIdentity``,
/// it tells a file from a later one that reuses a removed file's inode number, and from the
/// same file once renamed or linked again.
package struct FileVersion: Equatable, Sendable {
    var identity: FileIdentity
    var changed: Int64

    package init?(path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        identity = FileIdentity(device: info.st_dev, inode: info.st_ino)
        changed = Platform.changeNanoseconds(info)
    }
}

/// A file's device and inode: equal for the same file, whatever its name.
package struct FileIdentity: Equatable, Sendable {
    package var device: UInt64
    package var inode: UInt64

    package init?(path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        self.init(device: info.st_dev, inode: info.st_ino)
    }

    /// The identity of what `path` names once symbolic links are followed (`stat(2)`).
    package init?(followingLinksAt path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        self.init(device: info.st_dev, inode: info.st_ino)
    }

    package init<Device: BinaryInteger, Inode: BinaryInteger>(device: Device, inode: Inode) {
        self.device = UInt64(truncatingIfNeeded: device)
        self.inode = UInt64(truncatingIfNeeded: inode)
    }
}

extension SQLiteError {
    /// What opening a store file that cannot be used fails with: damage (`SQLITE_CORRUPT`,
    /// `SQLITE_NOTADB`), a header or schema SQLite refuses (`SQLITE_ERROR` "unsupported file
    /// format", `SQLITE_SCHEMA`, `SQLITE_FORMAT`, `SQLITE_RANGE`, `SQLITE_MISMATCH`) or the schema
    /// check's verdict. Not a lock held elsewhere, an I/O error, a full disk or a refused open:
    /// those leave the file alone.
    /// `SQLITE_ERROR` is SQLite's generic code: only its "unsupported file format" means the file.
    var meansUnusableFile: Bool {
        isCorruption || [SQLiteCode.schema, SQLiteCode.mismatch, SQLiteCode.format].contains(primaryCode)
            || (primaryCode == SQLiteCode.error && message.contains("unsupported file format"))
    }
}
