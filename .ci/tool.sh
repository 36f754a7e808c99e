#!/usr/bin/env bash
# The cashier tool as a new user meets it: `swift run cashier-tool demo` into a fresh
# cache folder, `list` and `verify` on the folder it printed, then the command
# plugin from a scratch package that depends on this one by path.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"

# Bounded in time: a hung build or tool fails CI instead of stalling it.
if command -v timeout >/dev/null; then
    limit() { timeout --kill-after=10 "$@"; }
else
    limit() { shift; "$@"; }
fi

echo "-- no two target or product names differ only in case (macOS volumes merge their build folders)"
names="$(limit 300 swift package describe --type json | sed -n 's/^ *"name" : "\(.*\)",\{0,1\}$/\1/p' | sort -u)"
clashes="$(printf '%s\n' "$names" | tr '[:upper:]' '[:lower:]' | sort | uniq -d)"
[ -z "$clashes" ] || { echo "names that differ only in case: $clashes" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/cashier-tool-ci.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "-- swift run cashier-tool demo (XDG_CACHE_HOME=$work/cache)"
limit 900 swift build --product cashier-tool
XDG_CACHE_HOME="$work/cache" limit 120 swift run --skip-build cashier-tool demo | tee "$work/demo.out"
folder="$(sed -n 's/^Cashier demo: a cache in //p' "$work/demo.out")"
case "$folder" in
    "$work/cache/Cashier/demo-"*) ;;
    *) echo "demo printed no folder under \$XDG_CACHE_HOME/Cashier: '$folder'" >&2; exit 1 ;;
esac
[ -d "$folder" ] || { echo "demo folder $folder missing" >&2; exit 1; }

echo "-- cashier list / verify / stats --json on $folder"
limit 60 swift run --skip-build cashier-tool list "$folder" | tee "$work/list.out"
grep -q '^user.profile ' "$work/list.out"
limit 60 swift run --skip-build cashier-tool verify "$folder"
limit 60 swift run --skip-build cashier-tool stats "$folder" --json > "$work/stats.json"
grep -q '^  "count" : 7,$' "$work/stats.json"

echo "-- usage errors exit 2"
status=0
limit 60 swift run --skip-build cashier-tool frobnicate 2>/dev/null || status=$?
[ "$status" -eq 2 ] || { echo "unknown command exited $status, not 2" >&2; exit 1; }

echo "-- the plugin, from a scratch package depending on Cashier by path"
mkdir -p "$work/client/Sources/Client"
cat > "$work/client/Package.swift" <<MANIFEST
// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Client",
    dependencies: [.package(path: "$repo")],
    targets: [.executableTarget(name: "Client", dependencies: [.product(name: "Cashier", package: "$(basename "$repo")")])]
)
MANIFEST
echo 'import Cashier
print(Cache.named("client").count)' > "$work/client/Sources/Client/main.swift"
(
    cd "$work/client"
    limit 900 swift package cashier list "$folder" | tee "$work/plugin.out"
    grep -q '^user.profile ' "$work/plugin.out"
    limit 300 swift package cashier verify "$folder" --json > "$work/plugin-verify.json"
    grep -q '"damaged" : \[' "$work/plugin-verify.json"
)
echo "-- tool checks passed"
