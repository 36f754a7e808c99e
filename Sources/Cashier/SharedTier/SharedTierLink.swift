import CashierPlatform
import Foundation

/// A ``Cache``'s connection to its ``SharedTier``: bounded reads, the queue of writes
/// (``SharedTierWrites``), the lookups under way, and the task that consumes
/// ``SharedTier/changes()``.
///
/// Made by `Cache.init` when the configuration names a tier, started once the cache is
/// whole (``start(for:)``), stopped by its `deinit` (``stop(hub:)``). Nothing here holds the
/// cache: the change task holds it weakly, and only while it applies one change.
final class SharedTierLink: Sendable {
    let tier: any SharedTier
    let timeout: TimeInterval
    /// The folder's queue of changes, with this cache's tier as their destination.
    let writes: SharedTierLinkWrites
    let ledger: SharedTierLedger
    private let onEvent: (@Sendable (CacheEvent) -> Void)?
    private let state = Locked(State())

    private struct State {
        /// Names a lookup is under way for, and how often each changed locally meanwhile
        /// (counted from the lookup's start): `generation` grows with each change.
        var lookups: [String: (count: Int, generation: UInt64)] = [:]
        /// Grows with each change of every key (``Cache/removeAll()``, ``SharedChange/all``).
        var allGeneration: UInt64 = 0
        /// Records other instances' changes carried (``SharedChange/stored(_:_:)``), by name,
        /// until the key's next read here takes one or a local change of the key drops it.
        var announced: [String: (slot: SharedSlot, record: SharedRecord)] = [:]
        var changes: Task<Void, Never>?
        var subscription: Int?
        var isStopped = false
    }

    /// What a lookup notes when it starts, to tell later whether its key changed meanwhile.
    struct LookupMark {
        var name: String
        var generation: UInt64
        var allGeneration: UInt64
    }

    /// A link to `tier` whose changes go through `queue`, the folder's (``FolderState``).
    init(tier: any SharedTier, configuration: Cache.Configuration, queue: SharedTierWrites) {
        self.tier = tier
        timeout = configuration.sharedTierTimeout
        ledger = queue.ledger
        onEvent = configuration.onEvent
        writes = SharedTierLinkWrites(
            queue: queue,
            destination: SharedTierWrites.Destination(
                tier: tier, timeout: configuration.sharedTierTimeout, onEvent: configuration.onEvent,
                retryDelay: configuration.sharedTierRetryDelay))
    }

    // MARK: Reads

    /// What one read of the shared tier answered.
    enum Lookup {
        case found(SharedRecord)
        case absent
        /// The call threw or timed out (reported): go on without the shared tier.
        case unavailable
    }

    /// The record in `slot`, bounded by the timeout; a failure is reported and answered as ``Lookup/unavailable``.
    func record(in slot: SharedSlot) async -> Lookup {
        let tier = tier
        switch await SharedTierCall.run(within: timeout, { try await tier.record(in: slot) }).outcome {
        case .success(let record?):
            writes.queue.tierAnswered()
            return .found(record)
        case .success(nil):
            writes.queue.tierAnswered()
            return .absent
        case .failure(let error):
            let failure = CacheError(
                kind: .sharedTierUnavailable, key: slot.name, message: "reading \(slot) from the shared tier: \(error)")
            onEvent?(.failure(key: slot.name, error: failure))
            return .unavailable
        }
    }

    /// Notes that a lookup of `name` starts; pair with ``endLookup(_:)``.
    func beginLookup(_ name: String) -> LookupMark {
        state.withLock { state in
            let generation = state.lookups[name]?.generation ?? 0
            state.lookups[name] = (count: (state.lookups[name]?.count ?? 0) + 1, generation: generation)
            return LookupMark(name: name, generation: generation, allGeneration: state.allGeneration)
        }
    }

    /// Whether nothing changed `mark`'s key locally since its lookup started. Call holding the key's lock.
    func isUnchanged(since mark: LookupMark) -> Bool {
        state.withLock { state in
            state.allGeneration == mark.allGeneration && state.lookups[mark.name]?.generation == mark.generation
        }
    }

    func endLookup(_ mark: LookupMark) {
        state.withLock { state in
            guard let lookup = state.lookups[mark.name] else { return }
            state.lookups[mark.name] = lookup.count > 1 ? (lookup.count - 1, lookup.generation) : nil
        }
    }

    /// A change of `name` (`nil`: of every key) landed locally, through any instance on the
    /// folder: lookups under way must not keep what they find, and a record announced for the
    /// key is older than the change.
    private func noteLocalChange(_ name: String?) {
        state.withLock { state in
            if let name {
                state.lookups[name]?.generation += 1
                state.announced[name] = nil
            } else {
                state.allGeneration += 1
                state.announced.removeAll()
            }
        }
    }

    // MARK: Records announced by other instances

    /// How many announced records are kept at most: a tier's notification carries a few
    /// kilobytes at most (PostgreSQL's: under 8,000 bytes), so a few megabytes in all.
    static let announcedLimit = 1024

    /// Keeps `record`, which another instance stored in `slot`, for the next read of the key
    /// here, replacing what was kept for the key. Call holding the key's lock, in the step that
    /// dropped its local copies: a later local change of the key (`noteLocalChange(_:)`,
    /// under that lock too) forgets it.
    ///
    /// Not kept (the next read asks the tier) while a change of the key made on this folder
    /// is on its way to the tier or failed to reach it (``SharedTierLedger/isTrusted(_:)``),
    /// nor when the record was written no later than this folder's last change of the key
    /// (``SharedTierLedger/lastChange(of:)``): that change may have reached the tier before
    /// the older store was announced, and the tier keeps the newer of the two. Past
    /// ``announcedLimit`` one kept record goes (a read of its key then asks the tier).
    func keepAnnounced(_ record: SharedRecord, in slot: SharedSlot) {
        guard ledger.isTrusted(slot.name), record.writtenAt > ledger.lastChange(of: slot.name) else { return }
        state.withLock { state in
            if state.announced[slot.name] == nil, state.announced.count >= Self.announcedLimit {
                state.announced.remove(at: state.announced.startIndex)
            }
            state.announced[slot.name] = (slot, record)
        }
    }

    /// The record announced for `slot` (``keepAnnounced(_:in:)``), taken: `nil` when none is
    /// kept for the key, or the one kept is another slot's.
    func takeAnnounced(_ slot: SharedSlot) -> SharedRecord? {
        state.withLock { state in
            guard let kept = state.announced[slot.name], kept.slot == slot else { return nil }
            state.announced[slot.name] = nil
            return kept.record
        }
    }

    // MARK: Life

    /// Starts watching `cache`'s folder for local changes and consuming the tier's changes.
    func start(for cache: Cache) {
        let subscription = cache.folderState.hub.subscribe(name: nil) { [weak self] change in
            self?.noteLocalChange(change.name)
        }
        let queue = writes.queue
        // Weakly: the queue keeps this destination (and so this closure) in the changes it holds
        // for a tier that is down; a strong capture made a cycle that outlived every cache.
        writes.destination.dropsCopies.set { [weak cache, weak queue] name in
            guard let queue else { return }
            cache?.dropSupersededCopy(name, writes: queue)
        }
        let changes = Self.consumeChanges(of: tier, pause: timeout, for: cache)
        let stopped = state.withLock { state in
            state.subscription = subscription
            state.changes = changes
            return state.isStopped
        }
        if stopped { stop(hub: cache.folderState.hub) }
    }

    /// Stops both: the cache is going.
    func stop(hub: ChangeHub) {
        let (subscription, changes) = state.withLock { state in
            state.isStopped = true
            defer { (state.subscription, state.changes) = (nil, nil) }
            return (state.subscription, state.changes)
        }
        changes?.cancel()
        if let subscription { hub.unsubscribe(subscription) }
    }

    /// The task applying the tier's changes to `cache` while it lives; the first stream is
    /// asked for before this returns.
    ///
    /// A stream that ends is asked for again, after a pause (`pause`, doubled each time a
    /// stream ends without a change, up to 30 s); what changed between the two streams cannot
    /// be known, so every key counts as changed (``SharedChange/all``) once the new one is asked for.
    private static func consumeChanges(
        of tier: any SharedTier, pause: TimeInterval, for cache: Cache
    ) -> Task<Void, Never> {
        // Asked for here, on the caller's thread: changes count from the cache's making.
        var stream = tier.changes()
        return Task { [weak cache] in
            var pauses = 0
            while !Task.isCancelled {
                var delivered = false
                for await change in stream {
                    delivered = true
                    guard let cache else { return }
                    cache.applySharedChange(change)
                    // The tier is back after a disconnection: what failed to reach it goes again.
                    if change.isReconnection { cache.shared?.writes.queue.resendFailed() }
                }
                if delivered { pauses = 0 }
                guard !Task.isCancelled, cache != nil else { return }
                let seconds = min(max(pause.isFinite ? pause : 1, 0.001) * pow(2, Double(min(pauses, 20))), 30)
                pauses += 1
                guard (try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9))) != nil else { return }
                stream = tier.changes()
                guard let cache else { return }
                cache.applySharedChange(.all)
                cache.shared?.writes.queue.resendFailed()
            }
        }
    }
}
