#!/usr/bin/env bash
# The layout rules a reader relies on, checked:
#   1. every platform branch is in the platform layer, Sources/CashierPlatform (and the C
#      shim Sources/CCashierPlatform): no other source file has `#if os(…)`,
#      `targetEnvironment(…)`, `arch(…)`, `canImport(Darwin|Glibc|Musl|…)` or imports a C
#      library module itself (it imports CashierPlatform);
#   2. no Swift file under Sources/ is over 500 lines.
allowed='^Sources/CashierPlatform/'
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
platform='^[[:space:]]*#(if|elseif).*(os\(|targetEnvironment\(|arch\(|canImport\((Darwin|Glibc|Musl|Bionic|Android|WinSDK|ucrt)\))'
libc='^[[:space:]]*(@_exported[[:space:]]+)?import[[:space:]]+(Darwin|Glibc|Musl|Bionic|Android|WinSDK|ucrt)\b'
while IFS= read -r hit; do
    echo "layout: platform branch outside Sources/CashierPlatform: $hit" >&2
    status=1
done < <(grep -rnE "$platform|$libc" Sources --include='*.swift' | grep -vE "$allowed" || true)
while IFS= read -r file; do
    lines=$(wc -l < "$file")
    if [ "$lines" -gt 500 ]; then
        echo "layout: $file has $lines lines, more than 500: split it by job" >&2
        status=1
    fi
done < <(find Sources -name '*.swift')
[ "$status" -eq 0 ] && echo "layout: platform branches only in Sources/CashierPlatform; no source file over 500 lines"
exit "$status"
