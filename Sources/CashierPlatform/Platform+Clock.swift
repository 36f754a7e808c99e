extension Platform {
    /// A cheap monotonic clock, in nanoseconds: what the memory tier's checks of the store are
    /// spaced by. Coarse (a few milliseconds on Linux), which is all an interval of milliseconds
    /// needs, for a few nanoseconds a read and no system call.
    @inlinable
    package static func coarseMonotonicNanoseconds() -> UInt64 {
        #if canImport(Darwin)
        // <time.h>: clock_gettime_nsec_np, CLOCK_MONOTONIC_RAW_APPROX (read from the commpage).
        return clock_gettime_nsec_np(CLOCK_MONOTONIC_RAW_APPROX)
        #else
        // <time.h>: CLOCK_MONOTONIC_COARSE, the vDSO's last tick.
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
        #endif
    }

    /// The precise monotonic clock, in nanoseconds (what the coarse one is measured against).
    @inlinable
    package static func preciseMonotonicNanoseconds() -> UInt64 {
        #if canImport(Darwin)
        // <time.h>: clock_gettime_nsec_np, CLOCK_MONOTONIC_RAW.
        return clock_gettime_nsec_np(CLOCK_MONOTONIC_RAW)
        #else
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
        #endif
    }
}
