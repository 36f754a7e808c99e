import CashierStress
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Kills a writing process with SIGKILL at random moments and checks what it left.
///
/// Kills: `CASHIER_STRESS_KILLS` (default 200). Each kill lands at a random
/// moment 0–20 ms after the child's first write, while it writes, overwrites
/// and removes entries of up to 256 KiB in a loop (half the children with
/// `durability = .synchronized`), so many land mid-write.
@Suite("Crash consistency")
struct CrashKillTests {
    @Test(
        "After every SIGKILL each key reads nothing or a value written whole, no file is damaged, temporaries are cleaned"
    )
    func killedWriterLeavesOnlyWholeValues() throws {
        let kills = environmentNumber("CASHIER_STRESS_KILLS", default: 200)
        let folder = TemporaryFolder()
        var random = SplitMix64(seed: UInt64(environmentNumber("CASHIER_STRESS_SEED", default: 20_261_122)))
        var interruptedWrites = 0
        var present = 0

        for kill in 1...kills {
            let child = try Child(["churn", folder.path, String(random.next() % 1_000_000)])
            #expect(child.readLine() == "ready")
            // Not waiting for an effect: choosing when the kill lands, which no clock can inject.
            usleep(UInt32(random.next() % 20_000))
            child.killAndReap()
            if !folder.temporaries.isEmpty { interruptedWrites += 1 }

            // A fresh instance, as the next launch of the app would make.
            let findings = Workload.check(Cache(folder.configuration()))
            #expect(findings.unsound.isEmpty, "kill \(kill): \(findings)")
            present += findings.present
            let scan = DiskTier(folder: folder.path).scanHeaders()
            #expect(scan.damaged.isEmpty, "kill \(kill): damaged files \(scan.damaged.map(\.fileName))")

            // The next open's first scan removes the dead writer's temporary file.
            _ = Cache(folder.configuration()).count
            #expect(folder.temporaries.isEmpty, "kill \(kill): temporaries left \(folder.temporaries)")
        }
        Cache(folder.configuration()).collectGarbage()
        #expect(folder.temporaries.isEmpty)
        // Not an assertion on luck: evidence that the kills did land mid-write.
        print(
            "crash-kill: \(kills) kills, \(interruptedWrites) interrupted mid-write, \(present) values read back whole, 0 damaged"
        )
        if kills >= 50 { #expect(interruptedWrites > 0, "no kill landed mid-write: the test did not test anything") }
    }
}
