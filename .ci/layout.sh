#!/usr/bin/env bash
# The layout rules a reader relies on, checked:
#   1. Sources/ holds the library's modules and the tool's (Sources/CashierTool) and nothing
#      else: no other folder of Sources/ is an executable (a main.swift or an @main type);
#      the package's other executables are folders of Tools/ (path: in Package.swift), each
#      with its main.swift, beside what only they and the tests share (a folder named …Support,
#      no main.swift);
#   2. every platform branch is in the platform layer, Sources/CashierPlatform (and the C
#      shim Sources/CCashierPlatform): no other source file under Sources/ or Tools/ has
#      `#if os(…)`, `targetEnvironment(…)`, `arch(…)`, `canImport(Darwin|Glibc|Musl|…)` or
#      imports a C library module itself (it imports CashierPlatform);
#   3. no Swift file under Sources/ or Tools/ is over 500 lines.
allowed='^Sources/CashierPlatform/'
tool='Sources/CashierTool'
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
while IFS= read -r file; do
    echo "layout: $file is an executable's entry point in Sources/: move its target to Tools/ (path: in Package.swift)" >&2
    status=1
done < <({ find Sources -name main.swift; grep -rlE '^[[:space:]]*@main\b' Sources --include='*.swift' || true; } \
    | grep -v "^$tool/" | sort -u)
for folder in Tools/*/; do
    [ -d "$folder" ] || continue
    if [ ! -f "${folder}main.swift" ] && [[ "${folder%/}" != *Support ]]; then
        echo "layout: ${folder%/} has no main.swift: Tools/ holds executables (and …Support libraries) only" >&2
        status=1
    fi
    if ! grep -q "path: \"${folder%/}\"" Package.swift; then
        echo "layout: ${folder%/} is no target of Package.swift (path: \"${folder%/}\")" >&2
        status=1
    fi
done
platform='^[[:space:]]*#(if|elseif).*(os\(|targetEnvironment\(|arch\(|canImport\((Darwin|Glibc|Musl|Bionic|Android|WinSDK|ucrt)\))'
libc='^[[:space:]]*(@_exported[[:space:]]+)?import[[:space:]]+(Darwin|Glibc|Musl|Bionic|Android|WinSDK|ucrt)\b'
while IFS= read -r hit; do
    echo "layout: platform branch outside Sources/CashierPlatform: $hit" >&2
    status=1
done < <(grep -rnE "$platform|$libc" Sources Tools --include='*.swift' | grep -vE "$allowed" || true)
while IFS= read -r file; do
    lines=$(wc -l < "$file")
    if [ "$lines" -gt 500 ]; then
        echo "layout: $file has $lines lines, more than 500: split it by job" >&2
        status=1
    fi
done < <(find Sources Tools -name '*.swift')
[ "$status" -eq 0 ] && echo "layout: Sources/ holds the library and the tool, Tools/ the other executables;" \
    "platform branches only in Sources/CashierPlatform; no source file over 500 lines"
exit "$status"
