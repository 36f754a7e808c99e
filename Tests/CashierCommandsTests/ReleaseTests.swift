import Foundation
import Testing

@testable import CashierCommands

/// What a user checks first: which version this is, and that the help and docs name every option.
@Suite struct ReleaseTests {
    /// The package's root folder, found from this file's path.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The version of the newest `## [X.Y.Z]` heading of CHANGELOG.md (`[Unreleased]` skipped).
    static func newestChangelogRelease() throws -> String? {
        let changelog = try String(contentsOf: packageRoot.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        for line in changelog.split(separator: "\n") where line.hasPrefix("## [") {
            let version = line.dropFirst(4).prefix { $0 != "]" }
            let parts = version.split(separator: ".", omittingEmptySubsequences: false)
            if parts.count == 3,
                parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) })
            {
                return String(version)
            }
        }
        return nil
    }

    @Test func theVersionIsTheNewestReleaseInTheChangelog() throws {
        let newest = try #require(try Self.newestChangelogRelease(), "CHANGELOG.md has no `## [X.Y.Z]` release heading")
        #expect(Version.current == newest)
    }

    @Test func versionFlagPrintsTheToolsNameAndVersionWithStatus0() {
        let result = cashier("--version")
        #expect(result.status == .success)
        #expect(result.output == "cashier-tool \(Version.current)\n")
        #expect(result.error.isEmpty)
        #expect(cashier("--help").output.contains("cashier-tool --version"))
    }

    @Test func everySortOrderIsDocumentedInTheHelpAndTheToolArticle() throws {
        let article = try String(
            contentsOf: Self.packageRoot.appendingPathComponent("Sources/Cashier/Cashier.docc/CashierTool.md"),
            encoding: .utf8)
        let orders = ListSort.allCases.map(\.rawValue).joined(separator: "|")
        #expect(Help.usage.contains("list DIR [--sort \(orders)]"))
        #expect(Help.text(for: "list").contains("usage: cashier-tool list DIR [--sort \(orders)]"))
        for order in ListSort.allCases {
            #expect(Help.text(for: "list").contains("--sort \(order.rawValue) "))
        }
        #expect(article.contains("`list DIR [--sort \(orders.replacingOccurrences(of: "|", with: "\\|"))]"))
    }
}
