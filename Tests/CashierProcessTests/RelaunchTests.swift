import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// What one launch of an app writes, the next launch reads: two `CashierStress` processes in turn.
@Suite("Relaunch")
struct RelaunchTests {
    @Test("A private model's entries written by one process are read by the next")
    func privateModelSurvivesARelaunch() throws {
        let folder = TemporaryFolder()
        let writer = try Child(["relaunch", folder.path, "write"])
        #expect(writer.readLine() == "wrote")
        #expect(writer.wait() == 0)

        // The stored type name carries no launch-specific address.
        let headers = DiskTier(folder: folder.path).scanHeaders().entries.map(\.header)
        #expect(headers.count == 2)
        for header in headers {
            #expect(!header.typeName.contains(" at $"), "\(header.typeName)")
        }

        let reader = try Child(["relaunch", folder.path, "read"])
        #expect(reader.readLine() == "read private-versioned private-unversioned")
        #expect(reader.wait() == 0)
    }
}
