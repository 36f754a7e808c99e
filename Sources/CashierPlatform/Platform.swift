/// Every call that differs between Apple platforms and Linux, one file per concern.
///
/// The CashierPlatform module is the package's one platform layer: no other module has an
/// `#if os(…)` or a `canImport(Darwin|Glibc|Musl)` (`.ci/layout.sh` fails the build when
/// one does), so the Darwin side reads in one sitting. The branches:
///
/// | file | concern |
/// |---|---|
/// | `LibC.swift` | the C library (Darwin, Glibc or Musl) and CCashierPlatform, which every module imports from here |
/// | `Lock.swift` | ``Locked``: `os_unfair_lock` on Darwin, `pthread_mutex_t` elsewhere |
/// | `Platform+StatTimes.swift` | access and modification times from `stat` |
/// | `Platform+Reading.swift` | the flags entry files are opened with (`O_NOATIME` on Linux) |
/// | `Platform+FullSync.swift` | syncing a file or a folder to stable storage (`F_FULLFSYNC` on Darwin) |
/// | `Platform+RenameExchange.swift` | replacing an entry (`renameat2(RENAME_EXCHANGE)` on Linux) |
/// | `Platform+FreeSpace.swift` | bytes available on the volume (`statfs` on Darwin, `statvfs` elsewhere) |
/// | `Platform+FileProtection.swift` | Apple data protection and backup exclusion |
/// | `Platform+UserFolder.swift` | the user's caches and application data folders |
/// | `MemoryPressureSource.swift` | the system's memory-pressure signal (Apple platforms only) |
/// | `BackgroundActivity.swift` | an expiring activity around background work (iOS family only) |
/// | `SQLiteFunctions.swift` | SQLite's C functions: the SDK's, or `libsqlite3.so.0` through `dlopen` |
///
/// What Swift cannot spell of the C library (`O_NOATIME`, `renameat2` and `RENAME_EXCHANGE`,
/// which need `_GNU_SOURCE`; `UTIME_OMIT`, a macro Swift does not import) is the C library's
/// own, through the C target CCashierPlatform. One conditional is left outside this module:
/// `Cache.image(forKey:)` (Cache+Facade.swift) exists where UIKit or AppKit does, a public
/// method of the cache that cannot live below it.
///
/// Beside each Darwin-only call is the SDK header (or, for Foundation, the
/// documentation) it was written against; `.ci/darwin-calls.c` compiles every
/// C-level name used here against Apple's own headers on each CI run,
/// `.ci/darwin-drift.py` fails when a name used in a Darwin branch is missing there, and
/// `.ci/darwin-swift.sh` type-checks the Swift-API branches (Dispatch, ProcessInfo).
package enum Platform {}
