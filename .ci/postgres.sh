# Sourced: a throwaway PostgreSQL cluster on a free loopback port, for .ci/integrations.sh and
# Integrations/FleetBench/run.sh. `postgres_start` installs the server when missing (as root),
# starts the cluster and exports CASHIER_POSTGRES_URL; it is stopped and removed on exit.
#
# PostgreSQL refuses to run as root: as root (CI), the cluster runs as the user `cashierci`,
# created when missing; as another user, as that user. The server listens on a free loopback
# port only, its data and socket in a temporary folder; fsync is off (nothing here must survive
# a crash of the machine). 300 connections: the integration tests run in parallel, each tier
# holding its listener's connection and, as it starts, one that creates its table; at the
# default 100 some were refused ("too many clients") and their pools waited a minute.

postgres_start() {
    local initdb
    initdb=$(ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n 1 || true)
    if [ -z "$initdb" ]; then
        if [ "$(id -u)" -ne 0 ]; then
            echo "PostgreSQL's server is not installed and this is not root: apt-get install postgresql" >&2
            return 1
        fi
        # Only the server's programs are wanted: no cluster of the package's own, running on 5432.
        mkdir -p /etc/postgresql-common/createcluster.d
        echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.d/cashier-ci.conf
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
        initdb=$(ls /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n 1)
    fi
    postgres_bin=$(dirname "$initdb")

    postgres_as_owner=()
    local owner
    if [ "$(id -u)" -eq 0 ]; then
        owner=cashierci
        id -u "$owner" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$owner"
        postgres_as_owner=(runuser -u "$owner" --)
    else
        owner=$(id -un)
    fi

    postgres_cluster=$(mktemp -d "${TMPDIR:-/tmp}/cashier-postgres.XXXXXX")
    chown "$owner" "$postgres_cluster"
    chmod 700 "$postgres_cluster"
    trap postgres_remove EXIT

    # A port the kernel hands out and takes back: free now, and nothing else here asks for one.
    postgres_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "${postgres_as_owner[@]}" "$postgres_bin/initdb" -D "$postgres_cluster/data" -U cashier --auth=trust -E UTF8 \
        --no-sync >/dev/null
    postgres_restart
    export CASHIER_POSTGRES_URL="postgres://cashier@127.0.0.1:$postgres_port/postgres"
    echo "$("$postgres_bin/postgres" --version) on 127.0.0.1:$postgres_port ($postgres_cluster)"
}

# Starts the cluster (again, after postgres_kill) on the same port.
postgres_restart() {
    "${postgres_as_owner[@]}" "$postgres_bin/pg_ctl" -D "$postgres_cluster/data" -l "$postgres_cluster/server.log" \
        -w -t 60 -o "-p $postgres_port -k $postgres_cluster -c listen_addresses=127.0.0.1 -c fsync=off \
        -c synchronous_commit=off -c max_connections=300" start >/dev/null
}

# Stops the server as a crash would: no checkpoint, every connection cut.
postgres_kill() {
    "${postgres_as_owner[@]}" "$postgres_bin/pg_ctl" -D "$postgres_cluster/data" -m immediate stop >/dev/null 2>&1 || true
}

# Writes a script that kills the server as a crash would and starts it again, for a test that
# runs it (CashierPostgres's crash test); prints its path.
postgres_crash_script() {
    local script="$postgres_cluster/crash.sh"
    {
        echo "set -euo pipefail"
        declare -p postgres_as_owner postgres_bin postgres_cluster postgres_port
        declare -f postgres_kill postgres_restart
        echo "postgres_kill"
        echo "postgres_restart"
    } >"$script"
    echo "$script"
}

postgres_remove() {
    postgres_kill
    rm -rf "$postgres_cluster"
}
