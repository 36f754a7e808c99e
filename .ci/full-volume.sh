#!/usr/bin/env bash
# The full-volume tests (Tests/CashierProcessTests/FullVolumeTests.swift) on a real 2 MiB volume
# below a symbolic link (.ci/volume-tests.sh). The tests fill it until writes throw noSpace,
# check that every write that returned reads back whole, then that removals give space back and
# writes resume in the test process, in a fresh process and after `cashier-tool prune`.
set -euo pipefail
exec "$(dirname "$0")/volume-tests.sh" full-volume 2m CASHIER_FULL_VOLUME FullVolume \
    "full volume (removeValue)" "full volume (removeAllWhere)"
