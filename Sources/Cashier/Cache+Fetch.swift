import Foundation

/// How ``Cache/value(for:lifespan:policy:fetch:)`` weighs the cache against a fresh fetch.
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
    public func value<V>(for key: CacheKey<V>, lifespan: Lifespan? = nil,
                         fetch: @Sendable () async throws -> V) async throws -> V {
        if let found = load(key), !found.metadata.isExpired(at: nowSeconds) {
            emit(.hit(key: key.name))
            return found.value
        }
        emit(.miss(key: key.name))
        return try await sharedFetch(key, lifespan: lifespan, fetch: fetch)
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
    public func value<V>(for key: CacheKey<V>, lifespan: Lifespan? = nil, policy: FetchPolicy,
                         fetch: @escaping @Sendable () async throws -> V) async throws -> V {
        switch policy {
        case .cacheFirst:
            return try await value(for: key, lifespan: lifespan, fetch: fetch)
        case .staleWhileRevalidate:
            if let found = load(key) {
                emit(.hit(key: key.name))
                if found.metadata.isExpired(at: nowSeconds) { revalidate(key, lifespan: lifespan, fetch: fetch) }
                return found.value
            }
            emit(.miss(key: key.name))
            return try await sharedFetch(key, lifespan: lifespan, fetch: fetch)
        case .refresh:
            do {
                return try await sharedFetch(key, lifespan: lifespan, fetch: fetch)
            } catch {
                if let found = load(key) { return found.value }
                throw error
            }
        }
    }

    /// Refreshes `key` in the background unless a refresh of it is already running.
    private func revalidate<V>(_ key: CacheKey<V>, lifespan: Lifespan?, fetch: @escaping @Sendable () async throws -> V) {
        let isFirst = store.revalidating.withLock { $0.insert(key.name).inserted }
        guard isFirst else { return }
        Task.detached { [self] in
            defer { _ = store.revalidating.withLock { $0.remove(key.name) } }
            do {
                _ = try await sharedFetch(key, lifespan: lifespan, fetch: fetch)
            } catch {
                emit(.failure(key: key.name, error: CacheError(kind: .fetchFailed, key: key.name, message: String(describing: error))))
            }
        }
    }

    /// Runs `fetch` once for every concurrent caller on `key`'s name, stores and returns its value.
    func sharedFetch<V>(_ key: CacheKey<V>, lifespan: Lifespan?, fetch: () async throws -> V) async throws -> V {
        let (call, isLeader) = store.fetches.withLock { calls in
            if let call = calls[key.name] { return (call, false) }
            let call = FetchCall()
            calls[key.name] = call
            return (call, true)
        }
        if !isLeader {
            switch await call.result() {
            case .success(let value as V): return value
            case .success: break  // another key type under the same name: fetch for ourselves
            case .failure(let error): throw error
            }
            return try await fetchAndStore(key, lifespan: lifespan, fetch: fetch)
        }
        let outcome: Result<V, any Error>
        do {
            outcome = .success(try await fetchAndStore(key, lifespan: lifespan, fetch: fetch))
        } catch {
            outcome = .failure(error)
        }
        store.fetches.withLock { _ = $0.removeValue(forKey: key.name) }
        call.finish(outcome.map { $0 as any Sendable })
        return try outcome.get()
    }

    private func fetchAndStore<V>(_ key: CacheKey<V>, lifespan: Lifespan?, fetch: () async throws -> V) async throws -> V {
        let value = try await fetch()
        try? set(value, for: key, lifespan: lifespan)  // a failure is reported by `set` through onEvent
        return value
    }
}

/// One fetch in flight, awaited by every caller that missed on its key.
final class FetchCall: Sendable {
    private let state = Locked<(outcome: Result<any Sendable, any Error>?, waiters: [CheckedContinuation<Result<any Sendable, any Error>, Never>])>((nil, []))

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
