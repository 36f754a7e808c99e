#!/usr/bin/env bash
# Fuzzes with libFuzzer, SECONDS (default 60) per fuzzer.
#
#   bash .ci/fuzz.sh [SECONDS] [entry] [payload]     # no names: both
#
# entry:   Tests/Fuzz/EntryFuzzer.swift over the entry-file parser (EntryHeader) and
#          the one reader (EntryReader: prefix, length checks against the file's size and
#          the 1 GiB maximum, then the rest), seeded with Tests/Fixtures/EntryCorpus.
# payload: Tests/Fuzz/PayloadFuzzer.swift over PayloadDecoder, the fast JSON path,
#          checked against JSONDecoder; seeded with Tests/Fixtures/PayloadCorpus.
#
# Each links the package targets it covers, compiled whole from their folders by
# .ci/build-module.sh (entry: CashierInternals, CashierEntryFormat; payload:
# CashierInternals, CashierJSON), into .build-fuzz/<name>-fuzzer (-sanitize=fuzzer,address). New inputs the fuzzer finds stay in
# .build-fuzz/<name>-corpus, so repeated local runs build on each other. Exits
# non-zero on a crash, a trap, a leak or a timeout; the input that caused it is
# left in .build-fuzz/ (<name>-crash-*, -leak-*, -timeout-*).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
fuzzers=("$@")
[ ${#fuzzers[@]} -gt 0 ] || fuzzers=(entry payload)
out=.build-fuzz
mkdir -p "$out/module-cache"


for name in "${fuzzers[@]}"; do
    case "$name" in
        entry) targets=(CashierInternals CashierEntryFormat); harness=Tests/Fuzz/EntryFuzzer.swift; seeds=Tests/Fixtures/EntryCorpus ;;
        payload) targets=(CashierInternals CashierJSON); harness=Tests/Fuzz/PayloadFuzzer.swift; seeds=Tests/Fixtures/PayloadCorpus ;;
        *) echo "fuzz: unknown fuzzer '$name' (entry, payload)" >&2; exit 2 ;;
    esac
    binary="$out/$name-fuzzer"
    corpus="$out/$name-corpus"
    mkdir -p "$corpus"
    echo "== fuzz: building $binary"
    modules="$out/$name-modules"
    bash .ci/build-module.sh "$modules" "${targets[@]}" -- -sanitize=fuzzer,address -O -g
    libraries=()
    for target in "${targets[@]}"; do libraries+=("-l$target"); done
    # lld: the default gold linker warns about every local AddressSanitizer symbol.
    swiftc -sanitize=fuzzer,address -parse-as-library -O -g -use-ld=lld \
        -module-name CashierFuzz -package-name Cashier -swift-version 6 \
        -module-cache-path "$out/module-cache" -I "$modules" -L "$modules" "${libraries[@]}" \
        "$harness" -o "$binary"
    cp -n "$seeds"/* "$corpus/" 2>/dev/null || true
    rm -f "$corpus/README.md"
    echo "== fuzz: $name, $seconds s over $(ls "$corpus" | wc -l) inputs"
    # One job, so a shared two-core machine keeps a core; -rss_limit_mb bounds memory.
    "$binary" "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1100 \
        -max_len=65536 -print_final_stats=1 -artifact_prefix="$out/$name-" 2>"$out/$name.log" || {
        status=$?
        tail -n 60 "$out/$name.log" >&2
        echo "fuzz: $name FAILED (exit status $status); the input is in $out/" >&2
        exit "$status"
    }
    grep -E "^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added)|Done [0-9]+ runs" "$out/$name.log" || true
    echo "== fuzz: $name passed"
done
