#!/usr/bin/env bash
# Builds and runs README.md's Swift code as a new user would paste it: into a
# package of their own that depends on Cashier.
#
# - The ```swift block whose previous non-blank line is exactly
#       <!-- readme-samples: Package.swift -->
#   is the new package's manifest (README's Installation section). Its
#   `.package(url: "…", from: "…")` line is replaced by a path dependency on
#   this repository, reached through a link named `Cashier`: a path
#   dependency's identity is the folder's last path component, so the
#   manifest's `package: "Cashier"` must hold for it too.
# - Every other ```swift block, joined in the README's order, is the
#   executable target's main.swift, with nothing added: no import, no
#   declaration. `#sourceLocation` lines point diagnostics at README.md.
#   Except a block marked on the line before its fence with
#       <!-- sample: SwiftUI -->
#   (SwiftUI views: no SwiftUI on Linux, and nothing to run without a screen;
#   .ci/doc-samples.sh type-checks them in the same program against a stand-in)
#   or with <!-- sample: not compiled --> (another library's code).
# - The package is built (a warning in the samples fails the check, as an
#   error does), then run with $XDG_CACHE_HOME and $XDG_DATA_HOME in a
#   scratch folder, so the caches it fills are thrown away; it must exit 0.
#
# The build folder is .build-readme (kept between runs, so only the first run
# compiles the library).
#
# Usage, from anywhere:  bash .ci/readme-samples.sh
# Exit status: 0 when the samples build and run, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

readme="README.md"
manifest_marker='<!-- readme-samples: Package.swift -->'
scratch="$root/.build-readme"
work="$scratch/work"
limit_seconds=900   # per build or run

limited() {
    if command -v timeout >/dev/null 2>&1; then
        timeout "$limit_seconds" "$@"
    else
        "$@"
    fi
}

rm -rf "$work"
mkdir -p "$work/app" "$work/home"
ln -s "$root" "$work/Cashier"

echo "== readme-samples: extracting the blocks of $readme"
# manifest.swift: the marked block; main.swift: the others, in order.
awk -v out="$work" -v marker="$manifest_marker" -v readme="$readme" '
    function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
    BEGIN { inside = 0; other = 0; previous = ""; manifests = 0; blocks = 0; skipped = 0 }
    {
        if (other) {
            if (trim($0) ~ /^```+$/) { other = 0; previous = "```" }
            next
        }
        if (inside) {
            if (trim($0) ~ /^```+$/) { inside = 0; previous = "```"; next }
            print > file
            next
        }
        if (trim($0) == "") next
        if (match($0, /^[ \t]*```[ \t]*swift[ \t]*$/) && (previous == "<!-- sample: SwiftUI -->" || previous == "<!-- sample: not compiled -->")) {
            other = 1
            skipped += 1
            next
        }
        if (match($0, /^[ \t]*```[ \t]*swift[ \t]*$/)) {
            inside = 1
            if (previous == marker) {
                manifests += 1
                file = out "/manifest.swift"
            } else {
                blocks += 1
                file = out "/main.swift"
                printf "#sourceLocation(file: \"%s\", line: %d)\n", readme, FNR + 1 > file
            }
            next
        }
        previous = trim($0)
        if (previous ~ /^```/) other = 1
    }
    END {
        if (blocks > 0) print "#sourceLocation()" > (out "/main.swift")
        printf "%d %d %d\n", manifests, blocks, skipped > (out "/counts")
    }
' "$readme"
read -r manifests blocks skipped <"$work/counts"
echo "$blocks blocks for main.swift, $manifests manifest, $skipped SwiftUI or not compiled (left to .ci/doc-samples.sh)"
if [ "$manifests" -ne 1 ]; then
    echo "readme-samples: FAILED: expected one \`\`\`swift block marked '$manifest_marker' (the Installation manifest), found $manifests" >&2
    exit 1
fi
if [ "$blocks" -eq 0 ]; then
    echo "readme-samples: FAILED: no \`\`\`swift block in $readme" >&2
    exit 1
fi

# The manifest, depending on this repository by path instead of by URL.
if ! grep -Eq '\.package\(url: *"[^"]*", *from: *"[^"]*"\)' "$work/manifest.swift"; then
    echo "readme-samples: FAILED: the manifest has no .package(url: \"…\", from: \"…\") line to point at this repository" >&2
    exit 1
fi
sed -E "s#\.package\(url: *\"[^\"]*\", *from: *\"[^\"]*\"\)#.package(path: \"$work/Cashier\")#" \
    "$work/manifest.swift" >"$work/app/Package.swift"
target="$(sed -nE 's/.*\.executableTarget\(name: *"([^"]+)".*/\1/p' "$work/app/Package.swift" | head -n 1)"
if [ -z "$target" ]; then
    echo "readme-samples: FAILED: the manifest declares no .executableTarget(name: \"…\")" >&2
    exit 1
fi
mkdir -p "$work/app/Sources/$target"
cp "$work/main.swift" "$work/app/Sources/$target/main.swift"

echo "== readme-samples: building $target (README's blocks as its main.swift)"
log="$work/build.log"
if ! limited swift build --package-path "$work/app" --scratch-path "$scratch/build" >"$log" 2>&1; then
    grep -E "error|warning|note" "$log" >&2 || cat "$log" >&2
    echo "readme-samples: FAILED: README's code does not build (the lines above point into $readme)" >&2
    exit 1
fi
if grep -E "^$readme:[0-9]+:[0-9]+: warning" "$log" >&2; then
    echo "readme-samples: FAILED: README's code builds with warnings" >&2
    exit 1
fi

echo "== readme-samples: running it, caches under a scratch folder"
if ! XDG_CACHE_HOME="$work/home/cache" XDG_DATA_HOME="$work/home/data" \
    limited "$scratch/build/debug/$target" 2>&1 | sed 's/^/    /'; then
    echo "readme-samples: FAILED: README's code exits with an error when run" >&2
    exit 1
fi
echo "== readme-samples: passed"
