import CashierEntryFormat
import Foundation

extension Cache {
    /// The value stored for `key`, or `nil` on a miss.
    ///
    /// A miss is: nothing stored, an expired entry (unless
    /// ``Configuration/returnsExpiredValues``), or an entry that cannot be used
    /// (another schema or app version, another type, damage, a payload that no
    /// longer decodes), which is removed and reported as
    /// ``CacheEvent/discarded(key:reason:)``, and any entry in a folder the cache refuses
    /// (``CacheError/Kind/untrustedFolder``, reported as ``CacheEvent/failure(key:error:)``). A memory hit does no
    /// decoding and never waits: at most every 10 ms it checks the folder's store for another
    /// process's writes (an `lstat` and SQLite's `data_version`, only if no call of this process
    /// holds the store, else the next hit checks), and it hands the uses it gathers to a
    /// background queue; a hit on a ``Lifespan/sinceLastUse(_:)`` entry writes its use, once a
    /// minute at most, on the spot when the store is free. Otherwise this reads one row or
    /// file. Never throws, never traps.
    @inlinable
    public func value<V>(for key: CacheKey<V>) -> V? {
        // Inlinable so that callers specialize it for their value type: a memory hit then
        // copies the value straight out of the tier, under its lock, with no generic
        // dispatch and no reference counting of the record.
        var found: V?
        switch memoryHit(
            key.name, valueType: ObjectIdentifier(V.self), schemaVersion: key.schemaVersion,
            copy: { storage in
                found = storage.assumingMemoryBound(to: V.self).pointee
            })
        {
        case .hit: return found
        case .expired: return nil
        case .miss:
            // The disk's value comes out as a memory hit's does: copied from its record's
            // address into `found`, so the unspecialized read path handles no `V?`.
            valueFromDisk(
                for: key,
                copy: { storage in
                    found = storage.assumingMemoryBound(to: V.self).pointee
                })
            return found
        }
    }

    /// What the memory tier answered for a key in ``value(for:)``.
    @usableFromInline
    enum MemoryAnswer {
        /// A usable value, copied out, counted and reported.
        case hit
        /// A record that has expired: the read is a miss, counted and reported.
        case expired
        /// Nothing usable in memory: go to disk.
        case miss
    }

    /// The memory-hit half of ``value(for:)``: not generic, so callers' specializations
    /// share it. `copy` runs under the tier's lock, given the stored value's address.
    ///
    /// `fetching`: the hit of ``value(for:lifespan:fetch:)``, for which an expired record is a
    /// miss whatever ``Configuration/returnsExpiredValues`` says, answered as ``MemoryAnswer/expired``
    /// with nothing reported (the fetch that follows reports the miss).
    @usableFromInline
    func memoryHit(
        _ name: String, valueType: ObjectIdentifier, schemaVersion: Int?, fetching: Bool = false,
        copy: (UnsafeMutableRawPointer) -> Void
    ) -> MemoryAnswer {
        let expiredIsMiss = fetching || !configuration.returnsExpiredValues
        // A cache whose folder has a store checks it at most once a coherence interval (one
        // coarse clock read a hit); a memory-only one reads no clock.
        var answer = memory.hit(
            name, valueType: valueType, schemaVersion: schemaVersion, appVersion: configuration.appVersion,
            checkedAt: memory.coherenceInterval == nil ? nil : MonotonicClock.nanoseconds(), copy: copy)
        if case .checkCoherence = answer {
            checkMemoryCoherence()
            answer = memory.hit(
                name, valueType: valueType, schemaVersion: schemaVersion, appVersion: configuration.appVersion,
                copy: copy)
        }
        switch answer {
        case .none, .checkCoherence:
            return .miss
        case .counted:
            break
        case .expiring(let deadline):
            if nowSeconds >= deadline, expiredIsMiss {
                if !fetching { missExpired(name) }
                return .expired
            }
            memory.count { $0.hits += 1 }
        case .sliding(let deadline):
            let now = nowSeconds
            if now < deadline {
                noteSlidingUse(name, at: now, countingHit: true)
            } else if expiredIsMiss {
                if !fetching { missExpired(name) }
                return .expired
            } else {
                memory.count { $0.hits += 1 }
            }
        }
        configuration.onEvent?(.hit(key: name))
        return .hit
    }

    /// The rest of ``value(for:)`` after a memory miss: `copy` is given the address of the
    /// value found, if any, as ``memoryHit(_:valueType:schemaVersion:fetching:copy:)`` gives it.
    @usableFromInline
    func valueFromDisk<V>(for key: CacheKey<V>, copy: (UnsafeMutableRawPointer) -> Void) {
        guard let found = load(key, afterMemoryMiss: true) else {
            emit(.miss(key: key.name))
            return
        }
        if found.metadata.isExpired(at: nowSeconds), !configuration.returnsExpiredValues {
            missExpired(key.name)
            return
        }
        emit(.hit(key: key.name))
        // The record owns the value's storage (its deinit frees it): kept alive through the copy.
        withExtendedLifetime(found.record) { record in copy(record.storage!) }
    }

    /// Stores `value` for `key`, replacing what was there.
    ///
    /// The lifespan is `lifespan`, else the key's, else
    /// ``Configuration/defaultLifespan``; a locked entry stays locked. The entry is
    /// written to a temporary file and renamed into place, so readers in any
    /// process see the old entry or the new one, never a mix.
    ///
    /// A lifespan that never ends (`+infinity`) is stored as ``Lifespan/never``, one
    /// that ended forever ago (`-infinity`) as already expired.
    ///
    /// - Throws: ``CacheError`` naming the key and the cause when the value cannot be
    ///   encoded or the file cannot be written, or (kind ``CacheError/Kind/invalidValue``)
    ///   when the lifespan is NaN or, in a cache with a folder, when the entry (the encoded
    ///   value and its header) would be over 1 GiB, the most a read accepts, or (kind
    ///   ``CacheError/Kind/untrustedFolder``) when the folder is one that others could plant
    ///   entries in (see ``Configuration-swift.struct/sharing``); what was stored before is
    ///   then untouched.
    ///   One exception: with ``Configuration/durability`` `.synchronized`, when only the
    ///   folder sync after the rename fails, the new entry is in place (and read back)
    ///   but may not survive a power loss.
    public func set<V>(_ value: V, for key: CacheKey<V>, lifespan: Lifespan? = nil) throws {
        try write(value, for: key, lifespan: lifespan, isFetched: false)
    }

    /// ``set(_:for:lifespan:)``, answering the metadata stored (what a fetched entry reports).
    /// A fetched value (`isFetched`) leaves the shared tier's records of the key's other
    /// versions; a value the app set removes them (``SharedTier/storeRemovingOtherVersions(_:in:)``).
    @discardableResult
    ///
    /// `fetchStartedAt`, for a fetched value: when its fetch started, the time its record
    /// carries to the shared tier (the origin held that value at the latest then); a value the
    /// app wrote carries the time of the write.
    func write<V>(
        _ value: V, for key: CacheKey<V>, lifespan: Lifespan?, isFetched: Bool, fetchStartedAt: Double? = nil
    ) throws -> EntryMetadata {
        let format = ValueCoding.format(for: V.self, codec: key.codec)
        let payload: Data
        do {
            payload = try ValueCoding.encode(value, format: format)
        } catch {
            let failure = CacheError(kind: .encodingFailed, key: key.name, message: String(describing: error))
            emit(.failure(key: key.name, error: failure))
            throw failure
        }
        let storedLifespan: Lifespan
        do {
            storedLifespan = try (lifespan ?? key.lifespan ?? configuration.defaultLifespan).storable(forKey: key.name)
        } catch {
            emit(.failure(key: key.name, error: error))
            throw error
        }
        let now = nowSeconds
        var metadata = EntryMetadata(
            createdAt: now, validatedAt: now, lifespan: storedLifespan,
            isLocked: false, schemaVersion: key.schemaVersion, appVersion: configuration.appVersion, size: 0)
        var evicted: [MemoryRecord] = []
        do {
            try folderState.keyLocks.withLock(key.name) {
                let ticket = coherenceTicket()
                // A write keeps a lock: the memory record says whether there is one, else the
                // disk tier finds it as it writes (a row in its own statement).
                let lockInMemory = memory.peek(key.name).map { memory.currentMetadata(of: $0).isLocked }
                metadata.isLocked = lockInMemory ?? false
                if let disk {
                    let header = EntryHeader(
                        key: key.name, typeName: ValueCoding.typeName(of: V.self), format: format, metadata: metadata,
                        payloadLength: payload.count)
                    try header.checkWritable()
                    var options = writeOptions(usedAt: now)
                    options.keepsStoredLock = lockInMemory == nil
                    do throws(SystemError) {
                        (metadata.size, metadata.isLocked) = try disk.write(
                            DiskTier.fileName(for: key.name), header: header, payload: payload, options: options)
                    } catch {
                        // Most failures leave the old entry in place; a failed folder sync comes
                        // after the rename. Either way the file is the truth: forget the memory copy.
                        _ = memory.remove(key.name)
                        throw error.cacheError(key: key.name)
                    }
                }
                evicted = memory.insert(
                    TypedRecord(name: key.name, metadata: metadata, value: value, cost: payload.count), ticket: ticket)
                settleCoherenceBaseline(after: ticket)
                publish(key.name, value)
                if shared != nil {
                    shareWrite(
                        key.name, schemaVersion: key.schemaVersion, typeName: ValueCoding.typeName(of: V.self),
                        format: format, metadata: metadata, payload: payload, writtenAt: fetchStartedAt ?? now,
                        removingOtherVersions: !isFetched)
                }
            }
        } catch let error as CacheError {
            reportStoreNotices()
            emit(.failure(key: key.name, error: error))
            throw error
        }
        reportStoreNotices()
        emit(.write(key: key.name, bytes: metadata.size))
        if disk == nil {
            for record in evicted {
                emit(.evicted(key: record.name, bytes: 0))
                // Announced under its own key's lock, unless a write has put it back meanwhile.
                folderState.keyLocks.withLock(record.name) {
                    if memory.peek(record.name) == nil { publish(record.name, nil) }
                }
            }
        } else {
            recordMemoryUsesLater()
            sweepIfNeeded()
        }
        return metadata
    }

    /// The value for `key`: reading returns ``value(for:)``; assigning stores, and assigning `nil` removes.
    ///
    /// Errors of an assignment cannot be thrown from a subscript: they go to
    /// ``Configuration/onEvent`` as ``CacheEvent/failure(key:error:)``.
    public subscript<V>(key: CacheKey<V>) -> V? {
        get { value(for: key) }
        set {
            if let newValue {
                try? set(newValue, for: key)
            } else {
                removeValue(for: key)
            }
        }
    }

    /// The value and its metadata, even when expired; `nil` when nothing usable is stored.
    ///
    /// Unusable entries are discarded as by ``value(for:)``. Counts as a hit or a miss.
    public func entry<V>(for key: CacheKey<V>) -> CacheEntry<V>? {
        guard let found = load(key) else {
            emit(.miss(key: key.name))
            return nil
        }
        emit(.hit(key: key.name))
        return CacheEntry(found.value(as: V.self), metadata: found.metadata, origin: found.origin, now: nowSeconds)
    }

    /// Whether a usable entry is stored for `key`, expired or not. Unusable entries are discarded.
    public func contains<V>(_ key: CacheKey<V>) -> Bool {
        load(key) != nil
    }

    /// Whether a usable, unexpired entry is stored for `key`.
    public func isValid<V>(_ key: CacheKey<V>) -> Bool {
        guard let found = load(key) else { return false }
        return !found.metadata.isExpired(at: nowSeconds)
    }

    /// Restarts `key`'s lifespan from now (for `.seconds` and `.sinceLastUse` lifespans, even
    /// when expired); nothing happens on a miss.
    ///
    /// Rewrites the entry's header on disk; a failure goes to ``Configuration/onEvent``.
    public func refresh<V>(_ key: CacheKey<V>) {
        guard load(key) != nil else { return }
        let now = nowSeconds
        updateMetadata(named: key.name) { $0.validatedAt = now }
    }

    /// Removes `key`'s entry from memory and disk. Nothing happens on a miss.
    public func removeValue<V>(for key: CacheKey<V>) {
        removeEntry(named: key.name)
    }

    /// Pins `key`'s entry: it never expires and is evicted only when nothing unlocked is left.
    ///
    /// A later ``set(_:for:lifespan:)`` keeps it locked. Nothing happens on a miss.
    public func lock<V>(_ key: CacheKey<V>) {
        guard load(key) != nil else { return }
        updateMetadata(named: key.name) { $0.isLocked = true }
    }

    /// Unpins `key`'s entry: its lifespan applies again. Nothing happens on a miss.
    public func unlock<V>(_ key: CacheKey<V>) {
        guard load(key) != nil else { return }
        updateMetadata(named: key.name) { $0.isLocked = false }
    }
}

// MARK: - The read path

/// A value found for a key, with its metadata and the tier it was found in.
extension Cache {
    /// Counts a miss for an expired entry and tells observers it is gone for them.
    ///
    /// The announcement is made under the key's lock, and only if the entry stored now is
    /// still expired: a write that landed since the read must stay an observer's last value.
    func missExpired(_ name: String) {
        emit(.miss(key: name))
        folderState.keyLocks.withLock(name) {
            if let metadata = storedMetadata(named: name), !metadata.isExpired(at: nowSeconds) { return }
            publish(name, nil)
        }
    }

    // MARK: Untyped operations by name (the facade and housekeeping use them too)

    /// Removes `name`'s entry from memory and disk and tells observers; and, unless the removal
    /// comes from the shared tier itself, removes the key's records there.
    ///
    /// `unless`, checked holding the key's lock, keeps the entry when it answers true; `then`
    /// runs holding it after a removal, once observers were told.
    func removeEntry(
        named name: String, reachingSharedTier: Bool = true, unless isKept: () -> Bool = { false },
        then followUp: () -> Void = {}
    ) {
        var failure: SystemError?
        folderState.keyLocks.withLock(name) {
            guard !isKept() else { return }
            memory.remove(name)
            do throws(SystemError) {
                try disk?.remove(key: name, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
            } catch {
                failure = error
            }
            publish(name, nil)
            followUp()
            if reachingSharedTier, let shared {
                shared.writes.enqueue(.remove(name, at: Date(timeIntervalSince1970: nowSeconds)))
            }
        }
        // Entries a removal on a full volume evicted to make room for itself, among others.
        reportStoreNotices()
        if let failure { emit(.failure(key: name, error: failure.cacheError(key: name))) }
    }

    /// Changes `name`'s metadata (validation time, lock) in memory and in its file's header.
    ///
    /// The entry is rewritten: that counts as a use of a ``Lifespan/sinceLastUse(_:)`` lifespan.
    func updateMetadata(named name: String, _ change: @escaping (inout EntryMetadata) -> Void) {
        var failure: CacheError?
        folderState.keyLocks.withLock(name) {
            let ticket = coherenceTicket()
            let record = memory.peek(name)
            let options = writeOptions(usedAt: nowSeconds)
            if let disk {
                do throws(SystemError) {
                    let rewritten = try disk.rewriteHeader(DiskTier.fileName(for: name), key: name, options: options) {
                        header in
                        var metadata = EntryMetadata(header, size: 0)
                        change(&metadata)
                        header.validatedAt = metadata.validatedAt
                        header.isLocked = metadata.isLocked
                    }
                    guard let (header, size) = rewritten else {
                        memory.remove(name)
                        return
                    }
                    if let record {
                        memory.insert(
                            record.replacing(metadata: EntryMetadata(header, size: size, lastUsedAt: options.usedAt)),
                            ticket: ticket)
                    }
                } catch {
                    failure = error.cacheError(key: name)
                }
            } else if let record {
                var metadata = memory.currentMetadata(of: record)
                change(&metadata)
                metadata.lastUsedAt = options.usedAt
                memory.insert(record.replacing(metadata: metadata))
            }
        }
        if let failure { emit(.failure(key: name, error: failure)) }
    }
}

extension EntryHeader {
    init(key: String, typeName: String, format: PayloadFormat, metadata: EntryMetadata, payloadLength: Int) {
        self.init(
            key: key, typeName: typeName, format: format, createdAt: metadata.createdAt,
            validatedAt: metadata.validatedAt, lifespan: metadata.lifespan, schemaVersion: metadata.schemaVersion,
            appVersion: metadata.appVersion, isLocked: metadata.isLocked, payloadLength: payloadLength)
    }
}
