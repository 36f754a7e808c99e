import CashierStress
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Several processes writing, reading, evicting and collecting garbage in one folder at once.
///
/// Processes: `CASHIER_STRESS_PROCESSES` (default 3); operations each:
/// `CASHIER_STRESS_OPERATIONS` (default 2,000). The size limit is 96 KiB for
/// 32 keys of up to 16 KiB each, so every process evicts all the time.
@Suite("Sharing a folder between processes")
struct MultiProcessTests {
    static let sizeLimit = 96 * 1024
    /// The largest entry the workload writes: 16 KiB of raw filler, 16 bytes of digest, the header.
    static let largestEntry = 16 * 1024 + 16 + 256

    @Test(
        "Processes sharing a folder under a size limit read only sound values, stay within the limit, and agree after collectGarbage"
    )
    func processesShareAFolder() throws {
        let processes = environmentNumber("CASHIER_STRESS_PROCESSES", default: 3)
        let operations = environmentNumber("CASHIER_STRESS_OPERATIONS", default: 2_000)
        let folder = TemporaryFolder()
        let children = try (0..<processes).map { index in
            try Child(["share", folder.path, String(index + 1), String(operations), String(Self.sizeLimit)])
        }

        // While they run, this process reads too, through its own instance, on another thread.
        let observer = Observer(Cache(folder.configuration(sizeLimit: Self.sizeLimit)), folder: folder)
        var summaries: [String] = []
        for (index, child) in children.enumerated() {
            let done = child.readLine()
            #expect(done?.hasPrefix("done") == true, "process \(index) did not finish: \(String(describing: done))")
            summaries.append(done ?? "")
        }
        let observed = observer.stop()
        #expect(observed.unsound.isEmpty, "the reader saw unsound values for \(observed.unsound)")
        // Each has stopped writing and waited for its sweeps. A process sweeps when its own
        // view of the folder is over the limit, so at rest each may have one write the
        // others' sweeps did not see: within the limit plus one entry per process.
        let atRest = folder.occupiedBytes
        #expect(atRest <= Self.sizeLimit + processes * Self.largestEntry)

        // Each collects garbage in turn and reports what it sees; the reports agree with each other and the folder.
        var reports: [[Int]] = []
        for child in children {
            child.send("report")
            let line = child.readLine() ?? ""
            reports.append(line.split(separator: " ").dropFirst().compactMap { Int($0) })
            #expect(child.wait() == 0)
        }
        let fresh = Cache(folder.configuration(sizeLimit: Self.sizeLimit))
        let truth = [fresh.count, fresh.totalSize]
        // The index counts the entries, rows and files, read one by one; the total is what the
        // folder occupies.
        let scanned = DiskTier(folder: folder.path).scanHeaders().entries
        #expect(truth[0] == scanned.count)
        #expect(truth[1] == folder.occupiedBytes)
        #expect(truth[1] <= Self.sizeLimit)
        for (index, report) in reports.enumerated() {
            #expect(report == truth, "process \(index) reported \(report), the folder holds \(truth)")
        }
        #expect(DiskTier(folder: folder.path).scanHeaders().damaged.isEmpty)
        #expect(folder.temporaries.isEmpty)
        print(
            "multi-process: \(processes) processes × \(operations) operations, \(observed.checks) checks by a reader meanwhile, "
                + "largest folder seen \(observed.largestFolder) bytes, \(atRest) at rest, for a limit of \(Self.sizeLimit); \(summaries.joined(separator: "; "))"
        )
    }
}

/// Reads every key of the workload over and over on its own thread until stopped.
private final class Observer: @unchecked Sendable {
    struct Result {
        var checks = 0
        var unsound: [String] = []
        var largestFolder = 0
    }

    private let lock = NSLock()
    private var stopping = false // guarded by lock
    private var result = Result() // written by the thread until `done` is signalled
    private let done = DispatchSemaphore(value: 0)

    init(_ cache: Cache, folder: TemporaryFolder) {
        Thread.detachNewThread { [self] in
            while !lock.withLock({ stopping }) {
                let findings = Workload.check(cache)
                result.checks += 1
                result.unsound += findings.unsound
                result.largestFolder = max(result.largestFolder, folder.entryBytes)
            }
            done.signal()
        }
    }

    func stop() -> Result {
        lock.withLock { stopping = true }
        done.wait()
        return result
    }
}
