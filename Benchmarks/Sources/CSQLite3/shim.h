// The system's SQLite: <sqlite3.h> from libsqlite3-dev on Linux, the SDK's on Apple platforms.
// Only the benchmarks' baseline uses it; the library loads SQLite without this header.
#include <sqlite3.h>
