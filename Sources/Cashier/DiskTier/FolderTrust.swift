import CashierPlatform

/// What `lstat` (and, for a symbolic link, `stat`) says of a cache folder: enough to decide
/// whether anyone but its user could plant entries in it, as OpenSSH's StrictModes decides for `~/.ssh`.
///
/// Only the folder itself is judged, not its parents: a user's `~/.cache` is often group-writable
/// under a umask of 002 (a group of one), and judging it would refuse every cache there. What
/// remains (a parent others can write, through which they could swap the folder between two calls)
/// is narrowed by the checks below running again at each write and collection, and by reads
/// missing any entry file another user owns (``Cache/Sharing/owner``).
package struct FolderStatus: Sendable, Hashable {
    package var owner: uid_t
    package var group: gid_t
    /// Permission bits, setgid and sticky included.
    package var mode: mode_t
    package var isDirectory: Bool
    /// The folder's identity, to tell a folder replaced since it was judged.
    package var device: UInt64
    package var inode: UInt64
    /// The owner of the symbolic link the folder's path is, when it is one (the status is the target's).
    package var linkOwner: uid_t?

    /// The status of `path`, `nil` when nothing is there.
    package init?(path: String) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        if st.st_mode & S_IFMT == S_IFLNK {
            linkOwner = st.st_uid
            // A dangling link: judged as a link, and not a folder.
            if stat(path, &st) != 0 { st.st_mode = S_IFLNK }
        }
        owner = st.st_uid
        group = st.st_gid
        mode = st.st_mode & 0o7777
        isDirectory = st.st_mode & S_IFMT == S_IFDIR
        device = UInt64(truncatingIfNeeded: st.st_dev)
        inode = UInt64(truncatingIfNeeded: st.st_ino)
    }

    /// Whether files and folders owned by `owner` can be trusted by `user`: its own, or root's
    /// (root can replace any file anyway).
    package static func isTrusted(owner: uid_t, user: uid_t) -> Bool {
        owner == user || owner == 0
    }

    /// Why `user` must not use this folder with `sharing`, in words; `nil` when it may.
    package func refusal(for sharing: Cache.Sharing, user: uid_t) -> String? {
        let shared = sharing == .group
        if let linkOwner, !Self.isTrusted(owner: linkOwner, user: user) {
            return
                "the folder is a symbolic link owned by uid \(linkOwner), not by this process's uid \(user) or root; "
                + "whoever owns the link can point it elsewhere"
        }
        // Not a folder: creating or opening it fails and says so.
        guard isDirectory else { return nil }
        if !Self.isTrusted(owner: owner, user: user), !(shared && Self.isMember(of: group)) {
            return
                "the folder is owned by uid \(owner)\(shared ? " and group \(group), not a group of this process" : ""), "
                + "not by this process's uid \(user) or root; its owner could plant entries"
                + (shared
                    ? "" : " (Configuration.sharing = .group accepts a folder owned by a group this process is in)")
        }
        if mode & S_IWOTH != 0 {
            return
                "others can write the folder (mode \(Self.octal(mode))) and could plant entries; remove their write permission"
        }
        if !shared, mode & S_IWGRP != 0 {
            return "the folder's group can write it (mode \(Self.octal(mode))) and could plant entries; "
                + "remove the group's write permission, or choose Configuration.sharing = .group"
        }
        return nil
    }

    /// Whether this process is in group `group`.
    private static func isMember(of group: gid_t) -> Bool {
        if group == getegid() { return true }
        let count = getgroups(0, nil)
        guard count > 0 else { return false }
        var groups = [gid_t](repeating: 0, count: Int(count))
        let filled = getgroups(count, &groups)
        return filled > 0 && groups.prefix(Int(filled)).contains(group)
    }

    private static func octal(_ mode: mode_t) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

/// The last status seen of a store's folder and the user it was judged for.
struct FolderCheck: Sendable {
    /// `nil`: not judged since the folder last went missing or a cache was made on it; the
    /// next question stats it.
    var status: FolderStatus?
    var user: uid_t = 0
    /// The verdict on `status` for each sharing asked about since it was seen (`.some(nil)`:
    /// sound), so a read repeats no judgement (and no `getgroups`).
    var verdicts: [Cache.Sharing: String?] = [:]
    /// When a row write last judged the folder and the store file anew (the coarse monotonic
    /// clock); `nil`: the next write does (see ``DiskTier/judgesAnew(rowWrite:)``).
    var judgedAt: UInt64?
}

extension DiskTier {
    /// Why the folder must not be used with `sharing`, as the error writes throw; `nil` when it
    /// may be, or when it does not exist (a write then creates it, and judges it again).
    ///
    /// Judges the status last seen, unless `fresh` or none was seen yet: then one `lstat`.
    /// Reads ask without `fresh` (no system call once the folder is known); writes and
    /// collections ask with it, so a folder whose mode or owner changed, or that was replaced,
    /// is judged anew before anything is written to it or removed from it.
    package func refusal(for sharing: Cache.Sharing, fresh: Bool = false) -> SystemError? {
        if !fresh, case .some(let verdict) = folderCheck.withLock({ $0.status == nil ? nil : $0.verdicts[sharing] }) {
            return verdict.map { SystemError(untrustedFolder: folder, reason: $0) }
        }
        let known = fresh ? nil : folderCheck.withLock { check in check.status.map { ($0, check.user) } }
        let status: FolderStatus
        let user: uid_t
        if let known {
            (status, user) = known
        } else {
            guard let seen = fileSystem.folderStatus(folder) else {
                folderCheck.withLock { $0 = FolderCheck() }
                return nil
            }
            (status, user) = (seen, geteuid())
        }
        let verdict = status.refusal(for: sharing, user: user)
        folderCheck.withLock { check in
            // A folder seen changed (mode, owner, or another folder in its place) is judged anew for every sharing.
            if check.status != status || check.user != user { check = FolderCheck(status: status, user: user) }
            check.verdicts[sharing] = verdict
        }
        return verdict.map { SystemError(untrustedFolder: folder, reason: $0) }
    }

    /// Why the entry file `fileName`, whose `stat` is `info`, must not be used with `sharing`;
    /// `nil` when it may. With ``Cache/Sharing/owner`` a file another user owns was planted,
    /// even in a folder judged sound (it may have been replaced since). Every reader of an
    /// entry's payload asks this: typed reads, the facade's checks, header rewrites.
    ///
    /// No system call: the read's `fstat` said who owns the file, and the folder's judgement
    /// which user this process is (`geteuid` only when the folder was not judged since).
    package func untrustedEntry(_ fileName: String, info: FileInfo, sharing: Cache.Sharing) -> SystemError? {
        guard sharing == .owner else { return nil }
        let user = folderCheck.withLock { $0.status == nil ? nil : $0.user } ?? geteuid()
        guard !FolderStatus.isTrusted(owner: info.owner, user: user) else { return nil }
        return SystemError(
            untrustedFolder: path(fileName),
            reason:
                "the entry file is owned by uid \(info.owner), not by this process's uid \(user) or root; it was not written by this user"
        )
    }

    /// Whether a write judges the folder (``refusal(for:fresh:)``) and the store file
    /// (``checkStoreFile()``) anew, an `lstat` each: always before a file is created in the
    /// folder; before a row, which goes through the store's open file, at most once every
    /// ``recheckInterval`` (10 ms). Those two `lstat`s were 3 µs of a 24 µs overwrite
    /// (`cashier-ratios --only sqlite-overwrite`: 1.27x with them at every write, 1.14x without).
    /// A folder or store replaced under a running cache is seen by the first write after that.
    func judgesAnew(rowWrite: Bool) -> Bool {
        guard rowWrite, recheckInterval > 0 else { return true }
        let now = Platform.coarseMonotonicNanoseconds()
        return folderCheck.withLock { check in
            if let judgedAt = check.judgedAt, now &- judgedAt < recheckInterval { return false }
            check.judgedAt = now
            return true
        }
    }

    /// Forgets the folder's status: the next ``refusal(for:fresh:)`` stats it again (no I/O here).
    package func forgetFolderStatus() {
        folderCheck.withLock { $0 = FolderCheck() }
        // And whether the store file is still the one open: a new instance's first read checks.
        storeState.withLock { $0.lastReplacementCheck = 0 }
    }
}

extension FileSystem {
    /// The cache folder's owner, mode and identity (`lstat`, and `stat` through a link);
    /// `nil` when nothing is at `path`. Test doubles over the real file system inherit this.
    package func folderStatus(_ path: String) -> FolderStatus? {
        FolderStatus(path: path)
    }
}
