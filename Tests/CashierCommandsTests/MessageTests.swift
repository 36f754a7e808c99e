import Cashier
import CashierTestSupport
import Foundation
import Testing

@testable import CashierCommands

/// How the tool words what went wrong: its own name, a "did you mean" for a slip, the way out.
@Suite struct MessageTests {
    let folder = TemporaryFolder()

    init() throws {
        _ = try makeFixture(folder)
    }

    @Test func everyDiagnosticIsPrefixedWithTheToolsName() {
        for result in [cashier("frobnicate"), cashier("list", "/nonexistent/x"), cashier("show", folder.path, "zzz")] {
            #expect(result.error.hasPrefix("cashier-tool: "))
        }
    }

    @Test func aMistypedCommandSuggestsTheClosest() {
        #expect(
            cashier("lsit", folder.path).error.hasPrefix("cashier-tool: unknown command 'lsit'; did you mean 'list'?\n")
        )
        #expect(
            cashier("verfiy", folder.path).error.hasPrefix(
                "cashier-tool: unknown command 'verfiy'; did you mean 'verify'?\n"))
        #expect(
            cashier("help", "stat").error.hasPrefix("cashier-tool: unknown command 'stat'; did you mean 'stats'?\n"))
        #expect(
            cashier("reprot", folder.path).error.hasPrefix(
                "cashier-tool: unknown command 'reprot'; did you mean 'report'?\n"))
        // Nothing close: no guess.
        #expect(cashier("frobnicate").error.hasPrefix("cashier-tool: unknown command 'frobnicate'\n"))
    }

    @Test func aMistypedOptionSuggestsOneThatCommandTakes() {
        let result = cashier("list", folder.path, "--jsn")
        #expect(result.status == .usage)
        #expect(result.error.hasPrefix("cashier-tool: unknown option '--jsn' for 'list'; did you mean '--json'?\n"))
        #expect(cashier("prune", folder.path, "--dryrun").error.contains("did you mean '--dry-run'?"))
        // `--force` belongs to `remove`, not `list`: nothing to suggest there.
        #expect(
            cashier("list", folder.path, "--force").error.hasPrefix(
                "cashier-tool: unknown option '--force' for 'list'\n"))
    }

    @Test func aMistypedKeySuggestsTheClosestKeyInTheFolder() {
        let show = cashier("show", folder.path, "profle")
        #expect(show.status == .failure)
        #expect(
            show.error == "cashier-tool: no entry for key \"profle\" in \(folder.path); did you mean \"profile\"?\n")
        let remove = cashier("remove", folder.path, "avtar")
        #expect(remove.error.hasSuffix("; did you mean \"avatar\"?\n"))
        #expect(folder.entryFiles.count == 5)
    }

    @Test func suggestionsAllowMoreEditsForLongerWordsAndCountASwapAsOne() {
        #expect(Suggestion.closest(to: "lsit", among: ["list", "show"]) == "list")
        #expect(Suggestion.closest(to: "lst", among: ["list"]) == "list")
        #expect(Suggestion.closest(to: "ls", among: ["list"]) == nil)
        #expect(Suggestion.closest(to: "user.profiel", among: ["user.avatar", "user.profile"]) == "user.profile")
        #expect(Suggestion.closest(to: "x", among: [String]()) == nil)
    }

    @Test func verifysHintRunsWithoutInstallingAndSaysHowToInstall() throws {
        try damage("blob", in: folder)
        let result = cashier("verify", folder.path)
        #expect(result.output.contains("5 entries checked, 1 damaged. Remove it with:\n"))
        #expect(result.output.contains("  swift run cashier-tool prune \(folder.path) --damaged\n"))
        #expect(result.output.contains("swift build -c release --product cashier-tool"))
        #expect(result.output.contains("copy .build/release/cashier-tool"))
    }

    @Test func oneForeignFileIsOneFileThatIsNotACacheEntry() {
        folder.write("notes.txt", Data("x".utf8))
        let result = cashier("list", folder.path)
        #expect(result.error.contains("1 file in \(folder.path) is not a cache entry and is left alone: notes.txt"))
    }

    @Test func jsonSpellsTheTypeAsTheTableDoes() throws {
        let list = cashier("list", folder.path, "--json")
        let entries = try #require(list.json["entries"] as? [[String: Any]])
        let table = cashier("list", folder.path).output.split(separator: "\n").dropFirst()
        for entry in entries {
            let key = try #require(entry["key"] as? String)
            let row = try #require(table.first { $0.hasPrefix(key + " ") })
            #expect(
                row.split(separator: " ", omittingEmptySubsequences: true)[1] == (entry["type"] as? String ?? "")[...])
        }
    }
}
