import Foundation

/// Where a command writes: standard output for results, standard error for diagnostics.
///
/// The tool uses ``standard``; tests pass closures that collect the text.
package struct Console {
    package var output: (String) -> Void
    package var error: (String) -> Void
    /// Whether `output` is a terminal, where a page of HTML is of no use (`report` refuses).
    package var outputIsTerminal: Bool

    package init(
        output: @escaping (String) -> Void, error: @escaping (String) -> Void, outputIsTerminal: Bool = false
    ) {
        self.output = output
        self.error = error
        self.outputIsTerminal = outputIsTerminal
    }

    /// The process's standard output and standard error.
    package static var standard: Console {
        Console(
            output: { FileHandle.standardOutput.write(Data($0.utf8)) },
            error: { FileHandle.standardError.write(Data($0.utf8)) },
            outputIsTerminal: isatty(STDOUT_FILENO) != 0)
    }

    func print(_ line: String = "") { output(line + "\n") }
    func printError(_ line: String) { error(line + "\n") }
}

/// The exit statuses of `cashier-tool`.
package enum ExitStatus: Int32, Sendable {
    /// The command did what it was asked; `verify` found nothing damaged (or nothing to check).
    case success = 0
    /// `verify` found damage, or the command could not do what it was asked (no such key, a failed
    /// removal, a locked entry removed without `--force`).
    case failure = 1
    /// The arguments do not make a command, or DIR is missing or not a folder.
    case usage = 2
}

/// A command that could not run: one line for standard error.
struct ToolError: Error {
    var message: String
    var status: ExitStatus

    init(_ message: String, status: ExitStatus = .failure) {
        self.message = message
        self.status = status
    }
}

/// The `cashier-tool` executable: every command, runnable in-process.
///
/// `package`, not `public`: the command library has no product, so only this package's
/// executable and tests can import it.
package enum CashierCommands {
    /// Parses `arguments` (without the program name), runs the command and returns its exit status.
    ///
    /// - Parameters:
    ///   - console: where output and diagnostics go.
    ///   - now: the moment ages and expiry are measured from.
    package static func run(_ arguments: [String], console: Console = .standard, now: Date = Date()) -> ExitStatus {
        let invocation: Invocation
        do {
            invocation = try Invocation.parse(arguments)
        } catch {
            console.printError("cashier-tool: \(error.message)")
            console.printError("")
            console.printError(Help.text(for: error.command))
            return .usage
        }
        do {
            return try run(invocation, console: console, now: now)
        } catch let error as ToolError {
            console.printError("cashier-tool: \(error.message)")
            return error.status
        } catch {
            console.printError("cashier-tool: \(error)")
            return .failure
        }
    }

    static func run(_ invocation: Invocation, console: Console, now: Date) throws -> ExitStatus {
        if let warning = invocation.inspectedFolder.flatMap(FolderWarning.line(for:)) { console.printError(warning) }
        switch invocation {
        case .help(let command):
            console.print(Help.text(for: command))
            return .success
        case .version:
            console.print("cashier-tool \(Version.current)")
            return .success
        case .list(let directory, let sort, let json):
            return try ListCommand.run(directory: directory, sort: sort, json: json, console: console, now: now)
        case .show(let directory, let key, let json):
            return try ShowCommand.run(directory: directory, key: key, json: json, console: console, now: now)
        case .stats(let directory, let json):
            return try StatsCommand.run(directory: directory, json: json, console: console, now: now)
        case .verify(let directory, let json):
            return try VerifyCommand.run(directory: directory, json: json, console: console)
        case .prune(let directory, let options, let json):
            return try PruneCommand.run(directory: directory, options: options, json: json, console: console, now: now)
        case .remove(let directory, let key, let force):
            return try RemoveCommand.run(directory: directory, key: key, force: force, console: console)
        case .report(let directory, let output, let sizeLimit):
            return try ReportCommand.run(
                directory: directory, output: output, sizeLimit: sizeLimit, console: console, now: now)
        case .demo(let directory):
            return try DemoCommand.run(directory: directory, console: console, now: now)
        }
    }
}
