import CashierPlatform
import Foundation

@testable import Cashier

/// The real file system, except for the failures a test switches on, and a log of the calls made.
final class FaultyFileSystem: ForwardingFileSystem {
    enum Operation: String, Sendable, CaseIterable {
        case createDirectory, writeNewFile, rename, synchronizeDirectory, removeFile, readFile, lock, setAccessTime
    }

    /// What an operation does instead of its work.
    enum Fault: Sendable, Hashable {
        /// Fails with this `errno`, doing nothing.
        case fail(Int32)
        /// `writeNewFile` only: writes the header and half the payload, then fails with this `errno`.
        case failMidWrite(Int32)
        /// `rename` only: the cache folder is removed, then the rename runs (and fails).
        case removeFolderFirst
    }

    struct Call: Sendable, Hashable {
        var operation: Operation
        var path: String
        /// For `writeNewFile`: whether the file was to be synced before closing.
        var synchronize = false
    }

    let base = POSIXFileSystem()
    private let state = Locked<(faults: [Operation: Fault], calls: [Call])>(([:], []))

    /// Makes every later `operation` fail as `fault` says; `nil` restores it.
    func set(_ fault: Fault?, for operation: Operation) { state.withLock { $0.faults[operation] = fault } }
    /// Makes every operation that changes the folder fail with `code`, as on a read-only volume.
    func makeReadOnly(_ code: Int32 = EROFS) {
        for operation in [Operation.createDirectory, .writeNewFile, .rename, .removeFile, .synchronizeDirectory, .lock]
        {
            set(.fail(code), for: operation)
        }
    }
    var calls: [Call] { state.withLock { $0.calls } }
    func clearCalls() { state.withLock { $0.calls.removeAll() } }

    private func begin(_ operation: Operation, _ path: String, synchronize: Bool = false) -> Fault? {
        state.withLock {
            $0.calls.append(Call(operation: operation, path: path, synchronize: synchronize))
            return $0.faults[operation]
        }
    }

    func createDirectory(_ path: String, permissions: mode_t) throws(SystemError) {
        if case .fail(let code) = begin(.createDirectory, path) {
            throw SystemError(code: code, operation: "mkdir", path: path)
        }
        try base.createDirectory(path, permissions: permissions)
    }

    func writeNewFile(
        _ path: String, permissions: mode_t, completeProtection: Bool, header: UnsafeRawBufferPointer,
        payload: UnsafeRawBufferPointer, synchronize: Bool
    ) throws(SystemError) {
        switch begin(.writeNewFile, path, synchronize: synchronize) {
        case .fail(let code)?:
            throw SystemError(code: code, operation: "open", path: path)
        case .failMidWrite(let code)?:
            let half = UnsafeRawBufferPointer(rebasing: payload[0..<payload.count / 2])
            try base.writeNewFile(
                path, permissions: permissions, completeProtection: completeProtection, header: header, payload: half,
                synchronize: false)
            throw SystemError(code: code, operation: "write", path: path)
        default:
            try base.writeNewFile(
                path, permissions: permissions, completeProtection: completeProtection, header: header,
                payload: payload, synchronize: synchronize)
        }
    }

    func rename(_ source: String, to destination: String) throws(SystemError) {
        switch begin(.rename, destination) {
        case .fail(let code)?: throw SystemError(code: code, operation: "rename", path: destination)
        case .removeFolderFirst?:
            try? FileManager.default.removeItem(atPath: (destination as NSString).deletingLastPathComponent)
        default: break
        }
        try base.rename(source, to: destination)
    }

    func synchronizeDirectory(_ path: String) throws(SystemError) {
        if case .fail(let code) = begin(.synchronizeDirectory, path) {
            throw SystemError(code: code, operation: "fsync", path: path)
        }
        try base.synchronizeDirectory(path)
    }

    func removeFile(_ path: String) throws(SystemError) {
        // Removing a temporary file the cache itself made is clean-up, not a change to the
        // folder's contents: it stays possible, as unlink of one's own file would.
        if !(path as NSString).lastPathComponent.hasPrefix(DiskTier.temporaryPrefix),
            case .fail(let code) = begin(.removeFile, path)
        {
            throw SystemError(code: code, operation: "unlink", path: path)
        }
        try base.removeFile(path)
    }

    /// Entry reads and header reads alike open here (the `readFile` operation).
    func openForReading(_ path: String) throws(SystemError) -> OpenFile {
        if case .fail(let code) = begin(.readFile, path) {
            throw SystemError(code: code, operation: "open", path: path)
        }
        return try base.openForReading(path)
    }
    func lockExclusively(_ path: String) throws(SystemError) -> Int32 {
        // Opening the lock file creates it: on a read-only folder that fails too.
        if case .fail(let code) = begin(.lock, path) { throw SystemError(code: code, operation: "open", path: path) }
        return try base.lockExclusively(path)
    }
    func setAccessTime(_ path: String, to seconds: Double) throws(SystemError) {
        if case .fail(let code) = begin(.setAccessTime, path) {
            throw SystemError(code: code, operation: "utimensat", path: path)
        }
        try base.setAccessTime(path, to: seconds)
    }
}
