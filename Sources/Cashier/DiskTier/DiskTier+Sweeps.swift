import CashierPlatform
import Foundation

/// Size sweeps: after a write past the size limit, entries are removed in the eviction order
/// the cache chose (frequency-aware by default), off the caller's thread, on a serial queue of
/// the folder's own.
///
/// The queue runs the sweep the cache hands it (``sweepIfNeeded(limits:sweep:)``): the cache
/// plans it here (``planSweep(limits:at:)``), applies it under the key barrier and reports it;
/// the disk layer only schedules, retries and waits.
extension DiskTier {
    /// A sweep's outcome: what it removed, or `nil` when another process held the folder lock
    /// (the sweep is tried again a second later).
    package typealias Sweep = @Sendable () -> [Removal]?

    /// Schedules `sweep` off the caller's thread if the folder may be over `limits.size`.
    package func sweepIfNeeded(limits: Limits, sweep: @escaping Sweep) {
        guard let limit = limits.size else { return }
        guard openedIndex.mayExceed(limit) else { return }
        let shouldSchedule = state.withLock { state -> Bool in
            guard !state.sweepScheduled else { return false }
            state.sweepScheduled = true
            return true
        }
        guard shouldSchedule else { return }
        scheduleSweep(after: nil, sweep)
    }

    /// Runs a sweep on the sweep queue, inside an expiring background activity where the
    /// platform has them, never waiting for the folder lock: when another process holds it,
    /// the sweep is tried again a second later (a suspended app must not wait on, or hold, a
    /// file lock: iOS ends it, 0xdead10cc).
    private func scheduleSweep(after delay: Double?, _ sweep: @escaping Sweep) {
        pendingSweeps.enter()
        let work: @Sendable () -> Void = { [self] in
            defer { pendingSweeps.leave() }
            switch withBackgroundActivity("Cashier size sweep", sweep) {
            case .some(.some):
                break
            case .some(.none):
                // Entered before this one leaves: a waiter never sees a gap between the two.
                scheduleSweep(after: 1, sweep)
            case .none:
                // The system ended the activity before it began: the next write schedules anew.
                state.withLock { $0.sweepScheduled = false }
            }
        }
        if let delay {
            sweepQueue.asyncAfter(deadline: .now() + delay, execute: work)
        } else {
            sweepQueue.async(execute: work)
        }
    }

    /// Waits until every scheduled sweep has finished (for tests and orderly shutdown),
    /// including one retried because another process held the folder lock: that wait
    /// lasts as long as the other process keeps the lock.
    package func waitForSweeps() {
        flushUses()
        pendingSweeps.wait()
    }

    /// Waits only for the sweep attempts queued so far, not for their retries (for tests).
    package func drainSweepQueue() {
        sweepQueue.sync {}
    }

    /// Plans a sweep: entries out in the eviction order until the folder is at
    /// `limits.sweepTarget` of `limits.size`. Call holding the folder lock and no key lock
    /// (it rescans the folder and reads the headers of the entries it reaches), then apply
    /// the plan under the key barrier.
    /// `now`: the cache's clock, which the uses of rows are counted by.
    package func planSweep(limits: Limits, at now: Double) -> RemovalPlan {
        state.withLock { $0.sweepScheduled = false }
        // Nothing while the folder's store cannot be opened (``indexForChanging()``).
        return indexForChanging()?.planSweep(limits: limits, at: now) ?? RemovalPlan()
    }
}
