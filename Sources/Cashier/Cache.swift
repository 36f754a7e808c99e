import CashierPlatform
import CashierStore
import Foundation

/// A persistent cache of `Codable` values behind typed keys.
///
/// ```swift
/// let cache = Cache.named("api")
/// try cache.set(user, for: Keys.profile)
/// let user = cache.value(for: Keys.profile)      // User?, nil on a miss
/// ```
///
/// Values live in two tiers: decoded in memory (bounded by
/// ``Configuration/memoryCountLimit`` and ``Configuration/memoryCostLimit``) and on disk, each
/// entry a checksummed record: small ones rows of the folder's SQLite store, large ones files
/// indexed by it. Reads never throw and never crash because of what is on disk: damaged,
/// foreign, old or undecodable entries are misses, removed and reported through
/// ``Configuration/onEvent``. Every method may be called from any thread or task.
/// Instances on the same folder in one process share their disk index, per-key
/// coordination and change notifications.
public final class Cache: Sendable {
    /// The configuration the cache was made with.
    public let configuration: Configuration
    /// The folder entries are stored in, or `nil` for a memory-only cache.
    public let folder: URL?

    let folderState: FolderState
    let memory: MemoryTier
    /// The connection to ``Configuration-swift.struct/sharedTier``; `nil` without one.
    let shared: SharedTierLink?
    /// This instance's identity in change notifications (see ``identity``).
    private let token: Token
    private let subscription: Int
    private let garbageCollection: GarbageCollectionTimer?
    private let memoryPressure: MemoryPressureSource?
    /// Held while the memory tier's uses are taken and handed to the disk tier (written too,
    /// in a folder without a store: ``recordMemoryUses()``).
    let usesWriting = NSLock()
    /// Where ``finishBackgroundWork()`` waits: one thread of Dispatch's for all its callers
    /// (a hundred at once held a hundred threads, one each: a hostile review), never one of
    /// Swift's cooperative pool.
    private let finishing = DispatchQueue(label: "Cashier.finishBackgroundWork")

    /// Makes a cache. Never throws: the folder is created by the first write, and
    /// I/O failures surface as errors from writes and ``CacheEvent/failure(key:error:)`` events.
    /// The folder is judged (who owns it, who can write it) when the cache first uses it, not here.
    public init(_ configuration: Configuration) {
        self.configuration = configuration
        let path = Self.folderPath(for: configuration)
        folder = path.map { URL(fileURLWithPath: $0, isDirectory: true) }
        folderState = FolderState.forFolder(
            path, fileSystem: configuration.fileSystem, rowSizeLimit: configuration.rowSizeLimit,
            usesStore: configuration.usesStore, recheckInterval: configuration.folderRecheckNanoseconds,
            busyTimeoutMilliseconds: Self.milliseconds(configuration.busyTimeout),
            storeOpenBackoff: StoreOpenBackoff(clock: configuration.storeOpenClock))
        // Each new cache judges the folder again on first use (its sharing may differ; the
        // folder may have changed): one lstat then, none here.
        folderState.disk?.forgetFolderStatus()
        memory = MemoryTier(
            limit: configuration.memoryCountLimit, costLimit: configuration.memoryCostLimit,
            policy: configuration.evictionPolicy, tracksUse: folderState.disk != nil,
            coherenceInterval: folderState.disk?.usesStore == true ? configuration.memoryCoherenceNanoseconds : nil)
        let memory = self.memory
        // Made before subscribing and never changed: the handler, which other instances may
        // call from the moment it is subscribed, reads nothing that init writes later.
        let token = Token()
        self.token = token
        let identity = ObjectIdentifier(token)
        subscription = folderState.hub.subscribe(name: nil) { change in
            guard change.origin != identity else { return }
            if let name = change.name { memory.remove(name) } else { _ = memory.removeAll() }
        }
        if let interval = configuration.garbageCollectionInterval, interval > 0, path != nil {
            garbageCollection = GarbageCollectionTimer(interval: interval)
        } else {
            garbageCollection = nil
        }
        memoryPressure = memory.limit == 0 ? nil : MemoryPressureSource()
        let queue = folderState.sharedTierWrites
        shared = configuration.sharedTier.map { SharedTierLink(tier: $0, configuration: configuration, queue: queue) }
        // In the background: inside an expiring activity where the platform has them, and never
        // waiting for a folder lock another process holds (no lock across a suspension).
        garbageCollection?.start { [weak self] in
            _ = withBackgroundActivity("Cashier garbage collection") { self?.collectGarbage(waiting: false) }
        }
        memoryPressure?.start { [weak self] in self?.relieveMemoryPressure($0) }
        shared?.start(for: self)
    }

    deinit {
        memoryPressure?.stop()
        // The uses gathered are written now if that needs no wait, so the next instance on the
        // folder (this process's, maybe with a disk tier of its own once this one's goes, or the
        // next launch's) orders by them; else off this thread (a deinit may run on the main
        // thread; the write may wait for another process's lock).
        if let disk {
            disk.gatherUses(ofKeys: memory.takeUsedNames(), at: nowSeconds)
            if !disk.flushUsesIfFree() { disk.inBackground { disk.flushUses() } }
        }
        garbageCollection?.stop()
        folderState.hub.unsubscribe(subscription)
        shared?.stop(hub: folderState.hub)
    }

    /// The process's one cache with this name (default configuration, ``Location/caches``).
    ///
    /// Its ``Configuration-swift.struct/appVersion`` is the default one: the main bundle's
    /// version, else the `CASHIER_APP_VERSION` environment variable. A server sets one with
    /// ``named(_:appVersion:)``. Its disk is bounded like every ``Location/caches`` cache's:
    /// 150 MiB, collected every 30 minutes; ``named(_:diskSizeLimit:)`` sets another limit.
    public static func named(_ name: String) -> Cache {
        named(name, resolvedAppVersion: Configuration.defaultAppVersion)
    }

    /// The cache named "default".
    public static var `default`: Cache { named("default") }

    var disk: DiskTier? { folderState.disk }
    /// Who made a change, so an instance skips its own notifications: its token's identity,
    /// which lives as long as the instance (and its subscription) do.
    var identity: ObjectIdentifier { ObjectIdentifier(token) }
    var nowSeconds: Double { configuration.now().timeIntervalSince1970 }

    // MARK: Effects

    /// Reports an event to `onEvent` and keeps the counters.
    func emit(_ event: CacheEvent) {
        switch event {
        case .hit: memory.count { $0.hits += 1 }
        case .miss: memory.count { $0.misses += 1 }
        case .write: memory.count { $0.writes += 1 }
        case .evicted: memory.count { $0.evictions += 1 }
        case .discarded: memory.count { $0.discards += 1 }
        case .failure, .migrated: break
        }
        configuration.onEvent?(event)
    }

    /// Tells observers and the other instances on this folder that `name` changed.
    ///
    /// Call holding `name`'s key lock (or the barrier of every key, for `nil` or a bulk
    /// removal): changes to one key are then announced in the order they were made, so
    /// an observer's last value is the stored one.
    func publish(_ name: String?, _ value: (any Sendable)?) {
        folderState.hub.publish(Change(name: name, value: value, origin: identity))
    }

    /// Forgets an entry housekeeping removed: its memory record and, for observers and the
    /// other instances, its value. Runs under the key barrier, in the same step as the removal.
    func forget(_ removal: DiskTier.Removal) {
        switch removal {
        case .evicted(let key, _), .discarded(let key, _), .removed(let key):
            memory.remove(key)
            publish(key, nil)
        }
    }

    /// Reports what housekeeping removed (counters and events), after the barrier is lifted:
    /// `onEvent` is the app's code and may call the cache.
    func report(_ removals: [DiskTier.Removal]) {
        reportStoreNotices()
        for removal in removals {
            switch removal {
            case .evicted(let key, let bytes): emit(.evicted(key: key, bytes: bytes))
            case .discarded(let key, let reason): emit(.discarded(key: key, reason: reason))
            case .removed: break
            }
        }
    }

    /// Reports what befell the folder's store since the last report (a damaged store set aside,
    /// SQLite missing) as failures without a key: the cache went on without what was lost; and
    /// removals the volume had no room for, as failures naming their keys; entries evicted to
    /// make room for a removal, as evictions.
    func reportStoreNotices() {
        guard let disk else { return }
        var later: [DiskTier.StoreNotice] = []
        for notice in disk.takeStoreNotices() {
            if case .evictedForRoom(let key, let bytes) = notice {
                // As a sweep's eviction: every instance's memory and observers learn it, under the
                // key's lock, unless a write of the key since stored a value again (an observer's
                // last value is the stored one). A lock held now (by a thread that may be this
                // one: a migration that removes another key) leaves it to a later report.
                let taken = folderState.keyLocks.withLockIfFree(key) {
                    if case .success = disk.readHeader(key: key) { return }
                    memory.remove(key)
                    publish(key, nil)
                }
                guard taken else {
                    later.append(notice)
                    continue
                }
                emit(.evicted(key: key, bytes: bytes))
            } else if let error = notice.cacheError {
                emit(.failure(key: notice.key, error: error))
            }
        }
        if !later.isEmpty { disk.requeueStoreNotices(later) }
    }

    /// Blocks until the size sweeps scheduled so far, and a garbage collection that
    /// ``Configuration-swift.struct/garbageCollectionInterval`` started and that is still
    /// running, have finished, after writing down the recency of the values read from
    /// memory since the cache last touched the disk; with a
    /// ``Configuration-swift.struct/sharedTier``, also until the writes and removals queued
    /// for it have reached it, failed or timed out (each bounded by
    /// ``Configuration-swift.struct/sharedTierTimeout``, five seconds more in all at most).
    ///
    /// A sweep that found the folder locked by another process is tried again a second
    /// later; this waits for that retry too, so it can last as long as the other process
    /// holds the lock. It does not wait for the background fetches of
    /// ``FetchPolicy/staleWhileRevalidate``: they run your `async` closure, which a
    /// blocking call must not wait on.
    ///
    /// Writes past ``Configuration-swift.struct/diskSizeLimit`` schedule a sweep
    /// off the caller's thread; call this before exiting a short-lived process, or
    /// in tests and benchmarks instead of sleeping. Returns at once when none is
    /// scheduled or the cache is memory-only. Touches the disk only to set the access
    /// time of entries read from memory (at most once a minute each, see
    /// <doc:StorageAndLimits>), and by waiting.
    public func waitForBackgroundWork() {
        shared?.writes.waitUntilSent()
        recordMemoryUses()
        garbageCollection?.waitForRunningRound()
        disk?.waitForSweeps()
        // At rest, the folder is within its limit: the log folded into the store (without
        // waiting for readers), and one more sweep if the folder still occupies more.
        if let disk, let limit = configuration.diskSizeLimit, disk.settle(over: limit) {
            sweepIfNeeded()
            disk.waitForSweeps()
        }
    }

    /// ``waitForBackgroundWork()`` for async code: waits for the same work, on the same terms,
    /// without holding a thread of Swift's cooperative pool meanwhile.
    ///
    /// The changes for a ``Configuration-swift.struct/sharedTier`` are sent by tasks of that
    /// pool, which has a thread a core. ``waitForBackgroundWork()`` blocks its caller's thread:
    /// called from a task, on a machine whose other pool threads are busy, it can hold the
    /// thread the sending task needs and return, once its bound passes, with the changes still
    /// queued. This waits on a thread of its own instead, so call it from a service's graceful
    /// shutdown (before the shared tier's service stops: ServiceLifecycle stops services in the
    /// reverse of their order) and from async tests.
    ///
    /// Its bound is ``waitForBackgroundWork()``'s: each change queued for the shared tier at
    /// most for ``Configuration-swift.struct/sharedTierTimeout``, one after another, so a long
    /// backlog for a tier that hangs takes long. Cancelling the task ends the wait at once (the
    /// work goes on): a shutdown's deadline, such as ServiceGroup's
    /// `maximumGracefulShutdownDuration`, cuts it short.
    public func finishBackgroundWork() async {
        let wait = FinishingWait()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
                wait.start(finished)
                finishing.async { [self] in
                    waitForBackgroundWork()
                    wait.finish()
                }
            }
        } onCancel: {
            wait.finish()
        }
    }
}

/// One ``Cache/finishBackgroundWork()`` call's continuation, resumed once: by the end of the
/// wait or by the task's cancellation, whichever comes first (a cancellation before the
/// continuation is there resumes it as it arrives).
private final class FinishingWait: Sendable {
    private let state = Locked<(continuation: CheckedContinuation<Void, Never>?, finished: Bool)>((nil, false))

    func start(_ continuation: CheckedContinuation<Void, Never>) {
        let finished = state.withLock { state in
            if !state.finished { state.continuation = continuation }
            return state.finished
        }
        if finished { continuation.resume() }
    }

    func finish() {
        let continuation = state.withLock { state in
            defer { (state.continuation, state.finished) = (nil, true) }
            return state.continuation
        }
        continuation?.resume()
    }
}

/// A cache instance's identity in change notifications: made in `Cache.init` before the
/// instance subscribes, immutable, and kept by the instance, so the identifier its
/// subscription compares against is never reused while it is subscribed.
private final class Token: Sendable {}
