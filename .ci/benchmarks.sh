#!/usr/bin/env bash
# Keeps the benchmarks from rotting: builds the Benchmarks package (release) and
# runs a smoke pass of both runners on small fixtures. Timings are printed, never
# checked: these machines are shared, and the goals are ratios measured by
#   swift run -c release --package-path Benchmarks cashier-ratios
set -euo pipefail
cd "$(dirname "$0")/../Benchmarks"

echo "== benchmarks: build (release)"
swift build -c release

echo "== benchmarks: cashier-ratios --smoke"
./.build/release/cashier-ratios --smoke

echo "== benchmarks: package-benchmark, smoke"
CASHIER_BENCH_SMOKE=1 swift package --disable-sandbox benchmark --no-progress
echo "== benchmarks: passed"
