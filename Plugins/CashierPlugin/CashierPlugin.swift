import Foundation
import PackagePlugin

/// `swift package cashier COMMAND …`: runs the `cashier-tool` executable with the arguments given.
///
/// The tool is built from the Cashier package this package depends on, so the
/// plugin inspects folders with exactly the format version the app writes.
@main
struct CashierPlugin: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        let tool = try context.tool(named: "cashier-tool")
        let process = Process()
        process.executableURL = tool.url
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        if process.terminationReason == .uncaughtSignal {
            Diagnostics.error("cashier-tool ended by signal \(process.terminationStatus)")
            exit(1)
        }
        // The tool has printed its own message; pass its status on (2 usage, 1 damage or failure).
        // SwiftPM, as of Swift 6.3, does not hand it to the shell: it prints "Plugin ended with
        // exit code N" and exits 1 for any N (swiftlang/swift-package-manager issue 7380).
        // Exiting with the tool's status keeps N in that message, and reaches the shell
        // unchanged once SwiftPM passes it on. `swift run cashier-tool` gives the status itself.
        if process.terminationStatus != 0 { exit(process.terminationStatus) }
    }
}
