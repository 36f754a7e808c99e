#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A mutex guarding one value: the only way Cashier shares mutable state.
///
/// `Synchronization.Mutex` needs macOS 15 / iOS 18, above this package's floor,
/// so this wraps `os_unfair_lock` on Darwin and `pthread_mutex_t` elsewhere.
/// Invariant that makes `@unchecked Sendable` sound: `state` is read and written
/// only inside `withLock`, while the platform lock is held, and the lock itself
/// lives at a stable heap address for the object's lifetime. The state lives
/// behind a pointer rather than in a `var`: the lock already makes access
/// exclusive, and a class `var` would add a dynamic exclusivity check to every
/// `withLock` (a measurable share of a memory hit).
package final class Locked<State>: @unchecked Sendable {
    private let state: UnsafeMutablePointer<State>
    private let lock: UnsafeMutablePointer<PlatformLock>

    package init(_ state: State) {
        self.state = .allocate(capacity: 1)
        self.state.initialize(to: state)
        lock = .allocate(capacity: 1)
        #if canImport(Darwin)
        lock.initialize(to: os_unfair_lock())
        #else
        lock.initialize(to: pthread_mutex_t())
        pthread_mutex_init(lock, nil)
        #endif
    }

    deinit {
        #if !canImport(Darwin)
        pthread_mutex_destroy(lock)
        #endif
        lock.deinitialize(count: 1)
        lock.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// Runs `body` with exclusive access to the state. Never do file I/O in `body`.
    @inline(__always)
    package func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        #if canImport(Darwin)
        os_unfair_lock_lock(lock)
        defer { os_unfair_lock_unlock(lock) }
        #else
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        #endif
        return try body(&state.pointee)
    }
}

#if canImport(Darwin)
private typealias PlatformLock = os_unfair_lock
#else
private typealias PlatformLock = pthread_mutex_t
#endif
