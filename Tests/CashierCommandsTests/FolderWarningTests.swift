import Cashier
import CashierTestSupport
import Foundation
import Testing

@testable import CashierCommands

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The tool inspects a folder a cache would refuse, and warns that its entries may be planted.
@Suite struct FolderWarningTests {
    let folder = TemporaryFolder()

    init() throws {
        _ = try makeFixture(folder)
    }

    @Test func aSoundFolderGetsNoWarning() {
        let result = cashier("verify", folder.path)
        #expect(result.status == .success)
        #expect(result.error.isEmpty)
    }

    @Test func aFolderOthersCanWriteIsInspectedWithAWarning() throws {
        try #require(chmod(folder.path, 0o777) == 0)
        let result = cashier("list", folder.path)
        #expect(result.status == .success)
        #expect(result.output.contains("profile"))
        #expect(
            result.error.hasPrefix("cashier-tool: warning: \(folder.path): others can write the folder (mode 0777)"))
    }

    @Test func aFolderAnotherUserOwnsIsInspectedWithAWarning() throws {
        try #require(chown(folder.path, 12345, 12345) == 0)
        let result = cashier("stats", folder.path)
        #expect(result.status == .success)
        #expect(result.error.contains("owned by uid 12345"))
    }
}
