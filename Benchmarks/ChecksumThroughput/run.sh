#!/bin/bash
# Builds and runs the checksum throughput benchmark (see main.swift). Release build, no package.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
disk="$here/../../Sources/Cashier/Disk"
out=$(mktemp -d)
swiftc -O -wmo -package-name Cashier -module-name ChecksumThroughput \
    "$disk/XXHash64.swift" "$disk/XXH3.swift" "$here/main.swift" -o "$out/checksum-throughput"
"$out/checksum-throughput" "$@"
rm -rf "$out"
