#!/usr/bin/env bash
# The packages under Integrations/ (CashierPostgres, CashierHummingbird, CashierVapor), each its
# own SwiftPM package depending on Cashier by path: linted, built and tested against a real
# PostgreSQL from Debian's packages, started here as a throwaway cluster and removed at the end.
#
# The cluster (.ci/postgres.sh) runs as a user of its own (PostgreSQL refuses root) on a free
# loopback port. Then FleetBench's rolling deploy runs against it: a schema-1 and a schema-2
# build of a test server at once (Integrations/FleetBench/README.md), and ServerBench's smoke run.
#
# The three packages build in one scratch folder (Integrations/.build-ci, or INTEGRATIONS_SCRATCH):
# the second and third reuse what the first compiled of the dependencies they share (swift-nio,
# swift-crypto and BoringSSL twice, Cashier itself). From a new clone on 2 cores this took 6 min,
# against 23 min with a .build per package.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
packages=(CashierPostgres CashierHummingbird CashierVapor)

echo "== integrations: swift format lint"
swift format lint --strict --recursive --parallel --configuration .swift-format Integrations/*/Package.swift \
    Integrations/*/Sources Integrations/*/Tests

echo "== integrations: PostgreSQL"
# shellcheck source=.ci/postgres.sh
source .ci/postgres.sh
postgres_start

for package in "${packages[@]}"; do
    started=$SECONDS
    scratch=(--scratch-path "${INTEGRATIONS_SCRATCH:-$root/Integrations/.build-ci}")
    echo "== integrations: $package: swift build"
    swift build --build-tests --package-path "Integrations/$package" "${scratch[@]}"
    echo "== integrations: $package: swift test"
    # The crash test kills the server the other tests use: it runs alone, after them.
    swift test --skip-build --package-path "Integrations/$package" "${scratch[@]}" --skip CrashTests 2>&1 |
        tee "$postgres_cluster/test.log"
    # The PostgreSQL suite skips itself without a server: here there is one, so it must have run.
    if grep -q "skipped" "$postgres_cluster/test.log"; then
        echo "integrations: $package skipped tests although PostgreSQL is running" >&2
        exit 1
    fi
    if [ "$package" = CashierPostgres ]; then
        echo "== integrations: CashierPostgres: PostgreSQL killed right after acknowledged changes"
        CASHIER_POSTGRES_CRASH="bash $(postgres_crash_script)" swift test --skip-build \
            --package-path "Integrations/$package" "${scratch[@]}" --filter CrashTests 2>&1 |
            tee "$postgres_cluster/test.log"
        if grep -q "skipped" "$postgres_cluster/test.log" || ! grep -q "acknowledgedChangesSurviveAKill" \
            "$postgres_cluster/test.log"; then
            echo "integrations: the crash test did not run" >&2
            exit 1
        fi
    fi
    echo "integrations: $package built and tested in $((SECONDS - started)) s"
done

# After CashierPostgres and CashierHummingbird: what it links is compiled by then.
started=$SECONDS
echo "== integrations: FleetBench: swift build"
swift build --package-path Integrations/FleetBench "${scratch[@]}"
bin=$(swift build --package-path Integrations/FleetBench "${scratch[@]}" --show-bin-path)
echo "== integrations: FleetBench: rolling deploy"
# --strict: a wrong value fails the run too (none in five runs since the tier orders changes by time).
python3 Integrations/FleetBench/fleet.py rolling --strict --binary "$bin/FleetServer" --postgres "$CASHIER_POSTGRES_URL"
echo "integrations: FleetBench built and run in $((SECONDS - started)) s"

# The server benchmark of issue 35 (Integrations/ServerBench/README.md), as a smoke run: a debug
# build in the shared scratch folder, one short round on each route, failing on any error. Its
# figures are a release build's (run.sh without CONFIGURATION), not CI's.
started=$SECONDS
missing=()
for tool in wrk curl; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "${missing[*]} not installed and this is not root: apt-get install ${missing[*]}" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
echo "== integrations: ServerBench: smoke run"
CONFIGURATION=debug SCRATCH="${INTEGRATIONS_SCRATCH:-$root/Integrations/.build-ci}" ROUNDS=1 DURATION=2 \
    Integrations/ServerBench/run.sh
echo "integrations: ServerBench built and run in $((SECONDS - started)) s"
cd "$root"
echo "== integrations passed"
