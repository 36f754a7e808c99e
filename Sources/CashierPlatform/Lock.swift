/// A mutex guarding one value: the only way Cashier shares mutable state.
///
/// `Synchronization.Mutex` needs macOS 15 / iOS 18, above this package's floor,
/// so this wraps `os_unfair_lock` on Darwin and `pthread_mutex_t` elsewhere.
///
/// `Sendable` when `State` is (the extension below), as `Mutex` is: the lock makes access
/// to the state exclusive, and a state that is not `Sendable` could still escape to another
/// thread through the value `withLock` returns. Invariant that makes that `@unchecked`
/// sound: `state` is read and written only inside `withLock`, while the platform lock is
/// held, and the lock itself lives at a stable heap address for the object's lifetime. The
/// state lives behind a pointer rather than in a `var`: the lock already makes access
/// exclusive, and a class `var` would add a dynamic exclusivity check to every `withLock`
/// (a measurable share of a memory hit). `withLock` is inlinable so that a caller in another
/// module pays no generic call for it.
///
/// `pthread_mutex_*` results are checked as swift-log's lock checks them: a failure is a
/// broken invariant (a lock used after destruction, an error-checking mutex locked twice),
/// and continuing would be a data race.
///
/// The class is `public` (its members are `package`; no product exports this module) because
/// Swift 6.3 does not inline an `@inlinable` method of a `package` class into another module:
/// the memory hit then called the generic `withLock`, 27% more instructions (callgrind,
/// `cashier-ratios --smoke --only memory`).
public final class Locked<State> {
    @usableFromInline let state: UnsafeMutablePointer<State>
    @usableFromInline let lock: UnsafeMutablePointer<PlatformLock>

    package init(_ state: State) {
        self.state = .allocate(capacity: 1)
        self.state.initialize(to: state)
        lock = .allocate(capacity: 1)
        #if canImport(Darwin)
        // <os/lock.h>: OS_UNFAIR_LOCK_INIT, which Swift spells os_unfair_lock().
        lock.initialize(to: os_unfair_lock())
        #else
        lock.initialize(to: pthread_mutex_t())
        let result = pthread_mutex_init(lock, nil)
        precondition(result == 0, "pthread_mutex_init failed with error \(result)")
        #endif
    }

    deinit {
        #if !canImport(Darwin)
        let result = pthread_mutex_destroy(lock)
        precondition(result == 0, "pthread_mutex_destroy failed with error \(result)")
        #endif
        lock.deinitialize(count: 1)
        lock.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// Runs `body` with exclusive access to the state. Never do file I/O in `body`.
    @inlinable @inline(__always)
    package func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        #if canImport(Darwin)
        // <os/lock.h>: os_unfair_lock_lock / os_unfair_lock_unlock return nothing to check.
        os_unfair_lock_lock(lock)
        defer { os_unfair_lock_unlock(lock) }
        #else
        let locked = pthread_mutex_lock(lock)
        precondition(locked == 0, "pthread_mutex_lock failed with error \(locked)")
        defer {
            let unlocked = pthread_mutex_unlock(lock)
            precondition(unlocked == 0, "pthread_mutex_unlock failed with error \(unlocked)")
        }
        #endif
        return try body(&state.pointee)
    }
}

extension Locked: @unchecked Sendable where State: Sendable {}

#if canImport(Darwin)
@usableFromInline typealias PlatformLock = os_unfair_lock
#else
@usableFromInline typealias PlatformLock = pthread_mutex_t
#endif
