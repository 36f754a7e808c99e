import CashierEntryFormat
import Foundation

/// A value a read found, with its metadata and where it came from.
///
/// Not generic: the value stays in its ``TypedRecord`` (the memory tier's, or one made for the
/// read) and is copied out once, by the caller, through ``value(as:)``. The read path is
/// generic code the caller's module does not specialize, where every `Found<V>` or `V?` it
/// handled cost a lookup of their metadata: about 4k instructions a cold read (callgrind,
/// `cashier-ratios --rounds 1 --only default-read`), 6% of it.
struct Found {
    var record: MemoryRecord
    var metadata: EntryMetadata
    var origin: Origin

    /// The value, of the type the read asked for (the record's ``MemoryRecord/valueType``).
    func value<V>(as type: V.Type) -> V { record.value(as: type) }
}

/// What one read under a key's lock has to report: `changes` are published before the lock is
/// released (observers see memory and disk agree), `events` emitted after it.
struct ReadReport {
    var events: [CacheEvent] = []
    var changes: [(any Sendable)?] = []

    /// Notes an entry discarded for `reason`: ``CacheEvent/discarded(key:reason:)``, then, for a
    /// value that would not decode or migrate, the error as a failure.
    mutating func noteDiscard(_ name: String, _ reason: DiscardReason, because error: (any Error)? = nil) {
        events.append(.discarded(key: name, reason: reason))
        if let error {
            let message = DecodingDescription.describe(error)
            events.append(.failure(key: name, error: CacheError(kind: .decodingFailed, key: name, message: message)))
        }
    }
}

/// An entry file the judgement lets a read use: ``EntryVerdict/usable``, or to migrate.
struct JudgedEntry {
    var fileName: String
    var header: EntryHeader
    var payload: Data
    var info: FileInfo
    var verdict: EntryVerdict
}

// The read pipeline, written once. Every read that reaches a file (the typed API, the facade)
// goes through `readJudged` under the key's lock, then `publishChanges` and `finishRead`: read the whole file (header, checksum), refuse
// another user's file, judge it (EntryJudgement.swift), discard what cannot be used; the typed
// read then decodes or migrates and fills memory (`loadFromDisk`).
extension Cache {
    /// The usable entry for `key`, expired or not, from memory or disk; no counters.
    ///
    /// Unusable entries on disk are removed and reported here.
    ///
    /// `afterMemoryMiss`: the caller has just asked the memory tier (``value(for:)``'s hit
    /// path): memory is asked again only under the key's lock, where it must be (another call
    /// may have filled it meanwhile), not before as well.
    func load<V>(_ key: CacheKey<V>, afterMemoryMiss: Bool = false) -> Found? {
        keepMemoryCoherentIfDue()
        if !afterMemoryMiss, let found = memoryEntry(key) { return found }
        guard let disk, !isFolderRefused(key: key.name) else {
            // No lock to ask memory under (no folder, or one refused): asked here, so the
            // frequency order learns the miss all the same.
            return afterMemoryMiss ? memoryEntry(key) : nil
        }
        var report = ReadReport()
        let found: Found? = folderState.keyLocks.withLock(key.name) {
            if let found = memoryEntry(key) { return found }
            let found = loadFromDisk(key, disk, report: &report)
            publishChanges(of: report, for: key.name)
            return found
        }
        finishRead(report)
        return found
    }

    /// Publishes the changes a read under `name`'s lock made: call before the lock is
    /// released, so observers see memory and disk agree.
    func publishChanges(of report: ReadReport, for name: String) {
        for change in report.changes { publish(name, change) }
    }

    /// Reports what a read found once its key's lock is released: its events, then the memory
    /// uses (a read from disk is disk work).
    func finishRead(_ report: ReadReport) {
        reportStoreNotices()
        for event in report.events { emit(event) }
        recordMemoryUsesLater()
    }

    /// Reads `name`'s file whole and judges it against `expectation`; the entry when the
    /// verdict lets the read use it (``EntryVerdict/usable`` or ``EntryVerdict/migrate(from:)``).
    ///
    /// `nil` for no file, a failed read or another user's file (reported as a failure), an
    /// entry of another key (left alone), and an entry discarded: damaged, or judged unusable
    /// (removed and reported). Call holding `name`'s key lock.
    func readJudged(
        _ name: String, from disk: DiskTier, expecting expectation: borrowing EntryExpectation,
        canMigrate: (Int) -> Bool = { _ in false }, report: inout ReadReport
    ) -> JudgedEntry? {
        let fileName = DiskTier.fileName(for: name)
        switch disk.read(key: name, fileName: fileName) {
        case .absent:
            return nil
        case .failed(let error):
            report.events.append(.failure(key: name, error: error.cacheError(key: name)))
            return nil
        case .damaged:
            discard(name, fileName, from: disk, .corrupt, report: &report)
            return nil
        case .entry(let header, let payload, let info):
            if let untrusted = disk.untrustedEntry(fileName, info: info, sharing: configuration.sharing) {
                report.events.append(.failure(key: name, error: untrusted.cacheError(key: name)))
                return nil
            }
            let verdict = EntryJudgement.judge(header, expecting: expectation, canMigrate: canMigrate)
            switch verdict {
            case .otherKey:
                return nil
            case .discard(let reason):
                discard(name, fileName, from: disk, reason, report: &report)
                return nil
            case .usable, .migrate:
                return JudgedEntry(fileName: fileName, header: header, payload: payload, info: info, verdict: verdict)
            }
        }
    }

    /// Removes `name`'s file and memory record and reports why: ``CacheEvent/discarded(key:reason:)``,
    /// then, for a value that would not decode or migrate, the error as a failure. Call holding
    /// `name`'s key lock.
    func discard(
        _ name: String, _ fileName: String, from disk: DiskTier, _ reason: DiscardReason,
        because error: (any Error)? = nil, report: inout ReadReport
    ) {
        try? disk.remove(key: name, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        memory.remove(name)
        report.noteDiscard(name, reason, because: error)
        report.changes.append(nil)
    }

    /// The memory record for `key` if it holds a `V` usable for it, counted as used.
    private func memoryEntry<V>(_ key: CacheKey<V>) -> Found? {
        guard
            let found = memory.peekUsable(
                key.name, valueType: ObjectIdentifier(V.self), schemaVersion: key.schemaVersion,
                appVersion: configuration.appVersion)
        else { return nil }
        var metadata = found.metadata
        countSlidingUse(of: key.name, &metadata)
        return Found(record: found.record, metadata: metadata, origin: .memory)
    }

    /// Reads, judges and decodes (or migrates) `key`'s file, and fills memory with the value.
    /// Call holding `key`'s lock.
    private func loadFromDisk<V>(_ key: CacheKey<V>, _ disk: DiskTier, report: inout ReadReport) -> Found? {
        let expectation = EntryExpectation(
            name: key.name, schemaVersion: key.schemaVersion, typeName: ValueCoding.typeName(of: V.self),
            appVersion: configuration.appVersion)
        let ticket = coherenceTicket()
        guard
            let entry = readJudged(
                key.name, from: disk, expecting: expectation, canMigrate: { key.migration(from: $0) != nil },
                report: &report)
        else { return nil }

        var metadata = EntryMetadata(entry.header, size: entry.info.size)
        // The read is a use, unless it finds a sliding lifespan over (see `EntryMetadata.use(at:)`).
        let now = nowSeconds
        var usedAt = now
        if metadata.lifespan.slidingSeconds != nil {
            metadata.lastUsedAt = disk.lastUse(of: entry.fileName, key: key.name, info: entry.info)
            usedAt = metadata.use(at: now)
            metadata.lastUsedAt = usedAt
        }
        let value: V
        if case .migrate(let stored) = entry.verdict, let migration = key.migration(from: stored) {
            do {
                value = try migration.convert(entry.payload, entry.header.format)
            } catch {
                discard(key.name, entry.fileName, from: disk, .migrationFailed, because: error, report: &report)
                return nil
            }
            metadata.schemaVersion = key.schemaVersion
            metadata.appVersion = configuration.appVersion
            do {
                let format = ValueCoding.format(for: V.self, codec: key.codec)
                let newPayload = try ValueCoding.encode(value, format: format)
                let newHeader = EntryHeader(
                    key: key.name, typeName: ValueCoding.typeName(of: V.self), format: format, metadata: metadata,
                    payloadLength: newPayload.count)
                metadata.size = try disk.write(
                    entry.fileName, header: newHeader, payload: newPayload, options: writeOptions(usedAt: usedAt)
                ).size
            } catch let error as SystemError {
                report.events.append(.failure(key: key.name, error: error.cacheError(key: key.name)))
            } catch {
                report.events.append(
                    .failure(
                        key: key.name, error: CacheError(kind: .encodingFailed, key: key.name, message: "\(error)")))
            }
            report.events.append(.migrated(key: key.name, from: entry.header.schemaVersion, to: key.schemaVersion))
            report.changes.append(value)
        } else {
            do {
                value = try ValueCoding.decode(V.self, from: entry.payload, format: entry.header.format)
            } catch {
                discard(key.name, entry.fileName, from: disk, .undecodable, because: error, report: &report)
                return nil
            }
        }
        let stamp = disk.noteRead(
            entry.fileName, key: key.name, info: entry.info, isLocked: metadata.isLocked, at: usedAt,
            foundSlidingLifespanOver: usedAt != now, sliding: metadata.lifespan.slidingSeconds != nil)
        let record = TypedRecord(
            name: key.name, metadata: metadata, value: value, cost: entry.payload.count, persistedUse: stamp)
        if memory.limit != 0 { memory.insert(record, ticket: ticket) }
        return Found(record: record, metadata: metadata, origin: .disk)
    }

    /// The metadata of `name`'s entry when ``value(for:)`` of an unversioned key of the
    /// right type could use it; memory first, then a full read of its file.
    ///
    /// The string-keyed facade's read: the judgement of every read, with no type expected
    /// and no schema version. A failing entry is removed and reported as
    /// ``CacheEvent/discarded(key:reason:)``; expiry is left to the caller.
    func metadata(named name: String) -> EntryMetadata? {
        let appVersion = configuration.appVersion
        func usableRecord() -> EntryMetadata? {
            guard let record = memory.peek(name), record.metadata.matches(schemaVersion: nil, appVersion: appVersion)
            else { return nil }
            return memory.currentMetadata(of: record)
        }
        keepMemoryCoherentIfDue()
        if let metadata = usableRecord() { return metadata }
        guard let disk, !isFolderRefused(key: name) else { return nil }
        var report = ReadReport()
        let metadata: EntryMetadata? = folderState.keyLocks.withLock(name) {
            if let metadata = usableRecord() { return metadata }
            let expectation = EntryExpectation(name: name, schemaVersion: nil, typeName: nil, appVersion: appVersion)
            let entry = readJudged(name, from: disk, expecting: expectation, report: &report)
            publishChanges(of: report, for: name)
            return entry.map {
                EntryMetadata(
                    $0.header, size: $0.info.size, lastUsedAt: disk.lastUse(of: $0.fileName, key: name, info: $0.info))
            }
        }
        finishRead(report)
        return metadata
    }

    /// What is stored for `name` now, judged by nothing (the one read that is not a use and
    /// decides nothing: whether a fetch's entry is locked, whether an expiry announcement still
    /// holds): the memory record, else the stored header (checksum unverified). Call holding `name`'s key lock; it takes no lock itself.
    func storedMetadata(named name: String) -> EntryMetadata? {
        if let record = memory.peek(name) { return memory.currentMetadata(of: record) }
        let fileName = DiskTier.fileName(for: name)
        guard let disk, disk.refusal(for: configuration.sharing) == nil,
            case .success(let (header, info)) = disk.readHeader(key: name),
            header.key == name
        else { return nil }
        return EntryMetadata(header, size: info.size, lastUsedAt: disk.lastUse(of: fileName, key: name, info: info))
    }

}
