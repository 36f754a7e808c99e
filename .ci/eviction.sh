#!/usr/bin/env bash
# Keeps the eviction policies honest (issue 26): replays the disk-tier traces (seconds
# in a debug build) through every policy of CashierEviction and fails if LRU, SIEVE or
# S3-FIFO stops agreeing with libCacheSim's committed numbers, or the adaptive policy (the
# memory tier's), the store's frequency-aware order (a real EntryStore, sweeps and all) or
# a real Cache's disk tier (no memory tier, size limit, its own background sweeps; about
# 1.5 minutes in a debug build) misses its goal (within 0.02 of the best classical policy,
# never below LRU), and again with 1 KiB objects (rows of the store) at 50 requests a second. No pip:
# the reference table is Benchmarks/Eviction/reference.tsv. The full run, all traces:
#   swift run -c release CashierReplay
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== eviction: build CashierReplay"
swift build --product CashierReplay

echo "== eviction: CashierReplay --smoke"
# Fixed hashing so the sampled keys and sketch collisions are the same on every run.
SWIFT_DETERMINISTIC_HASHING=1 "$(swift build --show-bin-path)/CashierReplay" --smoke \
    --reference Benchmarks/Eviction/reference.tsv
echo "== eviction: CashierReplay --smoke, 1 KiB rows at a server's pace (issue 35)"
# Rows of the store, 50 requests a second: the disk tier within 0.02 of the best there too.
SWIFT_DETERMINISTIC_HASHING=1 "$(swift build --show-bin-path)/CashierReplay" --smoke \
    --reference Benchmarks/Eviction/reference.tsv --object-bytes 1024 --seconds-per-request 0.02
echo "== eviction: passed"
