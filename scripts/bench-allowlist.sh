#!/bin/sh
# Network allowlist figures (issue 6), meant to be called from scripts/bench.sh:
#  1. launch time: --net allowlist against --net none, per backend (hyperfine);
#     target: under 20 ms added.
#  2. proxy throughput: 1 GiB from a loopback server, through the proxy
#     against direct (examples/proxy_throughput, in one process); target:
#     at least half.
#  3. the same download by curl: direct, and inside dcjail through the proxy.
set -eu
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=target}"
export CARGO_TARGET_DIR
cargo build --release --quiet --bin dcjail --example proxy_throughput
D="$CARGO_TARGET_DIR/release/dcjail"
case "$D" in /*) ;; *) D="$PWD/$D" ;; esac
T="$CARGO_TARGET_DIR/release/examples/proxy_throughput"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
for b in landlock bwrap; do
    if ! "$D" --backend "$b" --net allowlist --allow-domain example.com -- /bin/true 2>/dev/null; then
        echo "allowlist launch ($b): backend unavailable here, skipped"
        continue
    fi
    echo "== launch time, $b: --net none vs --net allowlist"
    hyperfine -N --warmup 5 --runs "${RUNS:-50}" \
        "$D --backend $b --net none -- /bin/true" \
        "$D --backend $b --net allowlist --allow-domain example.com -- /bin/true"
done
echo "== proxy throughput, ${MIB:-1024} MiB over loopback"
"$T" "${MIB:-1024}"

echo "== curl download of ${MIB:-1024} MiB: direct vs inside dcjail --net allowlist"
port_file="$work/port"
"$T" --serve "${MIB:-1024}" >"$port_file" &
srv=$!
trap 'kill $srv 2>/dev/null; rm -rf "$work"' EXIT
while [ ! -s "$port_file" ]; do sleep 0.1; done
port=$(cat "$port_file")
fmt='%{speed_download}'
speed() { awk '{ printf "%.0f MiB/s\n", $1 / 1048576 }'; }
env -u http_proxy -u HTTP_PROXY curl -s -o /dev/null -w "$fmt" "http://127.0.0.1:$port/" | { printf 'direct:            '; speed; }
for b in landlock bwrap; do
    "$D" --backend "$b" --net allowlist --allow-domain localhost -- \
        curl -s -o /dev/null -w "$fmt" "http://localhost:$port/" 2>/dev/null | { printf '%-19s' "$b allowlist:"; speed; }
done
