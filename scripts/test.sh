#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, every test (unit,
# integration, attack and escape tests), and a short fuzz run when present.
# Usage: scripts/test.sh            (from anywhere inside the checkout)
set -euo pipefail
cd "$(dirname "$0")/.."

# A test whose prerequisite (a program, root, a working bubblewrap) is
# missing fails, naming the line that installs it, instead of skipping:
# a green run means every test ran. `DCJAIL_TEST_REQUIRE=0 scripts/test.sh`
# lets them skip with a note (e.g. a run as a user other than root).
export DCJAIL_TEST_REQUIRE="${DCJAIL_TEST_REQUIRE:-1}"

# The attack tests drive real tools: bubblewrap, curl, python3, git, setpriv;
# the completion tests load the scripts in zsh and fish; libFuzzer needs g++;
# the real-work suite (tests/realwork_*.rs) drives tmux, less, vi, node/npm
# and a venv of the system's python3 (which uid 65534 can run too); the
# escape tests set and read extended attributes (setfattr, getfattr) and
# make namespaces with unshare; a denial test counts syscalls with strace;
# the unix-socket tests name a real ssh-agent socket; the leave-behind
# tests (tests/home_class.rs) run what a later gdb and direnv (with
# bash's hook) would run; the network report tests (tests/report_network.rs)
# find the host's address with ip and serve a repository with git daemon;
# the advice tests (tests/advice_kinds.rs) follow a report's suggestions
# for vim (its viminfo), less under script(1), and a commit signed by gpg
# through its agent; the package-manager tests
# (tests/realwork_pkg_managers.rs) build a C extension with gcc and
# Python's headers; the escape tests bind-mount (mount, umount), set inode
# flags (chattr, lsattr) and look for leftover processes (pgrep); srt, which
# tests/environments_agents.rs runs dcjail inside, needs rg and socat. Every
# program a test runs is here or in a Debian Essential package:
# tests/prerequisites.rs checks this list against the tests, and the tests
# read it to name the package when one is missing (tests/support/scratch.rs,
# `need`).
need=()
for t in bwrap:bubblewrap curl:curl python3:python3 git:git setpriv:util-linux flock:util-linux \
  zsh:zsh fish:fish g++:g++ tmux:tmux less:less vi:vim-tiny node:nodejs npm:npm \
  setfattr:attr getfattr:attr unshare:util-linux strace:strace \
  ssh-agent:openssh-client ssh-add:openssh-client gdb:gdb direnv:direnv ip:iproute2 \
  vim.basic:vim script:bsdutils gpg:gpg gpg-agent:gpg-agent gpgconf:gpgconf gcc:gcc \
  mount:mount umount:mount pgrep:procps chattr:e2fsprogs lsattr:e2fsprogs go:golang-go \
  dockerd:docker.io docker:docker.io rg:ripgrep socat:socat; do
  command -v "${t%%:*}" >/dev/null 2>&1 || need+=("${t#*:}")
done
[ -x /usr/bin/python3 ] || need+=(python3)
/usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need+=(python3-venv)
/usr/bin/python3 -c 'import os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' \
  >/dev/null 2>&1 || need+=(python3-dev)
pip_python=python3
python3 -m pip --version >/dev/null 2>&1 || pip_python=/usr/bin/python3
"$pip_python" -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # apt and dpkg talk a lot: their output is shown only when they fail.
    mkdir -p target
    apt_log=target/apt-install.log
    if ! { apt-get update -qq && apt-get install -y -qq "${need[@]}"; } </dev/null >"$apt_log" 2>&1; then
      cat "$apt_log" >&2
      exit 1
    fi
  else
    echo "scripts/test.sh: missing ${need[*]}; install with: sudo apt-get install -y ${need[*]}" >&2
    exit 1
  fi
fi

# The pip tests' loopback index serves pytest's wheels and setuptools (for
# pip's isolated build of an sdist) from here; the tests themselves never
# use the internet, so they are fetched now, once.
wheelhouse=target/wheelhouse
setuptools_version=84.2.1
if ! ls "$wheelhouse"/pytest-*.whl "$wheelhouse/setuptools-$setuptools_version-"*.whl >/dev/null 2>&1; then
  echo "== downloading pytest's and setuptools' wheels into $wheelhouse"
  pyver="$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  "$pip_python" -m pip download -q --disable-pip-version-check --only-binary=:all: \
    --python-version "$pyver" -d "$wheelhouse" pytest "setuptools==$setuptools_version"
fi

# The package-manager tests (tests/realwork_pkg_managers.rs) run pnpm,
# yarn 1 and uv at these versions, installed here (readable by uid 65534).
pkgtools=target/pkgtools
pnpm_version=12.23.0
yarn_version=1.22.22
uv_version=0.13.9
if ! "$pkgtools/node_modules/.bin/pnpm" --version 2>/dev/null | grep -qx "$pnpm_version" ||
  ! "$pkgtools/node_modules/.bin/yarn" --version 2>/dev/null | grep -qx "$yarn_version"; then
  echo "== npm install pnpm@$pnpm_version yarn@$yarn_version in $pkgtools"
  mkdir -p "$pkgtools"
  npm install --no-audit --no-fund --no-save --prefix "$pkgtools" \
    "pnpm@$pnpm_version" "yarn@$yarn_version"
fi
# pnpm 10 and pnpm 11 each in a prefix of its own (both install a `pnpm`):
# pnpm 10 reads its store from PNPM_HOME, pnpm 11 from pnpm_config_store_dir.
# pnpm 11 needs node 22.13 or later, so the tests run its standalone build
# (@pnpm/exe, node inside). Its install script needs node 20.11 (Debian 12
# has 18), so it is skipped and its one step on Linux done here: the
# platform package's binary linked in as @pnpm/exe's `pnpm`.
pnpm10_version=10.34.9
pnpm11_version=11.28.6
if ! "$pkgtools/pnpm10/node_modules/.bin/pnpm" --version 2>/dev/null | grep -qx "$pnpm10_version"; then
  echo "== npm install pnpm@$pnpm10_version in $pkgtools/pnpm10"
  mkdir -p "$pkgtools/pnpm10"
  npm install --no-audit --no-fund --no-save --prefix "$pkgtools/pnpm10" "pnpm@$pnpm10_version"
fi
if ! "$pkgtools/pnpm11/node_modules/.bin/pnpm" --version 2>/dev/null | grep -qx "$pnpm11_version"; then
  echo "== npm install @pnpm/exe@$pnpm11_version in $pkgtools/pnpm11"
  mkdir -p "$pkgtools/pnpm11"
  npm install --ignore-scripts --no-audit --no-fund --no-save --prefix "$pkgtools/pnpm11" \
    "@pnpm/exe@$pnpm11_version"
  for b in "$pkgtools"/pnpm11/node_modules/@pnpm/linux-*/pnpm; do
    ln -f "$b" "$pkgtools/pnpm11/node_modules/@pnpm/exe/pnpm"
  done
  "$pkgtools/pnpm11/node_modules/.bin/pnpm" --version | grep -qx "$pnpm11_version"
fi
if ! "$pkgtools/uv/bin/uv" --version 2>/dev/null | grep -qw "$uv_version"; then
  echo "== pip install uv==$uv_version in $pkgtools/uv"
  rm -rf --one-file-system "$pkgtools/uv"
  "$pip_python" -m pip install -q --disable-pip-version-check --target "$pkgtools/uv" "uv==$uv_version"
fi

# srt (Anthropic's sandbox runtime), which tests/environments_agents.rs runs
# dcjail inside, at this version, in target/srt (it needs rg and socat,
# installed above).
srt_version=0.0.83
if ! "target/srt/node_modules/.bin/srt" --version 2>/dev/null | grep -qx "$srt_version"; then
  echo "== npm install @anthropic-ai/sandbox-runtime@$srt_version in target/srt"
  mkdir -p target/srt
  npm install --no-audit --no-fund --no-save --prefix target/srt \
    "@anthropic-ai/sandbox-runtime@$srt_version"
fi

# The agent suite (tests/agents.rs) runs the real Claude Code and Codex CLIs
# pinned in tests/agents/package-lock.json; they are installed in
# target/agents once per lock (npm ci replaces node_modules whole). npm may
# hold Claude Code's postinstall back (it puts the native binary in place of
# bin/claude.exe): then it is run here.
agents=target/agents
mkdir -p "$agents"
cp tests/agents/package.json tests/agents/package-lock.json "$agents/"
lock_sum="$(sha256sum "$agents/package-lock.json" | cut -d' ' -f1)"
pinned() {
  node -p "require('./$agents/package.json').dependencies['$1']"
}
claude_version="$(pinned @anthropic-ai/claude-code)"
codex_version="$(pinned @openai/codex)"
claude_ok() {
  "$agents/node_modules/.bin/claude" --version </dev/null 2>/dev/null | grep -Fw "$claude_version" >/dev/null
}
codex_ok() {
  "$agents/node_modules/.bin/codex" --version </dev/null 2>/dev/null | grep -Fw "$codex_version" >/dev/null
}
if [ "$(cat "$agents/node_modules/.dcjail-lock" 2>/dev/null)" != "$lock_sum" ] || ! claude_ok || ! codex_ok; then
  echo "== npm ci in $agents (Claude Code $claude_version, Codex $codex_version)"
  (cd "$agents" && npm ci --no-audit --no-fund)
  if ! claude_ok; then
    node "$agents/node_modules/@anthropic-ai/claude-code/install.cjs"
  fi
  if ! claude_ok || ! codex_ok; then
    echo "scripts/test.sh: the agents in $agents do not run:" >&2
    "$agents/node_modules/.bin/claude" --version </dev/null >&2 || true
    "$agents/node_modules/.bin/codex" --version </dev/null >&2 || true
    exit 1
  fi
  echo "$lock_sum" >"$agents/node_modules/.dcjail-lock"
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy (-D warnings)"
cargo clippy --all-targets --locked -- -D warnings

# The macOS build is checked on a Mac by the CI workflow; where rustup has the
# Apple targets, lint it here too, so a Linux-only item outside a cfg is
# caught before it reaches a Mac.
if command -v rustup >/dev/null 2>&1; then
  for t in aarch64-apple-darwin x86_64-apple-darwin; do
    if rustup target list --installed 2>/dev/null | grep -qx "$t"; then
      echo "== cargo clippy --target $t (-D warnings)"
      cargo clippy --all-targets --locked --target "$t" -- -D warnings
    fi
  done
fi

# The embedded second stage (stub/main.rs) is built by build.rs with plain
# rustc, outside cargo's view: format and lint it here.
echo "== stub: rustfmt --check, clippy (-D warnings)"
rustfmt --edition 2021 --check stub/main.rs
stub_out="$(mktemp -d)"
clippy-driver --edition 2021 --crate-type bin --crate-name dcjail_stage2 \
  -C panic=abort -C relocation-model=static -C target-feature=+crt-static \
  -C link-arg=-nostartfiles -C link-arg=-nostdlib -D warnings --cfg dcjail_stub \
  -o "$stub_out/stub" stub/main.rs
rm -rf "$stub_out"

echo "== cargo test"
cargo test --all-targets --locked --no-fail-fast -- --test-threads="${DCJAIL_TEST_THREADS:-4}"

if [ -x scripts/fuzz-smoke.sh ]; then
  echo "== fuzz smoke"
  scripts/fuzz-smoke.sh
fi
echo "== all tests passed"
