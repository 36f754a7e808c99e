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
        Workload.churn(folder: folder, seed: seed, maximumFiller: maximumFiller)
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
