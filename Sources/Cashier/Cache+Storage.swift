import Foundation

extension Cache {
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
        /// Temporary file then rename (a small entry: one SQLite transaction): after a process
        /// crash the old or the new entry is there, never a mix. After a power loss an entry
        /// may be lost or cut short; the checksum makes that a miss, never a wrong value.
        case standard
        /// Also syncs the file before the rename and the folder after it (a small entry: its
        /// transaction, `synchronous = FULL`), so a returned `set` survives a power loss.
        /// Several times slower.
        case synchronized
    }

    /// How this cache writes, recording the write as the entry's last use at `usedAt`
    /// (the moment its metadata says: one clock reading for both).
    func writeOptions(usedAt: Double) -> DiskTier.WriteOptions {
        let complete = configuration.fileProtection == .complete
        var options = DiskTier.WriteOptions(
            filePermissions: configuration.sharing.filePermissions,
            folderPermissions: configuration.sharing.folderPermissions,
            synchronize: configuration.durability == .synchronized, completeProtection: complete)
        options.sharing = configuration.sharing
        options.usedAt = usedAt
        options.excludesFromBackup = configuration.location == .persistent
        options.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        return options
    }

    /// ``Configuration-swift.struct/busyTimeout`` in milliseconds: NaN and negative values are 0,
    /// and a day at most.
    var busyTimeoutMilliseconds: Int32 { Self.milliseconds(configuration.busyTimeout) }

    /// A wait in seconds as milliseconds: NaN and negative values are 0, and a day at most.
    static func milliseconds(_ wait: TimeInterval) -> Int32 {
        wait.isNaN ? 0 : Int32(min(max(wait, 0), 86_400) * 1000)
    }

    var limits: DiskTier.Limits {
        var limits = DiskTier.Limits(
            size: configuration.diskSizeLimit, minimumFreeSpace: configuration.minimumFreeDiskSpace)
        limits.evictionOrder = configuration.evictionPolicy == .leastRecentlyUsed ? .leastRecentlyUsed : .frequencyAware
        return limits
    }
}
