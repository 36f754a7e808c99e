#ifndef CCASHIER_SQLITE_H
#define CCASHIER_SQLITE_H

/// Calls `sqlite3_db_config(db, op, value, result)` through `function`, the address of
/// `sqlite3_db_config` found at run time.
///
/// `sqlite3_db_config` is variadic, which Swift can neither import nor call through a
/// `@convention(c)` pointer: a variadic call passes its extra arguments differently from a
/// fixed one on some ABIs (on Apple's arm64, on the stack). This one C call makes the call
/// with the variadic convention the C compiler knows for the target. It declares its own
/// types and includes no SQLite header, so the package builds where `sqlite3.h` is absent.
int cashier_sqlite3_db_config_int(void *function, void *db, int op, int value, int *result);

#endif
