import Testing

@testable import CashierCommands

@Suite struct ArgumentParsingTests {
    @Test(arguments: [
        (["list", "d"], Invocation.list(directory: "d", sort: .key, json: false)),
        (["list", "d", "--sort", "size", "--json"], .list(directory: "d", sort: .size, json: true)),
        (["list", "--sort=expiry", "d"], .list(directory: "d", sort: .expiry, json: false)),
        (["show", "d", "k"], .show(directory: "d", key: "k", json: false)),
        (["show", "--json", "d", "k"], .show(directory: "d", key: "k", json: true)),
        (["stats", "d", "--json"], .stats(directory: "d", json: true)),
        (["verify", "d"], .verify(directory: "d", json: false)),
        (["prune", "d", "--expired"], .prune(directory: "d", options: PruneOptions(expired: true), json: false)),
        (
            ["prune", "d", "--damaged", "--dry-run", "--json"],
            .prune(directory: "d", options: PruneOptions(damaged: true, dryRun: true), json: true)
        ),
        (
            ["prune", "d", "--max-size", "10K"],
            .prune(directory: "d", options: PruneOptions(maximumSize: 10_240), json: false)
        ),
        (
            ["prune", "--max-size=2048", "d"],
            .prune(directory: "d", options: PruneOptions(maximumSize: 2048), json: false)
        ),
        (["remove", "d", "k"], .remove(directory: "d", key: "k", force: false)),
        (["remove", "--force", "d", "k"], .remove(directory: "d", key: "k", force: true)),
        (["--version"], .version),
        (["demo"], .demo(directory: nil)),
        (["demo", "d"], .demo(directory: "d")),
    ])
    func parsesEachCommandWithOptionsAnywhere(arguments: [String], expected: Invocation) throws {
        #expect(try Invocation.parse(arguments) == expected)
    }

    @Test func doubleDashEndsOptionsSoAKeyMayStartWithADash() throws {
        #expect(
            try Invocation.parse(["show", "d", "--", "--json"]) == .show(directory: "d", key: "--json", json: false))
        #expect(try Invocation.parse(["remove", "d", "--", "-k"]) == .remove(directory: "d", key: "-k", force: false))
    }

    @Test(arguments: [
        (["--help"], nil as String?),
        (["-h"], nil),
        (["help"], nil),
        (["help", "prune"], "prune"),
        (["list", "--help"], "list"),
        (["show", "-h", "d"], "show"),
        (["prune", "--help"], "prune"),
    ])
    func helpFormsNameTheirCommand(arguments: [String], command: String?) throws {
        #expect(try Invocation.parse(arguments) == .help(command: command))
    }

    @Test(arguments: [
        ([], "missing command"),
        (["frobnicate"], "unknown command 'frobnicate'"),
        (["--verbose"], "unknown option '--verbose'"),
        (["list", "d", "--colour"], "unknown option '--colour' for 'list'"),
        (["list"], "'list' needs DIR"),
        (["show", "d"], "'show' needs DIR KEY"),
        (["stats", "d", "e"], "'stats' takes DIR, got an extra 'e'"),
        (["list", "d", "--sort"], "--sort needs a value"),
        (["list", "d", "--sort", "colour"], "--sort takes key, size, age or expiry, not 'colour'"),
        (["list", "d", "--json=yes"], "--json takes no value"),
        (["prune", "d"], "'prune' needs --expired, --damaged or --max-size BYTES"),
        (
            ["prune", "d", "--max-size", "lots"],
            "--max-size takes a byte count such as 1048576, 512K or 10M, not 'lots'"
        ),
        (["remove", "d", "k", "--json"], "unknown option '--json' for 'remove'"),
        (["demo", "d", "--json"], "unknown option '--json' for 'demo'"),
        (["help", "frobnicate"], "unknown command 'frobnicate'"),
        (["help", "list", "show"], "help takes at most one command"),
        (["--version", "list"], "--version takes no arguments"),
        (["list", "d", "--force"], "unknown option '--force' for 'list'"),
    ])
    func rejectsWhatIsNotACommandWithOneLine(arguments: [String], message: String) {
        #expect(throws: UsageError.self) { try Invocation.parse(arguments) }
        do {
            _ = try Invocation.parse(arguments)
        } catch {
            #expect(error.message == message)
            #expect(!error.message.contains("\n"))
        }
    }

    @Test(arguments: [
        ("0", 0), ("1048576", 1_048_576), ("512K", 524_288), ("512kib", 524_288), ("10M", 10_485_760),
        ("2GB", 2_147_483_648), ("7b", 7),
    ])
    func byteCountsTakePowerOf1024Suffixes(text: String, bytes: Int) {
        #expect(ByteCount.parse(text) == bytes)
    }

    @Test(arguments: ["", "-1", "K", "1.5M", "12 M", "3T", "99999999999999999999"])
    func byteCountsRejectTheRest(text: String) {
        #expect(ByteCount.parse(text) == nil)
    }
}
