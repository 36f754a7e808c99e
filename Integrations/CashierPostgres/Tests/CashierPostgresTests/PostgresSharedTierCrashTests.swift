import Cashier
import Foundation
import PostgresNIO
import Testing

@testable import CashierPostgres

#if canImport(Glibc)
import Glibc
#endif

/// PostgreSQL killed as a crash would (`pg_ctl stop -m immediate`) right after the tier
/// acknowledged changes, then started again: every acknowledged change is there.
///
/// It kills the server every other test uses, so it runs alone: `.ci/integrations.sh` runs it
/// after the package's other tests, with `CASHIER_POSTGRES_CRASH` naming a command that kills
/// the server and starts it again, on a cluster set to `synchronous_commit = off`.
@Suite(
    .enabled(
        if: TestDatabase.isConfigured && CrashCommand.command != nil,
        "\(CrashCommand.variable) is not set: no command to crash PostgreSQL with"))
struct PostgresSharedTierCrashTests {
    /// Makes `count` changes, each acknowledged before the next, on a tier with
    /// `durableCommits`: stores, stores that remove the key's other versions, ordered removals
    /// and removals of a key, in turn; crashes PostgreSQL at once; answers how many of the
    /// changes a fresh tier reads as made (a record stored is there, one removed is not).
    static func changesAfterACrash(durableCommits: Bool, count: Int) async throws -> Int {
        let configuration = try #require(TestDatabase.configuration)
        let command = try #require(CrashCommand.command)
        var options = TestDatabase.options()
        options.durableCommits = durableCommits
        options.operationTimeout = .seconds(10)
        let slots = (0..<count).map { SharedSlot(name: "key-\($0)", version: "schema-\($0 % 2 + 1)") }
        let later = writtenAtStart.addingTimeInterval(60)
        let writer = PostgresSharedTier(configuration: configuration, options: options)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await writer.run() }
            for (index, slot) in slots.enumerated() {
                switch index % 4 {
                case 0: try await writer.store(record(slot.name), in: slot)
                case 1: _ = try await writer.store(record(slot.name), in: slot, removingOtherVersions: true)
                case 2:
                    // Stored, acknowledged, then removed: a removal lost would bring it back.
                    try await writer.store(record(slot.name), in: slot)
                    try await writer.removeRecords(named: slot.name, writtenBefore: later)
                default:
                    try await writer.store(record(slot.name), in: slot)
                    try await writer.removeRecords(named: slot.name)
                }
            }
            group.cancelAll()
        }
        try #require(run(command) == 0, "\(command) failed")
        return try await TestDatabase.withTiers(1, options: options) { readers, _ in
            var made = 0
            for (index, slot) in slots.enumerated() {
                let read = try await readers[0].record(in: slot)
                if index % 4 < 2 ? read == record(slot.name) : read == nil { made += 1 }
            }
            return made
        }
    }

    @Test func acknowledgedChangesSurviveAKill() async throws {
        #expect(try await Self.changesAfterACrash(durableCommits: true, count: 400) == 400)
    }
}

/// The command that crashes PostgreSQL and starts it again, from `CASHIER_POSTGRES_CRASH`.
enum CrashCommand {
    static let variable = "CASHIER_POSTGRES_CRASH"
    static var command: String? { ProcessInfo.processInfo.environment[variable].flatMap { $0.isEmpty ? nil : $0 } }
}

/// Runs `command` with `/bin/bash -c` and answers its exit status (`-1`: it could not start).
/// `posix_spawn` and `waitpid` rather than `Process`, whose wait for its child's exit did not
/// return inside a test here (the child left a zombie).
private func run(_ command: String) -> Int32 {
    let arguments = ["/bin/bash", "-c", command]
    var pointers = arguments.map { strdup($0) }
    pointers.append(nil)
    defer { for pointer in pointers { free(pointer) } }
    var child = pid_t()
    guard posix_spawn(&child, "/bin/bash", nil, nil, pointers, environ) == 0 else { return -1 }
    var status: Int32 = 0
    while waitpid(child, &status, 0) < 0 {
        guard errno == EINTR else { return -1 }
    }
    // WIFEXITED and WEXITSTATUS (<sys/wait.h>), macros Swift does not import.
    return status & 0x7f == 0 ? (status >> 8) & 0xff : -1
}
