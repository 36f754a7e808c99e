#!/usr/bin/env bash
# Keeps the benchmarks from rotting: builds the Benchmarks package (release) and
# runs a smoke pass of both runners on small fixtures. Timings are printed, never
# checked: these machines are shared, and the goals are ratios measured by
#   swift run -c release --package-path Benchmarks cashier-ratios
set -euo pipefail
cd "$(dirname "$0")/../Benchmarks"

# The baseline of issue 25's rows is SQLite through its C API (target CSQLite3): it needs <sqlite3.h>.
if [ ! -f /usr/include/sqlite3.h ]; then
    echo "== benchmarks: installing libsqlite3-dev"
    apt-get update -qq && apt-get install -y -qq libsqlite3-dev >/dev/null
fi

echo "== benchmarks: build (release)"
swift build -c release

echo "== benchmarks: cashier-ratios --smoke"
./.build/release/cashier-ratios --smoke

echo "== benchmarks: cashier-ratios --smoke --footprint (1,000 entries; the report is --footprint, 100,000)"
./.build/release/cashier-ratios --smoke --footprint

echo "== benchmarks: package-benchmark, smoke"
CASHIER_BENCH_SMOKE=1 swift package --disable-sandbox benchmark --no-progress
echo "== benchmarks: passed"
