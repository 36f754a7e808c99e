import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A persistent cache of `Codable` values behind typed keys.
///
/// ```swift
/// let cache = Cache.named("api")
/// try cache.set(user, for: Keys.profile)
/// let user = cache.value(for: Keys.profile)      // User?, nil on a miss
/// ```
///
/// Values live in two tiers: decoded in memory (bounded by
/// ``Configuration/memoryCountLimit`` and ``Configuration/memoryCostLimit``) and one checksummed file per entry on
/// disk. Reads never throw and never crash because of what is on disk: damaged,
/// foreign, old or undecodable entries are misses, removed and reported through
/// ``Configuration/onEvent``. Every method may be called from any thread or task.
/// Instances on the same folder in one process share their disk index, per-key
/// coordination and change notifications.
public final class Cache: Sendable {
    /// Everything that shapes a cache, fixed when it is made.
    public struct Configuration: Sendable {
        /// The cache's name: its folder under ``Location/caches`` or ``Location/persistent``.
        public var name: String
        /// Where entries are stored.
        public var location: Location = .caches
        /// The lifespan of values whose key and write name none.
        public var defaultLifespan: Lifespan = .never
        /// Whether ``Cache/value(for:)`` returns expired values instead of missing.
        public var returnsExpiredValues: Bool = false
        /// How many decoded values the memory tier keeps (least recently used go first); `nil` for no bound, 0 for none.
        public var memoryCountLimit: Int? = nil
        /// Bytes of values the memory tier keeps, each value counted as its encoded size (the
        /// payload written or read); least recently used go first, locked ones last. `nil` for no
        /// byte bound.
        ///
        /// The default is one thirty-second of the device's physical memory, at most 128 MiB:
        /// 32 MiB on a 1 GB Apple Watch, 128 MiB from 4 GB up. A decoded value usually takes more
        /// memory than its encoding, so the bound is kept well below what iOS tolerates before it
        /// ends an app for its memory use. See ``Cache/purgeMemory()``.
        public var memoryCostLimit: Int? = Configuration.defaultMemoryCostLimit
        /// Bytes on disk (headers included) past which least recently used entries are evicted, off the caller's thread;
        /// `nil` for no bound.
        ///
        /// The default depends on ``location``: 150 MiB (``Cache/Configuration-swift.struct/defaultDiskSizeLimit``)
        /// for ``Location/caches``, `nil` for every other location. A value you set, `nil` included, is kept
        /// whatever the location. See <doc:StorageAndLimits>.
        public var diskSizeLimit: Int? {
            get {
                diskSizeLimitSetting.resolved(locationDefault: location == .caches ? Self.defaultDiskSizeLimit : nil)
            }
            set { diskSizeLimitSetting = .explicit(newValue) }
        }
        var diskSizeLimitSetting = DefaultedSetting<Int>.locationDefault
        /// The version unversioned keys' entries are tied to: the main bundle's short version
        /// (`CFBundleShortVersionString`, `1.4`: not the build number, so TestFlight builds of one
        /// release share entries), else the `CASHIER_APP_VERSION` environment variable (for servers
        /// and tools, which have no bundle version), else `nil`. See ``Cache/named(_:appVersion:)``.
        public var appVersion: String? = Configuration.defaultAppVersion
        /// How entry files are protected.
        public var fileProtection: FileProtection = .none
        /// Who besides this user may read and write the cache's folder: no one by default.
        ///
        /// With ``Sharing/owner`` entries are 0600 and folders 0700, and a folder another user
        /// owns, or that its group or others can write, is refused. ``Sharing/group`` makes
        /// 0660 entries in 0770 folders and accepts a folder the group can write. See <doc:StorageAndLimits>.
        public var sharing: Sharing = .owner
        /// Whether `set` waits for the data to reach stable storage.
        public var durability: Durability = .standard
        /// How often ``Cache/collectGarbage()`` runs by itself, in seconds; `nil` for never.
        ///
        /// The default depends on ``location``: every 30 minutes
        /// (``Cache/Configuration-swift.struct/defaultGarbageCollectionInterval``) for ``Location/caches``, `nil`
        /// for every other location. A value you set, `nil` included, is kept whatever the location.
        public var garbageCollectionInterval: TimeInterval? {
            get {
                garbageCollectionIntervalSetting.resolved(
                    locationDefault: location == .caches ? Self.defaultGarbageCollectionInterval : nil)
            }
            set { garbageCollectionIntervalSetting = .explicit(newValue) }
        }
        var garbageCollectionIntervalSetting = DefaultedSetting<TimeInterval>.locationDefault
        /// Garbage collection also evicts (least recently used, unlocked first) while the
        /// volume holding the cache has fewer free bytes than this.
        public var minimumFreeDiskSpace: Int? = nil
        /// Receives every ``CacheEvent``, synchronously, on the thread that caused it.
        public var onEvent: (@Sendable (CacheEvent) -> Void)? = nil
        /// The clock expiry is measured with; replace it in tests instead of sleeping.
        public var now: @Sendable () -> Date = { Date() }
        /// The file-system seam, for fault-injection tests; `nil` for the real one.
        package var fileSystem: (any FileSystem)? = nil

        /// A configuration with every setting at its default.
        public init(name: String) {
            self.name = name
        }

        /// ``memoryCostLimit``'s default on this device.
        static let defaultMemoryCostLimit = memoryCostLimit(physicalMemory: ProcessInfo.processInfo.physicalMemory)

        /// One thirty-second of `physicalMemory`, at most 128 MiB. Computed in `UInt64`, so it
        /// cannot overflow where `Int` is 32 bits (watchOS on arm64_32): the result fits any `Int`.
        package static func memoryCostLimit(physicalMemory: UInt64) -> Int {
            Int(min(physicalMemory / 32, 128 << 20))
        }

        /// The main bundle's version, as ``bundleVersion(shortVersion:build:)`` picks it.
        /// ``appVersion``'s default; not public API (a program reads `Configuration(name:).appVersion`).
        static var mainBundleVersion: String? {
            let info = Bundle.main.infoDictionary
            return bundleVersion(
                shortVersion: info?["CFBundleShortVersionString"] as? String, build: info?["CFBundleVersion"] as? String
            )
        }

        /// The release's version, `CFBundleShortVersionString` (`1.4`), else the build number
        /// `CFBundleVersion`, else `nil`.
        ///
        /// The build number is left out on purpose: it changes with every TestFlight or
        /// internal build of one release, and each change would discard every unversioned entry.
        /// An App Store update always changes the short version, so unversioned entries still
        /// start afresh with each release users install; a model that changes between builds
        /// of one release needs a ``CacheKey/schemaVersion`` either way.
        package static func bundleVersion(shortVersion: String?, build: String?) -> String? {
            if let shortVersion, !shortVersion.isEmpty { return shortVersion }
            if let build, !build.isEmpty { return build }
            return nil
        }
    }

    /// Where a cache keeps its entries.
    public enum Location: Sendable, Hashable {
        /// `Library/Caches/Cashier/<name>` in the app's container; on Linux `$XDG_CACHE_HOME/Cashier/<name>`
        /// or `~/.cache/Cashier/<name>`. A Mac process outside the App Sandbox gets a folder of its own:
        /// `~/Library/Caches/<bundle identifier, else executable name>/Cashier/<name>`.
        case caches
        /// `Library/Application Support/Cashier/<name>` (a Mac process outside the App Sandbox: under
        /// `~/Library/Application Support/<bundle identifier, else executable name>/`); on Linux
        /// `$XDG_DATA_HOME` or `~/.local/share`.
        case persistent
        /// Memory only: nothing touches the disk.
        case memoryOnly
        /// Exactly this folder.
        case directory(URL)
    }

    /// How entry files are protected at rest.
    public enum FileProtection: Sendable, Hashable {
        /// The platform's defaults.
        case none
        /// Complete file protection on Apple platforms: unreadable while the device is locked.
        /// Permissions are ``Configuration-swift.struct/sharing``'s, owner-only by default.
        case complete
    }

    /// What a returned `set` promises.
    public enum Durability: Sendable, Hashable {
        /// Temporary file then rename: after a process crash the old or the new entry is
        /// there, never a mix. After a power loss an entry may be lost or cut short; the
        /// checksum makes that a miss, never a wrong value.
        case standard
        /// Also syncs the file before the rename and the folder after it, so a
        /// returned `set` survives a power loss. Several times slower.
        case synchronized
    }

    /// The configuration the cache was made with.
    public let configuration: Configuration
    /// The folder entries are stored in, or `nil` for a memory-only cache.
    public let folder: URL?

    let store: Store
    let memory: MemoryTier
    /// This instance's identity in change notifications (see ``identity``).
    private let token: Token
    private let subscription: Int
    private let garbageCollection: GarbageCollectionTimer?
    private let memoryPressure: MemoryPressureSource?

    /// Makes a cache. Never throws: the folder is created by the first write, and
    /// I/O failures surface as errors from writes and ``CacheEvent/failure(key:error:)`` events.
    /// The folder is judged (who owns it, who can write it) when the cache first uses it, not here.
    public init(_ configuration: Configuration) {
        self.configuration = configuration
        let path = Self.folderPath(for: configuration)
        folder = path.map { URL(fileURLWithPath: $0, isDirectory: true) }
        store = Store.forFolder(path, fileSystem: configuration.fileSystem)
        // Each new cache judges the folder again on first use (its sharing may differ; the
        // folder may have changed): one lstat then, none here.
        store.disk?.forgetFolderStatus()
        memory = MemoryTier(limit: configuration.memoryCountLimit, costLimit: configuration.memoryCostLimit)
        let memory = self.memory
        // Made before subscribing and never changed: the handler, which other instances may
        // call from the moment it is subscribed, reads nothing that init writes later.
        let token = Token()
        self.token = token
        let identity = ObjectIdentifier(token)
        subscription = store.hub.subscribe(name: nil) { change in
            guard change.origin != identity else { return }
            if let name = change.name { memory.remove(name) } else { _ = memory.removeAll() }
        }
        if let interval = configuration.garbageCollectionInterval, interval > 0, path != nil {
            garbageCollection = GarbageCollectionTimer(interval: interval)
        } else {
            garbageCollection = nil
        }
        memoryPressure = memory.limit == 0 ? nil : MemoryPressureSource()
        // In the background: inside an expiring activity where the platform has them, and never
        // waiting for a folder lock another process holds (no lock across a suspension).
        garbageCollection?.start { [weak self] in
            _ = withBackgroundActivity("Cashier garbage collection") { self?.collectGarbage(waiting: false) }
        }
        memoryPressure?.start { [weak self] in self?.relieveMemoryPressure($0) }
    }

    deinit {
        memoryPressure?.stop()
        recordMemoryUses()
        garbageCollection?.stop()
        store.hub.unsubscribe(subscription)
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

    var disk: DiskStore? { store.disk }
    /// Who made a change, so an instance skips its own notifications: its token's identity,
    /// which lives as long as the instance (and its subscription) do.
    var identity: ObjectIdentifier { ObjectIdentifier(token) }
    var nowSeconds: Double { configuration.now().timeIntervalSince1970 }

    // MARK: Locations

    /// The folder path a configuration stores entries in, `nil` for memory only.
    package static func folderPath(for configuration: Configuration) -> String? {
        let base: String
        switch configuration.location {
        case .memoryOnly: return nil
        case .directory(let url): return url.standardizedFileURL.path
        case .caches: base = platformFolder(caches: true)
        case .persistent: base = platformFolder(caches: false)
        }
        return base + "/Cashier/" + folderName(for: configuration.name)
    }

    /// A cache name made safe as one path component: percent-encoded outside `[A-Za-z0-9._-]`.
    ///
    /// Encodes the name's canonical spelling (NFC), so names equal as Swift strings, which
    /// ``named(_:)`` already treats as one cache, also share one folder.
    package static func folderName(for name: String) -> String {
        var result = ""
        for byte in DiskStore.canonicalSpelling(of: name).utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                result += String(format: "%%%02X", byte)
            }
        }
        switch result {
        case "": return "%"
        case ".": return "%2E"
        case "..": return "%2E%2E"
        default: return result
        }
    }

    static func platformFolder(caches: Bool) -> String {
        #if canImport(Darwin)
        let directory: FileManager.SearchPathDirectory = caches ? .cachesDirectory : .applicationSupportDirectory
        let base = FileManager.default.urls(for: directory, in: .userDomainMask).first?.path ?? NSTemporaryDirectory()
        #if os(macOS) || targetEnvironment(macCatalyst)
        // Set in every App Sandbox process (not in Apple's reference, but what sandboxed Mac apps
        // and Electron test); a container path says the same, and is documented.
        let isSandboxed = ProcessInfo.processInfo.environment["APP_SANDBOX_CONTAINER_ID"] != nil
        return ownFolder(
            in: base, isMac: true, isSandboxed: isSandboxed,
            bundleIdentifier: Bundle.main.bundleIdentifier, processName: ProcessInfo.processInfo.processName)
        #else
        return base
        #endif
        #else
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment[caches ? "XDG_CACHE_HOME" : "XDG_DATA_HOME"], xdg.hasPrefix("/") { return xdg }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + (caches ? "/.cache" : "/.local/share")
        #endif
    }

    /// The folder a process's `Cashier/<name>` folders go in, given the platform's caches or
    /// application-support folder `base`: `base` itself where it is the app's own container
    /// (iOS, tvOS, watchOS, a sandboxed Mac app), else `base/<bundle identifier>`, or
    /// `base/<executable name>` for a process without one, so that two unsandboxed Mac apps or
    /// tools never share (and never wipe) each other's entries.
    ///
    /// - Parameters:
    ///   - base: the platform's caches or application-support folder.
    ///   - isMac: macOS or Mac Catalyst, where `base` may be the user's `~/Library/Caches`.
    ///   - isSandboxed: whether the App Sandbox confines the process; a `base` inside
    ///     `~/Library/Containers/` counts as sandboxed too.
    ///   - bundleIdentifier: the main bundle's identifier, if the process has one.
    ///   - processName: the executable's name, used when there is no bundle identifier.
    package static func ownFolder(
        in base: String, isMac: Bool, isSandboxed: Bool, bundleIdentifier: String?, processName: String
    ) -> String {
        guard isMac, !isSandboxed, !base.contains("/Library/Containers/") else { return base }
        let owner = bundleIdentifier.flatMap { $0.isEmpty ? nil : $0 } ?? processName
        return (base.hasSuffix("/") ? String(base.dropLast()) : base) + "/" + folderName(for: owner)
    }

    /// How this cache writes, recording the write as the entry's last use at `usedAt`
    /// (the moment its metadata says: one clock reading for both).
    func writeOptions(usedAt: Double) -> DiskStore.WriteOptions {
        let complete = configuration.fileProtection == .complete
        var options = DiskStore.WriteOptions(
            filePermissions: configuration.sharing.filePermissions,
            folderPermissions: configuration.sharing.folderPermissions,
            synchronize: configuration.durability == .synchronized, completeProtection: complete)
        options.sharing = configuration.sharing
        options.usedAt = usedAt
        options.excludesFromBackup = configuration.location == .persistent
        return options
    }

    var limits: DiskStore.Limits {
        DiskStore.Limits(size: configuration.diskSizeLimit, minimumFreeSpace: configuration.minimumFreeDiskSpace)
    }

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
        store.hub.publish(Change(name: name, value: value, origin: identity))
    }

    /// Forgets an entry housekeeping removed: its memory record and, for observers and the
    /// other instances, its value. Runs under the key barrier, in the same step as the removal.
    func forget(_ removal: DiskStore.Removal) {
        switch removal {
        case .evicted(let key, _), .discarded(let key, _), .removed(let key):
            memory.remove(key)
            publish(key, nil)
        }
    }

    /// Reports what housekeeping removed (counters and events), after the barrier is lifted:
    /// `onEvent` is the app's code and may call the cache.
    func report(_ removals: [DiskStore.Removal]) {
        for removal in removals {
            switch removal {
            case .evicted(let key, let bytes): emit(.evicted(key: key, bytes: bytes))
            case .discarded(let key, let reason): emit(.discarded(key: key, reason: reason))
            case .removed: break
            }
        }
    }

    /// Blocks until the size sweeps scheduled so far, and a garbage collection that
    /// ``Configuration-swift.struct/garbageCollectionInterval`` started and that is still
    /// running, have finished, after writing down the recency of the values read from
    /// memory since the cache last touched the disk.
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
        recordMemoryUses()
        garbageCollection?.waitForRunningRound()
        disk?.waitForSweeps()
    }
}

/// A cache instance's identity in change notifications: made in `Cache.init` before the
/// instance subscribes, immutable, and kept by the instance, so the identifier its
/// subscription compares against is never reused while it is subscribed.
private final class Token: Sendable {}

/// State shared by every ``Cache`` instance of this process on one folder.
final class Store: Sendable {
    let disk: DiskStore?
    let keyLocks: KeyLocks
    let hub = ChangeHub()
    let fetches = Locked<[String: FetchCall]>([:])
    let revalidating = Locked<Set<String>>([])

    private init(disk: DiskStore?) {
        self.disk = disk
        keyLocks = disk?.keyLocks ?? KeyLocks()
    }

    private static let shared = Locked<[String: WeakStore]>([:])

    /// The store for `path`: shared in the process, unless memory-only or on a test file system.
    ///
    /// Keyed on the folder's identity, not its spelling (``DiskStore/resolvedPath(of:)``): one
    /// folder is one cache however its path is spelled. The first instance's spelling is the
    /// one the shared store's files are named by.
    static func forFolder(_ path: String?, fileSystem: (any FileSystem)?) -> Store {
        guard let path else { return Store(disk: nil) }
        if let fileSystem { return Store(disk: DiskStore(folder: path, fileSystem: fileSystem)) }
        let identity = DiskStore.resolvedPath(of: path)
        return shared.withLock { stores in
            if let store = stores[identity]?.store { return store }
            stores = stores.filter { $0.value.store != nil }
            let store = Store(disk: DiskStore(folder: path))
            stores[identity] = WeakStore(store: store)
            return store
        }
    }

    private struct WeakStore {
        weak var store: Store?
    }
}

/// Runs garbage collection every so often on a background queue of its own.
private final class GarbageCollectionTimer: Sendable {
    private let interval: TimeInterval
    private let timer = Locked<DispatchSourceTimer?>(nil)
    /// Serial: one round at a time, and ``waitForRunningRound()`` waits behind the current one.
    private let queue = DispatchQueue(label: "Cashier.GarbageCollection", qos: .utility)

    init(interval: TimeInterval) {
        self.interval = interval
    }

    func start(_ work: @escaping @Sendable () -> Void) {
        let source = DispatchSource.makeTimerSource(queue: queue)
        source.schedule(deadline: .now() + interval, repeating: interval, leeway: .seconds(1))
        source.setEventHandler(handler: work)
        timer.withLock { $0 = source }
        source.resume()
    }

    /// Returns once a round the timer has started is over (at once when none is running).
    func waitForRunningRound() {
        queue.sync {}
    }

    func stop() {
        timer.withLock { timer in
            timer?.cancel()
            timer = nil
        }
    }
}
