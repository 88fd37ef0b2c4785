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
#  2. workloads (scripts/workloads.py), in the same table: `find /usr -xdev`,
#     `git status` in a generated repository of 100k files, `cargo build
#     --offline` of a crate copied from the registry cache (regex-syntax, its
#     one optional dependency dropped; `cargo clean` before each build), each
#     bare, under raw bwrap (dcjail's namespaces and mounts for that command,
#     from `dcjail explain`), under dcjail's bwrap and landlock backends;
#     paired, interleaved rounds, medians, and the rounds' median ratio to
#     raw bwrap (bwrap) or bare (landlock). git and cargo run in
#     workspace-write (landlock: with protect_defaults = false, the policy it
#     accepts). A tool that is missing or fails is listed as such.
#  3. the glob walk (`**/.env`) over a generated tree of 100k files.
#  4. proxy throughput: 1 GiB from a loopback server, proxied against direct,
#     in one process (examples/proxy_throughput.rs) and as a curl download
#     inside `dcjail --net allowlist`; paired, interleaved rounds, medians.
#     Then HTTPS from `openssl s_server` with a CA of its own: the tunnelling
#     path (an allowed, unbound name: the command's own TLS) beside the
#     terminating path (a name with a credential bound: the proxy's TLS on
#     both sides). The launch table has a row with a credential configured.
# Measures the binary `cargo build --release` makes (README's build).
# Needs: python3, bubblewrap, curl, openssl; git and cargo for their workloads.
# Takes ~5-8 minutes (ROUNDS=N sets the find and git rounds, CARGO_ROUNDS=N
# the cargo ones).
set -euo pipefail
cd "$(dirname "$0")/.."
# Where cargo put the binaries (the build target is set in .cargo/config.toml).
# DCJAIL=PATH measures that dcjail binary instead (an older build, say), with
# this checkout's benches. OLD=PATH measures an older binary beside it, in
# the same interleaved rounds (rows old-landlock, old-bwrap, and its curl
# download): before and after from one run.
D="$(cargo build --release --quiet --bin dcjail --example proxy_throughput --example walk_bench \
  --example launch_bench --message-format=json-render-diagnostics | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "dcjail" and m.get("executable"):
        print(m["executable"])
')"
EX="$(dirname "$D")/examples"
D="${DCJAIL:-$D}"
# Measured as copies (outside /tmp and the work directory, which are
# writable roots): a binary the linker has just written launches ~0.25 ms
# slower than a copy of it (the page cache it left, not dcjail), which would
# skew the rows against OLD.
bin="$PWD/target/bench-bin"
rm -rf --one-file-system "$bin"
mkdir -p "$bin"
cp "$D" "$bin/dcjail"
D="$bin/dcjail"
if [ -n "${OLD:-}" ]; then
  cp "$OLD" "$bin/dcjail-old"
  OLD="$bin/dcjail-old"
fi
RUNS="${RUNS:-300}"

# Not under /tmp: a writable root of the sandbox, where dcjail would refuse
# the workloads' policy files (a policy the command could rewrite).
work="$(mktemp -d /var/tmp/dcjail-bench.XXXXXX)"
srv=""
tsrv=""
cleanup() {
  # A server already stopped is no failure of the run.
  [ -n "$srv" ] && kill "$srv" 2>/dev/null || true
  [ -n "$tsrv" ] && kill "$tsrv" 2>/dev/null || true
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
repo="$PWD"
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
# The agent integration: a hook call as each agent makes one (the input on
# stdin, the agent's variables set), and Claude Code's shell prefix (dcjail
# with the line as its one argument) beside the same line run by dcjail
# directly; the hook rows answer from the plan, starting nothing.
mkdir -p "$work/proj"
hookin() { printf '{"hook_event_name":"PreToolUse","permission_mode":"default","cwd":"%s","tool_name":"%s","tool_input":%s}' "$work/proj" "$1" "$2" >"$work/$3.json"; }
hookin Bash '{"command":"make test"}' claude-bash
hookin Write '{"file_path":"'"$work"'/proj/src/main.rs","content":"x"}' claude-write
hookin Bash '{"command":"make test"}' codex-bash
export CLAUDE_CODE_SHELL_PREFIX="$D" CLAUDE_PROJECT_DIR="$work"
names+=("hook-claude-bash<$work/claude-bash.json" "hook-claude-write<$work/claude-write.json"
  "hook-codex-bash<$work/codex-bash.json" claude-prefix bash-c)
cmds+=("$D hook claude-code" "$D hook claude-code" "$D hook codex" "$D /bin/true"
  "$D --sandbox-mode workspace-write --workspace $work -- bash -c /bin/true")
# A credential configured: the run's CA, its leaf, the bundle file.
cat >"$work/creds.toml" <<'TOML'
[permission]
approval = "granted"
[sandbox.network]
allow_domains = ["example.com"]
[[sandbox.network.credentials]]
domain = "example.com"
header = "Authorization"
value = "Bearer ${env:DCJAIL_BENCH_TOKEN}"
TOML
export DCJAIL_BENCH_TOKEN=bench-not-a-secret
names+=(bwrap-allowlist-creds)
cmds+=("$D --backend bwrap --policy $work/creds.toml -- /bin/true")
if [ -n "${OLD:-}" ]; then
  names+=(old-landlock old-bwrap)
  cmds+=("$OLD --backend landlock -- /bin/true" "$OLD --backend bwrap -- /bin/true")
fi

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

# Workloads: their trees, policies and raw bwrap command lines.
mkdir -p "$work/pol" "$work/git" "$work/crate"
# The person asked for the command (an approved call), in workspace-write.
pol='[permission]\noutcome = "allow"\napproval = "granted"\n[sandbox]\nmode = "workspace-write"\n'
printf "$pol" >"$work/pol/bwrap.toml"
printf "$pol"'[sandbox.filesystem]\nprotect_defaults = false\n' >"$work/pol/landlock.toml"
if command -v git >/dev/null; then
  echo "(generating a git repository of 100k files)" >&2
  python3 - "$work/git" <<'PY'
import os, sys
root = sys.argv[1]
for i in range(1000):
    d = os.path.join(root, f"d{i // 100}", f"e{i // 10 % 10}", f"f{i % 10}")
    os.makedirs(d, exist_ok=True)
    for j in range(100):
        with open(os.path.join(d, f"file{i * 100 + j}.txt"), "w") as f:
            f.write(f"{i} {j}\n")
PY
  (cd "$work/git" && git init -q && git add -A &&
    git -c user.name=bench -c user.email=bench@localhost -c gc.auto=0 \
      -c maintenance.auto=false commit -qm tree && git config gc.auto 0 &&
    git config maintenance.auto false) >/dev/null 2>&1 ||
    echo "git: cannot build the repository" >"$work/git.failed"
else
  echo "git: not installed" >"$work/git.failed"
fi
crate="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/regex-syntax-0.8.* 2>/dev/null | sort -V | tail -1 || true)"
if ! command -v cargo >/dev/null; then
  echo "cargo: not installed" >"$work/cargo.failed"
elif [ -z "$crate" ]; then
  echo "cargo: no regex-syntax 0.8 in the registry cache" >"$work/cargo.failed"
else
  cp -r "$crate/." "$work/crate/"
  # Its only dependency is optional (arbitrary); dropped, so the offline
  # build needs nothing that is not there.
  python3 - "$work/crate/Cargo.toml" <<'PY'
import re, sys
p = sys.argv[1]
s = open(p).read()
s = re.sub(r'(?m)^arbitrary = \["dep:arbitrary"\]\n', "", s)
s = re.sub(r'\n\[(?:[^\]\n]*\.)?dependencies\.[^\]\n]+\]\n(?:[^\[\n][^\n]*\n)*', "\n", s)
open(p, "w").write(s)
PY
  rm -f "$work/crate/Cargo.lock"
fi
python3 - "$D" "$work" "${ROUNDS:-11}" "${CARGO_ROUNDS:-5}" "${OLD:-}" >"$work/workloads.json" <<'PY'
import json, os, subprocess, sys
d, work, rounds, cargo_rounds, old = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]

def raw_bwrap(cwd, pol, cmd):
    pol_args = ["--policy", pol] if pol else []
    # One launch first: it makes what dcjail makes at launch (the
    # workspace's own cache directory), which the replayed mounts name.
    subprocess.run([d] + pol_args + ["--backend", "bwrap", "--", "true"], cwd=cwd,
                   stdin=subprocess.DEVNULL, capture_output=True)
    args = [d, "explain"] + pol_args + ["--backend", "bwrap", "--"] + cmd
    l = json.loads(subprocess.run(args, cwd=cwd, capture_output=True, check=True).stdout)["launch"]
    return [l["bwrap"]] + l["argv"] + ["--"] + cmd

def workload(name, cwd, cmd, rounds, policy, **kw):
    failed = os.path.join(work, name.split()[0] + ".failed")
    if os.path.exists(failed):
        return {"name": name, "missing": open(failed).read().strip()}
    pol = lambda b: ["--policy", os.path.join(work, "pol", b + ".toml")] if policy else []
    try:
        raw = raw_bwrap(cwd, pol("bwrap")[1] if policy else None, cmd)
    except Exception as e:
        return {"name": name, "missing": f"dcjail explain failed: {e}"}
    variants = [
        ["bare", cmd],
        ["raw-bwrap", raw],
        ["bwrap", [d] + pol("bwrap") + ["--backend", "bwrap", "--"] + cmd],
        ["landlock", [d] + pol("landlock") + ["--backend", "landlock", "--"] + cmd],
    ]
    if old:
        variants += [
            ["old-bwrap", [old] + pol("bwrap") + ["--backend", "bwrap", "--"] + cmd],
            ["old-landlock", [old] + pol("landlock") + ["--backend", "landlock", "--"] + cmd],
        ]
    return dict(name=name, cwd=cwd, rounds=rounds, variants=variants, **kw)

crate = os.path.join(work, "crate")
print(json.dumps([
    # find exits 1 where a directory cannot be read (dcjail drops every
    # capability: root's unreadable directories are unreadable there).
    workload("find", work, ["find", "/usr", "-xdev"], rounds, False, ok=[0, 1]),
    workload("git status", os.path.join(work, "git"), ["git", "status", "--porcelain"], rounds, True),
    workload("cargo build", crate, ["cargo", "build", "--offline", "--quiet"], cargo_rounds, True,
             env={"CARGO_TARGET_DIR": os.path.join(crate, "target")},
             prep=["cargo", "clean", "--quiet"]),
]))
PY
echo "(workloads: find, git status, cargo build)" >&2
python3 "$repo/scripts/workloads.py" "$work/workloads.json" "$work/workloads.txt" 2>&1 | sed 's/^/  /' >&2 ||
  echo "workloads - failed scripts/workloads.py failed" >"$work/workloads.txt"

python3 - "$work/launch.txt" "$work/failed.txt" "$work/workloads.txt" <<'PY'
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
    "claude-prefix": ("vs-bash-c", 0.5, "within 0.5 ms of the same line run by dcjail"),
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
        elif kind == "vs-bash-c":
            ok = m - med["bash-c"] <= lim
            text += f" ({m - med['bash-c']:+.2f} ms)"
        else:
            ok = m - med["bwrap"] <= lim
            text += f" (+{m - med['bwrap']:.2f} ms)"
        t = ("met: " if ok else "MISSED: ") + text
    lo, hi = q[n]
    print(f"| {n} | {m:.2f} | {lo:.2f}–{hi:.2f} | {m / med['bare']:.2f}x | {m - med['bare']:+.2f} | {t} |")
for n, why in failed.items():
    print(f"| {n} | failed | | | | {why.replace('|', '/')} |")
# Workload rows: the target is the rounds' median ratio to raw bwrap (dcjail's
# bwrap backend) or to bare (landlock).
wl = {}
for line in open(sys.argv[3]):
    w = line.split()
    # The workload's name may hold a space ("git status").
    i = next(k for k, x in enumerate(w)
             if x in ("-", "bare", "raw-bwrap", "bwrap", "landlock", "old-bwrap", "old-landlock"))
    name, var, rest = " ".join(w[:i]), w[i], w[i + 1:]
    if rest[0] == "failed":
        why = " ".join(rest[1:]).replace("|", "/")
        print(f"| {name}: {var} | failed | | | | {why} |" if var != "-" else f"| {name} | failed | | | | {why} |")
        continue
    m, lo, hi = map(float, rest[:3])
    wl[(name, var)] = m
    bare = wl.get((name, "bare"))
    vs = f"{m / bare:.3f}x" if bare else ""
    added = f"{m - bare:+.1f}" if bare else ""
    t = ""
    if len(rest) > 3:
        ref, r, rlo, rhi = rest[3], float(rest[4]), float(rest[5]), float(rest[6])
        if var == "raw-bwrap":
            t = f"(paired ratio to bare {r:.3f}, p25–p75 {rlo:.3f}–{rhi:.3f})"
        else:
            ok = r <= 1.03
            t = (("met: " if ok else "MISSED: ") + f"within 3% of {ref.replace('-', ' ')}"
                 f" (paired ratio {r:.3f}, p25–p75 {rlo:.3f}–{rhi:.3f})")
    print(f"| {name}: {var} | {m:.1f} | {lo:.1f}–{hi:.1f} | {vs} | {added} | {t} |")
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
old_jailed() { "$OLD" --backend bwrap --net allowlist --allow-domain localhost -- \
    curl -sS -o /dev/null -w "old-allowlist $fmt" "http://localhost:$port/"; }
for i in $(seq "${CURL_ROUNDS:-5}"); do
  # Alternate the order, as the in-process measurement does.
  if [ $((i % 2)) = 1 ]; then direct; jailed; else jailed; direct; fi
  if [ -n "${OLD:-}" ]; then old_jailed; fi
done >"$work/curl.txt"
python3 - "$work/curl.txt" <<'PY'
import statistics, sys
s = {"direct": [], "allowlist": [], "old-allowlist": []}
for line in open(sys.argv[1]):
    k, v = line.split()
    s[k].append(float(v) / 1048576)
d, a = statistics.median(s["direct"]), statistics.median(s["allowlist"])
r = [y / x for x, y in zip(s["direct"], s["allowlist"])]
print(f"direct {d:.0f} MiB/s, inside dcjail --net allowlist {a:.0f} MiB/s, "
      f"ratio {a / d:.2f} (rounds {min(r):.2f}-{max(r):.2f})")
if s["old-allowlist"]:
    o = statistics.median(s["old-allowlist"])
    r = [y / x for x, y in zip(s["direct"], s["old-allowlist"])]
    print(f"OLD: inside the old dcjail --net allowlist {o:.0f} MiB/s, ratio {o / d:.2f} "
          f"(rounds {min(r):.2f}-{max(r):.2f})")
PY

echo
echo "== HTTPS download of ${MIB:-1024} MiB inside dcjail: tunnelled (unbound name) vs terminated (credential bound), ${CURL_ROUNDS:-5} paired rounds"
tls="$work/tls"
mkdir -p "$tls/www"
(
  cd "$tls"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
    -subj /CN=dcjail-bench-ca -days 2 -addext basicConstraints=critical,CA:TRUE \
    -addext keyUsage=critical,keyCertSign 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key -out leaf.csr \
    -subj /CN=localhost 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >leaf.ext
  openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem -days 2 \
    -extfile leaf.ext 2>/dev/null
  head -c "$(( ${MIB:-1024} * 1048576 ))" /dev/zero >www/blob
)
tport="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
(cd "$tls/www" && exec openssl s_server -quiet -accept "127.0.0.1:$tport" -cert ../leaf.pem \
  -key ../leaf.key -WWW) &
tsrv=$!
for _ in $(seq 50); do
  curl -sS -o /dev/null --cacert "$tls/ca.pem" "https://127.0.0.1:$tport/" 2>/dev/null && break
  sleep 0.1
done
cat >"$work/tls.toml" <<TOML
[permission]
approval = "granted"
[sandbox.network]
allow_domains = ["localhost", "127.0.0.1"]
[[sandbox.network.credentials]]
domain = "localhost"
header = "Authorization"
value = "Bearer \${env:DCJAIL_BENCH_TOKEN}"
upstream_ca = "$tls/ca.pem"
TOML
in_jail() { "$D" --backend bwrap --policy "$work/tls.toml" -- curl -sS --noproxy '' -o /dev/null "$@"; }
tunnelled() { in_jail --cacert "$tls/ca.pem" -w "tunnelled $fmt" "https://127.0.0.1:$tport/blob"; }
terminated() { in_jail -w "terminated $fmt" "https://localhost:$tport/blob"; }
for i in $(seq "${CURL_ROUNDS:-5}"); do
  if [ $((i % 2)) = 1 ]; then tunnelled; terminated; else terminated; tunnelled; fi
done >"$work/tls.txt"
kill "$tsrv" 2>/dev/null
python3 - "$work/tls.txt" <<'PY'
import statistics, sys
s = {"tunnelled": [], "terminated": []}
for line in open(sys.argv[1]):
    k, v = line.split()
    s[k].append(float(v) / 1048576)
t, m = statistics.median(s["tunnelled"]), statistics.median(s["terminated"])
r = [y / x for x, y in zip(s["tunnelled"], s["terminated"])]
print(f"tunnelled {t:.0f} MiB/s, terminated {m:.0f} MiB/s, "
      f"ratio {m / t:.2f} (rounds {min(r):.2f}-{max(r):.2f})")
PY
