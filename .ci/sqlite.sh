#!/usr/bin/env bash
# The SQLite binding (Sources/CashierSQLite, and its loader in the platform layer,
# Sources/CashierPlatform/SQLiteFunctions.swift), checked three ways:
#   1. its declarations against the real <sqlite3.h>: .ci/sqlite-declarations.c gives each
#      function pointer the C type of its Swift declaration and must compile with -Werror;
#   2. the Apple branch of SQLiteFunctions.swift type-checked against the same header, offered
#      as a module named SQLite3 as Apple's SDKs do (Glibc standing in for Darwin's dlfcn,
#      which the rest of CashierPlatform imports);
#   3. the package as on a fresh machine with a Swift toolchain and no libsqlite3-dev:
#      ../shared/tools/without-sqlite-dev.sh hides sqlite3.h, libsqlite3.so and libsqlite3.a
#      (root, a private mount namespace) while libsqlite3.so.0 stays; the package must build
#      and the store's tests pass there.
set -euo pipefail
cd "$(dirname "$0")/.."
tool=../shared/tools/without-sqlite-dev.sh
echo "== sqlite: declarations against <sqlite3.h>"
if [ ! -f /usr/include/sqlite3.h ]; then
    apt-get update -qq && apt-get install -y -qq libsqlite3-dev >/dev/null
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
clang -std=c11 -Wall -Werror -c .ci/sqlite-declarations.c -o "$out/declarations.o"
echo "== sqlite: the Apple branch against <sqlite3.h> as module SQLite3"
mkdir -p "$out/SQLite3" "$out/CCashierSQLite"
printf 'module SQLite3 [system] {\n    header "/usr/include/sqlite3.h"\n    export *\n}\n' > "$out/SQLite3/module.modulemap"
cp Sources/CCashierSQLite/include/CCashierSQLite.h "$out/CCashierSQLite/"
printf 'module CCashierSQLite {\n    header "CCashierSQLite.h"\n    export *\n}\n' > "$out/CCashierSQLite/module.modulemap"
python3 - "$out" <<'PY'
import sys
source = open("Sources/CashierPlatform/SQLiteFunctions.swift", encoding="utf-8").read()
apple = source.replace("#if canImport(Darwin)\nimport SQLite3\n", "#if true\nimport Glibc\nimport SQLite3\n", 1)
apple = apple.replace("#if canImport(Darwin)\nextension SQLiteFunctions", "#if true\nextension SQLiteFunctions", 1)
assert apple.count("#if true") == 2, "SQLiteFunctions.swift: the Darwin branches moved; update .ci/sqlite.sh"
open(sys.argv[1] + "/SQLiteFunctions.swift", "w", encoding="utf-8").write(apple)
PY
swiftc -typecheck -swift-version 6 -package-name check -warnings-as-errors -I "$out/SQLite3" -I "$out/CCashierSQLite" \
    "$out/SQLiteFunctions.swift"
echo "== sqlite: build and store tests without sqlite3.h or libsqlite3.so"
if [ ! -f "$tool" ]; then
    echo "sqlite: $tool not found (it ships in shared/ beside the repository)" >&2
    exit 1
fi
bash "$tool" bash -c '
    set -euo pipefail
    for hidden in /usr/include/sqlite3.h /usr/lib/*-linux-gnu/libsqlite3.so; do
        if [ -e "$hidden" ]; then echo "sqlite: $hidden is still visible" >&2; exit 1; fi
    done
    swift build --build-tests --scratch-path .build-nosqlite 2>&1 | tee "$1/build.log"
    if grep -q "warning:" "$1/build.log"; then echo "sqlite: warnings in the build" >&2; exit 1; fi
    swift test --skip-build --scratch-path .build-nosqlite --filter "SQLiteConnectionTests|EntryStore"
    # A smoke pass of the store benchmark (debug build: timings printed, never checked), so it
    # does not rot; the tables come from: swift run -c release CashierStoreBench threshold|sweep|coherence
    ROUNDS=1 SIZES=256,16384 .build-nosqlite/debug/CashierStoreBench threshold
    ROUNDS=1 COUNT=10000 .build-nosqlite/debug/CashierStoreBench sweep
    .build-nosqlite/debug/CashierStoreBench ops overwrite 100
' bash "$out"
echo "== sqlite: passed"
