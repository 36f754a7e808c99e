import CashierCommands
import Foundation

exit(CashierCommands.run(Array(CommandLine.arguments.dropFirst())).rawValue)
