#!/usr/bin/env bash
# Compiles package targets, each its whole folder Sources/<Target> as SwiftPM would (one
# module, package access), into <out>/lib<Target>.a and <out>/<Target>.swiftmodule, for the
# scripts that link a layer of the library without the package: the fuzzers (.ci/fuzz.sh)
# and the checksum benchmark (Benchmarks/ChecksumThroughput/run.sh). Name the targets in
# dependency order; extra swiftc flags (sanitizers, optimization) follow `--`.
#
#   bash .ci/build-module.sh OUT CashierInternals CashierEntryFormat -- -O -sanitize=fuzzer,address
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$1"
shift
targets=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    targets+=("$1")
    shift
done
[ $# -gt 0 ] && shift
mkdir -p "$out/module-cache"
for target in "${targets[@]}"; do
    [ -d "$root/Sources/$target" ] || { echo "build-module: no target folder Sources/$target" >&2; exit 2; }
    swiftc -parse-as-library -wmo -swift-version 6 -package-name Cashier -module-name "$target" \
        -module-cache-path "$out/module-cache" -I "$out" "$@" \
        -emit-module -emit-module-path "$out/$target.swiftmodule" \
        -emit-library -static -o "$out/lib$target.a" "$root/Sources/$target"/*.swift
done
