import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A `.sinceLastUse` lifespan slides across launches: each is a `CashierStress` process that
/// ends as a killed app would, with no disk work after its reads.
@Suite("Sliding lifespan across launches")
struct SlidingLifespanProcessTests {
    /// Runs `CashierStress slide` and answers the line it printed.
    func launch(_ folder: TemporaryFolder, _ action: String, at moments: Double...) throws -> String? {
        let child = try Child(["slide", folder.path, action] + moments.map { String($0) })
        defer { _ = child.wait() }
        return child.readLine()
    }

    @Test("Reads of one launch, memory hits included, keep the entry alive in the next")
    func theLifespanSlidesAcrossLaunches() throws {
        let folder = TemporaryFolder()
        let start = (Date().timeIntervalSince1970 - 86_400).rounded(.down)
        #expect(try launch(folder, "write", at: start) == "wrote")
        // From disk at +90, then from memory at +180: the launch ends with no other disk work.
        #expect(try launch(folder, "read", at: start + 90, start + 180) == "hit hit")
        // Valid until +280 only because the memory hit at +180 reached the file.
        #expect(try launch(folder, "read", at: start + 279) == "hit")
        #expect(try launch(folder, "read", at: start + 380) == "miss")
    }
}
