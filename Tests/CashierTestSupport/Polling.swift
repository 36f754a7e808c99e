import Foundation

/// Polls `condition` every 5 ms until it holds or `seconds` have passed; whether it held.
///
/// For waiting on what another process or thread does, where no event says it happened. The
/// deadline is generous on purpose: it bounds how long a failure takes to be reported, it does
/// not measure a speed.
public func poll(seconds: Double = 60, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(5_000)
    }
    return condition()
}
