import Dispatch

/// Tells a cache when the system runs short of memory, on Apple platforms; elsewhere
/// there is no such signal and ``init()`` answers `nil`.
///
/// This file is the memory tier's only platform branch. The Darwin calls, each checked
/// against Apple's documentation (they are Dispatch overlay API, not C declarations that
/// `.ci/darwin-calls.c` could compile):
/// - `DispatchSource.makeMemoryPressureSource(eventMask:queue:)` returning
///   `DispatchSourceMemoryPressure` (whose `data` is a `DispatchSource.MemoryPressureEvent`):
///   Apple's Dispatch reference lists them for iOS, iPadOS, Mac Catalyst, macOS, tvOS,
///   visionOS and watchOS with no introduction version, below every deployment target here.
///   They wrap `DISPATCH_SOURCE_TYPE_MEMORYPRESSURE` of `<dispatch/source.h>`:
///   `API_AVAILABLE(macos(10.9), ios(8.0)) DISPATCH_LINUX_UNAVAILABLE()`, hence the branch.
/// - `DispatchSource.MemoryPressureEvent.warning` and `.critical`
///   (`DISPATCH_MEMORYPRESSURE_WARN`, `DISPATCH_MEMORYPRESSURE_CRITICAL`): the same.
/// - `resume()`, `setEventHandler(handler:)`, `cancel()`: `DispatchSourceProtocol`, everywhere.
final class MemoryPressureSource: Sendable {
    #if canImport(Darwin)
    private let source: any DispatchSourceMemoryPressure

    init?() {
        // Warning and critical only: `.normal` would say the pressure is over, with nothing to do.
        source = DispatchSource.makeMemoryPressureSource(eventMask: [.warning, .critical], queue: .global(qos: .utility))
    }

    /// Calls `relieve` for each event, on a background queue, until ``stop()``.
    func start(_ relieve: @escaping @Sendable (MemoryPressure) -> Void) {
        let source = self.source
        // The handler holds the source; `cancel()` releases the handler, which ends the cycle.
        source.setEventHandler {
            let event = source.data
            if event.contains(.critical) {
                relieve(.critical)
            } else if event.contains(.warning) {
                relieve(.warning)
            }
        }
        source.resume()
    }

    /// Cancels the source; no event is delivered afterwards. Called from `Cache.deinit`.
    func stop() {
        source.cancel()
    }
    #else
    init?() { nil }

    func start(_ relieve: @escaping @Sendable (MemoryPressure) -> Void) {}

    func stop() {}
    #endif
}
