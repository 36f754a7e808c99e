import CashierPlatform

extension Cache {
    /// Who besides the cache's own user may read its entries and write its folder.
    ///
    /// Anyone who can write a cache's folder can plant entries that pass every check
    /// (checksums are not signatures), and anyone who can read its files reads every value
    /// and every key. So a cache is private by default, as OpenSSH keeps `~/.ssh`:
    ///
    /// | | ``owner`` (default) | ``group`` |
    /// |---|---|---|
    /// | new entry files | 0600 | 0660 |
    /// | new folders | 0700 | 2770 (setgid: entries take the folder's group) |
    /// | a folder another user owns | refused | accepted if its group is one of this process's |
    /// | a folder its group can write | refused | accepted |
    /// | a folder others can write | refused | refused |
    /// | an entry file another user owns | a miss | accepted |
    ///
    /// Modes are exact whatever the umask. A refused folder makes writes throw a
    /// ``CacheError`` of kind ``CacheError/Kind/untrustedFolder``; reads miss and report the
    /// same error as ``CacheEvent/failure(key:error:)``. Root counts as a trusted owner: it can
    /// replace any file anyway. There is no "everyone" choice: a folder others can write is
    /// a folder anyone can poison.
    public enum Sharing: Sendable, Hashable {
        /// Only this user (and root): 0600 entries, 0700 folders.
        case owner
        /// This user and the members of the folder's group: 0660 entries, 2770 folders.
        /// Point ``Location/directory(_:)`` at a folder owned by the shared group.
        case group

        /// Mode of new entry files.
        var filePermissions: mode_t { self == .owner ? 0o600 : 0o660 }
        /// Mode of new folders.
        var folderPermissions: mode_t { self == .owner ? 0o700 : 0o2770 }
    }
}

extension Cache {
    /// Whether the folder is refused for this cache's ``Configuration-swift.struct/sharing``;
    /// a refusal is reported as a ``CacheEvent/failure(key:error:)`` about `key`.
    ///
    /// Without `fresh`, judges the folder's status last seen (no system call once known):
    /// what reads ask. Housekeeping asks with `fresh`.
    func isFolderRefused(key: String?, fresh: Bool = false) -> Bool {
        guard let disk, let refusal = disk.refusal(for: configuration.sharing, fresh: fresh) else { return false }
        emit(.failure(key: key, error: refusal.cacheError(key: key)))
        return true
    }
}
