#!/bin/sh
# dcjail --backend bwrap -- /bin/true against the raw bwrap command line with
# the same namespaces and mounts (taken from `dcjail explain`, so the two
# cannot drift apart). Target: dcjail's median within 1.25x of raw bwrap's.
# Needs: hyperfine, python3, bubblewrap. Run from the repository root.
set -eu
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/dcjail"
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
raw="$("$bin" explain --backend bwrap -- /bin/true | python3 -c '
import json, shlex, sys
v = json.load(sys.stdin)
l = v["launch"]
print(" ".join(shlex.quote(a) for a in [l["bwrap"]] + l["argv"] + ["--", "/bin/true"]))
')"
hyperfine -N --warmup 20 --runs "${RUNS:-300}" --export-json "$work/b.json" \
    "$bin --backend bwrap -- /bin/true" "$raw"
python3 - "$work/b.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
d, b = r[0]["median"] * 1000, r[1]["median"] * 1000
print(f"median: dcjail {d:.2f} ms, raw bwrap {b:.2f} ms, ratio {d / b:.2f} (target 1.25)")
PY
