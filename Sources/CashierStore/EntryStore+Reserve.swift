import CashierPlatform
import CashierSQLite
import Foundation

/// Room kept for removals on a tight volume: a file of ``reserveBytes`` beside the store
/// (`store.sqlite-reserve`), made while the volume still has that much free, given back to the
/// volume when a removal finds no room.
///
/// A removal is a write to SQLite: its transaction appends a few pages to the log. On a full
/// volume it could not, even after the log was folded in, and the removal then lived only in the
/// memory of the process that made it (the disk tier's removals awaiting room): a process that
/// exited before a reclaim found room lost it, and the removed value read again in every process
/// (DESIGN.md: "nothing removed is read again, after a kill, in any process"). Now such a removal
/// unlinks the reserve and runs once more: its pages fit in what that gave back, and it commits.
/// Folding the log in after it frees those pages again for the next removal, and the next
/// reclaim that finds the room makes the reserve again.
///
/// Kept only while the volume is tight (``Options/tightVolume``: under 64 MiB free): a roomy
/// volume needs none, and its folders do not carry one. A volume filled all at once from roomy
/// (another app's download) may have none yet: its removals then await room as before. Writes
/// never draw on it: a write that finds no room throws, and nothing stored is lost by that.
extension EntryStore {
    /// What the reserve holds: room for the log of a few one-row removals (each touches the
    /// table's page and those of its indexes: five to eight pages of 4 KiB, and their frames).
    package static let reserveBytes = 128 << 10

    /// The reserve's path: beside the store, a name no entry file has.
    package var reservePath: String { path + "-reserve" }

    /// Keeps the folder's reserve while the volume is `tight`, and removes it when it no longer
    /// is: makes it (or completes one a killed process left short) when the volume has
    /// ``reserveBytes`` free for it. One `lstat` when there is nothing to do. Needs no lock: any
    /// process may make or release it at any time, and two that fill it at once write the same
    /// zeros.
    package func keepReserve(tight: Bool) {
        guard !options.readOnly else { return }
        var info = stat()
        let present = lstat(reservePath, &info) == 0
        guard tight else {
            if present, info.st_mode & S_IFMT == S_IFREG { unlink(reservePath) }
            return
        }
        // Sizes compared as `off_t`: a file planted there may exceed a 32-bit `Int` (watchOS).
        if present, info.st_mode & S_IFMT != S_IFREG || info.st_size >= off_t(Self.reserveBytes) { return }
        let missing = Self.reserveBytes - (present ? Int(info.st_size) : 0)
        guard let available = Platform.availableBytes(path), available > missing else { return }
        // O_NOFOLLOW: a link planted under the reserve's name is never written through.
        let fd = Foundation.open(reservePath, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, options.permissions)
        guard fd >= 0 else { return }
        defer { close(fd) }
        // Zeros written, not a hole: the blocks must be the volume's to give back.
        let zeros = [UInt8](repeating: 0, count: Self.reserveBytes)
        let filled = zeros.withUnsafeBytes { bytes in
            pwrite(fd, bytes.baseAddress, Self.reserveBytes, 0) == Self.reserveBytes
        }
        // A reserve the volume could not hold whole is no reserve: its room goes back at once.
        if !filled { unlink(reservePath) }
    }

    /// Gives the reserve's room back to the volume; whether there was one to give.
    func releaseReserve() -> Bool {
        var info = stat()
        guard lstat(reservePath, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size > 0 else { return false }
        return unlink(reservePath) == 0
    }

    /// What a call that found the volume full does before it runs once more (``withWriter(until:drawingOnReserve:_:)``):
    /// the first time, the log is copied into the store and cut back (as far as that goes
    /// without waiting) and the store keeps its log small from then on; the second time, for a
    /// removal (`drawingOnReserve`), the reserve goes. Returns false when nothing is left to try.
    func makeRoom(_ connection: StoreConnection, attempt: Int, drawingOnReserve: Bool) -> Bool {
        if attempt == 1 {
            truncateLog(connection)
            if !tightVolume {
                tightVolume = true
                try? StoreSchema.setLogBounds(connection.sqlite, tightVolume: true)
            }
            return true
        }
        return attempt == 2 && drawingOnReserve && releaseReserve()
    }
}
