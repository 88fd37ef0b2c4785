#!/usr/bin/env bash
# Short fuzz run, as CI does it: builds the cargo-fuzz targets in fuzz/ with
# the stable toolchain and runs each one for DCJAIL_FUZZ_SECS seconds
# (default 15; seven targets, so about two minutes), starting from the committed
# corpus in fuzz/corpus/<target>/. Any crash or broken invariant fails.
#
# New inputs go to a temporary directory, never into the committed corpus;
# a crashing input is left in fuzz/artifacts/<target>/ (git-ignored): add it
# to fuzz/corpus/<target>/ with the fix, so tests/fuzz_props.rs replays it.
#
# Usage: scripts/fuzz-smoke.sh [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."

secs="${DCJAIL_FUZZ_SECS:-15}"

# cargo-fuzz passes -Z flags (sanitizer coverage) to rustc; the stable
# compiler accepts them with this. No nightly toolchain is needed.
export RUSTC_BOOTSTRAP=1
export PATH="$HOME/.cargo/bin:$PATH"

# Installs print one line each; their own output is shown only on failure.
mkdir -p target
install_log=target/fuzz-install.log
quietly() {
  if ! "$@" </dev/null >"$install_log" 2>&1; then
    cat "$install_log" >&2
    exit 1
  fi
}
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz-smoke: installing cargo-fuzz (cargo install cargo-fuzz --locked)"
  quietly cargo install cargo-fuzz --locked
fi
# libFuzzer is C++, compiled by libfuzzer-sys's build script.
if ! command -v c++ >/dev/null 2>&1 && ! command -v g++ >/dev/null 2>&1 \
  && ! command -v clang++ >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "fuzz-smoke: installing g++ (libFuzzer needs a C++ compiler)"
    export DEBIAN_FRONTEND=noninteractive
    quietly sh -c 'apt-get install -y -qq g++ || { apt-get update -qq && apt-get install -y -qq g++; }'
  else
    echo "fuzz-smoke: no C++ compiler (g++ or clang++) for libFuzzer" >&2
    exit 1
  fi
fi

# Its own target dir: fuzz builds use other rustc flags than the main one.
root="$PWD"
target_dir="$root/fuzz/target"
if [ -n "${CARGO_TARGET_DIR:-}" ]; then
  target_dir="$CARGO_TARGET_DIR/fuzz"
fi
# Safe Rust bounds-checks every access: AddressSanitizer would only slow the
# build and the run. Debug assertions and overflow checks stay on.
build_flags=(--sanitizer none --target-dir "$target_dir")

if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cd fuzz && cargo fuzz list)
fi
if [ "${#targets[@]}" -eq 0 ]; then
  echo "fuzz-smoke: no fuzz target found (cargo fuzz list)" >&2
  exit 1
fi

echo "== fuzz build (${targets[*]})"
start=$(date +%s)
(cd fuzz && cargo fuzz build "${build_flags[@]}")
echo "fuzz-smoke: built in $(($(date +%s) - start))s"

work="$(mktemp -d "${TMPDIR:-/tmp}/dcjail-fuzz.XXXXXX")"
trap 'rm -rf --one-file-system "$work"' EXIT

for t in "${targets[@]}"; do
  mkdir -p "$work/$t"
  args=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1)
  if [ -f "fuzz/dict/$t.dict" ]; then
    args+=(-dict="$root/fuzz/dict/$t.dict")
  fi
  echo "== fuzz $t (${secs}s)"
  if ! (cd fuzz && cargo fuzz run "${build_flags[@]}" "$t" "$work/$t" "$root/fuzz/corpus/$t" -- "${args[@]}") \
    >"$work/$t.log" 2>&1; then
    grep -m1 -A3 'panicked at' "$work/$t.log" >&2 || true
    grep -E '^(==[0-9]+==|SUMMARY|artifact_prefix|Test unit)' "$work/$t.log" >&2 || tail -n 40 "$work/$t.log" >&2
    echo "fuzz-smoke: $t FAILED; the input is in fuzz/artifacts/$t/" >&2
    exit 1
  fi
  grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added)' \
    "$work/$t.log" | sed "s/^/  $t /" || true
done
echo "fuzz-smoke: ${#targets[@]} targets, no crash"
