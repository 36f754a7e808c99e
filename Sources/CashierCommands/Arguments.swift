/// What one run of `cashier` was asked to do, parsed from its arguments.
enum Invocation: Sendable, Equatable {
    /// `cashier --help`, `cashier help [COMMAND]`, `cashier COMMAND --help`.
    case help(command: String?)
    /// `cashier-tool --version`.
    case version
    case list(directory: String, sort: ListSort, json: Bool)
    case show(directory: String, key: String, json: Bool)
    case stats(directory: String, json: Bool)
    case verify(directory: String, json: Bool)
    case prune(directory: String, options: PruneOptions, json: Bool)
    case remove(directory: String, key: String, force: Bool)
    case demo(directory: String?)
    case report(directory: String, output: String?, sizeLimit: Int?)
}

/// The orders `list --sort` knows.
enum ListSort: String, Sendable, CaseIterable {
    /// By key, the default.
    case key
    /// Largest first.
    case size
    /// Oldest first.
    case age
    /// Soonest to expire first; entries that never expire last.
    case expiry
}

/// What `prune` removes.
struct PruneOptions: Sendable, Equatable {
    var expired = false
    var damaged = false
    var maximumSize: Int? = nil
    var dryRun = false

    init(expired: Bool = false, damaged: Bool = false, maximumSize: Int? = nil, dryRun: Bool = false) {
        self.expired = expired
        self.damaged = damaged
        self.maximumSize = maximumSize
        self.dryRun = dryRun
    }
}

/// Arguments that do not make a command: reported in one line, with the usage, and exit status 2.
struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    var message: String
    /// The command whose usage to print, when the error is about one.
    var command: String?

    init(_ message: String, command: String? = nil) {
        self.message = message
        self.command = command
    }

    var description: String { message }
}

extension Invocation {
    /// The commands `cashier` knows, in the order the help lists them.
    static let commandNames = ["list", "show", "stats", "verify", "report", "prune", "remove", "demo", "help"]

    /// Parses the arguments after the program name.
    ///
    /// Options may come before, between or after the operands; `--name=value` and
    /// `--name value` are the same; `--` ends the options, so a key may start with `-`.
    static func parse(_ arguments: [String]) throws(UsageError) -> Invocation {
        guard let first = arguments.first else { throw UsageError("missing command") }
        if first == "--help" || first == "-h" {
            guard arguments.count == 1 else {
                throw UsageError("--help takes no arguments; try 'cashier-tool help COMMAND'")
            }
            return .help(command: nil)
        }
        if first == "--version" {
            guard arguments.count == 1 else { throw UsageError("--version takes no arguments") }
            return .version
        }
        if first.hasPrefix("-") { throw UsageError("unknown option '\(first)'") }
        if first == "help" {
            switch arguments.count {
            case 1: return .help(command: nil)
            case 2:
                guard commandNames.contains(arguments[1]) else { throw unknownCommand(arguments[1]) }
                return .help(command: arguments[1])
            default: throw UsageError("help takes at most one command", command: "help")
            }
        }
        guard let grammar = Grammar.all[first] else { throw unknownCommand(first) }
        let parsed = try grammar.parse(Array(arguments.dropFirst()), command: first)
        if parsed.wantsHelp { return .help(command: first) }
        return try parsed.invocation(first)
    }

    /// "unknown command 'lsit'; did you mean 'list'?"
    private static func unknownCommand(_ name: String) -> UsageError {
        UsageError("unknown command '\(name)'" + Suggestion.clause(name, among: commandNames))
    }
}

/// The options and operands one command takes.
private struct Grammar {
    var flags: Set<String> = []
    var valued: Set<String> = []
    var operands: ClosedRange<Int>
    var operandNames: String

    static let all: [String: Grammar] = [
        "list": Grammar(flags: ["--json"], valued: ["--sort"], operands: 1...1, operandNames: "DIR"),
        "show": Grammar(flags: ["--json"], operands: 2...2, operandNames: "DIR KEY"),
        "stats": Grammar(flags: ["--json"], operands: 1...1, operandNames: "DIR"),
        "verify": Grammar(flags: ["--json"], operands: 1...1, operandNames: "DIR"),
        "prune": Grammar(
            flags: ["--json", "--expired", "--damaged", "--dry-run"], valued: ["--max-size"],
            operands: 1...1, operandNames: "DIR"),
        "remove": Grammar(flags: ["--force"], operands: 2...2, operandNames: "DIR KEY"),
        "report": Grammar(valued: ["--output", "--size-limit"], operands: 1...1, operandNames: "DIR"),
        "demo": Grammar(operands: 0...1, operandNames: "[DIR]"),
    ]

    struct Parsed {
        var flags: Set<String> = []
        var values: [String: String] = [:]
        var operands: [String] = []
        var wantsHelp = false
    }

    func parse(_ arguments: [String], command: String) throws(UsageError) -> Parsed {
        var parsed = Parsed()
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || argument == "-" || !argument.hasPrefix("-") {
                parsed.operands.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            if argument == "--help" || argument == "-h" {
                parsed.wantsHelp = true
                continue
            }
            let name: String
            let inline: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            } else {
                name = argument
                inline = nil
            }
            if flags.contains(name) {
                guard inline == nil else { throw UsageError("\(name) takes no value", command: command) }
                parsed.flags.insert(name)
            } else if valued.contains(name) {
                if let inline {
                    parsed.values[name] = inline
                } else {
                    guard index < arguments.count else { throw UsageError("\(name) needs a value", command: command) }
                    parsed.values[name] = arguments[index]
                    index += 1
                }
            } else {
                throw UsageError(
                    "unknown option '\(name)' for '\(command)'"
                        + Suggestion.clause(name, among: (flags.union(valued)).sorted() + ["--help"]),
                    command: command)
            }
        }
        if parsed.wantsHelp { return parsed }
        if parsed.operands.count < operands.lowerBound {
            throw UsageError("'\(command)' needs \(operandNames)", command: command)
        }
        if parsed.operands.count > operands.upperBound {
            throw UsageError(
                "'\(command)' takes \(operandNames), got an extra '\(parsed.operands[operands.upperBound])'",
                command: command)
        }
        return parsed
    }
}

extension Grammar.Parsed {
    func invocation(_ command: String) throws(UsageError) -> Invocation {
        let json = flags.contains("--json")
        switch command {
        case "list":
            var sort = ListSort.key
            if let value = values["--sort"] {
                guard let chosen = ListSort(rawValue: value) else {
                    throw UsageError("--sort takes key, size, age or expiry, not '\(value)'", command: command)
                }
                sort = chosen
            }
            return .list(directory: operands[0], sort: sort, json: json)
        case "show":
            return .show(directory: operands[0], key: operands[1], json: json)
        case "stats":
            return .stats(directory: operands[0], json: json)
        case "verify":
            return .verify(directory: operands[0], json: json)
        case "prune":
            var options = PruneOptions(
                expired: flags.contains("--expired"), damaged: flags.contains("--damaged"),
                dryRun: flags.contains("--dry-run"))
            if let value = values["--max-size"] {
                guard let bytes = ByteCount.parse(value) else {
                    throw UsageError(
                        "--max-size takes a byte count such as 1048576, 512K or 10M, not '\(value)'", command: command)
                }
                options.maximumSize = bytes
            }
            guard options.expired || options.damaged || options.maximumSize != nil else {
                throw UsageError("'prune' needs --expired, --damaged or --max-size BYTES", command: command)
            }
            return .prune(directory: operands[0], options: options, json: json)
        case "report":
            var sizeLimit: Int?
            if let value = values["--size-limit"] {
                guard let bytes = ByteCount.parse(value), bytes > 0 else {
                    throw UsageError(
                        "--size-limit takes a byte count such as 1048576, 512K or 150M, not '\(value)'",
                        command: command)
                }
                sizeLimit = bytes
            }
            if values["--output"]?.isEmpty == true { throw UsageError("--output needs a file name", command: command) }
            return .report(directory: operands[0], output: values["--output"], sizeLimit: sizeLimit)
        case "remove":
            return .remove(directory: operands[0], key: operands[1], force: flags.contains("--force"))
        default:
            return .demo(directory: operands.first)
        }
    }
}

/// Byte counts on the command line: digits, optionally followed by K, M or G (powers of 1024, "KiB" and "KB" alike).
enum ByteCount {
    static func parse(_ text: String) -> Int? {
        let digits = text.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, let number = Int(digits) else { return nil }
        let multiplier: Int
        switch text.dropFirst(digits.count).lowercased() {
        case "", "b": multiplier = 1
        case "k", "kb", "kib": multiplier = 1 << 10
        case "m", "mb", "mib": multiplier = 1 << 20
        case "g", "gb", "gib": multiplier = 1 << 30
        default: return nil
        }
        let (product, overflow) = number.multipliedReportingOverflow(by: multiplier)
        return overflow ? nil : product
    }
}
