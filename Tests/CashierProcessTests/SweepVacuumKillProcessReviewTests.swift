import CashierPlatform
import CashierStress
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile review of ec0561a and 2808c42: an app killed (SIGKILL) during a large sweep of its
/// cache, rows and large entries' files, the pages given back inside the eviction's transaction.
/// After a relaunch, every value reads whole or not at all, and every value a sweep left alone
/// when not killed (the same folder, swept to its end once) reads whole: nothing not chosen is
/// gone. (The newest values are no fixed survivors: of one second's entries the smaller go
/// first, and a child's clock cannot be set.)
@Suite(.serialized) struct SweepVacuumKillProcessReviewTests {
    let folder = TemporaryFolder()

    /// Large entries every tenth key (files), rows otherwise; `new-i` written last.
    static func bytes(_ index: Int) -> Int { index % 10 == 0 ? 20_000 : 1_000 }

    /// Every value's answer to `check` in a fresh session (no limit), which is then closed.
    static func keys(_ folder: TemporaryFolder) throws -> [(key: String, answer: String)] {
        let check = try StressSession(folder)
        defer { check.close() }
        return (0..<1_500).map { ("old-\($0)", check.ask("check old-\($0) \(bytes($0)) \($0)")) }
            + (0..<100).map { ("new-\($0)", check.ask("check new-\($0) 1100 \($0)")) }
    }

    @Test(.timeLimit(.minutes(4)))
    func anAppKilledDuringALargeSweepLosesNothingUnchosenAndKeepsNothingHalf() throws {
        let writer = try StressSession(folder)
        for index in 0..<1_500 { #expect(writer.ask("fill old-\(index) \(Self.bytes(index)) \(index)") == "ok") }
        for index in 0..<100 { #expect(writer.ask("fill new-\(index) 1100 \(index)") == "ok") }
        writer.close()
        let pristine = folder.url.deletingLastPathComponent().appendingPathComponent("pristine-\(UUID().uuidString)")
        try FileManager.default.copyItem(at: folder.url, to: pristine)
        defer { try? FileManager.default.removeItem(at: pristine) }

        // The reference: the same sweep, not killed.
        let reference = try StressSession(folder, sizeLimit: 1_000_000)
        #expect(reference.ask("gc") == "ok")
        reference.close()
        let kept = Set(try Self.keys(folder).filter { $0.answer == "whole" }.map(\.key))
        #expect(kept.count < 1_200, "the sweep kept \(kept.count) of 1,600 values: no large sweep")

        for delay in stride(from: 0, to: 60_000, by: 5_000) {
            try FileManager.default.removeItem(at: folder.url)
            try FileManager.default.copyItem(at: pristine, to: folder.url)
            // A limit of 1 MB against some 4.5 MB: its first sweep evicts most rows and files.
            let app = try StressSession(folder, sizeLimit: 1_000_000)
            app.child.send("gc")
            usleep(useconds_t(delay))
            app.child.killAndReap()

            let answers = try Self.keys(folder)
            let other = answers.filter { $0.answer != "whole" && $0.answer != "nil" }
            let lost = answers.filter { $0.answer == "nil" && kept.contains($0.key) }
            #expect(other.isEmpty, "killed after \(delay) µs: values read otherwise than written \(other.prefix(5))")
            #expect(lost.isEmpty, "killed after \(delay) µs: \(lost.count) values the sweep keeps are gone")
            #expect(folder.storeInteger("SELECT count(*) FROM pragma_quick_check WHERE quick_check != 'ok'") == 0)
        }
    }
}
