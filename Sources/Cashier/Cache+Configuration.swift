import CashierStore
import Foundation

extension Cache {
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
        /// How many decoded values the memory tier keeps (``evictionPolicy`` chooses which go first); `nil` for no
        /// bound, 0 for none.
        public var memoryCountLimit: Int? = nil
        /// Which values the memory tier gives up first when it is over ``memoryCountLimit`` or
        /// ``memoryCostLimit``: by default ``EvictionPolicy/frequencyAware``, which keeps values read
        /// often over values read once (a scan); ``EvictionPolicy/leastRecentlyUsed`` for strict
        /// least-recently-used order. Locked entries go only when every value held is locked.
        /// It orders the disk tier's sweeps and garbage collection too: frequency-aware through
        /// the folder's store, or least recently used first. See <doc:StorageAndLimits>.
        public var evictionPolicy: EvictionPolicy = .frequencyAware
        /// Bytes of values the memory tier keeps, each value counted as its encoded size (the
        /// payload written or read); ``evictionPolicy`` chooses which go first, locked ones last. `nil` for no
        /// byte bound.
        ///
        /// The default is one thirty-second of the device's physical memory, at most 128 MiB:
        /// 32 MiB on a 1 GB Apple Watch, 128 MiB from 4 GB up. A decoded value usually takes more
        /// memory than its encoding, so the bound is kept well below what iOS tolerates before it
        /// ends an app for its memory use. See ``Cache/purgeMemory()``.
        public var memoryCostLimit: Int? = Configuration.defaultMemoryCostLimit
        /// Bytes the cache's folder may occupy (its store, the store's log and large entries' files)
        /// past which entries are evicted, in ``evictionPolicy``'s order, off the caller's thread;
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
        /// The longest, in seconds, that one write (or removal) waits in all for another process
        /// sharing the folder to release the folder's store, before it throws a ``CacheError``
        /// of kind ``CacheError/Kind/busy`` and leaves what was stored as it was. 5 by default.
        ///
        /// Only writes wait: a read from memory never does, and a read from disk does not wait
        /// for writers. (A process locked out of the store altogether, by another process that
        /// holds it exclusively during a call on a full volume, waits once a call, reads too, and
        /// its calls in the second after such a wait fail at once; the first cache on a folder
        /// sets the wait of the openings of its store.) An app that writes on its main thread
        /// may want less (an iOS app's main thread is watched: a few seconds blocked there is a
        /// kill); a negative or NaN value counts as 0 (fail at once when another process holds
        /// the store).
        public var busyTimeout: TimeInterval = 5
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
        /// A tier several processes, on several machines, share below the disk (``SharedTier``);
        /// `nil` (the default) for none.
        public var sharedTier: (any SharedTier)? = nil
        /// How long one call of ``sharedTier`` may take before the cache goes on without it
        /// (a read as a miss there, a write or removal left to finish in the background).
        public var sharedTierTimeout: TimeInterval = 0.25
        /// How long after a change failed to reach the shared tier it is first sent again on a
        /// timer (doubled at each failure, up to a minute; ``SharedTierWrites``): 1 s, less in
        /// tests.
        package var sharedTierRetryDelay: TimeInterval = 1
        /// Receives every ``CacheEvent``, synchronously, on the thread that caused it.
        public var onEvent: (@Sendable (CacheEvent) -> Void)? = nil
        /// The clock expiry is measured with; replace it in tests instead of sleeping.
        public var now: @Sendable () -> Date = { Date() }
        /// The file-system seam, for fault-injection tests; `nil` for the real one.
        package var fileSystem: (any FileSystem)? = nil
        /// The largest entry kept as a row of the folder's store; `nil` for the store's own
        /// threshold (``DiskTier/rowSizeLimit``), 0 to keep every entry a file (with its row in
        /// the index): what tests of the file format use. The first cache on a folder decides.
        package var rowSizeLimit: Int? = nil
        /// Whether the folder's store is used; `false` keeps the folder as SQLite's absence does
        /// (every entry a file, indexed by a folder scan): what tests of that design use.
        package var usesStore = true
        /// How often at most, in nanoseconds, a memory hit checks whether another process changed
        /// the folder's store (Cache+Coherence.swift); 0 checks at every hit, as tests do.
        package var memoryCoherenceNanoseconds: UInt64 = Cache.Configuration.memoryCoherenceInterval
        /// How often at most, in nanoseconds, a write of a row judges the folder and the store
        /// file anew (``DiskTier/judgesAnew(rowWrite:)``); 0 at every write, as tests do. The
        /// first cache on a folder decides.
        package var folderRecheckNanoseconds: UInt64 = DiskTier.defaultRecheckInterval
        /// The monotonic clock (nanoseconds) that spaces the store's openings after one found
        /// another process's lock held (`StoreOpenBackoff`): tests step it. The first cache on
        /// a folder decides.
        package var storeOpenClock: @Sendable () -> UInt64 = MonotonicDeadline.nanosecondsNow

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
}
