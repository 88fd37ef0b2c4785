#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, every test.
# Usage: scripts/test.sh            (from anywhere inside the checkout)
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy (-D warnings)"
cargo clippy --all-targets --locked -- -D warnings

echo "== cargo test"
cargo test --all-targets --locked --no-fail-fast -- --test-threads="${DCJAIL_TEST_THREADS:-4}"

if [ -x scripts/fuzz-smoke.sh ]; then
  echo "== fuzz smoke"
  scripts/fuzz-smoke.sh
fi
echo "== all tests passed"
