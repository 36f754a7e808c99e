import CashierPlatform

extension Cache {
    /// The current value of `key`, then its value after every change made through any
    /// ``Cache`` of this process on the same folder: writes, removals, discards,
    /// evictions and expiry noticed by a read (`nil` when the value went away).
    ///
    /// Changes to one key arrive in the order they were made, even when writes race:
    /// once they are done, the last value the stream yielded is the one stored (what
    /// ``value(for:)`` returns).
    ///
    /// The stream ends when the consumer stops iterating or drops it; its
    /// subscription is released then. Changes made by other processes are not seen.
    public func updates<V>(for key: CacheKey<V>) -> AsyncStream<V?> {
        let (stream, continuation) = AsyncStream<V?>.makeStream(bufferingPolicy: .unbounded)
        // Changes are published under their key's lock (or the barrier of every key), so they
        // reach this handler one at a time and in the order they were made; yielding under the
        // stream's own lock keeps that order in the stream. The current value is read after
        // subscribing: if a change arrives first, it is at least as new, and the read is dropped.
        let state = Locked(StreamState())
        let id = folderState.hub.subscribe(name: key.name) { change in
            let value = change.value as? V
            state.withLock { state in
                if state.hasYielded, state.lastWasNil, value == nil { return }
                state.hasYielded = true
                state.lastWasNil = value == nil
                continuation.yield(value)
            }
        }
        let hub = folderState.hub
        continuation.onTermination = { _ in hub.unsubscribe(id) }
        let current = load(key).flatMap { found in
            found.metadata.isExpired(at: nowSeconds) && !configuration.returnsExpiredValues
                ? nil : found.value(as: V.self)
        }
        state.withLock { state in
            guard !state.hasYielded else { return }
            state.hasYielded = true
            state.lastWasNil = current == nil
            continuation.yield(current)
        }
        return stream
    }

    /// How many observers are subscribed on this cache's folder (tests check streams release theirs).
    package var observerCount: Int { folderState.hub.subscriberCount }
}

/// What an ``Cache/updates(for:)`` stream has yielded so far.
private struct StreamState {
    var hasYielded = false
    var lastWasNil = false
}
