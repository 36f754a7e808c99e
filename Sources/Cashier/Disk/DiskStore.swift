import CashierEntryFormat
import CashierPlatform
import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One cache folder: entry files, their index, and the housekeeping on them.
///
/// Reads and writes of one entry go straight to its file; the index (sizes and
/// last uses, for ``Cache/totalSize`` and eviction) is loaded by one folder scan
/// the first time it is needed, never on the read path. Decisions that must be
/// made by one process at a time (eviction, garbage collection) hold an
/// advisory `flock` on the folder's `.lock` file; plain reads take no lock.
package final class DiskStore: Sendable {
    package let folder: String
    package let fileSystem: any FileSystem
    private let state = Locked(IndexState())
    /// The folder's owner and mode as last judged (see `FolderTrust.swift`).
    let folderCheck = Locked(FolderCheck())
    /// Per-key locks of every cache on this folder in this process, and the barrier bulk removals take.
    let keyLocks = KeyLocks()
    private let sweepQueue = DispatchQueue(label: "Cashier.DiskStore.sweep", qos: .utility)
    /// Every sweep scheduled and not yet finished, retries included: what ``waitForSweeps()`` waits for.
    private let pendingSweeps = DispatchGroup()
    /// Serializes folder scans in this process so concurrent first questions share one scan.
    private let scanLock = NSLock()

    package init(folder: String, fileSystem: any FileSystem = POSIXFileSystem()) {
        self.folder = folder
        self.fileSystem = fileSystem
    }

    // MARK: Names

    /// The file an entry for `key` lives in: 32 hex digits of two XXH64 hashes, then `.cache`.
    ///
    /// Hashed from ``canonicalSpelling(of:)``, so keys equal as Swift strings share one file.
    package static func fileName(for key: String) -> String {
        let key = canonicalSpelling(of: key)
        let high = XXHash64.hash(key)
        let low = XXHash64.hash(key, seed: 0x9E37_79B9_7F4A_7C15)
        return String(unsafeUninitializedCapacity: 38) { buffer in
            let digits: StaticString = "0123456789abcdef"
            digits.withUTF8Buffer { digits in
                for (word, start) in [(high, 0), (low, 16)] {
                    for i in 0..<16 { buffer[start + i] = digits[Int((word >> UInt64(60 - 4 * i)) & 0xF)] }
                }
            }
            for (i, byte) in ".cache".utf8.enumerated() { buffer[32 + i] = byte }
            return 38
        }
    }

    /// Whether `name` is an entry file name (as opposed to a temporary, the lock file or a stranger).
    package static func isEntryFileName(_ name: String) -> Bool {
        let utf8 = name.utf8
        guard utf8.count == 38, name.hasSuffix(".cache") else { return false }
        return utf8.prefix(32).allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    package static let temporaryPrefix = ".tmp-"
    package static let lockFileName = ".lock"

    package func path(_ name: String) -> String { folder + "/" + name }

    // MARK: Reading

    package enum ReadResult: Sendable {
        case absent
        case entry(EntryHeader, payload: Data, info: FileInfo)
        /// Damage: why, the file's size, and its header when that decoded (a checksum mismatch).
        case damaged(EntryFormatError, info: FileInfo, header: EntryHeader? = nil)
        case failed(SystemError)
    }

    /// Reads and verifies one entry file (FileSystem+Entries.swift): open, fstat, pread,
    /// close; no write (recency is recorded by the caller, through ``noteRead(_:info:isLocked:at:)``).
    /// The payload is the buffer the kernel filled, indices from 0; nothing is allocated
    /// before the header's lengths are checked against the file and the maximum entry size.
    package func read(_ fileName: String) -> ReadResult {
        fileSystem.readEntry(path(fileName))
    }

    /// Reads just the header of an entry file (checksum not verified).
    package func readHeader(_ fileName: String) -> Result<(EntryHeader, FileInfo), HeaderFailure> {
        fileSystem.readEntryHeader(path(fileName))
    }

    package enum HeaderFailure: Error, Sendable {
        case absent
        case damaged(EntryFormatError, size: Int)
        case failed(SystemError)
    }

    // MARK: Writing

    package struct WriteOptions: Sendable {
        package var filePermissions: mode_t
        package var folderPermissions: mode_t
        package var synchronize: Bool
        package var completeProtection: Bool
        /// Who else may write the folder: a folder this refuses is never written to.
        package var sharing: Cache.Sharing = .owner
        /// Whether a folder made for the cache is excluded from iCloud and device backups (`.persistent`).
        package var excludesFromBackup = false
        /// The moment of the write by the cache's clock, recorded as the entry's last use; `nil`: the real clock.
        package var usedAt: Double?
        package init(filePermissions: mode_t, folderPermissions: mode_t, synchronize: Bool, completeProtection: Bool) {
            self.filePermissions = filePermissions
            self.folderPermissions = folderPermissions
            self.synchronize = synchronize
            self.completeProtection = completeProtection
        }
    }

    /// Writes an entry: a temporary file in the folder, renamed over `fileName`.
    ///
    /// Either the new entry is in place when this returns, or it throws and the
    /// old entry (if any) is untouched and no temporary file is left. Returns the
    /// entry's size in bytes.
    package func write(_ fileName: String, header: EntryHeader, payload: Data, options: WriteOptions)
        throws(SystemError) -> Int
    {
        // One lstat: a folder whose owner or mode changed, or that was replaced, is judged anew.
        if let refusal = refusal(for: options.sharing, fresh: true) { throw refusal }
        let temporary = path(Self.temporaryPrefix + "\(getpid())-\(state.withLock { $0.nextTemporary() })")
        let size = header.length + payload.count
        // Never an entry no read accepts (``EntryHeader/checkWritable()``; `set` says why first).
        guard (try? header.checkWritable()) != nil else {
            throw SystemError(code: EFBIG, operation: "write", path: path(fileName))
        }
        do {
            try writeTemporary(temporary, header: header, payload: payload, options: options)
        } catch  where error.code == ENOENT {
            // The folder is missing (first write, or deleted under us): make it and try once more.
            state.withLock { $0.folderReady = false }
            try writeTemporary(temporary, header: header, payload: payload, options: options)
        }
        stampWrite(temporary, at: options.usedAt)
        do {
            try fileSystem.rename(temporary, to: path(fileName))
        } catch {
            try? fileSystem.removeFile(temporary)
            throw error
        }
        noteWritten(fileName, size: size, isLocked: header.isLocked, at: options.usedAt ?? Date().timeIntervalSince1970)
        // The new entry is in place (and in the index); a failing folder sync only
        // leaves its durability unknown, which the caller is told by the error.
        if options.synchronize { try fileSystem.synchronizeDirectory(folder) }
        return size
    }

    private func writeTemporary(_ temporary: String, header: EntryHeader, payload: Data, options: WriteOptions)
        throws(SystemError)
    {
        if !state.withLock({ $0.folderReady }) {
            try createFolder(options)
            // Another user may have made it first, between the check and the mkdir.
            if let refusal = refusal(for: options.sharing, fresh: true) { throw refusal }
            state.withLock { $0.folderReady = true }
        }
        let written = payload.withUnsafeBytes { payloadBytes in
            let headerBytes = header.encode(payload: payloadBytes)
            return headerBytes.withUnsafeBytes { headerBytes in
                Result { () throws(SystemError) in
                    try fileSystem.writeNewFile(
                        temporary, permissions: options.filePermissions, completeProtection: options.completeProtection,
                        header: headerBytes,
                        payload: payloadBytes, synchronize: options.synchronize)
                }
            }
        }
        if case .failure(let error) = written {
            try? fileSystem.removeFile(temporary)
            throw error
        }
    }

    /// Makes the folder (and any missing parent). A folder made here gets complete data
    /// protection before any file is created in it (when asked), is excluded from backups
    /// (when asked), and with `synchronize` each new folder's entry in its parent is synced:
    /// otherwise a power loss could lose the folder, and with it a returned `.synchronized` set.
    private func createFolder(_ options: WriteOptions) throws(SystemError) {
        var missing: [String] = []
        var current = folder
        while true {
            let parent = (current as NSString).deletingLastPathComponent
            guard !parent.isEmpty, parent != current,
                fileSystem.info((current as NSString).lastPathComponent, in: parent) == nil
            else { break }
            missing.append(current)
            current = parent
        }
        try fileSystem.createDirectory(folder, permissions: options.folderPermissions)
        guard missing.first == folder else { return }
        if options.completeProtection, let code = Platform.protectCompletely(folder) {
            throw SystemError(code: code, operation: "set complete data protection", path: folder)
        }
        if options.excludesFromBackup { Platform.excludeFromBackup(folder) }
        if options.synchronize {
            for created in missing {
                try fileSystem.synchronizeDirectory((created as NSString).deletingLastPathComponent)
            }
        }
    }

    /// Rewrites an entry's header, keeping its payload (refresh, lock, unlock).
    ///
    /// Returns the new header, or `nil` when there is no sound entry for `key`.
    package func rewriteHeader(
        _ fileName: String, key: String, options: WriteOptions,
        _ change: (inout EntryHeader) -> Void
    ) throws(SystemError) -> (EntryHeader, Int)? {
        // A file another user planted is not rewritten as this user's: taken as absent.
        guard case .entry(var header, let payload, let info) = read(fileName), header.key == key,
            untrustedEntry(fileName, info: info, sharing: options.sharing) == nil
        else { return nil }
        change(&header)
        let size = try write(fileName, header: header, payload: payload, options: options)
        return (header, size)
    }

    /// Removes an entry file.
    package func remove(_ fileName: String) throws(SystemError) {
        try fileSystem.removeFile(path(fileName))
        state.withLock { $0.note(fileName, nil) }
    }

    // MARK: The index

    package func noteWritten(_ fileName: String, size: Int, isLocked: Bool, at now: Double) {
        state.withLock {
            $0.note(
                fileName,
                IndexRecord(
                    size: size, lastUse: now, isLocked: isLocked, stamp: now, modifiedAt: Date().timeIntervalSince1970))
        }
    }

    /// Records a read at `now` (the cache's clock), for least-recently-used order: exactly
    /// in this process's index, and in the file's access time when that is a granularity
    /// or more off (see ``recencyGranularity``). Returns the access time the file keeps now.
    @discardableResult
    ///
    /// `foundSlidingLifespanOver`: the read found a ``Lifespan/sinceLastUse(_:)`` lifespan over
    /// and `now` is its last use. Where reading moves access times (no `O_NOATIME`, a mount
    /// without `noatime`), the read itself may have moved the file's, and it must not count as
    /// a use in the next launch: the access time is set to `now` whatever `info` says.
    package func noteRead(
        _ fileName: String, info: FileInfo, isLocked: Bool, at now: Double,
        foundSlidingLifespanOver: Bool = false
    ) -> Double {
        state.withLock {
            $0.note(
                fileName,
                IndexRecord(
                    size: info.size, lastUse: now, isLocked: isLocked, stamp: info.accessedAt,
                    modifiedAt: info.modifiedAt))
        }
        return persistUse(fileName, at: now, stamp: foundSlidingLifespanOver ? nil : info.accessedAt)
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
    package func totals() -> (count: Int, size: Int) {
        loadIndexIfNeeded()
        return state.withLock { ($0.files.count, $0.totalSize) }
    }

    private func loadIndexIfNeeded() {
        guard !state.withLock({ $0.loaded }) else { return }
        scanLock.lock()
        defer { scanLock.unlock() }
        if !state.withLock({ $0.loaded }) { _ = rescan() }
    }

    /// Rebuilds the index from the folder (the truth when other processes write too).
    /// Returns what the scan found; changes this process makes meanwhile are kept.
    @discardableResult
    private func rescan() -> [String: IndexRecord] {
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

    // MARK: Housekeeping

    /// What housekeeping did to one entry, reported so the cache can tell its memory tier and observers.
    package enum Removal: Sendable {
        case evicted(key: String, bytes: Int)
        case discarded(key: String, reason: DiscardReason)
        case removed(key: String)
    }

    package struct Limits: Sendable {
        package var size: Int?
        package var minimumFreeSpace: Int?
        /// Fraction of `size` a sweep trims down to (below 1, so sweeps are rare and small).
        package var sweepTarget: Double = 0.9
        package init(size: Int?, minimumFreeSpace: Int?) {
            self.size = size
            self.minimumFreeSpace = minimumFreeSpace
        }
    }

    /// Every entry's header, for listing and bulk removal (damaged files are reported, not returned).
    package func scanHeaders() -> (
        entries: [(fileName: String, header: EntryHeader, info: FileInfo)],
        damaged: [(fileName: String, error: EntryFormatError, size: Int)]
    ) {
        guard let names = try? fileSystem.contentsOfDirectory(folder) else { return ([], []) }
        var entries: [(String, EntryHeader, FileInfo)] = []
        var damaged: [(String, EntryFormatError, Int)] = []
        for name in names where Self.isEntryFileName(name) {
            switch readHeader(name) {
            case .success(let (header, info)): entries.append((name, header, info))
            case .failure(.damaged(let error, let size)): damaged.append((name, error, size))
            case .failure: break
            }
        }
        return (entries, damaged)
    }

    /// Removes every entry for which `shouldRemove` returns true, under the folder lock.
    ///
    /// `shouldRemove` judges the headers first, with no key lock held; the files it chose
    /// are then removed under the key barrier (see ``KeyLocks``), each unless this process
    /// wrote, read or used it since, and `forget` runs there for each, so the caches drop
    /// their memory records in the same step as the file.
    package func removeEntries(
        where shouldRemove: (EntryHeader) -> Bool,
        forgetting forget: (Removal) -> Void = { _ in }
    ) -> [Removal] {
        withFolderLock {
            let known = state.withLock { $0.files }
            let chosen = scanHeaders().entries.filter { shouldRemove($0.header) }.map { entry in
                Choice(
                    fileName: entry.fileName, sequence: known[entry.fileName]?.sequence,
                    removal: .removed(key: entry.header.key))
            }
            return keyLocks.withEveryKeyLocked { removeUnchanged(chosen, forgetting: forget) }
        }
    }

    /// Removes every entry file; temporary files of writers still running are left to them.
    /// Returns the removals that failed (a read-only folder, say); the index then rescans.
    ///
    /// Runs under the key barrier, and `forget` with it (the caches drop their memory
    /// there), so no write of one key lands between its file going and its memory record going.
    @discardableResult
    package func removeAllEntries(forgetting forget: () -> Void = {}) -> [SystemError] {
        withFolderLock {
            keyLocks.withEveryKeyLocked {
                var failures: [SystemError] = []
                for name in (try? fileSystem.contentsOfDirectory(folder)) ?? [] where Self.isEntryFileName(name) {
                    do throws(SystemError) {
                        try fileSystem.removeFile(path(name))
                    } catch {
                        failures.append(error)
                    }
                }
                state.withLock { $0.reset(loadedEmpty: failures.isEmpty) }
                forget()
                return failures
            }
        }
    }

    /// What garbage collection reclaims besides stale temporaries and damaged files.
    package struct Reclaim: Sendable {
        /// Expired entries.
        package var expired: Bool
        /// Entries of unversioned keys written under another app version than this one
        /// (`nil`: nothing is reclaimed for its app version).
        package var otherAppVersionsThan: String??
        package init(expired: Bool, otherAppVersionsThan: String?? = .none) {
            self.expired = expired
            self.otherAppVersionsThan = otherAppVersionsThan
        }
    }

    /// Garbage collection: stale temporaries and damaged files out, expired entries and
    /// entries no read can return out (as `reclaim` says), then least recently used down
    /// to the limits.
    ///
    /// Headers are judged first with no key lock held; removals then run under the key
    /// barrier, each file only if this process has not written, read or used it since it
    /// was judged, and `forget` runs there for each (see ``removeEntries(where:forgetting:)``).
    /// With `waiting` false (background collections), returns nothing at once when another
    /// process holds the folder lock: the next collection tries again.
    package func collectGarbage(
        now: Double, limits: Limits, reclaim: Reclaim, waiting: Bool = true,
        forgetting forget: (Removal) -> Void = { _ in }
    ) -> [Removal] {
        withFolderLock(waiting: waiting) {
            let names = (try? fileSystem.contentsOfDirectory(folder)) ?? []
            var chosen: [Choice] = []
            var live: [Candidate] = []
            let known = state.withLock { $0.files }
            for name in names {
                if name.hasPrefix(Self.temporaryPrefix) {
                    removeIfAbandoned(temporary: name)
                    continue
                }
                guard Self.isEntryFileName(name) else { continue }
                let sequence = known[name]?.sequence
                switch readHeader(name) {
                case .success(let (header, info)):
                    // An orphan (KeyIdentity.swift): no read finds it, and its key may be live elsewhere.
                    guard Self.isHome(name, of: header.key) else {
                        _ = try? fileSystem.removeFile(path(name))
                        continue
                    }
                    let lastUse = Self.lastUse(info: info, indexed: known[name]?.lastUse)
                    if reclaim.expired, header.isExpired(at: now, lastUsedAt: lastUse) {
                        chosen.append(
                            Choice(
                                fileName: name, sequence: sequence,
                                removal: .discarded(key: header.key, reason: .expired)))
                        continue
                    }
                    if case .some(let appVersion) = reclaim.otherAppVersionsThan, header.schemaVersion == nil,
                        header.appVersion != appVersion
                    {
                        let reason = DiscardReason.appVersionMismatch(stored: header.appVersion, current: appVersion)
                        chosen.append(
                            Choice(
                                fileName: name, sequence: sequence, removal: .discarded(key: header.key, reason: reason)
                            ))
                        continue
                    }
                    live.append(
                        Candidate(
                            fileName: name, key: header.key, size: info.size, lastUse: lastUse, sequence: sequence,
                            modifiedAt: info.modifiedAt, isLocked: header.isLocked))
                case .failure(.damaged(_, _)):
                    chosen.append(
                        Choice(fileName: name, sequence: sequence, removal: .discarded(key: name, reason: .corrupt)))
                case .failure:
                    continue
                }
            }
            let removals = keyLocks.withEveryKeyLocked {
                removeUnchanged(chosen, forgetting: forget)
                    + evict(
                        from: live, downTo: limits.size, minimumFreeSpace: limits.minimumFreeSpace, forgetting: forget)
            }
            rescan()
            return removals
        } ?? []
    }

    /// Schedules a size sweep off the caller's thread if the folder may be over `limits.size`.
    /// `forget` runs under the key barrier for each eviction, `report` after the sweep.
    package func sweepIfNeeded(
        limits: Limits, forgetting forget: @escaping @Sendable (Removal) -> Void = { _ in },
        report: @escaping @Sendable ([Removal]) -> Void
    ) {
        guard let limit = limits.size else { return }
        let shouldSchedule = state.withLock { state -> Bool in
            guard !state.sweepScheduled, !state.loaded || state.totalSize > limit else { return false }
            state.sweepScheduled = true
            return true
        }
        guard shouldSchedule else { return }
        scheduleSweep(after: nil, limits: limits, forgetting: forget, report: report)
    }

    /// Runs a sweep on the sweep queue, inside an expiring background activity where the
    /// platform has them, never waiting for the folder lock: when another process holds it,
    /// the sweep is tried again a second later (a suspended app must not wait on, or hold, a
    /// file lock: iOS ends it, 0xdead10cc).
    private func scheduleSweep(
        after delay: Double?, limits: Limits, forgetting forget: @escaping @Sendable (Removal) -> Void,
        report: @escaping @Sendable ([Removal]) -> Void
    ) {
        pendingSweeps.enter()
        let work: @Sendable () -> Void = { [self] in
            defer { pendingSweeps.leave() }
            switch withBackgroundActivity("Cashier size sweep", { sweep(limits: limits, forgetting: forget) }) {
            case .some(.some(let removals)):
                report(removals)
            case .some(.none):
                // Entered before this one leaves: a waiter never sees a gap between the two.
                scheduleSweep(after: 1, limits: limits, forgetting: forget, report: report)
            case .none:
                // The system ended the activity before it began: the next write schedules anew.
                state.withLock { $0.sweepScheduled = false }
            }
        }
        if let delay {
            sweepQueue.asyncAfter(deadline: .now() + delay, execute: work)
        } else {
            sweepQueue.async(execute: work)
        }
    }

    /// Waits until every scheduled sweep has finished (for tests and orderly shutdown),
    /// including one retried because another process held the folder lock: that wait
    /// lasts as long as the other process keeps the lock.
    package func waitForSweeps() {
        pendingSweeps.wait()
    }

    /// Waits only for the sweep attempts queued so far, not for their retries (for tests).
    package func drainSweepQueue() {
        sweepQueue.sync {}
    }

    /// A sweep, or `nil` when another process holds the folder lock.
    private func sweep(limits: Limits, forgetting forget: (Removal) -> Void) -> [Removal]? {
        withFolderLock(waiting: false) {
            state.withLock { $0.sweepScheduled = false }
            // Another process may have written: the folder, not this process's index, is the truth.
            rescan()
            let (files, total) = state.withLock { ($0.files, $0.totalSize) }
            guard let limit = limits.size, total > limit else { return [] }
            let candidates = files.map { name, record in
                Candidate(
                    fileName: name, key: nil, size: record.size, lastUse: record.lastUse, sequence: record.sequence,
                    modifiedAt: record.modifiedAt, isLocked: record.isLocked)
            }
            return keyLocks.withEveryKeyLocked {
                evict(
                    from: candidates, downTo: Int(Double(limit) * limits.sweepTarget), minimumFreeSpace: nil,
                    forgetting: forget)
            }
        }
    }

    /// A file housekeeping chose to remove, with the index's change counter when it chose it.
    private struct Choice {
        var fileName: String
        var sequence: UInt64?
        var removal: Removal
    }

    /// Removes each chosen file that this process has not touched since it was chosen. Call under the key barrier.
    private func removeUnchanged(_ chosen: [Choice], forgetting forget: (Removal) -> Void) -> [Removal] {
        var removals: [Removal] = []
        for choice in chosen where sequence(of: choice.fileName) == choice.sequence {
            guard (try? remove(choice.fileName)) != nil else { continue }
            forget(choice.removal)
            removals.append(choice.removal)
        }
        return removals
    }

    private struct Candidate {
        var fileName: String
        var key: String?
        var size: Int
        /// The last use by the caches' clock, then two tie-breakers: the order this process
        /// noted uses in (0 for files it has not touched), and the real time of the write.
        var lastUse: Double
        var sequence: UInt64?
        var modifiedAt: Double
        var isLocked: Bool?

        var order: (Double, UInt64, Double) { (lastUse, sequence ?? 0, modifiedAt) }
    }

    /// Removes least recently used entries, unlocked ones first, until the total is at most
    /// `limit` and the volume has `minimumFreeSpace` free, skipping any this process touched
    /// since the candidates were listed. Call under the folder lock and the key barrier.
    private func evict(
        from candidates: [Candidate], downTo limit: Int?, minimumFreeSpace: Int?,
        forgetting forget: (Removal) -> Void
    ) -> [Removal] {
        var total = candidates.reduce(0) { $0 + $1.size }
        func satisfied() -> Bool {
            if let limit, total > limit { return false }
            if let minimumFreeSpace, let free = fileSystem.availableCapacity(folder), free < minimumFreeSpace {
                return false
            }
            return true
        }
        guard !satisfied() else { return [] }
        var removals: [Removal] = []
        var locked: [Candidate] = []
        let ordered = candidates.sorted { $0.order < $1.order }
        func evictOne(_ candidate: Candidate, key: String) {
            guard sequence(of: candidate.fileName) == candidate.sequence, (try? remove(candidate.fileName)) != nil
            else { return }
            total -= candidate.size
            let removal = Removal.evicted(key: key, bytes: candidate.size)
            forget(removal)
            removals.append(removal)
        }
        for var candidate in ordered {
            if satisfied() { return removals }
            if candidate.key == nil || candidate.isLocked == nil {
                guard case .success(let (header, _)) = readHeader(candidate.fileName) else { continue }
                candidate.key = header.key
                candidate.isLocked = header.isLocked
            }
            if candidate.isLocked == true {
                locked.append(candidate)
                continue
            }
            evictOne(candidate, key: candidate.key!)
        }
        for candidate in locked {
            if satisfied() { break }
            evictOne(candidate, key: candidate.key!)
        }
        return removals
    }

    /// Removes a temporary file whose writer is gone or that is over an hour old.
    ///
    /// The age is the real clock against the file's modification time, not the cache's
    /// clock: both are the kernel's, and ``Cache/Configuration-swift.struct/now`` may be a
    /// test's clock or set apart from real time, which would judge a running writer's file
    /// (written a moment ago) an hour old and pull it from under its rename.
    private func removeIfAbandoned(temporary name: String) {
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
    /// Without a folder (nothing written yet) there is nothing to protect: `body` runs unlocked.
    private func withFolderLock<R>(_ body: () -> R) -> R {
        guard let token = try? fileSystem.lockExclusively(path(Self.lockFileName)) else { return body() }
        defer { fileSystem.unlock(token) }
        return body()
    }

    /// The same, but `nil` at once, without running `body`, when another process holds the
    /// lock and `waiting` is false: background work never blocks on the lock.
    private func withFolderLock<R>(waiting: Bool, _ body: () -> R) -> R? {
        if waiting { return withFolderLock(body) }
        let token: Int32?
        do throws(SystemError) {
            token = try fileSystem.tryLockExclusively(path(Self.lockFileName))
        } catch {
            return body()
        }
        guard let token else { return nil }
        defer { fileSystem.unlock(token) }
        return body()
    }
}

private struct IndexRecord: Sendable {
    var size: Int
    /// The last write, read or use, by the caches' clock.
    var lastUse: Double
    var isLocked: Bool?
    /// The access time the file is known to have (what a relaunch reads as its last use).
    var stamp: Double?
    /// The real time of the file's write, the last tie-breaker of recency.
    var modifiedAt: Double
    /// The index's change counter when this record last changed (see ``DiskStore/sequence(of:)``).
    var sequence: UInt64 = 0
}

/// The in-process index of one folder. Changes made while a scan runs are logged
/// and replayed over the scan's result, so the totals stay exact to the byte.
private struct IndexState {
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
                totalSize -= old.size
                if record.isLocked == nil { record.isLocked = old.isLocked }
                if record.stamp == nil { record.stamp = old.stamp }
                record.lastUse = max(record.lastUse, old.lastUse)
            }
            files[name] = record
            totalSize += record.size
        } else if let old = files.removeValue(forKey: name) {
            totalSize -= old.size
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
        totalSize = files.values.reduce(0) { $0 + $1.size }
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
