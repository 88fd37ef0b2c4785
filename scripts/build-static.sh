#!/bin/sh
# Release build of dcjail linked statically (static-pie) for this host, and
# prints the binary's path. A dynamically linked dcjail pays the dynamic
# loader (libgcc_s, symbol binding) on every start, twice under bwrap (dcjail
# and its second stage): about half of what dcjail adds to a bare /bin/true.
# Cargo cannot build static by default: the flag would also reach the
# proc-macro crates (clap, serde), which cannot be static, so the target is
# named explicitly, which keeps the flag off host artifacts.
# Non-glibc-Linux hosts get the ordinary release build.
# glibc's getaddrinfo (the allowlist proxy's resolver) works statically for
# `files` and `dns` in /etc/nsswitch.conf; other NSS modules need the shared
# libraries of the glibc version this was linked with.
set -eu
cd "$(dirname "$0")/.."
host="$(rustc -vV | sed -n 's/^host: //p')"
dir="${CARGO_TARGET_DIR:-target}"
case "$host" in
*-linux-gnu)
    RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" \
        cargo build --release --quiet --target "$host"
    bin="$dir/$host/release/dcjail"
    ;;
*)
    cargo build --release --quiet
    bin="$dir/release/dcjail"
    ;;
esac
echo "$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
