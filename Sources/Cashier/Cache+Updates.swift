extension Cache {
    /// The current value of `key`, then its value after every change made through any
    /// ``Cache`` of this process on the same folder: writes, removals, discards,
    /// evictions and expiry noticed by a read (`nil` when the value went away).
    ///
    /// The stream ends when the consumer stops iterating or drops it; its
    /// subscription is released then. Changes made by other processes are not seen.
    public func updates<V>(for key: CacheKey<V>) -> AsyncStream<V?> {
        let (stream, continuation) = AsyncStream<V?>.makeStream(bufferingPolicy: .unbounded)
        let lastWasNil = Locked(false)
        let id = store.hub.subscribe(name: key.name) { change in
            let value = change.value as? V
            let skip = lastWasNil.withLock { lastWasNil in
                defer { lastWasNil = value == nil }
                return lastWasNil && value == nil
            }
            if !skip { continuation.yield(value) }
        }
        let hub = store.hub
        continuation.onTermination = { _ in hub.unsubscribe(id) }
        let current = load(key).flatMap { found in
            found.metadata.isExpired(at: nowSeconds) && !configuration.returnsExpiredValues ? nil : found.value
        }
        lastWasNil.withLock { $0 = current == nil }
        continuation.yield(current)
        return stream
    }

    /// How many observers are subscribed on this cache's folder (tests check streams release theirs).
    package var observerCount: Int { store.hub.subscriberCount }
}
