#!/usr/bin/env bash
# The full-volume tests (Tests/CashierProcessTests/FullVolumeTests.swift) on a real 2 MiB volume
# below a symbolic link (.ci/volume-tests.sh). The tests fill it until writes throw noSpace,
# check that every write that returned reads back whole, then that removals give space back and
# writes resume in the test process, in a fresh process and after `cashier-tool prune`.
set -euo pipefail
"$(dirname "$0")/volume-tests.sh" full-volume 2m CASHIER_FULL_VOLUME FullVolume \
    "full volume (removeValue)" "full volume (removeAllWhere)"
# Large sweeps on a volume with little room (Tests/CashierStoreTests/SweepVacuumSmallVolumeReviewTests.swift),
# on a tmpfs of their own: they fill it, so they do not run beside the suites above.
exec "$(dirname "$0")/volume-tests.sh" sweep-small-volume 16m CASHIER_FULL_VOLUME SweepVacuumSmallVolume \
    "sweep on a volume with"
