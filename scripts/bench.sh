#!/usr/bin/env bash
# Launch-time and throughput benchmarks, as ratios measured side by side in one
# run (never in timed tests). Usage: scripts/bench.sh   (RUNS=N, MIB=N to tune)
#
#  1. launch: bare /bin/true; dcjail --no-sandbox; each backend; raw bwrap with
#     the very namespaces and mounts dcjail uses (read from `dcjail explain`, so
#     the two cannot drift apart); the allowlist proxy; other sandbox launchers
#     when installed (firejail, srt, codex) — optional, never required: a peer
#     whose command fails (its command line changed, say) is listed as failed,
#     with its error, and the rest of the table still prints.
#     Interleaved (examples/launch_bench.rs): each round runs every command
#     once, so background noise falls on all of them alike.
#  2. the glob walk (`**/.env`) over a generated tree of 100k files.
#  3. proxy throughput: 1 GiB from a loopback server, proxied against direct,
#     in one process (examples/proxy_throughput.rs) and as a curl download
#     inside `dcjail --net allowlist`; paired, interleaved rounds, medians.
# Measures the binary `cargo build --release` makes (README's build).
# Needs: python3, bubblewrap, curl.
set -euo pipefail
cd "$(dirname "$0")/.."
# Where cargo put the binaries (the build target is set in .cargo/config.toml).
D="$(cargo build --release --quiet --bin dcjail --example proxy_throughput --example walk_bench \
  --example launch_bench --message-format=json-render-diagnostics | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "dcjail" and m.get("executable"):
        print(m["executable"])
')"
EX="$(dirname "$D")/examples"
RUNS="${RUNS:-300}"

work="$(mktemp -d)"
srv=""
cleanup() { [ -n "$srv" ] && kill "$srv" 2>/dev/null; rm -rf --one-file-system "$work"; }
trap cleanup EXIT
cd "$work"

echo "== machine"
echo "$(uname -srm); $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "dcjail release binary: $(stat -c %s "$D") bytes (stripped)"

raw_bwrap="$("$D" explain --backend bwrap -- /bin/true | python3 -c '
import json, shlex, sys
l = json.load(sys.stdin)["launch"]
print(" ".join(shlex.quote(a) for a in [l["bwrap"]] + l["argv"] + ["--", "/bin/true"]))
')"

names=(bare no-sandbox landlock bwrap raw-bwrap bwrap-allowlist)
cmds=(
  "/bin/true"
  "$D --no-sandbox -- /bin/true"
  "$D --backend landlock -- /bin/true"
  "$D --backend bwrap -- /bin/true"
  "$raw_bwrap"
  "$D --backend bwrap --net allowlist --allow-domain example.com -- /bin/true"
)

# Optional peers: NAME then candidate command lines (their forms differ
# between versions), separated by `|`. The first that runs /bin/true is
# measured; when none does, the peer is reported as failed with its error.
: >"$work/failed.txt"
peer() {
  local name="$1" forms="$2" form out rc why=""
  command -v "${forms%% *}" >/dev/null || return 0
  IFS='|' read -ra alts <<<"$forms"
  for form in "${alts[@]}"; do
    eval "words=($form)"
    out="$(timeout 60 "${words[@]}" </dev/null 2>&1)" && rc=0 || rc=$?
    if [ "$rc" = 0 ]; then
      names+=("?$name"); cmds+=("$form"); return 0
    fi
    why+="\`$form\` exit $rc: $(printf '%s' "$out" | tr '\n|' '  ' | cut -c1-160); "
  done
  printf '%s\t%s\n' "$name" "${why%; }" >>"$work/failed.txt"
}
peer firejail "firejail --quiet --noprofile --net=none /bin/true"
peer srt "srt /bin/true"
peer codex-sandbox "codex sandbox linux /bin/true|codex sandbox -- /bin/true"

echo
echo "== launch time ($RUNS interleaved rounds, medians)"
bench_args=()
for i in "${!names[@]}"; do
  [ "$i" -gt 0 ] && bench_args+=(":::")
  # The command strings hold no quoted words but raw bwrap's, which
  # shlex-quoted them; eval splits them back into words.
  eval "words=(${cmds[$i]})"
  bench_args+=("${names[$i]}" "${words[@]}")
done
"$EX/launch_bench" "$RUNS" 30 "${bench_args[@]}" >"$work/launch.txt"
python3 - "$work/launch.txt" "$work/failed.txt" <<'PY'
import sys
med, q, failed = {}, {}, {}
for line in open(sys.argv[1]):
    n, rest = line.split(None, 1)
    if rest.startswith("failed "):
        failed[n] = rest[len("failed "):].strip()
        continue
    m, lo, hi = rest.split()
    med[n], q[n] = float(m), (float(lo), float(hi))
for line in open(sys.argv[2]):
    n, why = line.rstrip("\n").split("\t", 1)
    failed[n] = why
print("| command | median ms | p25–p75 ms | vs bare | added ms | target |")
print("|---|---|---|---|---|---|")
targets = {
    "no-sandbox": ("added", 1.0, "within 1 ms of bare"),
    "landlock": ("added", 2.0, "under 2 ms added"),
    "bwrap": ("ratio", 1.25, "within 1.25x raw bwrap"),
    "bwrap-allowlist": ("vs-bwrap", 20.0, "under 20 ms over bwrap --net none"),
}
for n, m in med.items():
    t = ""
    if n in targets:
        kind, lim, text = targets[n]
        if kind == "added":
            ok = m - med["bare"] <= lim
        elif kind == "ratio":
            ok = m / med["raw-bwrap"] <= lim
            text += f" (ratio {m / med['raw-bwrap']:.2f})"
        else:
            ok = m - med["bwrap"] <= lim
            text += f" (+{m - med['bwrap']:.2f} ms)"
        t = ("met: " if ok else "MISSED: ") + text
    lo, hi = q[n]
    print(f"| {n} | {m:.2f} | {lo:.2f}–{hi:.2f} | {m / med['bare']:.2f}x | {m - med['bare']:+.2f} | {t} |")
for n, why in failed.items():
    print(f"| {n} | failed | | | | {why.replace('|', '/')} |")
PY

echo
echo "== glob walk: **/.env over a generated tree of 100k files"
"$EX/walk_bench" 100000 9

echo
echo "== proxy throughput, ${MIB:-1024} MiB over loopback (in one process)"
"$EX/proxy_throughput" "${MIB:-1024}"

echo
echo "== curl download of ${MIB:-1024} MiB: direct vs inside dcjail --net allowlist (bwrap), ${CURL_ROUNDS:-5} paired rounds"
"$EX/proxy_throughput" --serve "${MIB:-1024}" >"$work/port" &
srv=$!
while [ ! -s "$work/port" ]; do sleep 0.1; done
port="$(cat "$work/port")"
fmt='%{speed_download}\n'
direct() { env -u http_proxy -u HTTP_PROXY -u ALL_PROXY -u all_proxy curl -sS -o /dev/null -w "direct $fmt" "http://127.0.0.1:$port/"; }
jailed() { "$D" --backend bwrap --net allowlist --allow-domain localhost -- \
    curl -sS -o /dev/null -w "allowlist $fmt" "http://localhost:$port/"; }
for i in $(seq "${CURL_ROUNDS:-5}"); do
  # Alternate the order, as the in-process measurement does.
  if [ $((i % 2)) = 1 ]; then direct; jailed; else jailed; direct; fi
done >"$work/curl.txt"
python3 - "$work/curl.txt" <<'PY'
import statistics, sys
s = {"direct": [], "allowlist": []}
for line in open(sys.argv[1]):
    k, v = line.split()
    s[k].append(float(v) / 1048576)
d, a = statistics.median(s["direct"]), statistics.median(s["allowlist"])
r = [y / x for x, y in zip(s["direct"], s["allowlist"])]
print(f"direct {d:.0f} MiB/s, inside dcjail --net allowlist {a:.0f} MiB/s, "
      f"ratio {a / d:.2f} (rounds {min(r):.2f}-{max(r):.2f})")
PY
