/// Every call that differs between Apple platforms and Linux, one file per concern.
///
/// The rest of the library calls these and never branches on the platform itself,
/// so the Darwin side reads in one sitting:
///
/// | file | concern |
/// |---|---|
/// | `Platform+StatTimes.swift` | access and modification times from `stat` |
/// | `Platform+Reading.swift` | the flags entry files are opened with (`O_NOATIME` on Linux) |
/// | `Platform+FullSync.swift` | syncing a file or a folder to stable storage (`F_FULLFSYNC` on Darwin) |
/// | `Platform+RenameExchange.swift` | replacing an entry (`renameat2(RENAME_EXCHANGE)` on Linux) |
/// | `Platform+FreeSpace.swift` | bytes available on the volume (`statfs` on Darwin, `statvfs` elsewhere) |
/// | `Platform+FileProtection.swift` | Apple data protection and backup exclusion |
///
/// Beside each Darwin-only call is the SDK header (or, for Foundation, the
/// documentation) it was written against; `.ci/darwin-calls.c` compiles every
/// C-level name used here against Apple's own headers on each CI run, and
/// `.ci/darwin-drift.sh` fails when a name used in a Darwin branch is missing there.
package enum Platform {}
