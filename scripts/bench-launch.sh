#!/bin/sh
# Launch overhead, side by side in one hyperfine run (medians):
#   bare /bin/true, dcjail --no-sandbox, --backend landlock, --backend bwrap,
#   and the raw bwrap command line dcjail renders (from `dcjail explain`).
# Targets: no-sandbox within 1 ms of /bin/true; landlock under 2 ms added;
# bwrap within 1.25x of raw bwrap.
# STATIC=1 measures the static-pie build (scripts/build-static.sh).
# Needs: hyperfine, python3, bubblewrap. The machine's load is printed: on a
# shared machine compare medians of one run only.
set -eu
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ "${STATIC:-0}" = 1 ]; then
    bin="$("$root/scripts/build-static.sh")"
else
    (cd "$root" && cargo build --release --quiet)
    bin="${CARGO_TARGET_DIR:-$root/target}/release/dcjail"
    bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
fi
work="$(mktemp -d)"
trap 'rm -rf --one-file-system "$work"' EXIT
cd "$work"
raw="$("$bin" explain --backend bwrap -- /bin/true | python3 -c '
import json, shlex, sys
l = json.load(sys.stdin)["launch"]
print(" ".join(shlex.quote(a) for a in [l["bwrap"]] + l["argv"] + ["--", "/bin/true"]))
')"
echo "binary: $bin ($(wc -c <"$bin") bytes)"
echo "load before: $(cat /proc/loadavg)"
hyperfine -N --warmup 30 --runs "${RUNS:-500}" --export-json "$work/b.json" \
    /bin/true \
    "$bin --no-sandbox -- /bin/true" \
    "$bin --backend landlock -- /bin/true" \
    "$bin --backend bwrap -- /bin/true" \
    "$raw" >/dev/null
echo "load after:  $(cat /proc/loadavg)"
python3 - "$work/b.json" <<'PY'
import json, sys
r = [x["median"] * 1000 for x in json.load(open(sys.argv[1]))["results"]]
t, ns, ll, bw, raw = r
print(f"median /bin/true        {t:6.2f} ms")
print(f"median --no-sandbox     {ns:6.2f} ms  (+{ns - t:.2f} ms; target +1.00)")
print(f"median --backend landlock {ll:4.2f} ms  (+{ll - t:.2f} ms; target +2.00)")
print(f"median --backend bwrap  {bw:6.2f} ms  vs raw bwrap {raw:.2f} ms: {bw / raw:.2f}x (target 1.25x)")
PY
