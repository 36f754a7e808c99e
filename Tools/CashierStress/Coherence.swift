import Cashier
import Foundation

// CashierStress coherence DIR set KEY VALUE | remove KEY
//     Sets KEY (a `String` value under schema version 1) to VALUE, or removes it, in DIR,
//     then prints "done": another process's write, which the test process must not keep
//     serving from its memory tier.

/// Runs `coherence` with its arguments after the subcommand's name.
func runCoherence(_ arguments: [String]) -> Never {
    guard arguments.count >= 3 else { fail("coherence takes DIR set KEY VALUE or DIR remove KEY", status: 2) }
    let cache = Cache(configuration(arguments[0]))
    let key = CacheKey<String>(arguments[2], schemaVersion: 1)
    switch (arguments[1], arguments.count) {
    case ("set", 4):
        do { try cache.set(arguments[3], for: key) } catch { fail("write failed: \(error)", status: 1) }
    case ("remove", 3):
        cache.removeValue(for: key)
    default:
        fail("coherence takes DIR set KEY VALUE or DIR remove KEY", status: 2)
    }
    cache.waitForBackgroundWork()
    say("done")
    exit(0)
}
