import CashierStress
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier
@testable import CashierStore

/// Processes on one folder whose values are all small, so every entry is a row of the
/// folder's store: what SQLite's locking and WAL give (atomic, durable commits; one writer at
/// a time), seen through the cache. The existing crash-kill test's values are mostly large
/// files (up to 256 KiB; about one in eight is a row): these kill writers of rows only.
@Suite("Store rows across processes")
struct StoreRowsProcessTests {
    /// The generation a `rows-write` value names (its first 8 bytes), `nil` when it is not sound.
    static func generation(of data: Data, for key: String) -> UInt64? {
        guard Workload.isSound(data, for: key) else { return nil }
        return data.prefix(8).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    /// The last generation `rows-write` with `keys` keys wrote to key number `index` by write `last`.
    static func lastGeneration(ofKey index: Int, keys: Int, through last: Int) -> Int? {
        guard last >= index else { return nil }
        return last - (last - index) % keys
    }

    @Test("Two processes writing small values to one folder lose nothing: each key reads its last value")
    func twoWritersOfRowsLoseNothing() throws {
        let folder = TemporaryFolder()
        let keys = 40
        let writes = environmentNumber("CASHIER_STORE_ROWS_WRITES", default: 600)
        let children = try [["a", "shared"], ["b", "shared"]].map { prefixes in
            try Child(["rows-write", folder.path, String(keys), String(writes)] + prefixes)
        }
        for (index, child) in children.enumerated() {
            var last: String?
            while let line = child.readLine() {
                last = line
                if line == "done" { break }
            }
            #expect(last == "done", "writer \(index) stopped at \(String(describing: last))")
            #expect(child.wait() == 0, "writer \(index) failed")
        }
        #expect(folder.entryFiles.isEmpty, "small values became files: \(folder.entryFiles)")

        let cache = Cache(folder.configuration())
        for prefix in ["a", "b", "shared"] {
            for index in 0..<keys {
                let name = "\(prefix)-\(index)"
                let expected = Self.lastGeneration(ofKey: index, keys: keys, through: writes - 1).map(UInt64.init)
                let found = cache.value(for: CacheKey<Data>(name)).flatMap { Self.generation(of: $0, for: name) }
                // For the shared keys both writers' last values have the same generation.
                #expect(found == expected, "\(name) reads generation \(String(describing: found))")
            }
        }
        #expect(cache.count == 3 * keys)
        let store = try EntryStore(folder: folder.path)
        #expect(try store.structuralProblems().isEmpty)
    }

    @Test("After every SIGKILL of a writer of rows each key reads nothing or a whole value, and the store is sound")
    func killedWriterOfRowsLeavesOnlyWholeValues() throws {
        let kills = environmentNumber("CASHIER_STORE_ROWS_KILLS", default: 40)
        let folder = TemporaryFolder()
        var random = SplitMix64(seed: UInt64(environmentNumber("CASHIER_STRESS_SEED", default: 20_261_124)))
        var present = 0
        for kill in 1...kills {
            let child = try Child(["rows-churn", folder.path, String(random.next() % 1_000_000)])
            #expect(child.readLine() == "ready")
            // Not waiting for an effect: choosing when the kill lands, which no clock can inject.
            usleep(UInt32(random.next() % 20_000))
            child.killAndReap()

            let store = try EntryStore(folder: folder.path)
            #expect(
                store.setAsideAtOpen == nil,
                "kill \(kill): the store was set aside: \(String(describing: store.setAsideAtOpen))")
            #expect(try store.structuralProblems().isEmpty, "kill \(kill)")
            let findings = Workload.check(Cache(folder.configuration()))
            #expect(findings.unsound.isEmpty, "kill \(kill): \(findings)")
            present += findings.present
            let scan = DiskTier(folder: folder.path).scanHeaders()
            #expect(scan.damaged.isEmpty, "kill \(kill): damaged \(scan.damaged.map(\.fileName))")
            #expect(folder.entryFiles.isEmpty, "kill \(kill): small values became files: \(folder.entryFiles)")
        }
        #expect(present > 0)
        print("store rows crash-kill: \(kills) kills, \(present) values read back whole, 0 damaged")
    }

    @Test("A write of a row that returned before SIGKILL is read after it")
    func returnedWritesOfRowsSurviveSIGKILL() throws {
        let rounds = environmentNumber("CASHIER_STORE_ROWS_KILLS", default: 40)
        let folder = TemporaryFolder()
        var random = SplitMix64(seed: 20_261_125)
        let keys = 30
        for round in 0..<rounds {
            let prefix = "round\(round)"
            let child = try Child(["rows-write", folder.path, String(keys), "1000000", prefix])
            let target = Int(random.next() % 200)
            var last = -1
            while last < target, let line = child.readLine(), line.hasPrefix("wrote ") {
                last = Int(line.dropFirst(6)) ?? last
            }
            child.killAndReap()
            // Lines the child printed before the kill name writes that returned too.
            while let line = child.readLine(), line.hasPrefix("wrote ") { last = Int(line.dropFirst(6)) ?? last }

            let cache = Cache(folder.configuration())
            for index in 0..<keys {
                let name = "\(prefix)-\(index)"
                guard let returned = Self.lastGeneration(ofKey: index, keys: keys, through: last) else { continue }
                let found = cache.value(for: CacheKey<Data>(name)).flatMap { Self.generation(of: $0, for: name) }
                // The returned write, or the next one to that key if it landed before the kill.
                #expect(
                    found == UInt64(returned) || found == UInt64(returned + keys),
                    "round \(round): \(name) reads \(String(describing: found)), its write of generation \(returned) returned"
                )
            }
        }
    }
}
