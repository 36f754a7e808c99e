import CashierPlatform
import Foundation

@testable import Cashier

/// The real file system, recording every call and whether the barrier of every key
/// (``KeyLocks/withEveryKeyLocked(_:)``) was held while it ran.
final class BarrierWatchingFileSystem: ForwardingFileSystem {
    struct Call: Sendable, Hashable, CustomStringConvertible {
        var operation: String
        var underBarrier: Bool
        var description: String { operation + (underBarrier ? " (under the barrier)" : "") }
    }

    let base = POSIXFileSystem()
    private let state = Locked<(keyLocks: KeyLocks?, calls: [Call])>((nil, []))

    /// Starts telling calls made under `keyLocks`'s barrier apart (a cache's `folderState.keyLocks`).
    func watch(_ keyLocks: KeyLocks) { state.withLock { $0.keyLocks = keyLocks } }
    var calls: [Call] { state.withLock { $0.calls } }
    func clearCalls() { state.withLock { $0.calls.removeAll() } }

    private func note(_ operation: String = #function) {
        state.withLock { state in
            let name = String(operation.prefix { $0 != "(" })
            state.calls.append(Call(operation: name, underBarrier: state.keyLocks?.isBarrierHeld ?? false))
        }
    }

    func createDirectory(_ path: String, permissions: mode_t) throws(SystemError) {
        note()
        try base.createDirectory(path, permissions: permissions)
    }
    func writeNewFile(
        _ path: String, permissions: mode_t, completeProtection: Bool, header: UnsafeRawBufferPointer,
        payload: UnsafeRawBufferPointer, synchronize: Bool
    ) throws(SystemError) {
        note()
        try base.writeNewFile(
            path, permissions: permissions, completeProtection: completeProtection, header: header, payload: payload,
            synchronize: synchronize)
    }
    func rename(_ source: String, to destination: String) throws(SystemError) {
        note()
        try base.rename(source, to: destination)
    }
    func synchronizeDirectory(_ path: String) throws(SystemError) {
        note()
        try base.synchronizeDirectory(path)
    }
    func removeFile(_ path: String) throws(SystemError) {
        note()
        try base.removeFile(path)
    }
    func openForReading(_ path: String) throws(SystemError) -> OpenFile {
        note()
        return try base.openForReading(path)
    }
    func contentsOfDirectory(_ path: String) throws(SystemError) -> [String] {
        note()
        return try base.contentsOfDirectory(path)
    }
    func info(_ name: String, in directory: String) -> FileInfo? {
        note()
        return base.info(name, in: directory)
    }
    func scan(_ directory: String, statting wanted: (String) -> Bool) throws(SystemError) -> [(
        name: String, info: FileInfo?
    )] {
        note()
        return try base.scan(directory, statting: wanted)
    }
    func availableCapacity(_ path: String) -> Int? {
        note()
        return base.availableCapacity(path)
    }
    func lockExclusively(_ path: String) throws(SystemError) -> Int32 {
        note()
        return try base.lockExclusively(path)
    }
    func tryLockExclusively(_ path: String) throws(SystemError) -> Int32? {
        note()
        return try base.tryLockExclusively(path)
    }
    func setAccessTime(_ path: String, to seconds: Double) throws(SystemError) {
        note()
        try base.setAccessTime(path, to: seconds)
    }
}
