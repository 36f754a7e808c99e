import Foundation

/// Runs `body` where the system cannot suspend the app halfway through it; returns `nil`
/// without running it when the system says there is no time left.
///
/// On iOS, tvOS, watchOS and visionOS (Mac Catalyst included) `body` runs inside
/// `ProcessInfo.processInfo.performExpiringActivity(withReason:using:)`: the app is not
/// suspended while the activity lasts. That matters for background sweeps and garbage
/// collection that hold the folder's advisory lock: iOS ends a suspended app that holds a
/// file lock in an App Group container (exception code 0xdead10cc). Keep `body` short: when
/// the system asks for the time back it calls the activity's block again with `expired`
/// true, and this function cannot interrupt `body`; it only declines to start it. Blocks
/// the calling thread until `body` has returned (it runs on a queue of the system's).
///
/// Elsewhere (macOS, Linux), where a process is not suspended this way, `body` runs at once.
///
/// Availability, from Apple's Foundation reference for
/// `ProcessInfo.performExpiringActivity(withReason:using:)`: iOS 8.2, Mac Catalyst 13.1,
/// tvOS 9.0, visionOS 1.0, watchOS 2.0; not macOS, hence the `#if`. Its block is
/// `@escaping @Sendable (Bool) -> Void`, called asynchronously. (Foundation API, not C, so
/// `.ci/darwin-calls.c` cannot check it; `.ci/darwin-swift.sh` type-checks the branch against
/// that documented declaration.)
package func withBackgroundActivity<R>(_ reason: String, _ body: () -> R) -> R? {
    #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
    return runExpiringActivity(body) { block in
        ProcessInfo.processInfo.performExpiringActivity(withReason: reason, using: block)
    }
    #else
    return body()
    #endif
}

/// Runs `body` through `perform`, which calls the block it is given, asynchronously, first
/// with `expired` false (or true when there is no time) and perhaps later with true; waits
/// for the first call. `perform` is the system's on iOS, a test's elsewhere.
package func runExpiringActivity<R>(_ body: () -> R, perform: (@escaping @Sendable (Bool) -> Void) -> Void) -> R? {
    withoutActuallyEscaping(body) { body in
        let activity = ExpiringActivity(body)
        perform { expired in activity.run(expired: expired) }
        activity.finished.wait()
        return activity.result
    }
}

/// One call of ``withBackgroundActivity(_:_:)``: the first call of the activity's block runs
/// the body (unless already expired); a later call, the expiry notice, finds it started.
///
/// Compiled everywhere, though only iOS-family systems use it, so Linux tests cover it.
package final class ExpiringActivity<R>: @unchecked Sendable {
    // `body` and `result` are touched only by the block's first call, and `result` read by
    // the caller after `finished` is signalled by that call: the semaphore orders them.
    // `body` is dropped before the signal: the system may keep (and call) the block after the
    // caller has returned, and `withoutActuallyEscaping` traps if `body` is still referenced.
    private var body: (() -> R)?
    package private(set) var result: R?
    package let finished = DispatchSemaphore(value: 0)
    private let started = Locked(false)

    package init(_ body: @escaping () -> R) {
        self.body = body
    }

    /// What the activity's block does when called with `expired`.
    package func run(expired: Bool) {
        let isFirstCall = started.withLock { started in
            defer { started = true }
            return !started
        }
        guard isFirstCall else { return }
        if !expired, let body { result = body() }
        body = nil
        finished.signal()
    }
}
