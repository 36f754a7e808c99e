import CashierPlatform
import CashierStore
import Foundation

/// This process's index of the folder's entry files (`IndexState`): what ``FileIndex`` counts,
/// orders and sweeps by; a folder with a store keeps its index in the store (``StoreIndex``).
extension DiskTier {
    // MARK: The index

    package func noteWritten(_ fileName: String, size: Int, isLocked: Bool, at now: Double) {
        state.withLock {
            $0.note(
                fileName,
                IndexRecord(
                    size: size, lastUse: now, isLocked: isLocked, stamp: now, modifiedAt: Date().timeIntervalSince1970))
        }
    }

    /// The last use of `fileName` this process's index holds (writes, reads, uses), if any.
    func indexedLastUse(of fileName: String) -> Double? {
        state.withLock { $0.files[fileName]?.lastUse }
    }

    /// The index's last use of `fileName` and the access time its file is known to have;
    /// with `now`, first records a use at `now` if the index holds the file.
    func recordUse(_ fileName: String, at now: Double?) -> (known: Bool, stamp: Double?) {
        state.withLock { state in
            guard state.files[fileName] != nil else { return (false, nil) }
            if let now { state.touch(fileName, at: now) }
            return (true, state.files[fileName]?.stamp)
        }
    }

    /// Notes that `fileName`'s access time is now `stamp`.
    func noteStamp(_ fileName: String, _ stamp: Double) {
        state.withLock { $0.files[fileName]?.stamp = stamp }
    }

    /// The index's change counter for `fileName`: bumped by every write, read and use this process
    /// notes, `nil` when it knows nothing of it. Bulk removals act only on files whose counter has
    /// not moved since they chose them.
    func sequence(of fileName: String) -> UInt64? {
        state.withLock { $0.files[fileName]?.sequence }
    }

    /// Entry count and total bytes, scanning the folder once if this process has not yet.
    ///
    /// With a store, the bytes are what the folder occupies (the store, its `-wal` and `-shm`,
    /// the large entries' files): what ``Cache/Configuration-swift.struct/diskSizeLimit`` bounds.
    /// None while the folder has a store this process cannot open now (``indexForChanging()``):
    /// as its reads miss, rather than the large entries' files alone.
    package func totals() -> (count: Int, size: Int) {
        indexForChanging()?.totals() ?? (0, 0)
    }

    func loadIndexIfNeeded() {
        guard !state.withLock({ $0.loaded }) else { return }
        scanLock.lock()
        defer { scanLock.unlock() }
        if !state.withLock({ $0.loaded }) { _ = rescan() }
    }

    /// Rebuilds the index from the folder (the truth when other processes write too).
    /// Returns what the scan found; changes this process makes meanwhile are kept.
    @discardableResult
    func rescan() -> [String: IndexRecord] {
        let position = state.withLock { $0.beginScan() }
        let scanned = scanSizes()
        state.withLock { $0.endScan(scanned, from: position) }
        return scanned
    }

    /// One `readdir` pass and one `stat` per entry file. Temporary files left by
    /// writers that died (a killed process) are removed on the way, so they never
    /// pile up between garbage collections.
    private func scanSizes() -> [String: IndexRecord] {
        guard let found = try? fileSystem.scan(folder, statting: Self.isEntryFileName) else { return [:] }
        var records: [String: IndexRecord] = [:]
        records.reserveCapacity(found.count)
        for (name, info) in found {
            guard let info else {
                if name.hasPrefix(Self.temporaryPrefix) { removeIfAbandoned(temporary: name) }
                continue
            }
            if info.isRegularFile {
                records[name] = IndexRecord(
                    size: info.size, lastUse: info.accessedAt, isLocked: nil, stamp: info.accessedAt,
                    modifiedAt: info.modifiedAt)
            }
        }
        return records
    }

    func removeIfAbandoned(temporary name: String) {
        let fields = name.dropFirst(Self.temporaryPrefix.count).split(separator: "-")
        let writerAlive: Bool
        if let pid = fields.first.flatMap({ pid_t($0) }), pid > 0 {
            writerAlive = pid == getpid() || kill(pid, 0) == 0 || errno == EPERM
        } else {
            writerAlive = false
        }
        if writerAlive, let info = fileSystem.info(name, in: folder),
            Date().timeIntervalSince1970 - info.modifiedAt < 3600
        {
            return
        }
        try? fileSystem.removeFile(path(name))
    }

    /// Runs `body` holding the folder's advisory lock, shared with other processes.
}

struct IndexRecord: Sendable {
    var size: Int
    /// The last write, read or use, by the caches' clock.
    var lastUse: Double
    var isLocked: Bool?
    /// The access time the file is known to have (what a relaunch reads as its last use).
    var stamp: Double?
    /// The real time of the file's write, the last tie-breaker of recency.
    var modifiedAt: Double
    /// The index's change counter when this record last changed (see ``DiskTier/sequence(of:)``).
    var sequence: UInt64 = 0
}

/// The in-process index of one folder. Changes made while a scan runs are logged
/// and replayed over the scan's result, so the totals stay exact to the byte.
struct IndexState {
    var folderReady = false
    var loaded = false
    var files: [String: IndexRecord] = [:]
    var totalSize = 0
    var sweepScheduled = false
    var temporaryCounter = 0
    private var changes: UInt64 = 0
    private var log: [(String, IndexRecord?)] = []
    private var activeScans = 0

    mutating func nextTemporary() -> Int {
        temporaryCounter += 1
        return temporaryCounter
    }

    /// Records a change. Before the first scan, `files` holds only what this process
    /// touched (its recency and locks are merged into the scan); `totalSize` counts once loaded.
    mutating func note(_ name: String, _ record: IndexRecord?) {
        var record = record
        if record != nil {
            changes += 1
            record?.sequence = changes
        }
        if activeScans > 0 { log.append((name, record)) }
        apply(name, record)
    }

    /// Records a use at `now` of a file the index holds (a memory hit): recency only.
    mutating func touch(_ name: String, at now: Double) {
        guard var record = files[name] else { return }
        record.isLocked = nil
        record.lastUse = now
        record.stamp = nil
        note(name, record)
    }

    private mutating func apply(_ name: String, _ record: IndexRecord?) {
        if var record {
            if let old = files[name] {
                totalSize = totalSize.subtractingClamped(old.size)
                if record.isLocked == nil { record.isLocked = old.isLocked }
                if record.stamp == nil { record.stamp = old.stamp }
                record.lastUse = max(record.lastUse, old.lastUse)
            }
            files[name] = record
            totalSize = totalSize.addingClamped(record.size)
        } else if let old = files.removeValue(forKey: name) {
            totalSize = totalSize.subtractingClamped(old.size)
        }
    }

    /// Starts a scan; the returned position is handed back to ``endScan(_:from:)``.
    mutating func beginScan() -> Int {
        activeScans += 1
        return log.count
    }

    /// Installs a scan's result, keeping what this process knew of recency and locks,
    /// then replays every change noted since the scan began.
    mutating func endScan(_ scanned: [String: IndexRecord], from position: Int) {
        let known = files
        files = scanned
        for (name, previous) in known {
            guard var record = files[name] else { continue }
            record.lastUse = max(record.lastUse, previous.lastUse)
            record.isLocked = previous.isLocked
            record.sequence = previous.sequence
            files[name] = record
        }
        // Clamped: a file planted sparse may claim a size near `Int.max`.
        totalSize = files.values.reduce(0) { $0.addingClamped($1.size) }
        loaded = true
        for (name, record) in log[position...] { apply(name, record) }
        activeScans -= 1
        if activeScans == 0 { log.removeAll() }
    }

    mutating func reset(loadedEmpty: Bool) {
        files = [:]
        totalSize = 0
        loaded = loadedEmpty
    }
}
