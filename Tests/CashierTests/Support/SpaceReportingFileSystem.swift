import Foundation

@testable import Cashier

/// The real file system, except that free space is a simulated volume:
/// `capacity` minus the bytes in the watched folder.
struct SpaceReportingFileSystem: FileSystem {
    let base = POSIXFileSystem()
    let capacity: Int
    let folder: String

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
    func contentsOfDirectory(_ path: String) throws(SystemError) -> [String] { try base.contentsOfDirectory(path) }
    func info(_ name: String, in directory: String) -> FileInfo? { base.info(name, in: directory) }
    func lockExclusively(_ path: String) throws(SystemError) -> Int32 { try base.lockExclusively(path) }
    func unlock(_ token: Int32) { base.unlock(token) }
    func setAccessTime(_ path: String, to seconds: Double) throws(SystemError) {
        try base.setAccessTime(path, to: seconds)
    }

    func availableCapacity(_ path: String) -> Int? {
        let used = ((try? base.contentsOfDirectory(folder)) ?? []).reduce(0) {
            $0 + (base.info($1, in: folder)?.size ?? 0)
        }
        return capacity - used
    }
}
