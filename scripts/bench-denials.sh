#!/usr/bin/env bash
# The cost of the denial report, side by side in one run: each workload under
# each Linux backend with reporting off (no --report, no --events, stderr not
# a terminal) and on (`--events 2`: everything the report needs is observed,
# nothing is written when nothing is denied). Usage: scripts/bench-denials.sh
# (RUNS=N for the launch, GIT_RUNS=N, CARGO_RUNS=N). Needs git, python3,
# cargo; measures the binary `cargo build --release` makes.
#
#  1. launch: `dcjail -- /bin/true`; with BASE=/path/to/an/older/dcjail also
#     that binary against this one with reporting off (off costs nothing)
#  2. `git status` over a generated repository of 100k files (read-only)
#  3. `cargo build --offline` of a copy of regex-syntax from ~/.cargo/registry
#     (workspace-write; a clean target before every run)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --locked --bin dcjail --example launch_bench
D="$(ls -d "$PWD"/target/*/release/dcjail | head -1)"
LB="$(ls -d "$PWD"/target/*/release/examples/launch_bench | head -1)"
RUNS="${RUNS:-400}"
GIT_RUNS="${GIT_RUNS:-20}"
CARGO_RUNS="${CARGO_RUNS:-4}"
# Not under /tmp (a writable root): the checkout's target directory.
work="$PWD/target/bench-denials"
rm -rf --one-file-system "$work"
mkdir -p "$work"
trap 'rm -rf --one-file-system "$work"' EXIT
# Measured as a copy, and so is BASE: a binary the linker has just written
# launches ~0.25 ms slower than a copy of it (the page cache it left, not
# dcjail; launch_bench, 400 rounds), which would skew BASE/this.
cp "$D" "$work/dcjail"
D="$work/dcjail"
if [ -n "${BASE:-}" ]; then
  cp "$BASE" "$work/dcjail-base"
  BASE="$work/dcjail-base"
fi
exec 2>&1 </dev/null

echo "== machine: $(uname -srm); $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"

# Interleaved: each round runs off then on (then on then off), so the
# machine's background load falls on both alike; medians, and the ratio of
# the medians. PREPARE, when set, runs before every timed run, untimed.
pair() { # name runs off-command on-command
  python3 - "$@" <<'EOF'
import os, shlex, statistics, subprocess, sys, time
name, runs, off, on = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
prep = os.environ.get("PREPARE")
t = {"off": [], "on": []}
def once(which, cmd):
    if prep:
        subprocess.run(prep, shell=True, check=True)
    a = time.perf_counter()
    r = subprocess.run(shlex.split(cmd), stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t[which].append(time.perf_counter() - a)
    if r.returncode != 0:
        sys.exit(f"{name} {which}: exit {r.returncode}: {cmd}")
for i in range(runs):
    order = [("off", off), ("on", on)] if i % 2 == 0 else [("on", on), ("off", off)]
    for w, c in order:
        once(w, c)
m = {k: statistics.median(v) for k, v in t.items()}
q = {k: statistics.quantiles(v, n=4) if len(v) >= 4 else [min(v), 0, max(v)] for k, v in t.items()}
print(f"{name:<22} off {m['off']*1000:9.2f} ms (IQR {q['off'][0]*1000:.2f}-{q['off'][2]*1000:.2f})"
      f"   on {m['on']*1000:9.2f} ms (IQR {q['on'][0]*1000:.2f}-{q['on'][2]*1000:.2f})"
      f"   on/off {m['on']/m['off']:.3f}")
EOF
}

echo "== launch (/bin/true), median of $RUNS interleaved rounds (examples/launch_bench)"
# Timed by launch_bench rather than from Python: a Python fork and wait
# costs more than the difference measured here, and moves with the machine.
for be in bwrap landlock; do
  base=()
  if [ -n "${BASE:-}" ]; then
    base=(::: base-off "$BASE" --backend "$be" -- /bin/true)
  fi
  "$LB" "$RUNS" 20 off "$D" --backend "$be" -- /bin/true \
    ::: on "$D" --backend "$be" --events 2 -- /bin/true "${base[@]}" |
    awk -v be="$be" '{ m[$1] = $2; q[$1] = $3 "-" $4 }
      END {
        printf "launch %-9s off %6.3f ms (IQR %s)   on %6.3f ms (IQR %s)   on/off %.3f\n",
          be, m["off"], q["off"], m["on"], q["on"], m["on"] / m["off"]
        if ("base-off" in m)
          printf "launch %-9s BASE off %6.3f ms   this/BASE (off) %.3f\n",
            be, m["base-off"], m["off"] / m["base-off"]
      }'
done

echo "== git status, 100k files, median of $GIT_RUNS"
repo="$work/repo"
python3 - "$repo" <<'EOF'
import os, sys
root = sys.argv[1]
for d in range(1000):
    p = os.path.join(root, f"d{d:03}")
    os.makedirs(p)
    for f in range(100):
        with open(os.path.join(p, f"f{f:02}.txt"), "w") as fh:
            fh.write(f"{d} {f}\n")
EOF
git -C "$repo" init -q
git -C "$repo" -c user.name=b -c user.email=b@b add -A
git -C "$repo" -c user.name=b -c user.email=b@b commit -qm init
git -C "$repo" status >/dev/null
for be in bwrap landlock; do
  pair "git status $be" "$GIT_RUNS" \
    "$D --backend $be --workspace $repo -- git -C $repo status --porcelain" \
    "$D --backend $be --workspace $repo --events 2 -- git -C $repo status --porcelain"
done

echo "== cargo build --offline (regex-syntax), median of $CARGO_RUNS"
src="$(ls -d "$HOME"/.cargo/registry/src/*/regex-syntax-0.8.* | head -1)"
crate="$work/crate"
cp -r "$src" "$crate"
# Its one dependency is optional and not unpacked here: without it the
# crate resolves offline.
python3 - "$crate/Cargo.toml" <<'EOF'
import re, sys
p = sys.argv[1]
t = open(p).read()
t = t.replace('arbitrary = ["dep:arbitrary"]\n', '')
t = re.sub(r'\[dependencies\.arbitrary\]\n(?:[^\[\n][^\n]*\n)*', '', t)
open(p, 'w').write(t)
EOF
CARGO="$(rustup which cargo 2>/dev/null || command -v cargo)"
RUSTC="$(rustup which rustc 2>/dev/null || command -v rustc)"
(cd "$crate" && RUSTC="$RUSTC" "$CARGO" generate-lockfile --offline -q)
for be in bwrap landlock; do
  extra=""
  [ "$be" = landlock ] && extra="--no-protect-defaults"
  run="env RUSTC=$RUSTC CARGO_TARGET_DIR=$crate/target $CARGO build --offline -q --manifest-path $crate/Cargo.toml"
  PREPARE="rm -rf $crate/target" pair "cargo build $be" "$CARGO_RUNS" \
    "$D --backend $be --sandbox-mode workspace-write $extra --workspace $crate -- $run" \
    "$D --backend $be --sandbox-mode workspace-write $extra --workspace $crate --events 2 -- $run"
done
