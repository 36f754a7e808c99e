#!/usr/bin/env bash
# The fleet figures of issue 37 on one machine: three FleetServer processes sharing one
# PostgreSQL (a throwaway cluster, .ci/postgres.sh), load from wrk and from fleet.py on loopback.
# Prints (a) origin fetches, (b) propagation, (c) throughput, (d) PostgreSQL killed and
# restarted, (e) the rolling deploy, and (f) an instance stopped after a burst of writes. About
# 3 minutes after the build.
#
#   Integrations/FleetBench/run.sh                       # release build
#   CONFIGURATION=debug Integrations/FleetBench/run.sh   # reuses CI's debug build folder
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
configuration=${CONFIGURATION:-release}
scratch=(--scratch-path "${FLEET_SCRATCH:-$root/Integrations/.build-ci}")
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }

swift build -c "$configuration" --package-path Integrations/FleetBench "${scratch[@]}"
binary="$(swift build -c "$configuration" --package-path Integrations/FleetBench "${scratch[@]}" --show-bin-path)/FleetServer"

# shellcheck source=../../.ci/postgres.sh
source .ci/postgres.sh
postgres_start
export -f postgres_kill postgres_restart
export postgres_bin postgres_cluster postgres_port
# runuser as root; nothing otherwise (an array does not cross into the child shells).
owner_prefix=${postgres_as_owner[*]:-}
export owner_prefix

harness=(python3 Integrations/FleetBench/fleet.py --binary "$binary" --postgres "$CASHIER_POSTGRES_URL")
echo "== FleetBench: $(nproc) cores, $configuration build, everything on this machine"
"${harness[@]}" origin --requests 20000
"${harness[@]}" propagation --ids 200
"${harness[@]}" throughput --seconds 30 --rounds 6
"${harness[@]}" outage --seconds 15 --ids 100 \
    --stop 'postgres_as_owner=($owner_prefix); postgres_kill' \
    --start 'postgres_as_owner=($owner_prefix); postgres_restart'
"${harness[@]}" shutdown --seconds 6 --ids 300
echo "(e) rolling deploy:"
"${harness[@]}" rolling --requests 3000
