import CashierPlatform

/// A change to one key (or to all, when `name` is nil) made through a ``Cache`` of this process.
struct Change: Sendable {
    /// The key's name; `nil` for a change to every key (``Cache/removeAll()``).
    var name: String?
    /// The new value, or `nil` when the entry went away.
    var value: (any Sendable)?
    /// The instance that made the change, so it can skip its own notifications.
    var origin: ObjectIdentifier?
}

/// Delivers changes to the caches and streams sharing one folder in this process.
final class ChangeHub: Sendable {
    typealias Handler = @Sendable (Change) -> Void
    private struct Subscriber {
        var name: String?
        var handler: Handler
    }
    private let state = Locked<(next: Int, subscribers: [Int: Subscriber])>((0, [:]))

    /// Subscribes `handler` to changes of `name`, or of every key when `name` is nil.
    func subscribe(name: String?, _ handler: @escaping Handler) -> Int {
        state.withLock { state in
            state.next += 1
            state.subscribers[state.next] = Subscriber(name: name, handler: handler)
            return state.next
        }
    }

    func unsubscribe(_ id: Int) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: id) }
    }

    var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// Calls every interested subscriber, outside the lock, on the calling thread.
    func publish(_ change: Change) {
        let handlers = state.withLock { state in
            state.subscribers.values.compactMap { subscriber in
                subscriber.name == nil || change.name == nil || subscriber.name == change.name
                    ? subscriber.handler : nil
            }
        }
        for handler in handlers { handler(change) }
    }
}
