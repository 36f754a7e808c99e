#!/bin/bash
# Builds and runs the checksum throughput benchmark (see main.swift). Release build, no package:
# it links the CashierEntryFormat target, compiled whole from its folder (.ci/build-module.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bash "$here/../../.ci/build-module.sh" "$out/modules" CashierInternals CashierEntryFormat -- -O
swiftc -O -wmo -package-name Cashier -module-name ChecksumThroughput -module-cache-path "$out/modules/module-cache" \
    -I "$out/modules" -L "$out/modules" -lCashierEntryFormat -lCashierInternals \
    "$here/main.swift" -o "$out/checksum-throughput"
"$out/checksum-throughput" "$@"
