#!/usr/bin/env bash
# Review of 46c85b9: FullVolumeTighteningReviewTests (Tests/CashierProcessTests) on a real volume
# roomier than DiskTier.tightVolumeBytes (64 MiB), so that the store opens not tight: an 80 MiB
# tmpfs mounted below a symbolic link. The test writes rows, fills the volume with a file of its
# own (another app), removes a few entries and expects space back and a large write to resume.
# Made from full-volume.sh (sed of its size, variable and filter). Mounting needs root.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
    echo "full-volume: mounting a tmpfs needs root (CI runs as root)" >&2
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/cashier-tightening-volume.XXXXXX")
mounted=""
cleanup() {
    if [ -n "$mounted" ]; then
        umount "$mounted" 2>/dev/null || umount -l "$mounted"
    fi
    rm -rf "$work"
}
trap cleanup EXIT

mkdir "$work/real"
mount -t tmpfs -o size=80m,mode=0700 cashier-tightening-volume "$work/real"
mounted="$work/real"
ln -s "$work/real" "$work/link"
folder="$work/link/caches"
echo "== full-volume: 80 MiB tmpfs mounted at $work/real; the caches at $folder, below the link $work/link"
df -k "$work/real"

echo "== full-volume: swift build --build-tests"
swift build --build-tests

echo "== full-volume: CASHIER_TIGHTENING_VOLUME=$folder swift test --skip-build --filter FullVolumeTightening"
log="$work/test.log" # on the real disk: the tmpfs is for the caches
set +e
CASHIER_TIGHTENING_VOLUME="$folder" swift test --skip-build --filter FullVolumeTightening 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
    echo "full-volume: the tests failed (swift test exited $status)" >&2
    exit "$status"
fi
if ! grep -q "^tightening volume:" "$log"; then
    echo "full-volume: the tightening case did not run (was CASHIER_TIGHTENING_VOLUME seen?)" >&2
    exit 1
fi
echo "== full-volume: passed"
