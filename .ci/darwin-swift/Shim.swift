// Apple's declarations that Linux's Dispatch and Foundation lack, spelled as Apple's
// documentation gives them, so .ci/darwin-swift.sh can type-check the Darwin branches of
// Sources/CashierPlatform/MemoryPressureSource.swift and Sources/CashierPlatform/BackgroundActivity.swift
// in Swift 6 mode. A check against the documented signatures, not against the SDK.
import Dispatch
import Foundation

extension DispatchSource {
    // developer.apple.com/documentation/dispatch/dispatchsource/memorypressureevent
    public struct MemoryPressureEvent: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static let normal = MemoryPressureEvent(rawValue: 0x1)    // DISPATCH_MEMORYPRESSURE_NORMAL
        public static let warning = MemoryPressureEvent(rawValue: 0x2)   // DISPATCH_MEMORYPRESSURE_WARN
        public static let critical = MemoryPressureEvent(rawValue: 0x4)  // DISPATCH_MEMORYPRESSURE_CRITICAL
        public static let all: MemoryPressureEvent = [.normal, .warning, .critical]
    }

    // .../dispatchsource/makememorypressuresource(eventmask:queue:)
    public class func makeMemoryPressureSource(eventMask: DispatchSource.MemoryPressureEvent, queue: DispatchQueue? = nil)
        -> any DispatchSourceMemoryPressure { fatalError("shim") }
}

// .../dispatchsourcememorypressure: `data` and `mask` come from the overlay's extension, beside
// DispatchSourceProtocol's own `data: UInt`.
public protocol DispatchSourceMemoryPressure: DispatchSourceProtocol, Sendable {}

extension DispatchSourceMemoryPressure {
    public var data: DispatchSource.MemoryPressureEvent { fatalError("shim") }
    public var mask: DispatchSource.MemoryPressureEvent { fatalError("shim") }
}

extension ProcessInfo {
    // developer.apple.com/documentation/foundation/processinfo/performexpiringactivity(withreason:using:)
    func performExpiringActivity(withReason reason: String, using block: @escaping @Sendable (Bool) -> Void) {
        fatalError("shim")
    }
}

// What the two files use from the rest of the module (Lock.swift).
final class Locked<State>: @unchecked Sendable {
    private var state: State
    init(_ state: State) { self.state = state }
    func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R { try body(&state) }
}

