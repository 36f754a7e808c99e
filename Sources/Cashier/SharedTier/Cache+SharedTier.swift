import CashierEntryFormat
import CashierPlatform
import Foundation

// The shared tier, seen from the cache: the read below the disk, the changes that go to the
// tier, and the changes that come from it. The queue of writes, the bounded calls and the
// change stream's task are in SharedTierWrites, SharedTierCall and SharedTierLink.
extension Cache {
    // MARK: Reading

    /// The entry the shared tier holds for `key`, judged as a disk entry is and kept in the
    /// local tiers (``Origin/shared``); `nil` for a miss there, whatever the reason.
    ///
    /// Asks the key's own slot, then (for a key with migrations) the slots of the schema
    /// versions it migrates from, newest first, until one answers a usable record; stops at
    /// the first call that fails or times out. A slot whose record another instance's change
    /// carried here (``SharedChange/stored(_:_:)``, kept by ``SharedTierLink/keepAnnounced(_:in:)``)
    /// is not asked: that record is used. Skipped while a change of the key made here is
    /// on its way to the tier, or failed to reach it (``SharedTierLedger``). Called by the
    /// leader of a shared fetch, so concurrent misses ask once.
    func entryFromSharedTier<V>(_ key: CacheKey<V>, _ link: SharedTierLink) async -> CacheEntry<V>? {
        guard link.ledger.isTrusted(key.name) else { return nil }
        let mark = link.beginLookup(key.name)
        defer { link.endLookup(mark) }
        for slot in SharedSlot.slots(for: key, appVersion: configuration.appVersion) {
            // What another instance's change carried, if it is this slot's: no call.
            if let record = link.takeAnnounced(slot), let entry = adopt(record, for: key, mark: mark, link) {
                return entry
            }
            switch await link.record(in: slot) {
            case .found(let record):
                if let entry = adopt(record, for: key, mark: mark, link) { return entry }
            case .absent:
                continue
            case .unavailable:
                return nil
            }
        }
        return nil
    }

    /// Judges a record of the shared tier in DESIGN's read order, as a disk entry is judged
    /// (``EntryJudgement``; checksum first, then schema, type, app version, decoding), and,
    /// when usable and not expired, stores it in the local tiers and answers it.
    ///
    /// What cannot be used is reported as a disk entry would be (``CacheEvent/discarded(key:reason:)``)
    /// and left in the tier: the fetch that follows replaces it in this version's slot, and
    /// another version may read it. A migrated value is stored here and in the key's own slot.
    private func adopt<V>(
        _ record: SharedRecord, for key: CacheKey<V>, mark: SharedTierLink.LookupMark, _ link: SharedTierLink
    ) -> CacheEntry<V>? {
        var report = ReadReport()
        defer { finishRead(report) }
        let header: EntryHeader
        let payload: Data
        switch DiskTier.readEntry(fromRecord: [UInt8](record.bytes), wantsPayload: true) {
        case .entry(let found, let foundPayload):
            (header, payload) = (found, foundPayload ?? Data())
        case .damaged:
            report.noteDiscard(key.name, .corrupt)
            return nil
        case .outOfMemory:
            return nil
        }
        let expectation = EntryExpectation(
            name: key.name, schemaVersion: key.schemaVersion, typeName: ValueCoding.typeName(of: V.self),
            appVersion: configuration.appVersion)
        var kept = (header: header, payload: payload)
        let value: V
        switch EntryJudgement.judge(header, expecting: expectation, canMigrate: { key.migration(from: $0) != nil }) {
        case .otherKey:
            return nil
        case .discard(let reason):
            report.noteDiscard(key.name, reason)
            return nil
        case .usable:
            do {
                value = try ValueCoding.decode(V.self, from: payload, format: header.format)
            } catch {
                report.noteDiscard(key.name, .undecodable, because: error)
                return nil
            }
        case .migrate(let stored):
            guard let migration = key.migration(from: stored) else { return nil }
            do {
                value = try migration.convert(payload, header.format)
                let format = ValueCoding.format(for: V.self, codec: key.codec)
                let newPayload = try ValueCoding.encode(value, format: format)
                var metadata = EntryMetadata(header, size: 0)
                metadata.schemaVersion = key.schemaVersion
                metadata.appVersion = configuration.appVersion
                kept.header = EntryHeader(
                    key: key.name, typeName: ValueCoding.typeName(of: V.self), format: format, metadata: metadata,
                    payloadLength: newPayload.count)
                kept.payload = newPayload
            } catch {
                report.noteDiscard(key.name, .migrationFailed, because: error)
                return nil
            }
            report.events.append(.migrated(key: key.name, from: stored, to: key.schemaVersion))
        }
        var metadata = EntryMetadata(kept.header, size: 0)
        let now = nowSeconds
        // An expired record is a miss here: the fetch renews it.
        guard !metadata.isExpired(at: now) else { return nil }
        let ownSlot = SharedSlot(name: key.name, schemaVersion: key.schemaVersion, appVersion: configuration.appVersion)
        let migratedTo = kept.header == header ? nil : ownSlot
        // A migrated record keeps the time of the one it came from: a newer write of the key in
        // its own slot, made meanwhile elsewhere, wins over it.
        metadata.size = keepLocally(
            value, kept.header, kept.payload, for: key.name, mark: mark, sharingIn: migratedTo,
            writtenAt: record.writtenAt, report: &report)
        return CacheEntry(value, metadata: metadata, origin: .shared, now: now)
    }

    /// Stores what the shared tier answered in the local tiers: its record on disk as it came
    /// (the header encoded again, the same bytes for a current-format record), the value in
    /// memory. Nothing is kept when the key changed locally since the lookup started (a write,
    /// a removal, a change from the tier): that change is newer. A migrated record is also
    /// queued for the key's own slot (`sharingIn`). Answers the entry's size on disk.
    private func keepLocally<V: Sendable>(
        _ value: V, _ header: EntryHeader, _ payload: Data, for name: String, mark: SharedTierLink.LookupMark,
        sharingIn slot: SharedSlot?, writtenAt: Date, report: inout ReadReport
    ) -> Int {
        var size = 0
        var evicted: [MemoryRecord] = []
        folderState.keyLocks.withLock(name) {
            guard let shared, shared.isUnchanged(since: mark), shared.ledger.isTrusted(name) else { return }
            let ticket = coherenceTicket()
            let now = nowSeconds
            var metadata = EntryMetadata(header, size: 0, lastUsedAt: now)
            if let disk {
                do throws(SystemError) {
                    size = try disk.write(
                        DiskTier.fileName(for: name), header: header, payload: payload,
                        options: writeOptions(usedAt: now)
                    ).size
                } catch {
                    report.events.append(.failure(key: name, error: error.cacheError(key: name)))
                    _ = memory.remove(name)
                    return
                }
                metadata.size = size
            }
            if memory.limit != 0 {
                evicted = memory.insert(
                    TypedRecord(name: name, metadata: metadata, value: value, cost: payload.count), ticket: ticket)
            }
            settleCoherenceBaseline(after: ticket)
            publish(name, value)
            if let slot {
                shared.writes.enqueueStore(
                    slot: slot, header: header, payload: payload, metadata: metadata, writtenAt: writtenAt)
            }
        }
        if disk == nil {
            for record in evicted {
                report.events.append(.evicted(key: record.name, bytes: 0))
                folderState.keyLocks.withLock(record.name) {
                    if memory.peek(record.name) == nil { publish(record.name, nil) }
                }
            }
        } else {
            sweepIfNeeded()
        }
        return size
    }

    // MARK: Changes that go to the tier

    /// Queues the entry a write stored for `name` for the shared tier, written at `writtenAt`
    /// (``SharedRecord/writtenAt``). Call holding the key's lock, after the write landed locally
    /// (its metadata final: lock, lifespan). A write of the app's (`removingOtherVersions`) also
    /// removes the key's records of other versions: they hold the value it replaced. A fetched
    /// value leaves them (they hold the same value).
    func shareWrite(
        _ name: String, schemaVersion: Int?, typeName: String, format: PayloadFormat, metadata: EntryMetadata,
        payload: Data, writtenAt: Double, removingOtherVersions: Bool
    ) {
        guard let shared else { return }
        let header = EntryHeader(
            key: name, typeName: typeName, format: format, metadata: metadata, payloadLength: payload.count)
        shared.writes.enqueueStore(
            slot: SharedSlot(name: name, schemaVersion: schemaVersion, appVersion: configuration.appVersion),
            header: header, payload: payload, metadata: metadata,
            writtenAt: Date(timeIntervalSince1970: writtenAt), removingOtherVersions: removingOtherVersions)
    }

    // MARK: Changes that come from the tier

    /// Applies a change another instance made: drops the key (every key, for ``SharedChange/all``;
    /// each key named, for ``SharedChange/reconnected(changed:)``) from memory and from this instance's disk, telling observers, without sending a
    /// removal back to the tier. The record a ``SharedChange/stored(_:_:)`` carries is kept
    /// for the key's next read (``SharedTierLink/keepAnnounced(_:in:)``: only when written
    /// after this folder's last change of the key), in the same step as the drop: a local
    /// change of the key made after it forgets the record.
    func applySharedChange(_ change: SharedChange) {
        switch change {
        case .key(let name): removeEntry(named: name, reachingSharedTier: false)
        case .stored(let slot, let record):
            removeEntry(named: slot.name, reachingSharedTier: false, then: { shared?.keepAnnounced(record, in: slot) })
        case .all: removeAll(reachingSharedTier: false)
        case .reconnected(let changed):
            for name in changed { removeEntry(named: name, reachingSharedTier: false) }
        }
    }

    /// Drops this folder's copy of `name` after the tier refused a store of it as older than
    /// what it holds (``SharedStoreOutcome/superseded``): the next read finds the newer record
    /// there. Kept when a later change of the key is queued: that change is newer still, and
    /// the tier judges it on its own.
    func dropSupersededCopy(_ name: String, writes: SharedTierWrites) {
        removeEntry(named: name, reachingSharedTier: false, unless: { writes.hasQueuedChange(of: name) })
    }
}

/// One cache's way into its folder's ``SharedTierWrites``: its changes, for its tier.
struct SharedTierLinkWrites: Sendable {
    let queue: SharedTierWrites
    let destination: SharedTierWrites.Destination

    /// Queues `change` for this cache's tier (see ``SharedTierWrites/enqueue(_:to:)``).
    func enqueue(_ change: SharedTierWrites.Change) {
        queue.enqueue(change, to: destination)
    }

    /// Queues a write of `header` and `payload` to `slot`, written at `writtenAt`, expiring
    /// when the entry does (`nil` when it never expires or is locked), removing the key's other
    /// versions' records when `removingOtherVersions`.
    func enqueueStore(
        slot: SharedSlot, header: EntryHeader, payload: Data, metadata: EntryMetadata, writtenAt: Date,
        removingOtherVersions: Bool = false
    ) {
        let expiresAt = metadata.expiryDeadline.map { Date(timeIntervalSince1970: $0) }
        enqueue(
            .store(
                slot, header: header, payload: payload, expiresAt: expiresAt, removingOthers: removingOtherVersions,
                writtenAt: writtenAt))
    }

    /// Blocks until the folder's queued changes are sent (``SharedTierWrites/waitUntilSent()``).
    func waitUntilSent() { queue.waitUntilSent() }
}

extension SharedSlot {
    /// The slot of a key's entries: `"schema-N"` for a key of schema version `N`, else
    /// `"app-V"` for a cache of app version `V` (`"app"` for none).
    init(name: String, schemaVersion: Int?, appVersion: String?) {
        let version: String
        if let schemaVersion {
            version = "schema-\(schemaVersion)"
        } else if let appVersion {
            version = "app-\(appVersion)"
        } else {
            version = "app"
        }
        self.init(name: name, version: version)
    }

    /// The slots a read of `key` asks, in order: its own, then those of the schema versions
    /// it has migrations from, newest first.
    static func slots<V>(for key: CacheKey<V>, appVersion: String?) -> [SharedSlot] {
        let own = SharedSlot(name: key.name, schemaVersion: key.schemaVersion, appVersion: appVersion)
        guard let current = key.schemaVersion else { return [own] }
        let older = Set(key.migrations.map(\.version)).subtracting([current]).sorted(by: >)
        return [own] + older.map { SharedSlot(name: key.name, schemaVersion: $0, appVersion: nil) }
    }
}
