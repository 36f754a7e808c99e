import Foundation

/// How long an opening of the store waits for another process's lock, so that a process locked
/// out of the store (another process's exclusive lock, on a full volume) waits for it at most
/// once a call, not at each of the openings one call makes.
///
/// After an opening waited and found the lock still held (`SQLITE_BUSY`), the openings that
/// follow within ``retryInterval`` try once without waiting: a call that opens the store more
/// than once (a memory tier's ticket, then the read itself) waits one busy timeout in all, and
/// the calls right after it fail at once. Once the interval has passed, an opening waits again.
///
/// Invariant for `@unchecked Sendable`: `failedAt` and `waitsThatFailed` are read and written
/// only while `lock` is held; the `let`s never change.
package final class StoreOpenBackoff: @unchecked Sendable {
    /// How long after a failed wait openings try without waiting, in nanoseconds.
    package let retryInterval: UInt64
    /// The monotonic clock, in nanoseconds (a test's own, to step through the interval).
    private let clock: @Sendable () -> UInt64
    private let lock = NSLock()
    /// When an opening that waited last found the lock held; nil after an opening succeeded.
    private var failedAt: UInt64?
    private var waitsThatFailed = 0

    /// `retryInterval`: one second by default, longer than the openings of one call take
    /// after a failed wait (each fails at once), shorter than an app's pause between calls.
    package init(
        retryInterval: UInt64 = 1_000_000_000,
        clock: @escaping @Sendable () -> UInt64 = MonotonicDeadline.nanosecondsNow
    ) {
        self.retryInterval = retryInterval
        self.clock = clock
    }

    /// The wait, in milliseconds, an opening may spend on another process's lock: `planned`,
    /// or 0 within ``retryInterval`` of a wait that found the lock held.
    package func wait(_ planned: Int32) -> Int32 {
        let now = clock()
        lock.lock()
        defer { lock.unlock() }
        guard let failedAt, now &- failedAt < retryInterval else { return planned }
        return 0
    }

    /// Notes how an opening that waited `waited` milliseconds ended: `busy` when another
    /// process's lock was still held.
    package func note(busy: Bool, waited: Int32) {
        let now = clock()
        lock.lock()
        defer { lock.unlock() }
        if !busy {
            failedAt = nil
        } else if waited > 0 {
            failedAt = now
            waitsThatFailed += 1
        }
    }

    /// How many openings waited for another process's lock and found it still held.
    package var failedWaits: Int {
        lock.lock()
        defer { lock.unlock() }
        return waitsThatFailed
    }
}
