import Cashier
import CashierPlatform
import CashierTestSupport
import Foundation

// The child process of Cashier's crash-kill and multi-process tests
// (Tests/CashierProcessTests). Not part of the library; usable by hand:
//
//   CashierStress churn DIR SEED
//       Writes, overwrites and removes entries of the workload in DIR forever,
//       printing "ready" once the first write has landed. Made to be killed.
//       An even SEED writes with `durability = .synchronized` (fsync before
//       `set` returns), an odd one with the default.
//   CashierStress share DIR SEED OPERATIONS SIZE-LIMIT
//       Runs OPERATIONS random operations on DIR with `diskSizeLimit` SIZE-LIMIT
//       and garbage collection every 50 ms, checking every value it reads.
//       Prints "done" and waits for a line on standard input, then collects
//       garbage and prints "report COUNT TOTAL-SIZE".
//   CashierStress rows-churn DIR SEED
//       As churn, with small values only: every entry a row of the folder's store.
//   CashierStress rows-write DIR KEYS WRITES PREFIX...
//       For each write i < WRITES and each PREFIX, stores a small value of generation i
//       under PREFIX-(i % KEYS), printing "wrote i" once they returned, then "done"
//       (SmallValues.swift).
//   CashierStress check DIR
//       Reads every key of the workload and prints what it found.
//   CashierStress relaunch DIR write|read
//       Writes, or reads back, a value of a `private` model type (whose reflected
//       name carries an address that changes at every launch) under a versioned
//       and an unversioned key. `read` prints "read NAME NAME", or "missed" and
//       the events seen, and exits 1 on a miss.
//   CashierStress touch DIR KEY...
//       Reads each KEY (a `Data` value) twice, from disk then from memory, waits
//       for the cache's background work and prints "touched N" (N values found):
//       a launch whose reads the next launch's eviction order must remember.
//   CashierStress frequency DIR START READS ONE-TIME
//       With the clock at START, writes "hot" and reads it READS times minutes apart,
//       then writes ONE-TIME keys read never; prints "hot N" (Frequency.swift).
//   CashierStress slide DIR write|read SECONDS...
//       With the cache's clock at each SECONDS (since 1970) in turn, writes a value
//       with a lifespan of `.sinceLastUse(100)`, or reads it and prints "hit" or
//       "miss" per read; exits without any other disk work, as a killed app would.
//   CashierStress coherence DIR set KEY VALUE | coherence DIR remove KEY
//       Sets a `String` value, or removes it, and prints "done" (Coherence.swift).
//   CashierStress race DIR small|large KEYS | race-loop DIR KEY ITERATIONS small|large
//       Two processes writing the same keys, one as rows and one as files (WhereAppsRun.swift).
//   CashierStress remove DIR PREFIX
//       Writes 400 values, then removes them one by one, printing "removed KEY" after each.
//   CashierStress limit-churn DIR SEED SIZE-LIMIT
//       Writes random small and large values under a size limit forever, printing "ready".
//   CashierStress files DIR COUNT
//       Writes COUNT values as files, as Cashier 0.1.0 did (WhereAppsRun.swift).
//   CashierStress session DIR MEMORY-COUNT-LIMIT [SIZE-LIMIT]
//       Runs commands read from standard input, one answer line each (WhereAppsRun.swift).
//
// Exit status: 0 when every value read was sound, 1 when one was not, 2 on usage errors.

func configuration(_ folder: String, sizeLimit: Int? = nil, collectsGarbage: Bool = false) -> Cache.Configuration {
    var configuration = Cache.Configuration(name: "stress")
    configuration.location = .directory(URL(fileURLWithPath: folder, isDirectory: true))
    configuration.appVersion = "stress"
    configuration.diskSizeLimit = sizeLimit
    // A small memory tier, so most reads go to the disk other processes write to.
    configuration.memoryCountLimit = 2
    if collectsGarbage { configuration.garbageCollectionInterval = 0.05 }
    return configuration
}

/// How many events of each kind a process saw.
final class EventCounts: @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [String: Int] = [:] // guarded by lock

    func add(_ name: String) { lock.withLock { counts[name, default: 0] += 1 } }

    var summary: String {
        lock.withLock { counts.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ") }
    }
}

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data("CashierStress: \(message)\n".utf8))
    exit(status)
}

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch (arguments.first, arguments.count) {
case ("churn", 3):
    guard let seed = UInt64(arguments[2]) else { fail("SEED must be a number", status: 2) }
    Workload.churn(folder: arguments[1], seed: seed, maximumFiller: 64 * 1024)

case ("rows-churn", 3):
    guard let seed = UInt64(arguments[2]) else { fail("SEED must be a number", status: 2) }
    SmallValues.churn(folder: arguments[1], seed: seed)

case ("rows-write", let count) where count >= 5:
    guard let keys = Int(arguments[2]), keys > 0, let writes = Int(arguments[3]) else {
        fail("KEYS and WRITES must be numbers", status: 2)
    }
    SmallValues.write(folder: arguments[1], keys: keys, writes: writes, prefixes: Array(arguments.dropFirst(4)))

case ("share", 5):
    guard let seed = UInt64(arguments[2]), let operations = Int(arguments[3]), let limit = Int(arguments[4]) else {
        fail("SEED, OPERATIONS and SIZE-LIMIT must be numbers", status: 2)
    }
    let events = EventCounts()
    var configuration = configuration(arguments[1], sizeLimit: limit, collectsGarbage: true)
    configuration.onEvent = { event in
        let name: String =
            switch event {
            case .evicted: "evicted"
            case .discarded(_, let reason): "discarded-\(shortName(reason))"
            default: ""
            }
        if !name.isEmpty { events.add(name) }
    }
    let cache = Cache(configuration)
    var random = SplitMix64(seed: seed)
    var unsound = [String]()
    for operation in 0..<operations {
        do {
            unsound += try Workload.step(
                cache, random: &random, generation: seed << 32 | UInt64(operation), maximumFiller: 4 * 1024)
        } catch {
            fail("write failed: \(error)", status: 1)
        }
        if operation % 100 == 99 { cache.collectGarbage() }
    }
    unsound += Workload.check(cache).unsound
    cache.waitForBackgroundWork()
    if !unsound.isEmpty { fail("unsound values read for \(unsound)", status: 1) }
    say("done \(events.summary)")
    _ = readLine()
    cache.collectGarbage()
    say("report \(cache.count) \(cache.totalSize)")

case ("relaunch", 3):
    let events = Locked<[String]>([])
    var settings = configuration(arguments[1])
    settings.onEvent = { event in events.withLock { $0.append("\(event)") } }
    let cache = Cache(settings)
    let keys = [
        CacheKey<PrivateModel>("private-versioned", schemaVersion: 1), CacheKey<PrivateModel>("private-unversioned"),
    ]
    switch arguments[2] {
    case "write":
        for key in keys {
            do { try cache.set(PrivateModel(name: key.name), for: key) } catch {
                fail("write failed: \(error)", status: 1)
            }
        }
        say("wrote")
    case "read":
        let names = keys.compactMap { cache.value(for: $0)?.name }
        guard names.count == keys.count else {
            say("missed: \(events.withLock { $0 }.joined(separator: "; "))")
            exit(1)
        }
        say("read \(names.joined(separator: " "))")
    default:
        fail("relaunch takes write or read", status: 2)
    }

case ("check", 2):
    let findings = Workload.check(Cache(configuration(arguments[1])))
    say("\(findings)")
    exit(findings.unsound.isEmpty ? 0 : 1)

case ("touch", let count) where count >= 3:
    let cache = Cache(configuration(arguments[1]))
    var found = 0
    for name in arguments.dropFirst(2) {
        if cache.value(for: CacheKey<Data>(name)) != nil { found += 1 }
        _ = cache.value(for: CacheKey<Data>(name))
    }
    cache.waitForBackgroundWork()
    say("touched \(found)")

case ("frequency", _):
    runFrequency(arguments)

case ("slide", let count) where count >= 4:
    let moments = arguments.dropFirst(3).compactMap(Double.init)
    guard moments.count == count - 3 else { fail("slide takes moments in seconds since 1970", status: 2) }
    let now = Locked(moments[0])
    var settings = configuration(arguments[1])
    settings.now = { Date(timeIntervalSince1970: now.withLock { $0 }) }
    let cache = Cache(settings)
    let key = CacheKey<String>("sliding", lifespan: .sinceLastUse(100))
    var answers: [String] = []
    for moment in moments {
        now.withLock { $0 = moment }
        switch arguments[2] {
        case "write":
            do { try cache.set("token", for: key) } catch { fail("write failed: \(error)", status: 1) }
            answers.append("wrote")
        case "read":
            answers.append(cache.value(for: key) == "token" ? "hit" : "miss")
        default:
            fail("slide takes write or read", status: 2)
        }
    }
    say(answers.joined(separator: " "))
    // No waitForBackgroundWork, and `exit` runs no deinit: what the next launch sees was written by the reads.
    exit(0)

case ("coherence", _):
    runCoherence(Array(arguments.dropFirst()))

case ("race", 4):
    guard ["small", "large"].contains(arguments[2]), let keys = Int(arguments[3]) else {
        fail("race takes DIR small|large KEYS", status: 2)
    }
    RowFileRace.once(folder: arguments[1], large: arguments[2] == "large", keys: keys)

case ("race-loop", 5):
    guard let iterations = Int(arguments[3]), ["small", "large"].contains(arguments[4]) else {
        fail("race-loop takes DIR KEY ITERATIONS small|large", status: 2)
    }
    RowFileRace.loop(
        folder: arguments[1], key: arguments[2], iterations: iterations, startsLarge: arguments[4] == "large")

case ("remove", 3):
    RemovalAfterKill.run(folder: arguments[1], prefix: arguments[2])

case ("limit-churn", 4):
    guard let seed = UInt64(arguments[2]), let limit = Int(arguments[3]) else {
        fail("SEED and SIZE-LIMIT must be numbers", status: 2)
    }
    LimitChurn.run(folder: arguments[1], seed: seed, sizeLimit: limit)

case ("files", 3):
    guard let count = Int(arguments[2]) else { fail("COUNT must be a number", status: 2) }
    OldFolder.run(folder: arguments[1], count: count)

case ("session", _):
    Session.run(Array(arguments.dropFirst()))

default:
    fail(
        "usage: CashierStress churn DIR SEED | rows-churn DIR SEED | rows-write DIR KEYS WRITES PREFIX... | share DIR SEED OPERATIONS SIZE-LIMIT | check DIR | relaunch DIR write|read | touch DIR KEY... | frequency DIR START READS ONE-TIME | slide DIR write|read SECONDS... | coherence DIR set KEY VALUE | coherence DIR remove KEY | race DIR small|large KEYS | race-loop DIR KEY ITERATIONS small|large | remove DIR PREFIX | limit-churn DIR SEED SIZE-LIMIT | files DIR COUNT | session DIR MEMORY-COUNT-LIMIT [SIZE-LIMIT]",
        status: 2)
}

/// A model only this file sees: `String(reflecting:)` names it with its context's address.
private struct PrivateModel: Codable, Sendable {
    var name: String
}

/// A discard reason's case name, one word for the event summary.
func shortName(_ reason: DiscardReason) -> String {
    switch reason {
    case .schemaMismatch: "schemaMismatch"
    case .appVersionMismatch: "appVersionMismatch"
    case .typeMismatch: "typeMismatch"
    case .corrupt: "corrupt"
    case .undecodable: "undecodable"
    case .expired: "expired"
    case .migrationFailed: "migrationFailed"
    }
}
