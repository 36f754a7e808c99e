#!/usr/bin/env bash
# `cashier-tool report` in a real browser: a demo-filled folder (one entry damaged, so the
# page shows every kind of row) is rendered by headless Chromium from Debian's packages
# (installed when missing). The page must load with no console message at all (a script
# error or a Content-Security-Policy violation would be one), its script must finish (it
# marks <body data-state="ready">), sorting and filtering from the address must agree with
# `list`, and the screenshot must not be blank.
# CASHIER_UPDATE_SCREENSHOT=1 copies the screenshot to the one README shows.
set -euo pipefail
cd "$(dirname "$0")/.."

if command -v timeout >/dev/null; then
    limit() { timeout --kill-after=10 "$@"; }
else
    limit() { shift; "$@"; }
fi
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

browser="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$browser" ]; then
    echo "-- installing Chromium (Debian package chromium)"
    as_root apt-get update -q
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q chromium fonts-dejavu-core > /dev/null
    browser="$(command -v chromium)"
fi
"$browser" --version 2>/dev/null | grep -v 'unexpected operator' || true

work="$(mktemp -d "${TMPDIR:-/tmp}/cashier-report-ci.XXXXXX")"
trap 'rm -rf "$work"' EXIT

limit 900 swift build --product cashier-tool
tool="$(swift build --show-bin-path)/cashier-tool"

echo "-- a demo folder, one entry damaged"
limit 120 "$tool" demo "$work/Cashier/demo" > /dev/null
limit 60 "$tool" list "$work/Cashier/demo" --json > "$work/list.json"
# Small entries are rows of the folder's store: one byte of session.blob's record changed
# (through Python's own SQLite) is a checksum mismatch, a damaged row that still shows its key.
grep -q '"session.blob"' "$work/list.json" || { echo "no session.blob in the demo folder" >&2; exit 1; }
python3 - "$work/Cashier/demo/store.sqlite" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
row = db.execute("SELECT id, record FROM entry WHERE key = 'session.blob'").fetchone()
assert row is not None and row[1], "session.blob is not a row of the store"
record = bytearray(row[1])
record[-1] ^= 0x58
db.execute("UPDATE entry SET record = ? WHERE id = ?", (bytes(record), row[0]))
db.commit()
PY

echo "-- cashier-tool report"
limit 60 "$tool" report "$work/Cashier/demo" --output "$work/report.html" --size-limit 4K
size="$(wc -c < "$work/report.html")"
echo "report.html: $size bytes"

render() { # render URL OUTPUT-OPTION...: headless Chromium, console messages on standard error
    local url="$1"
    shift
    limit 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
        --user-data-dir="$work/profile" --enable-logging=stderr --v=0 "$@" "$url"
}

check_log() { # check_log LOG: no console message, no uncaught error
    if grep -E ':CONSOLE|Uncaught' "$1"; then
        echo "the page logged to the console (above)" >&2
        exit 1
    fi
}

echo "-- loads with no console message; its script finishes"
render "file://$work/report.html" --dump-dom > "$work/dom.html" 2> "$work/load.log"
check_log "$work/load.log"
grep -q '<body data-state="ready">' "$work/dom.html" || { echo "the page's script did not finish" >&2; exit 1; }
grep -q '<tr class="damaged"' "$work/dom.html" || { echo "no damaged row" >&2; exit 1; }
grep -q '<img src="data:image/png;base64,' "$work/dom.html" || { echo "no thumbnail" >&2; exit 1; }

echo "-- #sort=size puts list --sort size's first row first; #filter=user shows the keys holding 'user'"
largest="$("$tool" list "$work/Cashier/demo" --sort size --json | awk -F'"' '$2 == "key" { print $4; exit }')"
render "file://$work/report.html#sort=size" --dump-dom > "$work/sorted.html" 2> "$work/sorted.log"
check_log "$work/sorted.log"
# The first body row's first cell (header rows hold <th>, not <td>).
first="$(grep -o '<tr[^>]*><td[^>]*>[^<]*' "$work/sorted.html" | head -n 1 | sed 's/.*>//')"
[ "$first" = "$largest" ] || { echo "sorted by size, the first row is '$first', list says '$largest'" >&2; exit 1; }
users="$(grep -c '^      "key" : ".*user' "$work/list.json")"
render "file://$work/report.html#filter=user" --dump-dom > "$work/filtered.html" 2> "$work/filtered.log"
check_log "$work/filtered.log"
grep -q "<span id=\"shown\">$users of [0-9]* shown</span>" "$work/filtered.html" \
    || { echo "filtering by 'user' did not show $users rows" >&2; exit 1; }

echo "-- a screenshot that is not blank"
render "file://$work/report.html" --screenshot="$work/report.png" --window-size=1200,1160 2> "$work/shot.log"
check_log "$work/shot.log"
bytes="$(wc -c < "$work/report.png")"
[ "$bytes" -gt 30000 ] || { echo "the screenshot is $bytes bytes: blank?" >&2; exit 1; }
if command -v python3 >/dev/null; then
    colours="$(python3 .ci/png-colours.py "$work/report.png")"
    echo "screenshot: $bytes bytes, $colours colours"
    [ "$colours" -ge 64 ] || { echo "the screenshot has $colours colours: blank?" >&2; exit 1; }
else
    echo "screenshot: $bytes bytes (no python3 to count colours)"
fi
if [ "${CASHIER_UPDATE_SCREENSHOT:-0}" = 1 ]; then
    mkdir -p Sources/Cashier/Cashier.docc/Resources
    cp "$work/report.png" Sources/Cashier/Cashier.docc/Resources/report.png
    echo "updated Sources/Cashier/Cashier.docc/Resources/report.png"
fi
[ -f Sources/Cashier/Cashier.docc/Resources/report.png ] || { echo "README's screenshot is missing" >&2; exit 1; }
echo "-- report checks passed"
