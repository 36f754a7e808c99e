import Cashier
import CashierTestSupport
import Foundation

// The subcommands of the store's multi-process tests (Tests/CashierProcessTests/StoreProcessRaceTests.swift):
//
//   CashierStress race DIR small|large KEYS
//       (The large writer first writes every key once.) Prints "ready", then for each of KEYS
//       keys waits for a line ("go [MICROSECONDS]"), waits that long, writes the key once, a
//       small value (100 bytes, a row) or a large one (20 KiB, a file), and prints "wrote I";
//       then "done".
//   CashierStress race-loop DIR KEY ITERATIONS small|large
//       With no memory tier: prints "ready", waits for a line, then ITERATIONS times sets KEY,
//       alternating small and large values (starting with the one named), and reads it back;
//       prints "done sets=N nil=N unsound=N errors=N" (reads that found nothing, or a value
//       neither process wrote; writes that threw). Each set that threw, read that found nothing
//       and failure event goes to standard error, with the milliseconds since the line.
//   CashierStress remove DIR PREFIX
//       Writes 200 large and 200 small values, prints "written", then removes them one by
//       one, printing "removed KEY" after each removeValue returned; then "done". Made to be killed.
//   CashierStress limit-churn DIR SEED SIZE-LIMIT
//       Writes random small and large values (and removes some) under a size limit forever,
//       printing "ready" once the first write has landed. Made to be killed.
//   CashierStress files DIR COUNT
//       Writes COUNT values as files, as Cashier 0.1.0 did, locks one, and prints "done".
//   CashierStress session DIR MEMORY-COUNT-LIMIT [SIZE-LIMIT]
//       Prints "ready", then runs one command per line of standard input and answers each with
//       one line (Session below), until "exit" or the end of the input.

/// The values two processes race with: one always a row, one always a file.
public enum RowFileRace {
    /// 100 bytes: a row of the store.
    public static let smallLength = 100
    /// 20 KiB: over the row limit (8 KiB), a file.
    public static let largeLength = 20 * 1024

    public static func key(_ index: Int) -> String { "race-\(index)" }

    /// The value a process writes under `key`, small or large: the same bytes in every process.
    public static func value(for key: String, large: Bool) -> Data {
        let length = large ? largeLength : smallLength
        return Workload.data(for: key, generation: large ? 2 : 1, fillerLength: length - 16, seed: large ? 2 : 1)
    }

    /// `race DIR small|large KEYS`: one key per line read, so two processes driven line by line
    /// start each key's write at the same moment (or as many microseconds after it as the line
    /// says: where the two writes overlap). The large writer first gives every key a file of its
    /// own, so the small writes replace file rows, as in an app that cached an image before.
    static func once(folder: String, large: Bool, keys: Int) -> Never {
        let cache = Cache(configuration(folder))
        if large {
            for index in 0..<keys {
                let name = key(index)
                do { try cache.set(value(for: name, large: true), for: CacheKey<Data>(name)) } catch {
                    fail("write of \(name) failed: \(error)", status: 1)
                }
            }
        }
        say("ready")
        for index in 0..<keys {
            guard let line = readLine() else { fail("input ended before key \(index)", status: 2) }
            // Not waiting for an effect: choosing where the two writes overlap.
            if let delay = line.split(separator: " ").dropFirst().first.flatMap({ UInt32($0) }) { usleep(delay) }
            let name = key(index)
            do { try cache.set(value(for: name, large: large), for: CacheKey<Data>(name)) } catch {
                fail("write of \(name) failed: \(error)", status: 1)
            }
            say("wrote \(index)")
        }
        say("done")
        exit(0)
    }

    /// `race-loop DIR KEY ITERATIONS small|large`.
    static func loop(folder: String, key name: String, iterations: Int, startsLarge: Bool) -> Never {
        var settings = configuration(folder)
        settings.memoryCountLimit = 0
        // What a failed set or a read that found nothing met, for the test's log (standard error).
        settings.onEvent = { event in
            switch event {
            case .failure, .discarded: FileHandle.standardError.write(Data("CashierStress: event \(event)\n".utf8))
            default: break
            }
        }
        let cache = Cache(settings)
        let key = CacheKey<Data>(name)
        let values = [value(for: name, large: false), value(for: name, large: true)]
        var (sets, nils, unsound, errors) = (0, 0, 0, 0)
        say("ready")
        _ = readLine()
        let start = Date()
        func elapsed() -> Int { Int(Date().timeIntervalSince(start) * 1000) }
        for iteration in 0..<iterations {
            let large = iteration.isMultiple(of: 2) == startsLarge
            do {
                try cache.set(values[large ? 1 : 0], for: key)
                sets += 1
            } catch {
                errors += 1
                FileHandle.standardError.write(
                    Data("CashierStress: set \(iteration) threw at \(elapsed()) ms: \(error)\n".utf8))
            }
            switch cache.value(for: key) {
            case nil:
                nils += 1
                FileHandle.standardError.write(
                    Data("CashierStress: read after set \(iteration) found nothing at \(elapsed()) ms\n".utf8))
            case let read? where !values.contains(read): unsound += 1
            default: break
            }
        }
        say("done sets=\(sets) nil=\(nils) unsound=\(unsound) errors=\(errors)")
        exit(0)
    }
}

/// A process that removes what it wrote, to be killed while it does.
public enum RemovalAfterKill {
    public static let largeLength = 20 * 1024
    public static let smallLength = 200

    /// The keys `remove` writes and then removes, in the order it removes them (large and small alternating).
    public static func keys(prefix: String) -> [String] {
        (0..<200).flatMap { ["\(prefix)-large-\($0)", "\(prefix)-small-\($0)"] }
    }

    public static func value(for key: String) -> Data {
        let length = key.contains("-large-") ? largeLength : smallLength
        return Workload.data(for: key, generation: 3, fillerLength: length - 16, seed: 3)
    }

    /// `remove DIR PREFIX`.
    static func run(folder: String, prefix: String) -> Never {
        let cache = Cache(configuration(folder))
        let keys = keys(prefix: prefix)
        for name in keys {
            do { try cache.set(value(for: name), for: CacheKey<Data>(name)) } catch {
                fail("write of \(name) failed: \(error)", status: 1)
            }
        }
        say("written")
        for name in keys {
            cache.removeValue(for: CacheKey<Data>(name))
            say("removed \(name)")
        }
        say("done")
        exit(0)
    }
}

/// Writers under a size limit, to be killed.
public enum LimitChurn {
    /// The largest value written: the largest entry is this plus its header.
    public static let largestValue = 48 * 1024
    public static let keyCount = 120

    /// `limit-churn DIR SEED SIZE-LIMIT`.
    static func run(folder: String, seed: UInt64, sizeLimit: Int) -> Never {
        let cache = Cache(configuration(folder, sizeLimit: sizeLimit))
        var random = SplitMix64(seed: seed)
        var generation = seed << 32
        var announced = false
        while true {
            generation += 1
            let key = CacheKey<Data>("limit-\(random.next() % UInt64(keyCount))")
            let large = random.next() % 3 == 0
            let length =
                large
                ? 9 * 1024 + Int(random.next() % UInt64(largestValue - 9 * 1024 + 1))
                : 32 + Int(random.next() % 4_000)
            if random.next() % 10 == 0 {
                cache.removeValue(for: key)
            } else {
                do {
                    try cache.set(
                        Workload.data(
                            for: key.name, generation: generation, fillerLength: length - 16, seed: random.next()),
                        for: key)
                } catch {
                    fail("write failed: \(error)", status: 1)
                }
            }
            if !announced {
                announced = true
                say("ready")
            }
        }
    }
}

/// A folder as Cashier 0.1.0 left it: every entry a file (the test removes the store afterwards).
public enum OldFolder {
    public static func key(_ index: Int) -> String { "old-\(index)" }
    public static func value(for key: String) -> Data { Session.value(for: key, bytes: 300, seed: 10) }
    /// The entry `files` locks.
    public static let lockedKey = "old-0"

    /// `files DIR COUNT`: writes COUNT values as files (no row records), locks ``lockedKey``,
    /// waits for the cache's background work and prints "done".
    static func run(folder: String, count: Int) -> Never {
        var settings = configuration(folder)
        settings.rowSizeLimit = 0
        let cache = Cache(settings)
        for index in 0..<count {
            let name = key(index)
            do { try cache.set(value(for: name), for: CacheKey<Data>(name)) } catch {
                fail("write of \(name) failed: \(error)", status: 1)
            }
        }
        cache.lock(CacheKey<Data>(lockedKey))
        cache.waitForBackgroundWork()
        say("done")
        exit(0)
    }
}

/// `session DIR MEMORY-COUNT-LIMIT [SIZE-LIMIT]`: one command per line, one answer per command.
///
///     set KEY TEXT          a `String` under schema version 1 (as `coherence`): "ok" or "error TOKEN MESSAGE"
///     get KEY               "value TEXT" or "nil"
///     fill KEY BYTES SEED   a `Data` value of BYTES (Workload.data, generation SEED): "ok" or "error TOKEN MESSAGE"
///     check KEY BYTES SEED  "whole" (exactly what fill wrote), "nil" or "other"
///     remove KEY            removeValue (a `Data` key): "ok"
///     count                 "count COUNT TOTAL-SIZE"
///     keys                  "keys K1 K2 …"
///     gc                    collectGarbage, then waitForBackgroundWork: "ok"
///     wait                  waitForBackgroundWork: "ok"
///     close                 waits for background work, lets the cache go (its store closes): "closed", then exits
///     exit                  exits at once, as a killed app would (no background work waited for)
public enum Session {
    /// What `fill KEY BYTES SEED` writes, so a test can compare what it reads.
    public static func value(for key: String, bytes: Int, seed: UInt64) -> Data {
        Workload.data(for: key, generation: seed, fillerLength: max(0, bytes - 16), seed: seed)
    }

    static func run(_ arguments: [String]) -> Never {
        guard arguments.count == 2 || arguments.count == 3, let memory = Int(arguments[1]) else {
            fail("session takes DIR MEMORY-COUNT-LIMIT [SIZE-LIMIT]", status: 2)
        }
        var settings = configuration(arguments[0], sizeLimit: arguments.count == 3 ? Int(arguments[2]) : nil)
        settings.memoryCountLimit = memory
        var cache: Cache? = Cache(settings)
        say("ready")
        while cache != nil, let line = readLine() {
            if line == "close" {
                // The last reference goes before the answer: the store's connections close, its
                // log folded in (no loop binding may keep the cache alive past this line).
                cache?.waitForBackgroundWork()
                cache = nil
                say("closed")
            } else if let cache {
                say(answer(line.split(separator: " ", maxSplits: 2).map(String.init), cache: cache))
            }
        }
        exit(0)
    }

    private static func answer(_ words: [String], cache: Cache) -> String {
        func attempt(_ write: () throws -> Void) -> String {
            do {
                try write()
                return "ok"
            } catch let error as CacheError {
                return "error \(error.kind.rawValue) \(error.message)"
            } catch {
                return "error other \(error)"
            }
        }
        switch (words.first, words.count) {
        case ("set", 3):
            return attempt { try cache.set(words[2], for: CacheKey<String>(words[1], schemaVersion: 1)) }
        case ("get", 2):
            return cache.value(for: CacheKey<String>(words[1], schemaVersion: 1)).map { "value \($0)" } ?? "nil"
        case ("fill", 3), ("check", 3):
            let numbers = words[2].split(separator: " ").compactMap { Int($0) }
            guard numbers.count == 2 else { return "usage: \(words[0]) KEY BYTES SEED" }
            let value = value(for: words[1], bytes: numbers[0], seed: UInt64(numbers[1]))
            if words[0] == "fill" { return attempt { try cache.set(value, for: CacheKey<Data>(words[1])) } }
            guard let read = cache.value(for: CacheKey<Data>(words[1])) else { return "nil" }
            return read == value ? "whole" : "other"
        case ("remove", 2):
            cache.removeValue(for: CacheKey<Data>(words[1]))
            return "ok"
        case ("count", 1):
            return "count \(cache.count) \(cache.totalSize)"
        case ("keys", 1):
            return (["keys"] + cache.keys).joined(separator: " ")
        case ("gc", 1):
            cache.collectGarbage()
            cache.waitForBackgroundWork()
            return "ok"
        case ("wait", 1):
            cache.waitForBackgroundWork()
            return "ok"
        case ("exit", 1):
            exit(0)
        default:
            return "usage: unknown command \(words.joined(separator: " "))"
        }
    }
}
