#include "CCashierSQLite.h"

int cashier_sqlite3_db_config_int(void *function, void *db, int op, int value, int *result) {
    int (*db_config)(void *, int, ...) = (int (*)(void *, int, ...))function;
    return db_config(db, op, value, result);
}
