import CashierPlatform
import Dispatch
import Foundation

/// Runs garbage collection every so often on a background queue of its own.
final class GarbageCollectionTimer: Sendable {
    private let interval: TimeInterval
    private let timer = Locked<TimerSource?>(nil)
    /// Serial: one round at a time, and ``waitForRunningRound()`` waits behind the current one.
    private let queue = DispatchQueue(label: "Cashier.GarbageCollection", qos: .utility)

    init(interval: TimeInterval) {
        self.interval = interval
    }

    func start(_ work: @escaping @Sendable () -> Void) {
        let source = TimerSource(queue: queue, interval: interval, work)
        timer.withLock { $0 = source }
        source.resume()
    }

    /// Returns once a round the timer has started is over (at once when none is running).
    func waitForRunningRound() {
        queue.sync {}
    }

    func stop() {
        timer.withLock { timer in
            timer?.cancel()
            timer = nil
        }
    }
}

/// A repeating dispatch timer, wrapped as `MemoryPressureSource` wraps its dispatch source.
///
/// `@unchecked Sendable`: its one property is a constant dispatch source, an object Dispatch
/// makes safe to use from any thread, though `DispatchSourceTimer` is not marked `Sendable`
/// on every platform. Its handler is set once, in `init`, before the source is shared.
private final class TimerSource: @unchecked Sendable {
    private let source: any DispatchSourceTimer

    init(queue: DispatchQueue, interval: TimeInterval, _ work: @escaping @Sendable () -> Void) {
        source = DispatchSource.makeTimerSource(queue: queue)
        source.schedule(deadline: .now() + interval, repeating: interval, leeway: .seconds(1))
        source.setEventHandler(handler: work)
    }

    func resume() {
        source.resume()
    }

    func cancel() {
        source.cancel()
    }
}
