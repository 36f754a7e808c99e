#!/usr/bin/env bash
# Runs tests on a real small volume: a tmpfs of SIZE mounted below a symbolic link, as an iOS
# app's container lies below /var -> /private/var, its folder passed to the tests in the
# environment variable VARIABLE. The tests skip themselves without it, and a skipped suite
# passes: each case prints a line starting with MARKER once it ran through, and every MARKER
# given must be in the log. Mounting needs root (CI runs as root).
#
#   .ci/volume-tests.sh NAME SIZE VARIABLE FILTER MARKER...
#
# Used by full-volume.sh and tightening-volume.sh. Exits non-zero when the tests fail or did not run.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$#" -lt 5 ]; then
    echo "usage: .ci/volume-tests.sh NAME SIZE VARIABLE FILTER MARKER..." >&2
    exit 2
fi
name=$1 size=$2 variable=$3 filter=$4
shift 4

if [ "$(id -u)" -ne 0 ]; then
    echo "$name: mounting a tmpfs needs root (CI runs as root)" >&2
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/cashier-$name.XXXXXX")
mounted=""
cleanup() {
    if [ -n "$mounted" ]; then
        umount "$mounted" 2>/dev/null || umount -l "$mounted"
    fi
    rm -rf "$work"
}
trap cleanup EXIT

mkdir "$work/real"
mount -t tmpfs -o "size=$size,mode=0700" "cashier-$name" "$work/real"
mounted="$work/real"
ln -s "$work/real" "$work/link"
folder="$work/link/caches"
echo "== $name: $size tmpfs mounted at $work/real; the caches at $folder, below the link $work/link"
df -k "$work/real"

echo "== $name: swift build --build-tests"
swift build --build-tests

echo "== $name: $variable=$folder swift test --skip-build --filter $filter"
log="$work/test.log" # on the real disk: the tmpfs is for the caches
set +e
env "$variable=$folder" swift test --skip-build --filter "$filter" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
    echo "$name: the tests failed (swift test exited $status)" >&2
    exit "$status"
fi
for marker in "$@"; do
    if ! grep -qF -- "$marker" "$log"; then
        echo "$name: no line \"$marker\" in the log: a case did not run (was $variable seen?)" >&2
        exit 1
    fi
done
echo "== $name: passed"
