#!/usr/bin/env bash
# The full-volume tests (Tests/CashierProcessTests/FullVolumeTests.swift) on a real small volume:
# a 2 MiB tmpfs mounted below a symbolic link, as an iOS app's container lies below
# /var -> /private/var. The tests fill it until writes throw noSpace, check that every write
# that returned reads back whole, then that removals give space back and writes resume in the
# test process, in a fresh process and after `cashier-tool prune`. Mounting needs root (CI runs
# as root). Exits non-zero when the tests fail or did not run.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
    echo "full-volume: mounting a tmpfs needs root (CI runs as root)" >&2
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/cashier-full-volume.XXXXXX")
mounted=""
cleanup() {
    if [ -n "$mounted" ]; then
        umount "$mounted" 2>/dev/null || umount -l "$mounted"
    fi
    rm -rf "$work"
}
trap cleanup EXIT

mkdir "$work/real"
mount -t tmpfs -o size=2m,mode=0700 cashier-full-volume "$work/real"
mounted="$work/real"
ln -s "$work/real" "$work/link"
folder="$work/link/caches"
echo "== full-volume: 2 MiB tmpfs mounted at $work/real; the caches at $folder, below the link $work/link"
df -k "$work/real"

echo "== full-volume: swift build --build-tests"
swift build --build-tests

echo "== full-volume: CASHIER_FULL_VOLUME=$folder swift test --skip-build --filter FullVolume"
log="$work/test.log" # on the real disk: the tmpfs is for the caches
set +e
CASHIER_FULL_VOLUME="$folder" swift test --skip-build --filter FullVolume 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
    echo "full-volume: the tests failed (swift test exited $status)" >&2
    exit "$status"
fi
# A suite that was skipped passes too: each case prints its line only once it ran through.
for case in removeValue removeAllWhere; do
    if ! grep -q "^full volume ($case)" "$log"; then
        echo "full-volume: the $case case did not run (was CASHIER_FULL_VOLUME seen?)" >&2
        exit 1
    fi
done
echo "== full-volume: passed"
