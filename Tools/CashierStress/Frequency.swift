import Cashier
import CashierPlatform
import Foundation

/// `CashierStress frequency DIR START READS ONE-TIME`: one launch of an app whose disk tier
/// learns what is read often (the parent, another process, then evicts from the same folder).
///
/// With the cache's clock at START (seconds since 1970) and no memory tier, writes `hot`
/// (a `Data` of 16 KiB) and reads it READS times, the clock moving two minutes before each
/// read (so each read is a use the index records: more than a granularity apart); then
/// writes ONE-TIME keys `once-0`, `once-1`, ... once each, a second apart, never reading them.
/// Waits for the cache's background work and prints "hot N" (N reads that found it), then
/// exits. No size limit: nothing is evicted here.
func runFrequency(_ arguments: [String]) {
    guard arguments.count == 5, let start = Double(arguments[2]), let reads = Int(arguments[3]),
        let oneTime = Int(arguments[4])
    else { fail("frequency takes DIR START READS ONE-TIME", status: 2) }
    let now = Locked(start)
    var settings = configuration(arguments[1])
    settings.memoryCountLimit = 0
    settings.now = { Date(timeIntervalSince1970: now.withLock { $0 }) }
    let cache = Cache(settings)
    let value = Data(repeating: 7, count: 16 * 1024)
    let hot = CacheKey<Data>("hot")
    var found = 0
    do {
        try cache.set(value, for: hot)
        for _ in 0..<reads {
            now.withLock { $0 += 120 }
            if cache.value(for: hot) == value { found += 1 }
        }
        for index in 0..<oneTime {
            now.withLock { $0 += 1 }
            try cache.set(value, for: CacheKey<Data>("once-\(index)"))
        }
    } catch {
        fail("write failed: \(error)", status: 1)
    }
    cache.waitForBackgroundWork()
    say("hot \(found)")
}
