import CashierSQLite

/// Where an entry's record lives: in its row, or in a file of the folder (a large entry).
package enum StoreLocation: Int64, Sendable {
    /// The record is the row's `record` blob.
    case row = 0
    /// The record is a file in the cache folder; the row carries no blob, only what the index needs.
    case file = 1
}

/// What the index knows of one entry, small or large: everything but its record.
package struct StoreEntry: Sendable, Equatable {
    /// The full key, exactly as given (any string).
    package var key: String
    package var location: StoreLocation
    /// The record's bytes (a row), or the file's bytes (a large entry), as the caller gave it.
    package var size: Int
    /// The last use, seconds since 1970, as coarse as the caller records it.
    package var lastUse: Int64
    /// When the entry expires, seconds since 1970; nil for never.
    package var expiry: Int64?
    /// A locked entry is never an eviction candidate.
    package var isLocked: Bool
    /// Uses recorded by ``EntryStore/recordUses(_:at:)``, saturating at ``EntryStore/maximumFrequency``.
    package var frequency: Int

    package init(
        key: String, location: StoreLocation, size: Int, lastUse: Int64, expiry: Int64? = nil,
        isLocked: Bool = false, frequency: Int = 0
    ) {
        self.key = key
        self.location = location
        self.size = size
        self.lastUse = lastUse
        self.expiry = expiry
        self.isLocked = isLocked
        self.frequency = frequency
    }

    /// Whether this row is still the one `noted` described, as a removal of unchanged rows
    /// judges it (`EntryStore.remove(unchanged:evictedIn:filePath:)`): the same key, kind,
    /// size and lock, and no later use or write (`last_use` no newer).
    package func isUnchanged(since noted: StoreEntry) -> Bool {
        key == noted.key && (location == .file) == (noted.location == .file) && size == noted.size
            && lastUse <= noted.lastUse && isLocked == noted.isLocked
    }
}

/// The store as its writer knew it at one moment (``EntryStore/walkEvictionOrder(_:_:)``): two
/// equal snapshots mean one writer connection, to one file, and no row changed between them,
/// in any process.
package struct StoreSnapshot: Sendable, Equatable {
    /// The writer's number (``StoreConnection/serial``): another writer, even to a file at the
    /// same path, is another store.
    var connection: Int64
    var dataVersion: Int64
    var changes: Int64
}

/// What a sweep measures in its walk's read transaction (``EntryStore/walkEvictionOrder(_:measuring:_:)``).
package struct StoreMeasure: Sendable, Equatable {
    /// Bytes the entries occupy: the large entries' files, the store's pages in use as the
    /// snapshot has them (pages its log adds or gives back included, free pages not) and its
    /// `-shm`; not the log's own bytes, which the next checkpoint gives back.
    package var occupied: Int
    /// The entries' sizes added up (``EntryStore/totalSize()``): what evicting them is counted in.
    package var entries: Int
    /// The large entries' files, in ``occupied`` and ``entries`` both.
    package var files: Int
    /// What does not shrink with the entries: the `-shm` and an empty store's pages.
    package var fixed: Int
}

/// The first use of a row a read found never used since written (`frequency = 0`): recorded on
/// that row only, the one whose `last_use` is still `written` (``EntryStore/recordUses(_:granularity:firstUses:)``).
package struct StoreFirstUse: Sendable, Equatable {
    package var key: String
    /// The use's second.
    package var time: Int64
    /// The row's `last_use` as the read found it: its write's second.
    package var written: Int64

    package init(key: String, time: Int64, written: Int64) {
        self.key = key
        self.time = time
        self.written = written
    }
}

/// One entry and its record: the bytes a file of the same entry would hold (empty for a file entry).
package struct StoredRecord: Sendable, Equatable {
    package var entry: StoreEntry
    /// The checksummed header and payload exactly as written; the caller checks them.
    package var record: [UInt8]
}

/// A store file that could not be used, moved aside so a fresh store could start.
package struct StoreSetAside: Sendable, Equatable, CustomStringConvertible {
    /// The store's path, where a fresh store now is.
    package var path: String
    /// Where the damaged file went (replacing an earlier one set aside); nil if it had to be deleted.
    package var movedTo: String?
    /// Why: SQLite's error, or what the schema check found.
    package var reason: String

    package var description: String { "store \(path) set aside to \(movedTo ?? "nowhere (deleted)"): \(reason)" }
}

/// Why a store call did nothing. Every case leaves the store usable (or reports why it is not).
package enum StoreError: Error, Sendable, CustomStringConvertible {
    /// SQLite cannot be loaded or is too old: keep every entry as a file.
    case unavailable(SQLiteError)
    /// The store was damaged, not SQLite or not Cashier's: it was set aside and a fresh, empty
    /// store replaced it. The call did nothing; the cache starts empty and says why in an event.
    case setAside(StoreSetAside)
    /// Another process held the store's lock past the wait allowed (`SQLITE_BUSY`, `SQLITE_LOCKED`):
    /// the call did nothing and the store is as it was.
    case busy(SQLiteError)
    /// SQLite failed (an I/O error, a full disk, a file operation of a large entry's):
    /// the call did nothing and the store is as it was.
    case failed(SQLiteError)

    /// `.busy` for contention, `.failed` for anything else.
    init(_ error: SQLiteError) {
        self = error.isBusy ? .busy(error) : .failed(error)
    }

    package var description: String {
        switch self {
        case .unavailable(let error): "\(error)"
        case .setAside(let setAside): "\(setAside)"
        case .busy(let error): "\(error)"
        case .failed(let error): "\(error)"
        }
    }
}

/// What a removal of planned rows did (``EntryStore/remove(unchanged:evictedIn:filePath:asWalked:)``).
package struct StoreRemovals: Sendable, Equatable {
    /// The rows removed, as they were planned.
    package var removed: [StoreEntry] = []
    /// The rows the volume had no room to remove, even one a transaction (`SQLITE_FULL`): they
    /// stay as they were, for the caller to try again once other removals have made room.
    package var awaitingRoom: [StoreEntry] = []

    package init(removed: [StoreEntry] = [], awaitingRoom: [StoreEntry] = []) {
        self.removed = removed
        self.awaitingRoom = awaitingRoom
    }
}

extension Int {
    /// `self + other`, held at `Int.max` (or `Int.min`) instead of trapping: sums of the sizes
    /// rows claim, which a damaged row may put near `Int.max`.
    package func addingClamped(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }

    /// `self - other`, held at `Int.min` (or `Int.max`) instead of trapping.
    package func subtractingClamped(_ other: Int) -> Int {
        let (difference, overflow) = subtractingReportingOverflow(other)
        return overflow ? (other > 0 ? .min : .max) : difference
    }
}
