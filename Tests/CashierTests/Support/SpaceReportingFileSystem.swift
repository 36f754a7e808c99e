import Foundation

@testable import Cashier

/// The real file system, except that free space is a simulated volume:
/// `capacity` minus the bytes in the watched folder.
struct SpaceReportingFileSystem: ForwardingFileSystem {
    let base = POSIXFileSystem()
    let capacity: Int
    let folder: String

    func availableCapacity(_ path: String) -> Int? {
        let used = ((try? base.contentsOfDirectory(folder)) ?? []).reduce(0) {
            $0 + (base.info($1, in: folder)?.size ?? 0)
        }
        return capacity - used
    }
}
