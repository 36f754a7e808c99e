#!/usr/bin/env bash
# Type-checks every Swift code sample in the DocC articles
# (Sources/Cashier/Cashier.docc/*.md) against the real Cashier module, so the
# samples cannot drift from the API.
#
# - Every fenced block opened with ```swift is checked, except one whose
#   previous non-blank line is exactly
#       <!-- sample: not compiled -->
#   which marks code of another library (the "Before" samples of the migration
#   articles, the Package.swift fragment of GettingStarted.md). DocC does not
#   render the comment. A marker that is not followed by a ```swift block is an
#   error, so stale markers do not pile up.
# - The Cashier module comes from .build-docs, the scratch folder of
#   .ci/docs.sh; it is built (with the same flags as docs.sh, so neither script
#   forces the other to recompile) when it is missing or older than the sources.
# - .ci/doc-samples/Prelude.swift is compiled into the module DocSamplesPrelude:
#   the names samples use without declaring them (User, Keys, cache, api...).
# - Each sample is the main file of a module of its own, after
#   `import Cashier` and `import DocSamplesPrelude`, so top-level code, `try`
#   and `await` work, and a sample's own declarations shadow the prelude's.
#   Nothing else is added: a sample that names Foundation's types (`Data`,
#   `URL`, `Date`...) imports Foundation itself, as the reader's code must.
#   Diagnostics point at the article's file and line. Type-checking only:
#   nothing is linked or run.
#
# Usage, from anywhere:  bash .ci/doc-samples.sh
# Exit status: 0 when every sample compiles, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

catalog="Sources/Cashier/Cashier.docc"
scratch="$root/.build-docs"
work="$scratch/doc-samples"
marker='<!-- sample: not compiled -->'
limit_seconds=300   # per compiler invocation

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

rm -rf "$work/prelude" "$work/samples"
mkdir -p "$work/prelude" "$work/samples" "$work/ModuleCache"
swiftc_common=(-swift-version 6 -module-cache-path "$work/ModuleCache" -I "$modules")

echo "== doc-samples: the prelude (.ci/doc-samples/Prelude.swift)"
limited swiftc "${swiftc_common[@]}" -parse-as-library -emit-module \
    -module-name DocSamplesPrelude \
    -emit-module-path "$work/prelude/DocSamplesPrelude.swiftmodule" \
    .ci/doc-samples/Prelude.swift

echo "== doc-samples: extracting the samples"
# One folder per ```swift block: main.swift, and a line in the manifest
#   <folder> TAB <article>:<line of the fence> TAB compile|skip|stray-marker
manifest="$work/samples/manifest.tsv"
: >"$manifest"
for article in "$catalog"/*.md; do
    awk -v article="$article" -v out="$work/samples" -v marker="$marker" '
        function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
        function stray() { printf "-\t%s:%d\tstray-marker\n", article, marked_line >> (out "/manifest.tsv") }
        BEGIN { inside = 0; other = 0; previous = ""; marked_line = 0 }
        {
            if (other) {
                # Inside a block of another language: skip to its fence.
                if (trim($0) ~ /^```+$/) { other = 0; previous = "```" }
                next
            }
            if (inside) {
                if (trim($0) ~ /^```+$/) { inside = 0; close(file); previous = "```"; next }
                # Kept as is, indentation included, so diagnostics give the
                # columns of the article.
                print > file
                next
            }
            if (trim($0) == "") next
            if (match($0, /^[ \t]*```[ \t]*swift[ \t]*$/)) {
                folder = sprintf("%s/%s-%d", out, basename_of(article), FNR)
                status = (previous == marker) ? "skip" : "compile"
                marked_line = 0
                printf "%s\t%s:%d\t%s\n", folder, article, FNR, status >> (out "/manifest.tsv")
                system("mkdir -p \"" folder "\"")
                file = folder "/sample.swift"
                printf "" > file
                # The sample starts on the line after the fence.
                print FNR + 1 > (folder "/first-line")
                close(folder "/first-line")
                inside = 1
                next
            }
            if (marked_line) stray()
            marked_line = (trim($0) == marker) ? FNR : 0
            previous = trim($0)
            if (previous ~ /^```/) other = 1
        }
        END { if (marked_line) stray() }
        function basename_of(path,   parts, n) { n = split(path, parts, "/"); sub(/\.md$/, "", parts[n]); return parts[n] }
    ' "$article"
done

echo "== doc-samples: type-checking each sample"
passed=0
failed=0
skipped=0
failures=()
while IFS=$'\t' read -r folder location status; do
    case "$status" in
        skip)
            skipped=$((skipped + 1))
            echo "SKIP $location (marked not compiled)"
            continue
            ;;
        stray-marker)
            failed=$((failed + 1))
            failures+=("$location")
            echo "FAIL $location"
            echo "    '$marker' is not followed by a \`\`\`swift block: remove it"
            continue
            ;;
    esac
    article="${location%:*}"
    first_line="$(cat "$folder/first-line")"
    {
        echo "import Cashier"
        echo "import DocSamplesPrelude"
        echo "#sourceLocation(file: \"$article\", line: $first_line)"
        cat "$folder/sample.swift"
        echo "#sourceLocation()"
    } >"$folder/main.swift"
    if limited swiftc "${swiftc_common[@]}" -typecheck -module-name DocSample \
        -I "$work/prelude" "$folder/main.swift" </dev/null >"$folder/diagnostics.txt" 2>&1; then
        passed=$((passed + 1))
        echo "PASS $location"
        # Warnings do not fail the check, but are shown.
        sed "s/^/    /" "$folder/diagnostics.txt"
    else
        failed=$((failed + 1))
        failures+=("$location")
        echo "FAIL $location"
        sed 's/^/    /' "$folder/diagnostics.txt"
    fi
done <"$manifest"

total=$((passed + failed + skipped))
echo "== doc-samples: $passed passed, $failed failed, $skipped marked not compiled ($total blocks)"
if [ "$failed" -ne 0 ]; then
    echo "doc-samples: FAILED:" >&2
    for location in "${failures[@]}"; do echo "  $location" >&2; done
    echo "  (fix the sample, or the prelude .ci/doc-samples/Prelude.swift if it lacks a name;" >&2
    echo "   mark code of other libraries with '$marker' on the line before its fence)" >&2
    exit 1
fi
if [ "$passed" -eq 0 ]; then
    echo "doc-samples: FAILED: no sample found in $catalog" >&2
    exit 1
fi
echo "== doc-samples: passed"
