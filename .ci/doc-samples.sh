#!/usr/bin/env bash
# Checks README.md's and the DocC articles' Swift samples as a reader pastes
# them: one program, README's blocks first, then each article's, articles in the
# order the catalog's landing page (Sources/Cashier/Cashier.docc/Cashier.md)
# lists them under Topics. The samples share one story (the same keys, models
# and values), so a name an article uses comes from a sample before it, and a
# name declared twice is an error, as it would be for the reader.
#
# - .ci/doc-samples/join.py extracts and joins the blocks; the marker on the
#   line before a ```swift fence decides what happens to a block (see there):
#   none: compiled; <!-- sample: SwiftUI -->: compiled, with a stand-in for
#   SwiftUI on Linux (.ci/doc-samples/SwiftUI.swift: just the views and
#   modifiers the samples use, so a SwiftUI sample is type-checked against the
#   same keys, models and caches as the rest); <!-- sample: repeats -->:
#   declarations shown again in an article (every code line must be in the
#   program already); <!-- sample: not compiled -->: another library's code.
# - The Cashier module comes from .build-docs, the scratch folder of
#   .ci/docs.sh; it is built (with the same flags as docs.sh, so neither script
#   forces the other to recompile) when it is missing or older than the sources.
# - The joined file is compiled as a program's main.swift through SIL (so the
#   Swift 6 isolation checks run), not linked or run: README's part runs in
#   .ci/readme-samples.sh. Diagnostics point at the README's or the article's
#   lines; a warning there fails the check too.
#
# Usage, from anywhere:  bash .ci/doc-samples.sh
# Exit status: 0 when the joined samples compile without warnings, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

catalog="Sources/Cashier/Cashier.docc"
scratch="$root/.build-docs"
work="$scratch/doc-samples"
limit_seconds=600   # per compiler invocation

limited() {
    if command -v timeout >/dev/null 2>&1; then
        timeout "$limit_seconds" "$@"
    else
        "$@"
    fi
}

find_module() {
    [ -d "$scratch" ] || return 0
    find "$scratch" -path '*/checkouts' -prune -o -path '*/debug/Modules/Cashier.swiftmodule' -print 2>/dev/null | head -n 1 || true
}

echo "== doc-samples: the Cashier module"
module="$(find_module)"
if [ -z "$module" ] || [ -n "$(find Sources/Cashier Package.swift -name '*.swift' -newer "$module" 2>/dev/null | head -n 1)" ]; then
    # Same command line as .ci/docs.sh: a build with other flags would make the
    # next docs build recompile the module, and this one after it.
    mkdir -p "$scratch/symbol-graphs"
    limited swift build --target Cashier --scratch-path "$scratch" \
        -Xswiftc -emit-symbol-graph \
        -Xswiftc -emit-symbol-graph-dir -Xswiftc "$scratch/symbol-graphs" \
        -Xswiftc -symbol-graph-minimum-access-level -Xswiftc public
    module="$(find_module)"
    if [ -z "$module" ]; then
        echo "doc-samples: no Cashier.swiftmodule under $scratch after the build" >&2
        exit 1
    fi
fi
modules="$(dirname "$module")"
echo "using $modules"

rm -rf "$work"
mkdir -p "$work/program" "$work/stubs" "$work/ModuleCache"
swiftc_common=(-swift-version 6 -module-cache-path "$work/ModuleCache" -I "$modules")
# The C modules under Cashier (CCashierPlatform, ...), as SwiftPM hands them to every dependent.
# (Not the plugin tools' copies, `*-tool.build`: a second map of one module is an error.)
for map in "$(dirname "$modules")"/C*.build/module.modulemap; do
    case "$map" in *-tool.build/*) continue ;; esac
    [ -f "$map" ] && swiftc_common+=(-Xcc "-fmodule-map-file=$map")
done

if [ "$(uname -s)" != "Darwin" ]; then
    echo "== doc-samples: SwiftUI stand-in (.ci/doc-samples/SwiftUI.swift), for type-checking only"
    # Swift 5 mode, minimal concurrency checking, as Apple's SDK modules are built:
    # the samples, not the stand-in, are what is checked in Swift 6 mode.
    limited swiftc -swift-version 5 -module-cache-path "$work/ModuleCache" -parse-as-library -emit-module \
        -module-name SwiftUI -emit-module-path "$work/stubs/SwiftUI.swiftmodule" \
        .ci/doc-samples/SwiftUI.swift
    swiftc_common+=(-I "$work/stubs")
fi

if ! command -v python3 >/dev/null 2>&1; then
    echo "== doc-samples: installing python3 (join.py needs it)"
    apt-get update && apt-get install -y --no-install-recommends python3
fi
echo "== doc-samples: joining README.md and the articles, in the catalog's order"
python3 .ci/doc-samples/join.py "$root" "$work/program"

echo "== doc-samples: compiling the joined program ($work/program/main.swift)"
log="$work/program/diagnostics.txt"
status=0
limited swiftc "${swiftc_common[@]}" -emit-sil -o /dev/null -module-name DocSamples \
    "$work/program/main.swift" </dev/null >"$log" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
    cat "$log" >&2
    echo "doc-samples: FAILED: the samples, joined as a reader pastes them, do not build (the lines above point into README.md and the articles)" >&2
    exit 1
fi
if grep -E "^(README.md|$catalog/[^:]*):[0-9]+:[0-9]+: warning" "$log" >&2; then
    echo "doc-samples: FAILED: the joined samples build with warnings" >&2
    exit 1
fi
echo "== doc-samples: passed"
