import CashierPlatform
import Foundation

/// How ``Cache/entry(for:policy:fetch:)`` and ``Cache/value(for:lifespan:policy:fetch:)``
/// weigh the cache against a fresh fetch.
public enum FetchPolicy: Sendable, Hashable {
    /// A valid entry is returned; otherwise fetch, store, return.
    case cacheFirst
    /// An expired entry is returned at once and refreshed in the background (one
    /// refresh per key at a time); a miss fetches.
    case staleWhileRevalidate
    /// Always fetch and store; if the fetch throws and any entry exists, even expired, return it.
    case refresh
}

extension Cache {
    /// The cached value for `key`, or the result of `fetch`, stored before it is returned.
    ///
    /// An expired entry counts as a miss here even when the cache
    /// ``Configuration/returnsExpiredValues``: fetching is how it is renewed
    /// (use ``FetchPolicy/staleWhileRevalidate`` to get it stale while it renews).
    ///
    /// Concurrent callers that miss on the same key share one call of `fetch`
    /// (across every ``Cache`` instance on the folder in this process). A fetch that
    /// throws stores nothing and its error is rethrown to every caller sharing it.
    /// A value fetched but not stored (the disk refused) is still returned; the
    /// failure goes to ``Configuration/onEvent``.
    ///
    /// To let the fetch decide the lifespan, or to learn whether the value was
    /// fetched, use ``entry(for:policy:fetch:)``.
    @inlinable
    public func value<V>(
        for key: CacheKey<V>, lifespan: Lifespan? = nil,
        fetch: @Sendable () async throws -> V
    ) async throws -> V {
        // A memory hit answers as ``value(for:)``'s does: specialized for the caller's type, no
        // entry built. An expired record goes straight to the fetch.
        var found: V?
        switch memoryHit(
            key.name, valueType: ObjectIdentifier(V.self), schemaVersion: key.schemaVersion, fetching: true,
            copy: { storage in found = storage.assumingMemoryBound(to: V.self).pointee })
        {
        case .hit: if let found { return found }
        case .expired: return try await fetchedValue(key, lifespan: lifespan, afterMiss: true, fetch: fetch)
        case .miss: break
        }
        return try await fetchedValue(key, lifespan: lifespan, afterMiss: false, fetch: fetch)
    }

    /// The rest of ``value(for:lifespan:fetch:)`` after memory: the cached entry if valid, else
    /// the shared fetch's value. `afterMiss`: memory held the key expired, so fetch at once.
    @usableFromInline
    func fetchedValue<V>(
        _ key: CacheKey<V>, lifespan: Lifespan?, afterMiss: Bool, fetch: @Sendable () async throws -> V
    ) async throws -> V {
        guard afterMiss else {
            return try await cachedOrFetched(key) { Fetched(try await fetch(), lifespan: lifespan) }.value
        }
        emit(.miss(key: key.name))
        return try await sharedFetch(key) { Fetched(try await fetch(), lifespan: lifespan) }.value
    }

    /// The value for `key` under a ``FetchPolicy``.
    ///
    /// - ``FetchPolicy/cacheFirst``: as ``value(for:lifespan:fetch:)``.
    /// - ``FetchPolicy/staleWhileRevalidate``: a valid entry is returned; an expired
    ///   one is returned at once while `fetch` refreshes it in the background (a failed
    ///   refresh keeps the stale entry and reports ``CacheEvent/failure(key:error:)``);
    ///   a miss fetches.
    /// - ``FetchPolicy/refresh``: always fetches; if the fetch throws and an entry
    ///   exists, even expired, that is returned instead of the error.
    public func value<V>(
        for key: CacheKey<V>, lifespan: Lifespan? = nil, policy: FetchPolicy,
        fetch: @escaping @Sendable () async throws -> V
    ) async throws -> V {
        try await entry(for: key, policy: policy) { Fetched(try await fetch(), lifespan: lifespan) }.value
    }

    /// The entry for `key` under a ``FetchPolicy``, fetching when needed; the fetch decides the lifespan.
    ///
    /// `fetch` answers a ``Fetched``: the value and how long it stays valid (an
    /// HTTP `max-age`, say); a `nil` lifespan means the key's, else
    /// ``Configuration/defaultLifespan``. The entry's ``CacheEntry/origin`` says
    /// where the value came from: ``Origin/memory`` or ``Origin/disk`` for a cached
    /// one, ``Origin/shared`` for one another instance stored in the cache's
    /// ``Configuration-swift.struct/sharedTier`` (<doc:OnAServer>), ``Origin/fetch`` for a
    /// fetched one (also for callers that shared the fetch or the lookup). A fetched
    /// entry carries the metadata stored with it; if the write failed, the value is
    /// still returned, with the metadata that would have been stored and a
    /// ``CacheEntry/size`` of 0 (the failure goes to ``Configuration/onEvent``).
    ///
    /// The policies behave as with ``value(for:lifespan:policy:fetch:)``:
    /// - ``FetchPolicy/cacheFirst``: a valid entry is returned; an expired one or a
    ///   miss fetches (even when the cache ``Configuration/returnsExpiredValues``).
    /// - ``FetchPolicy/staleWhileRevalidate``: an expired entry is returned at once,
    ///   with ``CacheEntry/isExpired`` `true` and its real origin, while `fetch`
    ///   refreshes it in the background, storing the lifespan the fetch answers.
    /// - ``FetchPolicy/refresh``: always fetches; if the fetch throws and an entry
    ///   exists, even expired, that is returned instead of the error.
    ///
    /// Concurrent callers that fetch on the same key share one call of `fetch`
    /// (across every ``Cache`` instance on the folder in this process). A fetch
    /// that throws stores nothing and its error is rethrown to every caller sharing it.
    ///
    /// A fetched lifespan of `.seconds(0)` (or a date already past) answers the
    /// value with ``CacheEntry/isExpired`` `true`: it is stored expired, so the
    /// next ``FetchPolicy/cacheFirst`` call fetches again.
    public func entry<V>(
        for key: CacheKey<V>, policy: FetchPolicy = .cacheFirst,
        fetch: @escaping @Sendable () async throws -> Fetched<V>
    ) async throws -> CacheEntry<V> {
        switch policy {
        case .cacheFirst:
            return try await cachedOrFetched(key, fetch: fetch)
        case .staleWhileRevalidate:
            if let found = load(key) {
                emit(.hit(key: key.name))
                let entry = CacheEntry(
                    found.value(as: V.self), metadata: found.metadata, origin: found.origin, now: nowSeconds)
                if entry.isExpired { revalidate(key, fetch: fetch) }
                return entry
            }
            emit(.miss(key: key.name))
            return try await sharedFetch(key, fetch: fetch)
        case .refresh:
            do {
                return try await sharedFetch(key, consultingSharedTier: false, fetch: fetch)
            } catch {
                if let found = load(key) {
                    return CacheEntry(
                        found.value(as: V.self), metadata: found.metadata, origin: found.origin, now: nowSeconds)
                }
                throw error
            }
        }
    }

    /// The valid cached entry for `key`, else the shared fetch's: ``FetchPolicy/cacheFirst``.
    private func cachedOrFetched<V>(_ key: CacheKey<V>, fetch: () async throws -> Fetched<V>) async throws
        -> CacheEntry<V>
    {
        if let found = load(key) {
            let entry = CacheEntry(
                found.value(as: V.self), metadata: found.metadata, origin: found.origin, now: nowSeconds)
            if !entry.isExpired {
                emit(.hit(key: key.name))
                return entry
            }
        }
        emit(.miss(key: key.name))
        return try await sharedFetch(key, fetch: fetch)
    }

    /// Refreshes `key` in the background unless a refresh of it is already running.
    private func revalidate<V>(_ key: CacheKey<V>, fetch: @escaping @Sendable () async throws -> Fetched<V>) {
        let isFirst = folderState.revalidating.withLock { $0.insert(key.name).inserted }
        guard isFirst else { return }
        Task.detached { [self] in
            defer { _ = folderState.revalidating.withLock { $0.remove(key.name) } }
            do {
                _ = try await sharedFetch(key, fetch: fetch)
            } catch {
                emit(
                    .failure(
                        key: key.name,
                        error: CacheError(kind: .fetchFailed, key: key.name, message: String(describing: error))))
            }
        }
    }

    /// Runs `fetch` once for every concurrent caller on `key`'s name, stores its value and
    /// answers the entry stored (``Origin/fetch``) to each.
    ///
    /// With a ``Configuration-swift.struct/sharedTier`` and `consultingSharedTier`, the one
    /// caller that runs the fetch first asks the shared tier (bounded by
    /// ``Configuration-swift.struct/sharedTierTimeout``): a usable record there is answered
    /// (``Origin/shared``) to each caller instead, and `fetch` is not called.
    func sharedFetch<V>(
        _ key: CacheKey<V>, consultingSharedTier: Bool = true, fetch: () async throws -> Fetched<V>
    ) async throws -> CacheEntry<V> {
        let (call, isLeader) = folderState.fetches.withLock { calls in
            if let call = calls[key.name] { return (call, false) }
            let call = FetchCall()
            calls[key.name] = call
            return (call, true)
        }
        if !isLeader {
            switch await call.result() {
            case .success(let entry as CacheEntry<V>): return entry
            case .success: break // another key type under the same name: fetch for ourselves
            case .failure(let error): throw error
            }
            return try await fetchAndStore(key, fetch: fetch)
        }
        let outcome: Result<CacheEntry<V>, any Error>
        do {
            if consultingSharedTier, let shared, let entry = await entryFromSharedTier(key, shared) {
                outcome = .success(entry)
            } else {
                outcome = .success(try await fetchAndStore(key, fetch: fetch))
            }
        } catch {
            outcome = .failure(error)
        }
        folderState.fetches.withLock { _ = $0.removeValue(forKey: key.name) }
        call.finish(outcome.map { $0 as any Sendable })
        return try outcome.get()
    }

    private func fetchAndStore<V>(_ key: CacheKey<V>, fetch: () async throws -> Fetched<V>) async throws -> CacheEntry<
        V
    > {
        let startedAt = nowSeconds
        let fetched = try await fetch()
        let metadata: EntryMetadata
        do {
            metadata = try write(
                fetched.value, for: key, lifespan: fetched.lifespan, isFetched: true, fetchStartedAt: startedAt)
        } catch {
            // Reported by `write` through onEvent. The caller still gets the value, with
            // what would have been stored.
            let now = nowSeconds
            metadata = EntryMetadata(
                createdAt: now, validatedAt: now,
                lifespan: fetched.lifespan ?? key.lifespan ?? configuration.defaultLifespan,
                isLocked: folderState.keyLocks.withLock(key.name) { storedMetadata(named: key.name)?.isLocked }
                    ?? false,
                schemaVersion: key.schemaVersion,
                appVersion: configuration.appVersion, size: 0)
        }
        return CacheEntry(fetched.value, metadata: metadata, origin: .fetch, now: nowSeconds)
    }
}

/// One fetch in flight, awaited by every caller that missed on its key.
final class FetchCall: Sendable {
    private let state = Locked<
        (
            outcome: Result<any Sendable, any Error>?,
            waiters: [CheckedContinuation<Result<any Sendable, any Error>, Never>]
        )
    >((nil, []))

    func result() async -> Result<any Sendable, any Error> {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Result<any Sendable, any Error>? in
                if let outcome = state.outcome { return outcome }
                state.waiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// How many callers are waiting (tests use it to line callers up without sleeping).
    var waiterCount: Int { state.withLock { $0.waiters.count } }

    func finish(_ outcome: Result<any Sendable, any Error>) {
        let waiters = state.withLock { state in
            state.outcome = outcome
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: outcome) }
    }
}
