import Cashier
import CashierPlatform
import Foundation

extension Invocation {
    /// The cache folder the command inspects or changes (`demo` makes its own through a cache).
    var inspectedFolder: String? {
        switch self {
        case .list(let directory, _, _), .show(let directory, _, _), .stats(let directory, _),
            .verify(let directory, _), .prune(let directory, _, _), .remove(let directory, _, _),
            .report(let directory, _, _):
            directory
        case .help, .version, .demo:
            nil
        }
    }
}

enum FolderWarning {
    /// One line for standard error when a cache sharing with no one would refuse `directory`
    /// (another user owns it, or its group or others can write it): the tool still inspects
    /// it, since looking is how one finds out what was planted, but says its entries may not
    /// be the user's. `nil` when the folder is sound or missing.
    static func line(for directory: String) -> String? {
        guard let status = FolderStatus(path: directory),
            let reason = status.refusal(for: .owner, user: geteuid())
        else { return nil }
        return "cashier-tool: warning: \(directory): \(reason). A cache would refuse this folder "
            + "(unless it shares it with its group on purpose): its entries may have been planted by someone else."
    }
}
