import CashierPlatform
import CashierSQLite
import Foundation

/// Room kept for removals on a tight volume: a file of ``reserveBytes`` beside the store
/// (`store.sqlite-reserve`), made while the volume has that much free and 256 KiB more, given
/// back to the volume when a removal finds no room.
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
/// volume needs none, and its folders do not carry one. The disk tier keeps it at the store's
/// opening, at each reclaim, and every MiB its process writes. A volume filled all at once from
/// roomy (another app's download) may have none yet, and a reserve may not be enough: the removal
/// of one small entry (`removeValue`) then evicts large entries in its own transaction, once, the
/// largest unlocked first, until their files' blocks make ``reserveBytes`` (or none is left), and
/// commits in that room. A folder of rows alone has no file to give back, and bulk removals evict
/// nothing: their removals then await room as before.
/// Writes never draw on it: a write that finds no room throws, and nothing stored is lost by that
/// (but the room a removal freed by drawing on it is anyone's until the reserve is made again).
extension EntryStore {
    /// What the reserve holds: room for the log of a few one-row removals (each touches the
    /// table's page and those of its indexes: five to eight pages of 4 KiB, and their frames).
    package static let reserveBytes = 128 << 10

    /// The reserve's path: beside the store, a name no entry file has.
    package var reservePath: String { path + "-reserve" }

    /// Keeps the folder's reserve while the volume is `tight`, and removes it when it no longer
    /// is: makes it (in place of one a killed process left short, or one that holds fewer blocks
    /// than its size) when the volume has ``reserveBytes`` free for it. One `lstat` when there is
    /// nothing to do. Needs no lock: any process may make or release it at any time, and of two
    /// that make it at once, one does.
    package func keepReserve(tight: Bool) {
        guard !options.readOnly else { return }
        var info = stat()
        let present = lstat(reservePath, &info) == 0
        guard tight else {
            if present, info.st_mode & S_IFMT == S_IFREG { unlink(reservePath) }
            return
        }
        if present {
            // Whatever else is planted under the name (a link, a FIFO, a directory) is left alone.
            guard info.st_mode & S_IFMT == S_IFREG else { return }
            if Self.holdsReserve(info) { return }
            // Short, sparse, or linked from elsewhere: never written into (a hard link to a file
            // outside the folder is a regular file too), but replaced by a file of the store's own.
            unlink(reservePath)
        }
        // Never the last of the volume's room: what a reserve leaves must still let the store
        // open with a `-shm` (``sharedMemoryRoom``), and writes land.
        guard let available = Platform.availableBytes(path), available >= Self.reserveBytes + Self.sharedMemoryRoom
        else { return }
        // O_EXCL: a file made now, nothing planted meanwhile under the name (a link, a FIFO
        // whose opening would wait for a reader) is opened.
        let fd = Foundation.open(
            reservePath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, options.permissions)
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

    /// Whether `info` (a regular file's) is a whole reserve: its size, in blocks of its own
    /// (`st_blocks` counts 512-byte units on Darwin and Linux), and no other name. Compared as
    /// 64-bit values: a file planted there may exceed a 32-bit `Int` (watchOS).
    private static func holdsReserve(_ info: stat) -> Bool {
        Int64(info.st_size) >= Int64(reserveBytes) && Int64(info.st_blocks) >= Int64(reserveBytes / 512)
            && info.st_nlink == 1
    }

    /// Gives the reserve's room back to the volume; whether there was one to give.
    func releaseReserve() -> Bool {
        var info = stat()
        guard lstat(reservePath, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size > 0 else { return false }
        return unlink(reservePath) == 0
    }

    /// What a call that finds the volume full may draw on once the log is folded in
    /// (``withWriter(until:room:_:)``).
    enum RoomSource {
        /// Nothing more: writes, and removals of many rows (they go again one a transaction).
        case log
        /// The reserve: a one-row removal.
        case reserve
        /// The reserve, then evictions of large entries: ``remove(_:filePath:evictingFilesAt:until:evicted:)``.
        case reserveThenEvictions
    }

    /// What a call that found the volume full does before it runs once more: the first time, the
    /// log is copied into the store and cut back (as far as that goes without waiting) and the
    /// store keeps its log small from then on; the second time, for a one-row removal, the reserve
    /// goes; then, once, for `.reserveThenEvictions`, the call evicts large entries
    /// (`StoreConnection.evictsForRoom`). Returns false when nothing is left to try.
    func makeRoom(_ connection: StoreConnection, attempt: Int, room: RoomSource) -> Bool {
        if attempt == 1 {
            truncateLog(connection)
            if !tightVolume {
                tightVolume = true
                try? StoreSchema.setLogBounds(connection.sqlite, tightVolume: true)
            }
            return true
        }
        guard room != .log else { return false }
        if attempt == 2, releaseReserve() { return true }
        guard room == .reserveThenEvictions, !connection.evictsForRoom else { return false }
        connection.evictsForRoom = true
        return true
    }

    /// Removes the entry of `key` as ``remove(_:filePath:until:)`` does (its file at `filePath`
    /// first, then its row), and returns it, if there was one. On a full volume where neither
    /// folding the log in nor the reserve made room for the transaction, it runs once more
    /// evicting large entries with it (``evictLargeEntries(sparing:_:_:unlinked:)``; their files
    /// at `largeFilePath` of their keys), when `key`'s entry is a row. A cache may drop any entry it has not been told to
    /// keep; a removal that outlives its process is a promise (DESIGN.md). `evicted` is called
    /// once, before this returns or throws, with the entries whose files went, if any: their rows
    /// too when the transaction commits; when even that room was not enough, their rows stay,
    /// without a file (each reads as absent, and goes at its next read or collection).
    package func remove(
        _ key: String, filePath: String, evictingFilesAt largeFilePath: (String) -> String,
        until deadline: MonotonicDeadline? = nil, evicted: ([StoreEntry]) -> Void
    ) throws(StoreError) -> StoreEntry? {
        var unlinked: [StoreEntry] = []
        defer { if !unlinked.isEmpty { evicted(unlinked) } }
        return try withWriter(until: deadline, room: .reserveThenEvictions) { connection throws(SQLiteError) in
            let evicting = connection.evictsForRoom
            return try transaction(connection) { () throws(SQLiteError) in
                // Not through a store another process replaced (``ensureOpensItsPath(_:_:)``),
                // nor a file of a folder no longer the store's (a link on its path moved): one
                // `lstat` more when the key has no file, as a small entry has none.
                try ensureOpensItsPath(connection, "remove \(key)")
                var info = stat()
                if lstat(filePath, &info) == 0 { try removeFileIfStillOurs(filePath, connection) }
                // A large entry's removal needs none: its file, gone now, made it absent for good.
                if evicting, try existing(key, connection)?.location == .row {
                    try evictLargeEntries(sparing: key, largeFilePath, connection, unlinked: &unlinked)
                }
                let removed = try delete([key], connection).first
                // What ``mayGiveSpaceBack(volumeIsTight:)`` decides by, read in this transaction
                // (page 1 is already its own): no read transaction of its own after it.
                let free = try connection.integer(.freePages) ?? 0
                // The page count matters only beside free pages (none: nothing to give back).
                let after = (free, free > 0 ? try connection.integer(.pageCount) ?? 0 : 0, tightVolume)
                removalLock.withLock { pagesAfterRemoval = after }
                return removed
            }
        }
    }

    /// Inside the caller's transaction: evicts the largest unlocked large entries but `key`'s
    /// (files first, at `filePath` of their keys, then rows) until their files' blocks make
    /// ``reserveBytes`` or none is left, appending each to `unlinked` once its file is unlinked.
    ///
    /// What a file gives back is what it holds (`st_blocks`), not what its row says (a damaged
    /// size). A row whose file is gone goes too (it gives nothing); a file with another name
    /// (a hard link: unlinking it frees nothing) or something else under the name (a folder, a
    /// link) is left alone, its row with it. At most ``evictionCandidatesForRoom`` rows are
    /// looked at: each one removed touches pages the transaction must find room for. Nothing,
    /// when the folder is no longer the store's (``isItsFolder(_:_:)``).
    func evictLargeEntries(
        sparing key: String, _ filePath: (String) -> String, _ connection: StoreConnection,
        unlinked: inout [StoreEntry]
    ) throws(SQLiteError) {
        // A folder made again by another process, or another folder a link names now: the files
        // under these rows' names are another cache's entries. (They all lie in one folder.)
        guard isItsFolder(filePath(key), connection) else { return }
        var chosen: [(id: Int64, entry: StoreEntry, path: String)] = []
        var freed: Int64 = 0
        var looked = 0
        try connection.run(.largestUnlockedFiles) { query throws(SQLiteError) in
            while freed < Int64(Self.reserveBytes), looked < Self.evictionCandidatesForRoom, try query.step() {
                let entry = Self.entry(query)
                guard entry.key != key else { continue }
                looked += 1
                let path = filePath(entry.key)
                var info = stat()
                if lstat(path, &info) != 0 {
                    if errno == ENOENT { chosen.append((query.int64(at: 7), entry, path)) }
                    continue
                }
                guard info.st_mode & S_IFMT == S_IFREG, info.st_nlink == 1 else { continue }
                chosen.append((query.int64(at: 7), entry, path))
                // 64-bit: blocks of a file may exceed a 32-bit `Int` (watchOS).
                freed += Int64(info.st_blocks) * 512
            }
        }
        for (id, entry, path) in chosen {
            // A row whose file was already gone is no eviction (it read as absent); whatever took
            // the name since (a folder, a link to elsewhere) stays, and its row.
            if unlink(path) == 0 {
                unlinked.append(entry)
            } else if errno != ENOENT {
                continue
            }
            try delete(id: id, connection)
        }
    }

    /// How many rows a removal that evicts for room looks at, at most (``evictLargeEntries(sparing:_:_:unlinked:)``).
    static let evictionCandidatesForRoom = 64
}
