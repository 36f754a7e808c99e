import CashierPlatform
import Foundation

/// One call of a ``SharedTier``, bounded in time: the answer, or ``TimedOut`` once
/// ``Cache/Configuration-swift.struct/sharedTierTimeout`` has passed, whichever comes first.
///
/// The call runs in a task of its own, so a caller that stops waiting does not wait for it:
/// at the timeout the call is cancelled (an implementation should give up then) and the
/// caller goes on. The call's task is handed back too, for a caller that must not start the
/// next call before this one has ended, cancelled or not (the writes, kept in order).
enum SharedTierCall {
    /// The call took longer than its bound.
    struct TimedOut: Error, CustomStringConvertible {
        var seconds: TimeInterval
        var description: String { "no answer within \(seconds) s" }
    }

    /// Runs `operation`; answers its outcome, or ``TimedOut`` after `seconds`, with its task.
    static func run<T: Sendable>(
        within seconds: TimeInterval, _ operation: @escaping @Sendable () async throws -> T
    ) async -> (outcome: Result<T, any Error>, call: Task<T, any Error>) {
        let first = FirstOutcome<T>()
        let call = Task {
            do {
                let value = try await operation()
                first.offer(.success(value))
                return value
            } catch {
                first.offer(.failure(error))
                throw error
            }
        }
        // NaN, negative, infinite and huge bounds: no timer for the last two, none to wait for the first two.
        let nanoseconds = seconds.isNaN ? 0 : min(max(seconds, 0), 1e9) * 1e9
        let timer: Task<Void, Never>? =
            seconds.isInfinite
            ? nil
            : Task {
                guard (try? await Task.sleep(nanoseconds: UInt64(nanoseconds))) != nil else { return }
                if first.offer(.failure(TimedOut(seconds: seconds))) { call.cancel() }
            }
        let outcome = await first.outcome()
        timer?.cancel()
        return (outcome, call)
    }
}

/// The first of several outcomes offered, for one waiter.
private final class FirstOutcome<T: Sendable>: Sendable {
    private typealias Waiter = CheckedContinuation<Result<T, any Error>, Never>
    private let state = Locked<(outcome: Result<T, any Error>?, waiter: Waiter?)>((nil, nil))

    /// Keeps `outcome` if none came before it, and resumes the waiter; whether it was the first.
    @discardableResult
    func offer(_ outcome: Result<T, any Error>) -> Bool {
        let (isFirst, waiter) = state.withLock { state in
            guard state.outcome == nil else { return (false, nil as Waiter?) }
            state.outcome = outcome
            defer { state.waiter = nil }
            return (true, state.waiter)
        }
        waiter?.resume(returning: outcome)
        return isFirst
    }

    /// The first outcome offered, waiting for it.
    func outcome() async -> Result<T, any Error> {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state in
                if state.outcome == nil { state.waiter = continuation }
                return state.outcome
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
