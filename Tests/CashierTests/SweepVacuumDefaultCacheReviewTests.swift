import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile review of ec0561a and 2808c42 through a cache of the default configuration (the
/// memory tier on), its folder below a symbolic link (TemporaryFolder), under a size limit: a
/// relaunch with a limit far under what the folder holds sweeps thousands of rows at once, by
/// the walk's ids, its pages given back in its transaction.
@Suite struct SweepVacuumDefaultCacheReviewTests {
    let folder = TemporaryFolder()
    let clock = TestClock()

    static func value(_ index: Int) -> Data { Data((0..<900).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }) }

    func cache(limit: Int?, events: EventLog? = nil) -> Cache {
        var configuration = makeConfiguration(folder, clock: clock, events: events)
        configuration.diskSizeLimit = limit
        return Cache(configuration)
    }

    /// 3,000 values written without a limit, read into the memory tier of a relaunch with a
    /// limit of a third: every eviction is reported once, an evicted key reads nothing (its
    /// memory record went with its row), every other key reads its value, the store file is
    /// within the limit (its pages given back), and a third launch finds exactly the keys not evicted.
    @Test func aLargeSweepAtARelaunchKeepsMemoryAndDiskAgreeing() throws {
        var first: Cache? = cache(limit: nil)
        for index in 0..<3_000 {
            clock.advance(by: 1)
            try first!.set(Self.value(index), for: CacheKey<Data>("k\(index)"))
        }
        first!.waitForBackgroundWork()
        first = nil

        let events = EventLog()
        let limit = 1_200_000
        var second: Cache? = cache(limit: limit, events: events)
        clock.advance(by: 60)
        // Read into memory the newest ones (which stay) and some of the oldest (which go).
        for index in Array(0..<100) + Array(2_900..<3_000) { _ = second!.value(for: CacheKey<Data>("k\(index)")) }
        second!.collectGarbage()
        second!.waitForBackgroundWork()
        let evicted = events.all.compactMap { event -> String? in
            if case .evicted(let key, _) = event { key } else { nil }
        }
        let failures = events.all.filter { if case .failure = $0 { true } else { false } }
        #expect(evicted.count > 256, "the sweep evicted \(evicted.count)")
        #expect(Set(evicted).count == evicted.count, "an eviction reported twice")
        #expect(failures.isEmpty, "\(failures)")
        let gone = Set(evicted)
        let wrong = (0..<3_000).filter { index in
            let read = second!.value(for: CacheKey<Data>("k\(index)"))
            return read != (gone.contains("k\(index)") ? nil : Self.value(index))
        }
        #expect(wrong.isEmpty, "\(wrong.count) keys read otherwise than the evictions say, e.g. \(wrong.prefix(5))")
        // The limit is on what the folder occupies (rows are stored smaller than their entries' sizes).
        let store =
            (try? FileManager.default.attributesOfItem(atPath: folder.path + "/" + DiskTier.storeFileName))?[
                .size] as? Int ?? .max
        #expect(store <= limit, "the store file takes \(store) bytes, over a limit of \(limit)")
        second = nil

        let third = cache(limit: nil)
        #expect(Set(third.keys) == Set((0..<3_000).map { "k\($0)" }).subtracting(gone))
    }
}
