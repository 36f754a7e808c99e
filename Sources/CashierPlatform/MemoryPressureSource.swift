import Dispatch

/// Tells a cache when the system runs short of memory, on Apple platforms; elsewhere
/// there is no such signal and ``init()`` answers `nil`.
///
/// The memory tier's only platform signal. The Darwin calls, each checked
/// against Apple's documentation (they are Dispatch overlay API, not C declarations that
/// `.ci/darwin-calls.c` could compile; `.ci/darwin-swift.sh` type-checks this branch against
/// the documented declarations):
/// - `DispatchSource.makeMemoryPressureSource(eventMask:queue:)` returning
///   `DispatchSourceMemoryPressure` (whose `data` is a `DispatchSource.MemoryPressureEvent`):
///   Apple's Dispatch reference lists them for iOS, iPadOS, Mac Catalyst, macOS, tvOS,
///   visionOS and watchOS with no introduction version, below every deployment target here.
///   They wrap `DISPATCH_SOURCE_TYPE_MEMORYPRESSURE` of `<dispatch/source.h>`:
///   `API_AVAILABLE(macos(10.9), ios(8.0)) DISPATCH_LINUX_UNAVAILABLE()`, hence the branch.
/// - `DispatchSource.MemoryPressureEvent.warning` and `.critical`
///   (`DISPATCH_MEMORYPRESSURE_WARN`, `DISPATCH_MEMORYPRESSURE_CRITICAL`): the same.
/// - `resume()`, `setEventHandler(handler:)`, `cancel()`: `DispatchSourceProtocol`, everywhere.
///
/// `@unchecked Sendable`: its one property is a constant dispatch source, an object Dispatch
/// makes safe to use from any thread (not every SDK marks the protocol `Sendable`).
package final class MemoryPressureSource: @unchecked Sendable {
    #if canImport(Darwin)
    private let source: any DispatchSourceMemoryPressure

    package init?() {
        // Warning and critical only: `.normal` would say the pressure is over, with nothing to do.
        source = DispatchSource.makeMemoryPressureSource(
            eventMask: [.warning, .critical], queue: .global(qos: .utility))
    }

    /// Calls `relieve` for each event, on a background queue, until ``stop()``.
    package func start(_ relieve: @escaping @Sendable (MemoryPressure) -> Void) {
        // `weak`: the source keeps its handler until cancelled, and the handler must not keep the source.
        source.setEventHandler { [weak self] in
            guard let source = self?.source else { return }
            // Typed: `DispatchSourceProtocol.data` is a `UInt` too; the overlay's extension on
            // `DispatchSourceMemoryPressure` gives the `MemoryPressureEvent` wanted here.
            let event: DispatchSource.MemoryPressureEvent = source.data
            if event.contains(.critical) {
                relieve(.critical)
            } else if event.contains(.warning) {
                relieve(.warning)
            }
        }
        source.resume()
    }

    /// Cancels the source; no event is delivered afterwards. Called from `Cache.deinit`.
    package func stop() {
        source.cancel()
    }
    #else
    package init?() { nil }

    package func start(_ relieve: @escaping @Sendable (MemoryPressure) -> Void) {}

    package func stop() {}
    #endif
}

/// How urgently the system asks processes to give memory back.
package enum MemoryPressure: Sendable, Hashable {
    /// Memory is getting short: drop what is cheapest to get back.
    case warning
    /// Memory is short: drop everything that can be rebuilt.
    case critical
}
