#!/usr/bin/env bash
# The packages under Integrations/ (CashierPostgres, CashierHummingbird, CashierVapor), each its
# own SwiftPM package depending on Cashier by path: linted, built and tested against a real
# PostgreSQL from Debian's packages, started here as a throwaway cluster and removed at the end.
#
# PostgreSQL refuses to run as root: as root (CI), the cluster runs as the user `cashierci`,
# created when missing; as another user, as that user. The server listens on a free loopback
# port only, its data and socket in a temporary folder; fsync is off (nothing here must survive
# a crash of the machine).
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
initdb=$(ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$initdb" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "PostgreSQL's server is not installed and this is not root: apt-get install postgresql" >&2
        exit 1
    fi
    # Only the server's programs are wanted: no cluster of the package's own, running on 5432.
    mkdir -p /etc/postgresql-common/createcluster.d
    echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.d/cashier-ci.conf
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    initdb=$(ls /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n 1)
fi
bin=$(dirname "$initdb")

as_owner=()
if [ "$(id -u)" -eq 0 ]; then
    owner=cashierci
    id -u "$owner" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$owner"
    as_owner=(runuser -u "$owner" --)
else
    owner=$(id -un)
fi

cluster=$(mktemp -d "${TMPDIR:-/tmp}/cashier-postgres.XXXXXX")
chown "$owner" "$cluster"
chmod 700 "$cluster"
stop_cluster() {
    "${as_owner[@]}" "$bin/pg_ctl" -D "$cluster/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$cluster"
}
trap stop_cluster EXIT

# A port the kernel hands out and takes back: free now, and nothing else here asks for one.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${as_owner[@]}" "$bin/initdb" -D "$cluster/data" -U cashier --auth=trust -E UTF8 --no-sync >/dev/null
"${as_owner[@]}" "$bin/pg_ctl" -D "$cluster/data" -l "$cluster/server.log" -w -t 60 \
    -o "-p $port -k $cluster -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off" start >/dev/null
export CASHIER_POSTGRES_URL="postgres://cashier@127.0.0.1:$port/postgres"
echo "$("$bin/postgres" --version) on 127.0.0.1:$port ($cluster)"

for package in "${packages[@]}"; do
    started=$SECONDS
    scratch=(--scratch-path "${INTEGRATIONS_SCRATCH:-$root/Integrations/.build-ci}")
    echo "== integrations: $package: swift build"
    swift build --build-tests --package-path "Integrations/$package" "${scratch[@]}"
    echo "== integrations: $package: swift test"
    swift test --skip-build --package-path "Integrations/$package" "${scratch[@]}" 2>&1 | tee "$cluster/test.log"
    # The PostgreSQL suite skips itself without a server: here there is one, so it must have run.
    if grep -q "skipped" "$cluster/test.log"; then
        echo "integrations: $package skipped tests although PostgreSQL is running" >&2
        exit 1
    fi
    echo "integrations: $package built and tested in $((SECONDS - started)) s"
done
cd "$root"
echo "== integrations passed"
