import Cashier
import CashierEntryFormat
import CashierTestSupport
import Foundation

/// The entries the stress runs write: values that prove their own integrity.
///
/// Every value carries the name of its key, a generation and a digest of both
/// and its filler, so a reader can tell a value that was completely written at
/// some point from a torn one, a mix of two writes, or another key's value,
/// without knowing what the writer did before it was killed.
public enum Workload {
    /// Keys holding JSON-encoded ``Record`` values.
    public static let recordKeys: [CacheKey<Record>] = (0..<24).map { CacheKey("record-\($0)", schemaVersion: 1) }
    /// Keys holding raw `Data` values (stored unencoded, so a torn payload would not fail to decode).
    public static let dataKeys: [CacheKey<Data>] = (0..<8).map { CacheKey("data-\($0)") }

    /// A JSON value that knows which key it belongs to.
    public struct Record: Codable, Sendable, Hashable {
        public var key: String
        public var generation: UInt64
        public var filler: String
        public var digest: UInt64

        public init(key: String, generation: UInt64, fillerLength: Int) {
            self.key = key
            self.generation = generation
            self.filler = String(
                String(repeating: "abcdefghijklmnopqrstuvwxyz0123456789", count: 1 + fillerLength / 36).prefix(
                    fillerLength))
            self.digest = Workload.digest(key, generation, filler)
        }

        /// Whether this value is intact and belongs to `expectedKey`.
        public func isSound(for expectedKey: String) -> Bool {
            key == expectedKey && digest == Workload.digest(key, generation, filler)
        }
    }

    /// Raw bytes for `key`: generation (8 bytes), digest (8 bytes), then filler
    /// (a slice of a random megabyte, so making a value costs little next to writing it).
    public static func data(for key: String, generation: UInt64, fillerLength: Int, seed: UInt64) -> Data {
        let length = min(fillerLength, noise.count)
        let start = Int(seed % UInt64(noise.count - length + 1))
        let filler = noise[start..<start + length]
        var bytes = [UInt8]()
        bytes.reserveCapacity(16 + length)
        withUnsafeBytes(of: generation.littleEndian) { bytes += $0 }
        withUnsafeBytes(of: filler.withUnsafeBytes { digest(key, generation, $0) }.littleEndian) { bytes += $0 }
        bytes += filler
        return Data(bytes)
    }

    private static let noise: [UInt8] = {
        var random = SplitMix64(seed: 0x5EED)
        return (0..<(1 << 17)).flatMap { _ in withUnsafeBytes(of: random.next()) { Array($0) } }
    }()

    /// Whether raw bytes read back for `key` are intact and belong to it.
    public static func isSound(_ data: Data, for key: String) -> Bool {
        guard data.count >= 16 else { return false }
        let bytes = [UInt8](data)
        let generation = bytes[0..<8].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let stored = bytes[8..<16].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return stored == bytes[16...].withUnsafeBytes { digest(key, generation, $0) }
    }

    /// XXH64 of the filler, seeded with the key's and the generation's: any change to any of them changes it.
    static func digest(_ key: String, _ generation: UInt64, _ filler: UnsafeRawBufferPointer) -> UInt64 {
        XXHash64.hash(filler, seed: XXHash64.hash(key, seed: generation))
    }

    static func digest(_ key: String, _ generation: UInt64, _ filler: String) -> UInt64 {
        var filler = filler
        return filler.withUTF8 { digest(key, generation, UnsafeRawBufferPointer($0)) }
    }

    /// What a check of a folder found.
    public struct Findings: Sendable, Hashable, CustomStringConvertible {
        /// Keys that read back a value.
        public var present = 0
        /// Keys that read back nothing.
        public var absent = 0
        /// Keys whose value was torn, mixed or another key's: must stay empty.
        public var unsound: [String] = []

        public var description: String { "\(present) present, \(absent) absent, \(unsound.count) unsound \(unsound)" }
    }

    /// Reads every key of the workload through `cache` and checks each value.
    public static func check(_ cache: Cache) -> Findings {
        var findings = Findings()
        for key in recordKeys {
            if let record = cache.value(for: key) {
                findings.present += 1
                if !record.isSound(for: key.name) { findings.unsound.append(key.name) }
            } else {
                findings.absent += 1
            }
        }
        for key in dataKeys {
            if let data = cache.value(for: key) {
                findings.present += 1
                if !isSound(data, for: key.name) { findings.unsound.append(key.name) }
            } else {
                findings.absent += 1
            }
        }
        return findings
    }

    /// `churn` and `rows-churn`: random operations on a cache of `folder` until killed (``step``,
    /// records with up to `maximumFiller` bytes of filler), synchronized for even seeds; prints
    /// `ready` after the first, exits 1 on an unsound read or a failed write.
    static func churn(folder: String, seed: UInt64, maximumFiller: Int) -> Never {
        var settings = configuration(folder)
        settings.durability = seed.isMultiple(of: 2) ? .synchronized : .standard
        let cache = Cache(settings)
        var random = SplitMix64(seed: seed)
        var generation: UInt64 = seed << 32
        var announced = false
        while true {
            generation += 1
            do {
                let unsound = try step(cache, random: &random, generation: generation, maximumFiller: maximumFiller)
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

    /// One random operation on `cache`: mostly writes of varied sizes, some removals, some reads.
    /// Records get up to `maximumFiller` bytes of filler, raw values up to four times that.
    /// Returns the keys whose value read back unsound (empty unless something is broken).
    public static func step(_ cache: Cache, random: inout SplitMix64, generation: UInt64, maximumFiller: Int) throws
        -> [String]
    {
        let choice = random.next() % 100
        let fillerLength = Int(random.next() % UInt64(maximumFiller + 1))
        if random.next() % 3 == 0 {
            let key = dataKeys[Int(random.next() % UInt64(dataKeys.count))]
            switch choice {
            case 0..<60:
                try cache.set(
                    data(for: key.name, generation: generation, fillerLength: 4 * fillerLength, seed: random.next()),
                    for: key)
            case 60..<75: cache.removeValue(for: key)
            default:
                if let value = cache.value(for: key), !isSound(value, for: key.name) { return [key.name] }
            }
        } else {
            let key = recordKeys[Int(random.next() % UInt64(recordKeys.count))]
            switch choice {
            case 0..<60:
                try cache.set(Record(key: key.name, generation: generation, fillerLength: fillerLength), for: key)
            case 60..<75: cache.removeValue(for: key)
            default:
                if let value = cache.value(for: key), !value.isSound(for: key.name) { return [key.name] }
            }
        }
        return []
    }
}
