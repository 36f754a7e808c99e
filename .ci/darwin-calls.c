/*
 * Every Darwin-only libc call, constant, struct field and type that a Darwin branch of
 * Sources/ uses (`#if canImport(Darwin)`, `#if os(iOS)`, ...), each with the argument and
 * result types the Swift code assumes, compiled against Apple's own macOS headers:
 *
 *     bash ../shared/tools/darwin-headers.sh .ci/darwin-calls.c
 *
 * A misspelled or missing name, or a wrong type assumption (the _Static_asserts), fails
 * the build here instead of in a user's app. `.ci/darwin-drift.py` fails when a Darwin
 * branch uses a C-level name this file does not mention. Each function names the Swift
 * file it stands for.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <os/lock.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* Sources/CashierPlatform/Platform+FullSync.swift: fcntl(fd, F_FULLFSYNC) == 0 ? 0 : fsync(fd), as Int32. */
_Static_assert(F_FULLFSYNC == 51, "F_FULLFSYNC");
int32_t full_sync(int32_t fd) { return fcntl(fd, F_FULLFSYNC) == 0 ? 0 : fsync(fd); }

/* Sources/CashierPlatform/Platform+FreeSpace.swift: statfs(path, &fs); UInt64(fs.f_bavail) * UInt64(fs.f_bsize). */
_Static_assert(sizeof(((struct statfs *)0)->f_bavail) == 8, "statfs.f_bavail is 64 bits");
_Static_assert(sizeof(((struct statfs *)0)->f_bsize) == 4, "statfs.f_bsize is 32 bits");
_Static_assert((__typeof__(((struct statfs *)0)->f_bavail))-1 > 0, "statfs.f_bavail is unsigned");
uint64_t free_bytes(const char *path) {
    struct statfs fs;
    if (statfs(path, &fs) != 0) return 0;
    return (uint64_t)fs.f_bavail * (uint64_t)fs.f_bsize;
}

/* Sources/CashierPlatform/Platform+StatTimes.swift (Platform.times, which FileInfo and the tool use):
   st.st_atimespec / st.st_mtimespec (struct timespec), st_size (off_t) clamped to Int. */
_Static_assert(sizeof(((struct stat *)0)->st_size) == 8, "st_size is 64 bits");
_Static_assert(sizeof(((struct timespec *)0)->tv_sec) == 8, "tv_sec is 64 bits on 64-bit macOS");
_Static_assert(sizeof(((struct timespec *)0)->tv_nsec) == sizeof(long), "tv_nsec is a long (Swift Int)");
double stat_times(const struct stat *st) {
    struct timespec access = st->st_atimespec, modification = st->st_mtimespec;
    return (double)access.tv_sec + (double)access.tv_nsec / 1e9 + (double)modification.tv_sec + (double)modification.tv_nsec / 1e9;
}

/* Sources/CashierPlatform/Platform+StatTimes.swift (Platform.changeNanoseconds, FileVersion in
   CashierStore): st.st_ctimespec (struct timespec) as nanoseconds in an Int64. */
int64_t change_nanoseconds(const struct stat *st) {
    struct timespec change = st->st_ctimespec;
    return (int64_t)change.tv_sec * 1000000000 + (int64_t)change.tv_nsec;
}

/* Sources/CashierPlatform/Platform+RenameExchange.swift: Darwin.rename(source, destination) as Int32. */
int32_t replace(const char *source, const char *destination) { return rename(source, destination); }

/* Sources/CashierPlatform/Platform+Reading.swift: the reading flags (shared with Linux, checked here for Darwin). */
int32_t open_for_reading(const char *path) { return open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY); }

/* Sources/Cashier/DiskTier/FileSystem+Recency.swift: UTIME_OMIT, through Sources/CCashierPlatform/shim.c (Swift does not import the macro;
   .ci/darwin.sh compiles shim.c against these headers too). */
_Static_assert(UTIME_OMIT == -2, "UTIME_OMIT is -2 on Darwin");
int32_t touch(const char *path, struct timespec accessed) {
    struct timespec times[2] = { accessed, { 0, UTIME_OMIT } };
    return utimensat(AT_FDCWD, path, times, 0);
}

/* Sources/Cashier/MemoryTier/MemoryTier+Coherence.swift MonotonicClock (and Tools/CashierStoreBench/Coherence.swift):
   clock_gettime_nsec_np(CLOCK_MONOTONIC_RAW_APPROX) as UInt64 nanoseconds, counting through sleep; CLOCK_MONOTONIC_RAW
   for the benchmark's comparison. */
uint64_t coarse_monotonic_nanoseconds(void) { return clock_gettime_nsec_np(CLOCK_MONOTONIC_RAW_APPROX); }
uint64_t precise_monotonic_nanoseconds(void) { return clock_gettime_nsec_np(CLOCK_MONOTONIC_RAW); }

/* Sources/Cashier/DiskTier/FileSystem.swift tryLockExclusively: flock(fd, LOCK_EX | LOCK_NB), EWOULDBLOCK when held. */
_Static_assert(EWOULDBLOCK == EAGAIN, "EWOULDBLOCK");
int32_t try_lock(int32_t fd) { return flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : (errno == EWOULDBLOCK ? 1 : -1); }

/* Sources/CashierPlatform/Lock.swift: os_unfair_lock, os_unfair_lock_lock, os_unfair_lock_unlock. */
void with_lock(os_unfair_lock *lock) {
    os_unfair_lock_lock(lock);
    os_unfair_lock_unlock(lock);
}
os_unfair_lock new_lock(void) { return OS_UNFAIR_LOCK_INIT; }

/* Sources/Cashier/DiskTier/FolderTrust.swift and DiskTier/FileSystem.swift (shared code; the types the Swift side
   assumes on Darwin): lstat, then stat through a link; st_uid, st_gid, st_mode (16-bit mode_t)
   & 0o7777 against S_IWOTH / S_IWGRP; st_dev and st_ino widened to UInt64; geteuid, getegid,
   getgroups(count, &groups); chmod after mkdir and fchmod after open with 0o2770 / 0o660. */
_Static_assert(sizeof(mode_t) == 2, "mode_t is 16 bits on Darwin (UInt16 in Swift)");
_Static_assert(sizeof(uid_t) == 4 && sizeof(gid_t) == 4, "uid_t and gid_t are 32 bits");
_Static_assert(sizeof(((struct stat *)0)->st_ino) == 8, "st_ino is 64 bits");
_Static_assert(S_IWOTH == 02 && S_IWGRP == 020 && S_ISGID == 02000 && S_IFLNK == 0120000, "mode bits");
int32_t folder_trust(const char *path, int32_t fd) {
    struct stat st;
    if (lstat(path, &st) != 0) return -1;
    uid_t link_owner = st.st_uid;
    if ((st.st_mode & S_IFMT) == S_IFLNK && stat(path, &st) != 0) return -1;
    gid_t groups[16];
    int32_t count = getgroups(16, groups);
    uint64_t identity = (uint64_t)st.st_dev ^ (uint64_t)st.st_ino;
    mode_t mode = st.st_mode & 07777;
    int trusted = (st.st_uid == geteuid() || st.st_gid == getegid() || link_owner == 0) && (mode & (S_IWOTH | S_IWGRP)) == 0;
    return trusted && count >= 0 && identity != 0 && chmod(path, (mode_t)02770) == 0 ? fchmod(fd, (mode_t)0660) : -1;
}

/* CashierPlatform/SQLiteFunctions.swift: the address of variadic sqlite3_db_config, which Swift cannot
   name, from the libsqlite3.dylib `import SQLite3` links: dlopen(path, RTLD_NOW), dlsym(handle, name),
   both returning an optional raw pointer. */
void *sqlite_db_config_address(void) {
    void *handle = dlopen("/usr/lib/libsqlite3.dylib", RTLD_NOW);
    return handle ? dlsym(handle, "sqlite3_db_config") : (void *)0;
}

/* CashierPlatform/SQLiteFunctions.swift also takes these from the SDK's <sqlite3.h> (module SQLite3):
   sqlite3_libversion_number sqlite3_open_v2 sqlite3_close_v2 sqlite3_errmsg sqlite3_errstr
   sqlite3_extended_errcode sqlite3_busy_timeout sqlite3_changes sqlite3_prepare_v3 sqlite3_step
   sqlite3_reset sqlite3_clear_bindings sqlite3_finalize sqlite3_bind_int64 sqlite3_bind_null
   sqlite3_bind_blob64 sqlite3_bind_text sqlite3_column_type sqlite3_column_int64
   sqlite3_column_blob sqlite3_column_text sqlite3_column_bytes.
   Zig's macOS headers carry no sqlite3.h, so their types are checked by .ci/sqlite-declarations.c
   against SQLite's own header (the same C API the SDK ships) in .ci/sqlite.sh. */
