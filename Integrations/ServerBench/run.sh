#!/usr/bin/env bash
# Issue 35's server figure: one ServerBench process (Hummingbird 2) serves the same routes with
# a Cashier cache (/cached) and without one (/plain); wrk sends bench.lua's mix (90% GET Zipf
# over 20,000 items, 10% PUT) to each in turn, ROUNDS times, alternating which goes first.
# Prints each run, then the medians' ratios: throughput cached / plain, and server CPU a request
# cached / plain (the process's user + system time over the run, from GET /cpu).
#
#   Integrations/ServerBench/run.sh            # release build (CONFIGURATION=debug for a debug one)
#   ROUNDS=5 DURATION=15 CONNECTIONS=64 Integrations/ServerBench/run.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
configuration=${CONFIGURATION:-release}
scratch=${SCRATCH:-$root/Integrations/.build-serverbench}
rounds=${ROUNDS:-3}
duration=${DURATION:-10}
connections=${CONNECTIONS:-64}
threads=${THREADS:-2}
export SERVER_BENCH_ITEMS=${ITEMS:-20000}

command -v wrk >/dev/null || { echo "run.sh needs wrk (Debian: apt-get install wrk)" >&2; exit 1; }
swift build -c "$configuration" --package-path "$here" --scratch-path "$scratch"
bin="$(swift build -c "$configuration" --package-path "$here" --scratch-path "$scratch" --show-bin-path)/ServerBench"

work=$(mktemp -d)
server=
# Whatever ends the script (a failure, a server that died, Ctrl-C): the server stopped and the
# folder removed. Each step may fail (the server gone already, killed by a signal) without
# cutting the cleanup short under `set -e`; a server that died has its log shown.
cleanup() {
    if [ -n "$server" ]; then
        kill -0 "$server" 2>/dev/null || { echo "run.sh: the server stopped; its log:" >&2; cat "$work/server.log" >&2 || true; }
        kill "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" --port "$port" --folder "$work/cache" --origin "$work/origin" --items "$SERVER_BENCH_ITEMS" \
    --memory "${MEMORY:-2000}" >"$work/server.log" 2>&1 &
server=$!
for attempt in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$port/cpu" >/dev/null && break
    kill -0 "$server" 2>/dev/null || exit 1
    [ "$attempt" -lt 600 ] || { echo "run.sh: the server did not answer in 60 s" >&2; exit 1; }
    sleep 0.1
done

# One wrk run on `route`: prints "requests/s cpu-µs-per-request errors".
measure() {
    local route=$1 seconds=$2 before after output requests
    before=$(curl -sf "http://127.0.0.1:$port/cpu")
    output=$(wrk -t"$threads" -c"$connections" -d"${seconds}s" -s "$here/bench.lua" "http://127.0.0.1:$port" -- "$route")
    after=$(curl -sf "http://127.0.0.1:$port/cpu")
    requests=$(awk '/requests in/ { print $1 }' <<<"$output")
    awk -v output="$output" -v requests="$requests" -v cpu=$((after - before)) 'BEGIN {
        rate = 0; errors = 0
        n = split(output, lines, "\n")
        for (i = 1; i <= n; i++) {
            if (lines[i] ~ /Requests\/sec/) { split(lines[i], f, " "); rate = f[2] }
            if (lines[i] ~ /Non-2xx/) { split(lines[i], f, ":"); errors += f[2] }
            if (lines[i] ~ /Socket errors/) { gsub(/[^0-9 ]/, " ", lines[i]); split(lines[i], f, " "); errors += f[1] + f[2] + f[3] + f[4] }
        }
        printf "%.0f %.1f %d\n", rate, cpu / requests, errors
    }'
}

echo "== warm-up (${duration}s each; the cache's folder and memory tier fill)"
measure plain "$duration" >/dev/null
measure cached "$duration" >/dev/null

declare -a plain_rates cached_rates plain_cpu cached_cpu
errors=0
for round in $(seq 1 "$rounds"); do
    order="plain cached"
    [ $((round % 2)) -eq 0 ] && order="cached plain"
    for route in $order; do
        read -r rate cpu failed < <(measure "$route" "$duration")
        printf "round %d %-6s %8s requests/s  %7s µs CPU a request  %s errors\n" "$round" "$route" "$rate" "$cpu" "$failed"
        errors=$((errors + failed))
        if [ "$route" = plain ]; then plain_rates+=("$rate"); plain_cpu+=("$cpu"); else cached_rates+=("$rate"); cached_cpu+=("$cpu"); fi
    done
done

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
pr=$(median "${plain_rates[@]}"); cr=$(median "${cached_rates[@]}")
pc=$(median "${plain_cpu[@]}"); cc=$(median "${cached_cpu[@]}")
awk -v pr="$pr" -v cr="$cr" -v pc="$pc" -v cc="$cc" -v errors="$errors" -v c="$configuration" 'BEGIN {
    printf "throughput with the cache / without: %.0f / %.0f requests/s = %.2fx (goal >= 0.6x)\n", cr, pr, cr / pr
    printf "server CPU a request with / without: %.1f / %.1f µs = %.2fx (goal <= 1.6x)\n", cc, pc, cc / pc
    printf "errors: %d (%s build, medians of the rounds)\n", errors, c
}'
# A request that failed is a broken server, whatever the ratios.
[ "$errors" -eq 0 ]
