import Testing

/// What a bounded wait ended with.
enum Bounded<T: Sendable>: Sendable {
    case finished(T)
    case timedOut
}

/// Runs `body` and returns what it returns, or, after `seconds`, cancels it, records an issue
/// saying that `what` never happened, and returns `nil`: a test that would hang fails instead,
/// with a message. `body` must end when cancelled (iterating an `AsyncStream` does).
func bounded<T: Sendable>(
    _ what: String, seconds: Double = 30, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @escaping @Sendable () async -> T
) async -> T? {
    let outcome = await withTaskGroup(of: Bounded<T>.self) { group in
        group.addTask { .finished(await body()) }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))
            return .timedOut
        }
        let first = await group.next() ?? .timedOut
        group.cancelAll()
        return first
    }
    guard case .finished(let value) = outcome else {
        Issue.record("\(what) did not happen within \(seconds) seconds", sourceLocation: sourceLocation)
        return nil
    }
    return value
}
