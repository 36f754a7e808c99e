import NIOConcurrencyHelpers

/// Runs `body` and returns what it returns, or throws
/// ``PostgresSharedTierError/timedOut(operation:after:)`` once `duration` has passed, whichever
/// comes first; cancelling the caller throws `CancellationError` at once.
///
/// Unstructured on purpose. A task group returns only when every child has, and a query already
/// on the wire does not end when its task is cancelled (postgres-nio cancels the wait for a
/// connection, not an answer): a group would wait for a server that does not answer. Here the
/// caller is resumed by the first of the three outcomes; `body` is cancelled and ends on its own.
func withDeadline<T: Sendable>(
    _ duration: Duration, operation: String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let race = Race<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            race.wait(continuation)
            race.add(
                Task {
                    do { race.finish(.success(try await body())) } catch { race.finish(.failure(error)) }
                })
            race.add(
                Task {
                    // Cancelled when the body finishes first: then `finish` below is never reached.
                    guard (try? await Task.sleep(for: duration)) != nil else { return }
                    race.finish(.failure(PostgresSharedTierError.timedOut(operation: operation, after: duration)))
                })
        }
    } onCancel: {
        race.finish(.failure(CancellationError()))
    }
}

/// The first outcome of a ``withDeadline(_:operation:_:)``, delivered once to its waiter.
///
/// `finish` may run before `wait` (a caller cancelled before it suspended) and before `add` (a
/// body that returns at once): each step checks, under the lock, whether the outcome is in.
private final class Race<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var outcome: Result<T, any Error>?
        var tasks: [Task<Void, Never>] = []
    }

    private let state = NIOLockedValueBox(State())

    func wait(_ continuation: CheckedContinuation<T, any Error>) {
        let outcome = state.withLockedValue { state -> Result<T, any Error>? in
            if state.outcome == nil { state.continuation = continuation }
            return state.outcome
        }
        if let outcome { continuation.resume(with: outcome) }
    }

    func add(_ task: Task<Void, Never>) {
        let isOver = state.withLockedValue { state -> Bool in
            if state.outcome == nil { state.tasks.append(task) }
            return state.outcome != nil
        }
        if isOver { task.cancel() }
    }

    func finish(_ outcome: Result<T, any Error>) {
        let taken = state.withLockedValue { state -> (CheckedContinuation<T, any Error>?, [Task<Void, Never>])? in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer {
                state.continuation = nil
                state.tasks = []
            }
            return (state.continuation, state.tasks)
        }
        guard let (continuation, tasks) = taken else { return }
        continuation?.resume(with: outcome)
        for task in tasks { task.cancel() }
    }
}
