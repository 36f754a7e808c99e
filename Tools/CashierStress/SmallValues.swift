import Cashier
import CashierTestSupport
import Foundation

/// The subcommands whose values are all small: every entry a row of the folder's store
/// (records up to 8 KiB), none a file.
enum SmallValues {
    /// Workload records get up to this much filler, raw values four times it plus 16 bytes:
    /// 6,016 bytes, under the row limit with the header.
    static let maximumFiller = 1_500

    /// `rows-churn DIR SEED`: as `churn`, with small values only.
    static func churn(folder: String, seed: UInt64) -> Never {
        var settings = configuration(folder)
        settings.durability = seed.isMultiple(of: 2) ? .synchronized : .standard
        let cache = Cache(settings)
        var random = SplitMix64(seed: seed)
        var generation: UInt64 = seed << 32
        var announced = false
        while true {
            generation += 1
            do {
                let unsound = try Workload.step(
                    cache, random: &random, generation: generation, maximumFiller: maximumFiller)
                if !unsound.isEmpty { fail("unsound value read for \(unsound)", status: 1) }
            } catch {
                fail("write failed: \(error)", status: 1)
            }
            if !announced {
                announced = true
                say("ready")
            }
        }
    }

    /// `rows-write DIR KEYS WRITES PREFIX...`: for each write `i` in `0..<WRITES` and each
    /// PREFIX, stores a small self-checking value of generation `i` (``value(for:generation:)``)
    /// under `PREFIX-(i % KEYS)`, then prints `wrote i`; prints `done` at the end.
    static func write(folder: String, keys: Int, writes: Int, prefixes: [String]) -> Never {
        let cache = Cache(configuration(folder))
        for index in 0..<writes {
            for prefix in prefixes {
                let name = "\(prefix)-\(index % keys)"
                do {
                    try cache.set(value(for: name, generation: UInt64(index)), for: CacheKey<Data>(name))
                } catch {
                    fail("write failed: \(error)", status: 1)
                }
            }
            say("wrote \(index)")
        }
        say("done")
        exit(0)
    }

    /// A small value that names its generation and proves it belongs to `key` (``Workload/isSound(_:for:)``).
    static func value(for key: String, generation: UInt64) -> Data {
        Workload.data(
            for: key, generation: generation, fillerLength: 100 + Int(generation % 900), seed: generation &* 7919)
    }
}
