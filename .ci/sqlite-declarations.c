/*
 * The SQLite C API as Sources/CashierPlatform/SQLiteFunctions.swift declares it, checked
 * against the real <sqlite3.h> (Apple's SDKs ship the same header and API): each pointer below
 * has the C type of the Swift `@convention(c)` field of the same name, and must accept SQLite's
 * own function without a cast; each constant of SQLiteError.swift's SQLiteCode is asserted.
 *
 *     cc -std=c11 -Wall -Werror -c .ci/sqlite-declarations.c      (needs libsqlite3-dev)
 */
#include <sqlite3.h>

int (*libversion_number)(void) = sqlite3_libversion_number;
int (*open_v2)(const char *, sqlite3 **, int, const char *) = sqlite3_open_v2;
int (*close_v2)(sqlite3 *) = sqlite3_close_v2;
const char *(*errmsg)(sqlite3 *) = sqlite3_errmsg;
const char *(*errstr)(int) = sqlite3_errstr;
int (*extended_errcode)(sqlite3 *) = sqlite3_extended_errcode;
int (*busy_timeout)(sqlite3 *, int) = sqlite3_busy_timeout;
int (*changes)(sqlite3 *) = sqlite3_changes;
int (*prepare_v3)(sqlite3 *, const char *, int, unsigned int, sqlite3_stmt **, const char **) = sqlite3_prepare_v3;
int (*step)(sqlite3_stmt *) = sqlite3_step;
int (*reset)(sqlite3_stmt *) = sqlite3_reset;
int (*clear_bindings)(sqlite3_stmt *) = sqlite3_clear_bindings;
int (*finalize)(sqlite3_stmt *) = sqlite3_finalize;
int (*bind_int64)(sqlite3_stmt *, int, sqlite3_int64) = sqlite3_bind_int64;
int (*bind_null)(sqlite3_stmt *, int) = sqlite3_bind_null;
int (*bind_blob64)(sqlite3_stmt *, int, const void *, sqlite3_uint64, void (*)(void *)) = sqlite3_bind_blob64;
int (*bind_text)(sqlite3_stmt *, int, const char *, int, void (*)(void *)) = sqlite3_bind_text;
int (*column_type)(sqlite3_stmt *, int) = sqlite3_column_type;
sqlite3_int64 (*column_int64)(sqlite3_stmt *, int) = sqlite3_column_int64;
const void *(*column_blob)(sqlite3_stmt *, int) = sqlite3_column_blob;
const unsigned char *(*column_text)(sqlite3_stmt *, int) = sqlite3_column_text;
int (*column_bytes)(sqlite3_stmt *, int) = sqlite3_column_bytes;
/* Variadic: called only through Sources/CCashierSQLite's shim, with this type. */
int (*db_config)(sqlite3 *, int, ...) = sqlite3_db_config;

/* Swift's Int64 / UInt64 / Int32 / UInt32. */
_Static_assert(sizeof(sqlite3_int64) == 8 && (sqlite3_int64)-1 < 0, "sqlite3_int64 is Int64");
_Static_assert(sizeof(sqlite3_uint64) == 8 && (sqlite3_uint64)-1 > 0, "sqlite3_uint64 is UInt64");
_Static_assert(sizeof(int) == 4 && sizeof(unsigned int) == 4, "int is Int32");

_Static_assert(SQLITE_OK == 0 && SQLITE_ERROR == 1 && SQLITE_BUSY == 5 && SQLITE_LOCKED == 6, "codes");
_Static_assert(SQLITE_READONLY == 8 && SQLITE_IOERR == 10 && SQLITE_CORRUPT == 11 && SQLITE_FULL == 13, "codes");
_Static_assert(SQLITE_CANTOPEN == 14 && SQLITE_NOTADB == 26 && SQLITE_ROW == 100 && SQLITE_DONE == 101, "codes");
_Static_assert(SQLITE_SCHEMA == 17 && SQLITE_MISMATCH == 20 && SQLITE_FORMAT == 24 && SQLITE_RANGE == 25, "codes");
_Static_assert(SQLITE_OPEN_READONLY == 0x1 && SQLITE_OPEN_READWRITE == 0x2 && SQLITE_OPEN_CREATE == 0x4, "open");
_Static_assert(SQLITE_OPEN_NOMUTEX == 0x8000 && SQLITE_OPEN_PRIVATECACHE == 0x40000, "open");
_Static_assert(SQLITE_OPEN_NOFOLLOW == 0x01000000, "open");
_Static_assert(SQLITE_PREPARE_PERSISTENT == 0x01, "prepare");
_Static_assert(SQLITE_DBCONFIG_DEFENSIVE == 1010 && SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE == 1006, "db_config");
_Static_assert(SQLITE_NULL == 5, "column type");
