import CashierTestSupport
import Foundation
import Testing

@testable import CashierCommands

/// How the tool talks to a shell: streams, exit statuses, help.
@Suite struct CommandLineTests {
    @Test func noArgumentsPrintsTheUsageOnStandardErrorWithStatus2() {
        let result = cashier([])
        #expect(result.status == .usage)
        #expect(result.status.rawValue == 2)
        #expect(result.output.isEmpty)
        #expect(result.error.hasPrefix("cashier-tool: missing command\n"))
        #expect(result.error.contains("usage: cashier-tool COMMAND"))
    }

    @Test func unknownCommandGetsOneLineThenTheUsage() {
        let result = cashier("frobnicate", "d")
        #expect(result.status == .usage)
        let lines = result.error.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.first == "cashier-tool: unknown command 'frobnicate'")
        #expect(lines.dropFirst().first == "")
        #expect(result.error.contains("usage: cashier-tool COMMAND"))
    }

    @Test func unknownOptionShowsThatCommandsUsage() {
        let result = cashier("list", "d", "--colour")
        #expect(result.status == .usage)
        #expect(result.error.hasPrefix("cashier-tool: unknown option '--colour' for 'list'\n"))
        #expect(result.error.contains("usage: cashier-tool list DIR"))
    }

    @Test func helpGoesToStandardOutputWithStatus0() {
        let general = cashier("--help")
        #expect(general.status == .success)
        #expect(general.output.contains("usage: cashier-tool COMMAND"))
        #expect(general.error.isEmpty)
        for command in Invocation.commandNames {
            let result = cashier("help", command)
            #expect(result.status == .success)
            #expect(result.output.hasPrefix("usage: cashier-tool \(command)"))
        }
    }

    @Test(arguments: ["list", "stats", "verify"])
    func aMissingFolderIsAClearMessageWithStatus2(command: String) {
        let result = cashier(command, "/nonexistent/cashier-tool-test")
        #expect(result.status == .usage)
        #expect(result.error == "cashier-tool: no such folder: /nonexistent/cashier-tool-test\n")
    }

    @Test func aFileGivenAsTheFolderIsAClearMessageWithStatus2() throws {
        let folder = TemporaryFolder()
        try FileManager.default.createDirectory(atPath: folder.path, withIntermediateDirectories: true)
        folder.write("file.txt", Data("hi".utf8))
        for command in [["list"], ["show"], ["prune"], ["remove"]] {
            let extra = command == ["show"] || command == ["remove"] ? ["k"] : command == ["prune"] ? ["--expired"] : []
            let result = cashier(command + [folder.path + "/file.txt"] + extra)
            #expect(result.status == .usage)
            #expect(result.error.hasPrefix("cashier-tool: not a folder: \(folder.path)/file.txt"))
        }
    }

    @Test func foldersOfOtherFilesAreNotedAndLeftAlone() throws {
        let folder = TemporaryFolder()
        try FileManager.default.createDirectory(atPath: folder.path + "/sub", withIntermediateDirectories: true)
        folder.write("notes.txt", Data("not a cache".utf8))
        // Named like an entry, but not one: damaged, not foreign.
        folder.write(String(repeating: "a", count: 32) + ".cache", Data("garbage".utf8))
        let before = folder.snapshot()

        let list = cashier("list", folder.path)
        #expect(list.status == .success)
        #expect(list.output.contains("damaged"))
        #expect(list.error.contains("2 files in \(folder.path) are not cache entries and left alone: notes.txt, sub"))

        let verify = cashier("verify", folder.path)
        #expect(verify.status == .failure)
        #expect(verify.output.contains("truncated"))

        let prune = cashier("prune", folder.path, "--damaged", "--expired", "--max-size", "0")
        #expect(prune.status == .success)
        #expect(folder.fileNames.contains("notes.txt"))
        #expect(folder.fileNames.contains("sub"))
        #expect(folder.entryFiles.isEmpty)
        #expect(before["notes.txt"]?.bytes == folder.snapshot()["notes.txt"]?.bytes)
    }

    @Test func aFolderWithNoEntriesAsksWhetherItIsACacheFolder() throws {
        let folder = TemporaryFolder()
        try FileManager.default.createDirectory(atPath: folder.path, withIntermediateDirectories: true)
        folder.write("photo.jpg", Data([0xFF, 0xD8]))
        let result = cashier("stats", folder.path)
        #expect(result.status == .success)
        #expect(result.error.contains("holds no cache entries"))
        #expect(result.error.contains("is it a Cashier cache folder?"))
    }
}
