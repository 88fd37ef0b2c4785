#!/usr/bin/env bash
# Attacks dcjail's Seatbelt backend on a real Mac and checks that each effect
# did NOT happen (file absent, secret not printed, connection failed). The
# Linux test suite proves what dcjail hands to sandbox-exec (goldens, structure,
# meaning under SBPL's documented semantics); only this script, run on macOS,
# shows what the kernel then does with it. Never run on Linux CI.
#
#   cargo build --release && scripts/seatbelt-macos-check.sh
#   (or DCJAIL=/path/to/dcjail scripts/seatbelt-macos-check.sh)
#
# Exit 0 when every check held, 1 when one failed, 2 when this is not macOS.
set -u
if [ "$(uname -s)" != Darwin ]; then
    echo "seatbelt-macos-check: needs macOS (sandbox-exec)" >&2
    exit 2
fi
# .cargo/config.toml names the host as build target: binaries land in
# target/<host-tuple>/.
DCJAIL=${DCJAIL:-$PWD/target/$(rustc -vV | sed -n 's/^host: //p')/release/dcjail}
[ -x "$DCJAIL" ] || { echo "seatbelt-macos-check: no dcjail at $DCJAIL" >&2; exit 2; }
unset DCJAIL_POLICY

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok    $*"; }
bad() { fail=$((fail + 1)); echo "FAIL  $*"; }
absent() { if [ -e "$1" ]; then bad "$2 ($1 exists)"; else ok "$2"; fi; }

W=$(mktemp -d "${TMPDIR:-/tmp}/dcjail-sb.XXXXXX") && W=$(cd "$W" && pwd -P)
# Outside every writable root: not under the workspace, /tmp or $TMPDIR.
OUT=$(mktemp -d "$HOME/.dcjail-sb-outside.XXXXXX") && OUT=$(cd "$OUT" && pwd -P)
trap 'rm -rf "$W" "$OUT"' EXIT
cd "$W" || exit 1
git init -q . && git -c user.name=t -c user.email=t@e commit -q --allow-empty -m init
echo topsecret-outside >"$OUT/secret"
echo topsecret-inside >"$W/secret.txt"
ln -s "$OUT" "$W/link-out"

ww() { "$DCJAIL" --backend seatbelt --sandbox-mode workspace-write "$@"; }

# Writes
ww -- sh -c 'echo hi > inside.txt' 2>/dev/null
if [ "$(cat inside.txt 2>/dev/null)" = hi ]; then ok "workspace is writable"; else bad "workspace is writable"; fi
ww -- sh -c "echo x > '$OUT/escaped'" 2>/dev/null
absent "$OUT/escaped" "write outside the writable roots fails"
ww -- sh -c 'echo x > link-out/escaped-via-link' 2>/dev/null
absent "$OUT/escaped-via-link" "a symlink out of the workspace gives no write access"
"$DCJAIL" --backend seatbelt -- sh -c 'echo x > ro.txt' 2>/dev/null
absent "$W/ro.txt" "read-only mode writes nothing"

# Protected paths: existing, missing, case variants, rename and link tricks
ww -- sh -c 'echo evil > .git/hooks/pre-commit' 2>/dev/null
absent "$W/.git/hooks/pre-commit" "missing .git/hooks/pre-commit cannot be created"
ww -- sh -c 'echo evil > .GIT/HOOKS/post-checkout' 2>/dev/null
absent "$W/.git/hooks/post-checkout" "case variant .GIT/HOOKS cannot be written"
ww -- sh -c 'mv .git g && mkdir -p g/hooks && echo evil > g/hooks/pre-push && mv g .git' 2>/dev/null
if [ -d "$W/.git" ] && [ ! -e "$W/.git/hooks/pre-push" ]; then ok "renaming .git away and back plants no hook"; else bad "renaming .git away and back plants no hook"; fi
ww -- git config core.hooksPath /tmp/evil 2>/dev/null
if grep -q hooksPath .git/config; then bad ".git/config stays unwritable"; else ok ".git/config stays unwritable"; fi
ww -- sh -c 'ln .git/config cfg && printf "[core]\n\thooksPath = /tmp/evil\n" >> cfg' 2>/dev/null
if grep -q hooksPath .git/config; then bad "a hard link to .git/config gives no write"; else ok "a hard link to .git/config gives no write"; fi
ww -- sh -c 'echo "alias ls=evil" > .bashrc' 2>/dev/null
absent "$W/.bashrc" "missing .bashrc cannot be created"
ww -- sh -c 'mkdir -p .vscode && echo {} > .vscode/tasks.json' 2>/dev/null
absent "$W/.vscode/tasks.json" ".vscode cannot be created"

# git still works in the workspace
ww -- sh -c 'echo a > a.txt && git add a.txt && git -c user.name=t -c user.email=t@e commit -qm a' 2>/dev/null
if [ "$(git log --oneline | wc -l | tr -d ' ')" = 2 ]; then ok "git add and commit work"; else bad "git add and commit work"; fi

# Reads
out=$(ww --deny-read "$OUT" -- cat "$OUT/secret" 2>/dev/null)
case $out in *topsecret*) bad "deny_read outside is unreadable" ;; *) ok "deny_read outside is unreadable" ;; esac
out=$(ww --deny-read secret.txt -- sh -c 'cat secret.txt; mv secret.txt s2 && cat s2; ln secret.txt s3 && cat s3' 2>/dev/null)
case $out in *topsecret*) bad "deny_read inside: no read, no rename-out, no link-out" ;; *) ok "deny_read inside: no read, no rename-out, no link-out" ;; esac

# Network
if curl -sS -m 5 -o /dev/null https://example.com 2>/dev/null; then
    if ww -- curl -sS -m 5 -o /dev/null https://example.com 2>/dev/null; then bad "net none: no connection"; else ok "net none: no connection"; fi
    if ww --net full -- curl -sS -m 10 -o /dev/null https://example.com 2>/dev/null; then ok "net full: HTTPS works"; else bad "net full: HTTPS works"; fi
else
    echo "skip  network checks: this Mac has no network"
fi
if ww -- python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect("/var/run/mDNSResponder")' 2>/dev/null; then
    bad "net none: unix socket files are unreachable"
else
    ok "net none: unix socket files are unreachable"
fi

# Ordinary programs run
if [ "$(ww -- python3 -c 'import multiprocessing as m; print(m.Pool(2).map(abs, [-1, -2]))' 2>/dev/null)" = "[1, 2]" ]; then
    ok "python3 multiprocessing runs"
else
    bad "python3 multiprocessing runs"
fi
if command -v node >/dev/null; then
    if [ "$(ww -- node -e 'console.log(6*7)' 2>/dev/null)" = 42 ]; then ok "node runs"; else bad "node runs"; fi
fi
if ww -- ls -l / >/dev/null 2>&1; then ok "ls -l / runs"; else bad "ls -l / runs"; fi

# Terminal injection (needs a real terminal on stdin)
if [ -t 0 ]; then
    if ww -- python3 -c 'import fcntl, termios; fcntl.ioctl(0, termios.TIOCSTI, b"#")' 2>/dev/null; then
        bad "TIOCSTI is refused"
    else
        ok "TIOCSTI is refused"
    fi
else
    echo "skip  TIOCSTI: stdin is not a terminal"
fi

# Nested Seatbelt is refused with 122 before anything runs
sandbox-exec -p '(version 1)(allow default)' "$DCJAIL" --backend seatbelt -- touch "$W/nested" 2>/dev/null
code=$?
if [ "$code" = 122 ] && [ ! -e "$W/nested" ]; then ok "nested Seatbelt is refused (122)"; else bad "nested Seatbelt is refused (got $code)"; fi

echo "seatbelt-macos-check: $pass passed, $fail failed"
[ "$fail" = 0 ]
