#!/usr/bin/env bash
# Review of 46c85b9: FullVolumeTighteningReviewTests (Tests/CashierProcessTests) on a real volume
# roomier than DiskTier.tightVolumeBytes (64 MiB), so that the store opens not tight: an 80 MiB
# tmpfs below a symbolic link (.ci/volume-tests.sh). The test writes rows, fills the volume with
# a file of its own (another app), removes a few entries and expects space back and a large
# write to resume.
set -euo pipefail
"$(dirname "$0")/volume-tests.sh" tightening-volume 80m CASHIER_TIGHTENING_VOLUME FullVolumeTightening \
    "tightening volume:"
# Garbage collection for room on a volume another app filled since the store opened
# (Tests/CashierProcessTests/SweepVacuumTighteningReviewTests.swift), on a tmpfs of its own.
exec "$(dirname "$0")/volume-tests.sh" sweep-tightening-volume 80m CASHIER_TIGHTENING_VOLUME \
    SweepVacuumTightening "collection with"
