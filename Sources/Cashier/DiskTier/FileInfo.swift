import CashierPlatform

/// What `stat` says of a file, as Cashier uses it.
package struct FileInfo: Sendable, Hashable {
    /// Length in bytes (`st_size`): what ``Cache/totalSize`` adds up.
    package var size: Int
    /// Seconds since 1970 of the last access (`st_atime`): the entry's last use, as Cashier sets it.
    package var accessedAt: Double
    /// Seconds since 1970 of the last modification (`st_mtime`), by the real clock.
    package var modifiedAt: Double
    package var isRegularFile: Bool
    package var isDirectory: Bool
    /// The file's owner (`st_uid`): a cache that shares with no one reads only its user's files.
    /// No default: a `FileInfo` built without it would pass as root's, trusted.
    package var owner: uid_t
    /// For an entry of the store never used since it was written (its row's `frequency` is 0), the
    /// row's `last_use`, its write's second: its first use is recorded whatever the granularity,
    /// on that row only (not one another process wrote since), as the eviction order tells an
    /// entry used again from one written and never read (S3-FIFO's small queue). Nil otherwise,
    /// and for a file.
    package var unusedSinceWrite: Int64?
}

extension FileInfo {
    /// What Cashier uses of a `stat`: sizes clamp instead of trapping where `Int` is 32 bits.
    package init(_ st: stat) {
        let (access, modification) = Platform.times(st)
        self.init(
            // off_t is 64 bits everywhere; a larger file than `Int` holds (watchOS) is never an entry.
            size: Int(clamping: st.st_size), accessedAt: access, modifiedAt: modification,
            isRegularFile: st.st_mode & S_IFMT == S_IFREG, isDirectory: st.st_mode & S_IFMT == S_IFDIR, owner: st.st_uid
        )
    }
}
