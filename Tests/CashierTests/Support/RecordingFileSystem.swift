import CashierPlatform
import Foundation

@testable import Cashier

/// A change to the folder as a power loss sees it: one directory operation, or a file's
/// data. Paths are relative to the recorder's root folder ("" is the root itself).
enum TraceOperation: Sendable, Hashable {
    /// `mkdir`: a new directory entry in the parent folder.
    case makeDirectory(String)
    /// `open(O_CREAT | O_EXCL)` then `write`: a new directory entry and a new file (its own
    /// inode) holding `bytes`; `synchronized` when the data was synced before `close`
    /// (`fdatasync`, `F_FULLFSYNC`). An empty file created by `open(O_CREAT)` (the lock file) too.
    case createFile(String, bytes: [UInt8], synchronized: Bool)
    /// `rename(2)` to a name that did not exist: one atomic directory operation.
    case rename(String, to: String)
    /// `renameat2(RENAME_EXCHANGE)`: the two names swap files, atomically.
    case exchange(String, String)
    /// `unlink`.
    case unlink(String)
    /// `fsync` of a folder: the barrier for the directory entries in it.
    case synchronizeDirectory(String)
    /// `flock(LOCK_EX)` and `flock(LOCK_UN)`: nothing on disk, recorded so traces read whole.
    case lock(String)
    case unlock

    /// The folder whose entries the operation changes, `nil` when it changes none.
    var directory: String? {
        switch self {
        case .makeDirectory(let path), .createFile(let path, _, _), .rename(let path, _), .exchange(let path, _),
            .unlink(let path):
            return TraceOperation.parent(of: path)
        case .synchronizeDirectory, .lock, .unlock:
            return nil
        }
    }

    /// The names the operation binds or unbinds.
    var names: [String] {
        switch self {
        case .makeDirectory(let path), .createFile(let path, _, _), .unlink(let path): [path]
        case .rename(let source, let destination), .exchange(let source, let destination): [source, destination]
        case .synchronizeDirectory, .lock, .unlock: []
        }
    }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }
}

/// What a recording holds: the folder's operations, and where the workload's calls began and returned.
enum TraceEvent: Sendable, Hashable {
    case operation(TraceOperation)
    /// The workload's call number `call` starts (or returns): marks between operations.
    case began(call: Int)
    case returned(call: Int)
    /// Everything before this persists (a clean shutdown, or `sync` and a reboot).
    case checkpoint
}

/// The real file system in a scratch folder, recording every call that changes it.
///
/// Writes run for real (so the cache under test behaves as on disk) and are logged with
/// what a replay needs: the bytes, whether they were synced, the names. On Linux,
/// ``POSIXFileSystem/rename(_:to:)`` over an existing file is an exchange of the two
/// names and an unlink of the old file; it is recorded as those two operations. Reads
/// are forwarded unrecorded.
final class RecordingFileSystem: ForwardingFileSystem {
    let root: String
    /// A broken write path to record instead of the real one, so tests can prove the explorer notices.
    enum Mutation: Sendable {
        /// Every folder sync is skipped.
        case dropsFolderSyncs
        /// Every file is closed without its sync.
        case dropsFileSyncs
    }
    let mutation: Mutation?
    let base = POSIXFileSystem()
    private let log = Locked<[TraceEvent]>([])

    /// Records operations under `root` (an absolute path with no trailing slash).
    init(root: String, mutation: Mutation? = nil) {
        self.root = root
        self.mutation = mutation
    }

    var events: [TraceEvent] { log.withLock { $0 } }
    func mark(_ event: TraceEvent) { log.withLock { $0.append(event) } }

    private func record(_ operation: TraceOperation) { mark(.operation(operation)) }

    private func relative(_ path: String) -> String {
        precondition(path == root || path.hasPrefix(root + "/"), "\(path) is outside the recorded folder \(root)")
        return String(path.dropFirst(min(path.count, root.count + 1)))
    }

    private func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    // MARK: Changes, recorded

    func createDirectory(_ path: String, permissions: mode_t) throws(SystemError) {
        var missing: [String] = []
        var current = path
        while current != root, current.count > root.count, !exists(current) {
            missing.insert(current, at: 0)
            current = (current as NSString).deletingLastPathComponent
        }
        try base.createDirectory(path, permissions: permissions)
        for directory in missing { record(.makeDirectory(relative(directory))) }
    }

    func writeNewFile(
        _ path: String, permissions: mode_t, completeProtection: Bool, header: UnsafeRawBufferPointer,
        payload: UnsafeRawBufferPointer, synchronize: Bool
    ) throws(SystemError) {
        let synchronize = synchronize && mutation != .dropsFileSyncs
        try base.writeNewFile(
            path, permissions: permissions, completeProtection: completeProtection, header: header, payload: payload,
            synchronize: synchronize)
        record(.createFile(relative(path), bytes: Array(header) + Array(payload), synchronized: synchronize))
    }

    func rename(_ source: String, to destination: String) throws(SystemError) {
        let replaces = exists(destination)
        try base.rename(source, to: destination)
        #if os(Linux)
        if replaces {
            record(.exchange(relative(source), relative(destination)))
            record(.unlink(relative(source)))
            return
        }
        #endif
        // A rename over an existing file unbinds the old one: the same as one atomic rename.
        record(.rename(relative(source), to: relative(destination)))
    }

    func synchronizeDirectory(_ path: String) throws(SystemError) {
        if mutation == .dropsFolderSyncs { return }
        try base.synchronizeDirectory(path)
        record(.synchronizeDirectory(relative(path)))
    }

    func removeFile(_ path: String) throws(SystemError) {
        let existed = exists(path)
        try base.removeFile(path)
        if existed { record(.unlink(relative(path))) }
    }

    func lockExclusively(_ path: String) throws(SystemError) -> Int32 {
        let existed = exists(path)
        let token = try base.lockExclusively(path)
        if !existed { record(.createFile(relative(path), bytes: [], synchronized: false)) }
        record(.lock(relative(path)))
        return token
    }

    func unlock(_ token: Int32) {
        base.unlock(token)
        record(.unlock)
    }

    // MARK: Reads, forwarded (ForwardingFileSystem)

    /// Kept: `scan` is not forwarded by default (FileSystem's own default lists, then stats by name).
    func scan(_ directory: String, statting wanted: (String) -> Bool) throws(SystemError) -> [(
        name: String, info: FileInfo?
    )] {
        try base.scan(directory, statting: wanted)
    }
    // setAccessTime is forwarded unrecorded: access times order eviction only; a power loss
    // may keep or lose them, and no promise rests on them.
}
