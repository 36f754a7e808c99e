#!/usr/bin/env bash
# Fuzzes the entry-file parser with libFuzzer for SECONDS (default 60).
#
#   bash .ci/fuzz.sh [SECONDS]
#
# Builds Tests/Fuzz/EntryFuzzer.swift with the library's format sources into
# .build-fuzz/entry-fuzzer (-sanitize=fuzzer,address), then runs it on a copy of
# the seed corpus Tests/Fixtures/EntryCorpus (real entry files). New inputs the
# fuzzer finds stay in .build-fuzz/corpus, so repeated local runs build on each
# other. Exits non-zero on a crash, a trap, a leak or a timeout; the input that
# caused it is left in .build-fuzz/ (crash-*, leak-*, timeout-*).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
out=.build-fuzz
mkdir -p "$out/corpus" "$out/module-cache"

echo "== fuzz: building $out/entry-fuzzer"
swiftc -sanitize=fuzzer,address -parse-as-library -O -g \
    -module-name CashierFuzz -package-name Cashier -swift-version 6 \
    -module-cache-path "$out/module-cache" \
    Sources/Cashier/Disk/EntryHeader.swift Sources/Cashier/Disk/XXHash64.swift Sources/Cashier/Lifespan.swift \
    Tests/Fuzz/EntryFuzzer.swift \
    -o "$out/entry-fuzzer"

cp -n Tests/Fixtures/EntryCorpus/* "$out/corpus/" 2>/dev/null || true
echo "== fuzz: $seconds s over $(ls "$out/corpus" | wc -l) inputs"
# One job, so a shared two-core machine keeps a core; -rss_limit_mb bounds memory.
"$out/entry-fuzzer" "$out/corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$out/" 2>"$out/fuzz.log" || {
    status=$?
    tail -n 60 "$out/fuzz.log" >&2
    echo "fuzz: FAILED (exit status $status); the input is in $out/" >&2
    exit "$status"
}
grep -E "^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added)|Done [0-9]+ runs" "$out/fuzz.log" || true
echo "== fuzz: passed"
