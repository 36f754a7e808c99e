// What Swift cannot spell of the C library: names that exist only under `_GNU_SOURCE` (which
// the Glibc module is built without, and a header imported as a Clang module cannot turn on),
// and macros Swift does not import (a shift, a cast). Each is defined in shim.c, a plain C
// file compiled with `_GNU_SOURCE`, so it is the C library's own value, not a copy of it.
// The model is swift-nio's CNIOLinux and swift-system's CSystem.
#ifndef C_CASHIER_PLATFORM_H
#define C_CASHIER_PLATFORM_H

/// `O_NOATIME` of <fcntl.h> (Linux, `_GNU_SOURCE`): open without moving the access time.
/// 0 where the system has no such flag (Apple platforms).
extern const int CCashierPlatform_O_NOATIME;

/// `UTIME_OMIT` of <sys/stat.h>: a `tv_nsec` that leaves that time as it is (`utimensat`).
extern const long CCashierPlatform_UTIME_OMIT;

/// `RENAME_EXCHANGE` of <stdio.h> / <linux/fs.h> (Linux, `_GNU_SOURCE`); 0 where there is none.
extern const unsigned int CCashierPlatform_RENAME_EXCHANGE;

/// `renameat2(2)` (Linux 3.15; glibc 2.28 declares it under `_GNU_SOURCE`, older C libraries
/// reach it through `syscall`): 0, or -1 with `errno` set (`ENOSYS` where the system has none,
/// Apple platforms included; `EINVAL` where the file system cannot exchange).
int CCashierPlatform_renameat2(
    int source_folder, const char *source, int destination_folder, const char *destination, unsigned int flags);

#endif
