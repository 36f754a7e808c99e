import CashierTestSupport
import Foundation

@testable import Cashier

/// A suite of tests on a cache whose folder another process removes and makes again: the
/// folder, the other cache's folder it is made from, a clock and the events, and what the tests
/// of removals through the replaced store share.
protocol ReplacedFolderSuite {
    var folder: TemporaryFolder { get }
    var other: TemporaryFolder { get }
    var clock: TestClock { get }
    var events: EventLog { get }
}

extension ReplacedFolderSuite {
    static var small: Data { Data(repeating: 0x5A, count: 200) }
    /// Over 8 KiB with its header: a file.
    static var large: Data { Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }) }

    /// A cache that checks its store file no more than once an hour, with no memory tier (its
    /// coherence check would notice the store gone): a removal meets the replaced store.
    func cache() -> Cache {
        var configuration = makeConfiguration(folder, clock: clock, events: events)
        configuration.folderRecheckNanoseconds = 3_600_000_000_000
        configuration.memoryCountLimit = 0
        return Cache(configuration)
    }

    /// A fresh instance on the folder, as another process (or a relaunch) would read it.
    func relaunched() -> Cache { Cache(makeConfiguration(folder, clock: clock)) }

    /// Removes the cache's folder and makes it again with `keys` written by another cache (as
    /// another process would), each `value`.
    func replaceTheFolder(writing keys: [CacheKey<Data>], value: Data) throws {
        do {
            let writer = Cache(makeConfiguration(other, clock: clock))
            for key in keys { try writer.set(value, for: key) }
            writer.waitForBackgroundWork()
        }
        try FileManager.default.removeItem(at: folder.url)
        try FileManager.default.copyItem(at: other.url, to: folder.url)
    }
}
