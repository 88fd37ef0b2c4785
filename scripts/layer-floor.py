#!/usr/bin/env python3
"""What the two kernel layers cost a workload with the cheapest rules there
are, beside dcjail (docs/benchmarks.md, "Where syscall-heavy work loses"):

    scripts/layer-floor.py DCJAIL ROUNDS CMD ARGS...

runs CMD bare, under a one-instruction allow-all seccomp filter, under a
landlock ruleset that handles every filesystem right and grants them all at
`/`, under both, under `dcjail --backend landlock`, under the raw bwrap
command line dcjail's bwrap backend uses (from `dcjail explain`), that plus
the filter, that plus the filter and the ruleset, and under
`dcjail --backend bwrap`; rotating paired rounds, medians and the median of
the rounds' ratios. Every variant starts through this file's `--wrap` mode
(the same Python start-up for all). x86_64 only (syscall numbers).

    scripts/layer-floor.py --wrap [--seccomp] [--landlock] -- CMD ARGS...

installs the layers named and execs CMD.
"""

import ctypes
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time

SYS_SECCOMP, SYS_LL_CREATE, SYS_LL_ADD, SYS_LL_RESTRICT = 317, 444, 445, 446
ALLOW = struct.pack("=HBBI", 0x06, 0, 0, 0x7FFF0000)  # BPF_RET|BPF_K, ALLOW


def wrap(opts, argv):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        sys.exit("no_new_privs failed")
    if "--landlock" in opts:
        handled = (1 << 16) - 1  # every filesystem right up to ABI 6
        attr = struct.pack("QQQ", handled, 0, 0)
        rs = libc.syscall(SYS_LL_CREATE, ctypes.create_string_buffer(attr), len(attr), 0)
        fd = os.open("/", os.O_PATH)
        rule = ctypes.create_string_buffer(struct.pack("=Qi", handled, fd))
        if rs < 0 or libc.syscall(SYS_LL_ADD, rs, 1, rule, 0) != 0 \
                or libc.syscall(SYS_LL_RESTRICT, rs, 0) != 0:
            sys.exit(f"landlock failed: errno {ctypes.get_errno()}")
    if "--seccomp" in opts:
        insn = ctypes.create_string_buffer(ALLOW)

        class Fprog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        prog = Fprog(1, ctypes.cast(insn, ctypes.c_void_p))
        if libc.syscall(SYS_SECCOMP, 1, 0, ctypes.byref(prog)) != 0:
            sys.exit(f"seccomp failed: errno {ctypes.get_errno()}")
    os.execvp(argv[0], argv)


def bench(d, rounds, cmd):
    me = [sys.executable, os.path.abspath(__file__), "--wrap"]
    raw = json.loads(subprocess.run([d, "explain", "--backend", "bwrap", "--"] + cmd,
                                    capture_output=True, text=True, check=True).stdout)["launch"]
    rawb = [raw["bwrap"]] + raw["argv"]
    bpf = tempfile.NamedTemporaryFile(prefix="layer-floor-", suffix=".bpf")
    bpf.write(ALLOW)
    bpf.flush()
    # bwrap reads the filter from descriptor 9.
    fd9 = ["sh", "-c", f'exec "$@" 9<{bpf.name}', "sh"]
    variants = {
        "bare": me + ["--"] + cmd,
        "allow-all filter": me + ["--seccomp", "--"] + cmd,
        "grant-all landlock": me + ["--landlock", "--"] + cmd,
        "both": me + ["--seccomp", "--landlock", "--"] + cmd,
        "dcjail landlock": me + ["--", d, "--backend", "landlock", "--"] + cmd,
        "raw bwrap": me + ["--"] + rawb + ["--"] + cmd,
        "raw bwrap + filter": fd9 + me + ["--"] + rawb + ["--seccomp", "9", "--"] + cmd,
        "raw bwrap + both": fd9 + rawb + ["--seccomp", "9", "--"] + me + ["--landlock", "--"] + cmd,
        "dcjail bwrap": me + ["--", d, "--backend", "bwrap", "--"] + cmd,
    }
    ref = {k: "bare" for k in list(variants)[1:6]}
    ref.update({k: "raw bwrap" for k in list(variants)[6:]})
    names = list(variants)
    t = {n: [] for n in names}
    for r in range(rounds + 1):  # the first round warms up, untimed
        for n in names[r % len(names):] + names[:r % len(names)]:
            a = time.perf_counter()
            p = subprocess.run(variants[n], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            took = (time.perf_counter() - a) * 1000
            if p.returncode != 0:
                sys.exit(f"{n}: exit {p.returncode}: {p.stderr.decode(errors='replace')[-300:]}")
            if r:
                t[n].append(took)
    for n in names:
        line = f"{n:<20} {statistics.median(t[n]):8.1f} ms"
        if n in ref:
            ratios = [a / b for a, b in zip(t[n], t[ref[n]])]
            line += f"   paired ratio to {ref[n]} {statistics.median(ratios):.3f}"
        print(line, flush=True)


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["--wrap"]:
        i = a.index("--")
        wrap(a[1:i], a[i + 1:])
    elif len(a) >= 3:
        bench(a[0], int(a[1]), a[2:])
    else:
        sys.exit(__doc__)
