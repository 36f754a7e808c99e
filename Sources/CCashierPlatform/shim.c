// Compiled as ordinary C, so `_GNU_SOURCE` takes effect before the first system header.
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif

#include "include/CCashierPlatform.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(O_NOATIME)
const int CCashierPlatform_O_NOATIME = O_NOATIME;
#else
const int CCashierPlatform_O_NOATIME = 0;
#endif

const long CCashierPlatform_UTIME_OMIT = UTIME_OMIT;

#if defined(RENAME_EXCHANGE)
const unsigned int CCashierPlatform_RENAME_EXCHANGE = RENAME_EXCHANGE;
#elif defined(__linux__)
// <linux/fs.h>, for C libraries whose <stdio.h> predates renameat2 (glibc before 2.28, musl).
const unsigned int CCashierPlatform_RENAME_EXCHANGE = 1 << 1;
#else
const unsigned int CCashierPlatform_RENAME_EXCHANGE = 0;
#endif

int CCashierPlatform_renameat2(
    int source_folder, const char *source, int destination_folder, const char *destination, unsigned int flags) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 28))
    return renameat2(source_folder, source, destination_folder, destination, flags);
#elif defined(__linux__) && defined(SYS_renameat2)
    return (int)syscall(SYS_renameat2, source_folder, source, destination_folder, destination, flags);
#else
    (void)source_folder; (void)source; (void)destination_folder; (void)destination; (void)flags;
    errno = ENOSYS;
    return -1;
#endif
}
