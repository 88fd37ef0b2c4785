#!/usr/bin/env python3
"""Real work under each sandbox, for scripts/bench.sh: times a few workloads
bare, under raw bwrap (the very namespaces and mounts dcjail's bwrap backend
uses, read from `dcjail explain`), under `dcjail --backend bwrap` and under
`dcjail --backend landlock`.

    workloads.py SPEC.json OUT.txt

SPEC is a list of workloads: {"name", "cwd", "env", "rounds", "ok" (exit codes
that count as success), "prep" (argv run, untimed, before every timed run, or
null), "variants": [[NAME, ARGV], ...]}, the first variant being bare. Every
round runs every variant once, the order rotating, so background load falls on
all of them alike; one untimed run of each comes first (it warms the caches
and shows the variant works). A variant that fails is reported as failed, with
its error, and dropped; the others are still measured.

Writes one line per variant to OUT: `WORKLOAD VARIANT median_ms p25_ms p75_ms`
and, for all but bare, `REF paired_median p25 p75` (the median of the rounds'
ratios to REF: raw bwrap for dcjail's bwrap backend, bare for the others), or
`WORKLOAD VARIANT failed REASON`.
"""

import json
import os
import statistics
import subprocess
import sys
import time

REF = {"raw-bwrap": "bare", "bwrap": "raw-bwrap", "landlock": "bare",
       "old-bwrap": "raw-bwrap", "old-landlock": "bare"}


def q(xs, f):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(f * len(xs)))]


def run(argv, cwd, env, ok):
    t = time.perf_counter()
    try:
        p = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    took = (time.perf_counter() - t) * 1000
    if p.returncode not in ok:
        err = p.stderr.decode(errors="replace").strip().replace("\n", " ")
        return None, f"exit {p.returncode}: {err[-200:]}"
    return took, ""


def bench(w, out):
    env = dict(os.environ, **w.get("env", {}))
    ok = w.get("ok", [0])
    prep = w.get("prep")
    times = {n: [] for n, _ in w["variants"]}
    failed = {}
    argv = dict((n, a) for n, a in w["variants"])
    names = [n for n, _ in w["variants"]]

    def once(n):
        if prep:
            subprocess.run(prep, cwd=w["cwd"], env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        took, why = run(argv[n], w["cwd"], env, ok)
        if took is None:
            failed[n] = why
        return took

    for n in names:
        once(n)
    for r in range(w["rounds"]):
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            if n in failed:
                continue
            took = once(n)
            if took is not None:
                times[n].append(took)
    for n in names:
        if n in failed:
            out.write(f"{w['name']} {n} failed {failed[n]}\n")
            continue
        t = times[n]
        line = f"{w['name']} {n} {statistics.median(t):.1f} {q(t, .25):.1f} {q(t, .75):.1f}"
        ref = REF.get(n)
        if ref and ref not in failed and times[ref]:
            # Paired: round i of this variant against round i of its reference.
            rs = [a / b for a, b in zip(t, times[ref])]
            line += f" {ref} {statistics.median(rs):.3f} {q(rs, .25):.3f} {q(rs, .75):.3f}"
        out.write(line + "\n")
    out.flush()


def main():
    spec = json.load(open(sys.argv[1]))
    with open(sys.argv[2], "w") as out:
        for w in spec:
            if "missing" in w:
                out.write(f"{w['name']} - failed {w['missing']}\n")
                continue
            t = time.perf_counter()
            bench(w, out)
            print(f"  {w['name']}: {time.perf_counter() - t:.0f} s", file=sys.stderr)


main()
