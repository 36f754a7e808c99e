import Foundation

@testable import Cashier

/// A test double that wraps a real file system: every call it does not declare itself goes to `base`.
///
/// A double keeps only the methods it changes (to record a call or inject a fault).
/// ``FileSystem/scan(_:statting:)`` and ``FileSystem/tryLockExclusively(_:)`` are left to
/// `FileSystem`'s own defaults, which call `contentsOfDirectory`/`info` and `lockExclusively`
/// on the double itself: a fault or record on those reaches them too, as the doubles rely on.
protocol ForwardingFileSystem: FileSystem {
    associatedtype Base: FileSystem
    var base: Base { get }
}

extension ForwardingFileSystem {
    func createDirectory(_ path: String, permissions: mode_t) throws(SystemError) {
        try base.createDirectory(path, permissions: permissions)
    }
    func writeNewFile(
        _ path: String, permissions: mode_t, completeProtection: Bool, header: UnsafeRawBufferPointer,
        payload: UnsafeRawBufferPointer, synchronize: Bool
    ) throws(SystemError) {
        try base.writeNewFile(
            path, permissions: permissions, completeProtection: completeProtection, header: header, payload: payload,
            synchronize: synchronize)
    }
    func rename(_ source: String, to destination: String) throws(SystemError) {
        try base.rename(source, to: destination)
    }
    func synchronizeDirectory(_ path: String) throws(SystemError) { try base.synchronizeDirectory(path) }
    func removeFile(_ path: String) throws(SystemError) { try base.removeFile(path) }
    func openForReading(_ path: String) throws(SystemError) -> OpenFile { try base.openForReading(path) }
    func readFile(_ file: OpenFile, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(SystemError)
        -> Int
    {
        try base.readFile(file, into: buffer, at: offset)
    }
    func closeFile(_ file: OpenFile) { base.closeFile(file) }
    func contentsOfDirectory(_ path: String) throws(SystemError) -> [String] { try base.contentsOfDirectory(path) }
    func info(_ name: String, in directory: String) -> FileInfo? { base.info(name, in: directory) }
    func availableCapacity(_ path: String) -> Int? { base.availableCapacity(path) }
    func lockExclusively(_ path: String) throws(SystemError) -> Int32 { try base.lockExclusively(path) }
    func unlock(_ token: Int32) { base.unlock(token) }
    func setAccessTime(_ path: String, to seconds: Double) throws(SystemError) {
        try base.setAccessTime(path, to: seconds)
    }
}
