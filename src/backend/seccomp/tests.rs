//! The filter generator held to seccompiler's build of the same table,
//! and to what each rule means.
#![cfg(test)]

use super::*;

/// seccompiler's build of the same table (one program per errno, in a
/// chain): the reference the tests hold `compile` to.
fn compile_reference(sockets: SocketRules) -> Result<Vec<Vec<libc::sock_filter>>, String> {
    // The rules that need no broker: each entry is one errno, when any
    // conjunction holds (or always), as seccompiler's filters express.
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition,
        SeccompFilter, SeccompRule,
    };
    use std::collections::BTreeMap;
    let target = match arch()? {
        "x86_64" => seccompiler::TargetArch::x86_64,
        _ => seccompiler::TargetArch::aarch64,
    };
    let bad = |e: seccompiler::BackendError| format!("cannot build the seccomp filter: {e}");
    let mut by_errno: BTreeMap<i32, BTreeMap<i64, Vec<SeccompRule>>> = BTreeMap::new();
    for e in table(sockets, FsRules::OPEN) {
        // connect and bind of `Unix::Named` go to the broker whatever the
        // arguments: checked against `meaning`, not here.
        if e.default == Action::Broker && e.rules.is_empty() {
            continue;
        }
        let errno = match (e.rules.first(), e.default) {
            (None, Action::Errno(x)) => x,
            (Some((_, Action::Errno(x))), Action::Allow) => *x,
            _ => return Err(format!("{}: not one errno", e.name)),
        };
        if e.rules.iter().any(|(_, a)| *a != Action::Errno(errno)) {
            return Err(format!("{}: not one errno", e.name));
        }
        let mut rules = Vec::new();
        for (conj, _) in &e.rules {
            let conds = conj
                .iter()
                .map(|c| match *c {
                    Cmp::Eq(a, v) => SeccompCondition::new(a, Len::Dword, Op::Eq, v),
                    Cmp::Ne(a, v) => SeccompCondition::new(a, Len::Dword, Op::Ne, v),
                    Cmp::Masked(a, m, v) => {
                        SeccompCondition::new(a, Len::Dword, Op::MaskedEq(m), v)
                    }
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(bad)?;
            rules.push(SeccompRule::new(conds).map_err(bad)?);
        }
        by_errno.entry(errno).or_default().insert(e.nr, rules);
    }
    let mut out = Vec::new();
    for (errno, rules) in by_errno {
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno as u32),
            target,
        )
        .map_err(bad)?;
        let prog: seccompiler::BpfProgram = filter
            .try_into()
            .map_err(|e: seccompiler::BackendError| bad(e))?;
        let mut p: Vec<libc::sock_filter> = prog
            .iter()
            .map(|i| libc::sock_filter {
                code: i.code,
                jt: i.jt,
                jf: i.jf,
                k: i.k,
            })
            .collect();
        // The x32 guard dcjail added to seccompiler's first program: after
        // its architecture check (three instructions, whose only jump lands
        // on the fourth), x32 numbers get ENOSYS.
        if out.is_empty() && cfg!(target_arch = "x86_64") {
            let ins = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
            let rest = p.split_off(3);
            p.push(ins(LD_W_ABS, 0, 0, DATA_NR));
            p.push(ins(JGE_K, 0, 1, 0x4000_0000));
            p.push(ins(RET_K, 0, 0, RET_ERRNO | libc::ENOSYS as u32));
            p.extend(rest);
        }
        out.push(p);
    }
    Ok(out)
}

const NONE: SocketRules = SocketRules {
    unix: Unix::Refuse,
    inet: Inet::Deny,
};
const NAMED: SocketRules = SocketRules {
    unix: Unix::Named,
    inet: Inet::Deny,
};
const BROKERED: FsRules = FsRules {
    meta: Meta::Broker,
    create: true,
    observe: false,
};

#[test]
fn describes_every_guarantee_of_spec_5() {
    let names: Vec<&str> = describe(NONE, FsRules::OPEN)
        .iter()
        .map(|r| r.syscall)
        .collect();
    for n in [
        "ptrace",
        "process_vm_readv",
        "process_vm_writev",
        "io_uring_setup",
        "unshare",
        "setns",
        "clone",
        "clone3",
        "mount",
        "bpf",
        "perf_event_open",
        "keyctl",
        "kexec_load",
        "init_module",
        "ioctl",
        "socket",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
}

#[test]
fn full_network_refuses_only_unix_datagram_sockets() {
    let r = describe(
        SocketRules {
            unix: Unix::Named,
            inet: Inet::Allow,
        },
        FsRules::OPEN,
    );
    let s: Vec<_> = r.iter().filter(|d| d.syscall == "socket").collect();
    assert_eq!(s.len(), 1, "{r:?}");
    assert_eq!(
        s[0].when,
        "an AF_UNIX type is SOCK_DGRAM or SOCK_RAW (a datagram socket)"
    );
}

#[test]
fn without_a_broker_full_network_refuses_af_unix() {
    let r = describe(
        SocketRules {
            unix: Unix::Refuse,
            inet: Inet::Allow,
        },
        FsRules::OPEN,
    );
    let s: Vec<_> = r.iter().filter(|d| d.syscall == "socket").collect();
    assert_eq!(s.len(), 1, "{r:?}");
    assert_eq!(s[0].when, "family is AF_UNIX");
    assert!(!r.iter().any(|d| d.syscall == "connect"), "{r:?}");
}

#[test]
fn named_unix_sockets_refuse_other_families_and_broker_connect_and_bind() {
    let r = describe(NAMED, FsRules::OPEN);
    let s = r.iter().find(|d| d.syscall == "socket").unwrap();
    assert_eq!(
        s.when,
        "family is not AF_UNIX, or an AF_UNIX type is SOCK_DGRAM or SOCK_RAW (a datagram socket)"
    );
    for call in ["connect", "bind"] {
        let c = r.iter().find(|d| d.syscall == call).unwrap();
        assert_eq!(c.errno, "broker", "{c:?}");
    }
    let p = r.iter().find(|d| d.syscall == "socketpair").unwrap();
    assert_eq!(p.errno, "EPERM");
}

#[test]
fn a_unix_datagram_socket_is_refused_from_socket_and_socketpair_alike() {
    let dgram = |t: u64| [libc::AF_UNIX as u64, t, 0, 0, 0, 0];
    for s in [NONE, NAMED] {
        let t = table(s, FsRules::OPEN);
        let p = compile(s, FsRules::OPEN).unwrap();
        for (nr, name) in [
            (libc::SYS_socket, "socket"),
            (libc::SYS_socketpair, "socketpair"),
        ] {
            for ty in [
                libc::SOCK_DGRAM,
                libc::SOCK_RAW,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            ] {
                let got = run(&p.0[0], nr as u32, native(), dgram(ty as u64)).0;
                assert_eq!(got, RET_ERRNO | libc::EPERM as u32, "{name} {ty} {s:?}");
                assert_eq!(got, meaning(&t, nr as u32, dgram(ty as u64)));
            }
            let pair = nr == libc::SYS_socketpair;
            for ty in [
                libc::SOCK_STREAM,
                libc::SOCK_SEQPACKET | libc::SOCK_NONBLOCK,
            ] {
                let got = run(&p.0[0], nr as u32, native(), dgram(ty as u64)).0;
                if pair || s.unix == Unix::Named {
                    assert_eq!(got, RET_ALLOW, "{name} {ty} {s:?}");
                }
            }
        }
    }
}

fn native() -> u32 {
    if cfg!(target_arch = "x86_64") {
        0xc000_003e
    } else {
        0xc000_00b7
    }
}

/// Runs a classic BPF program as seccomp would on `data` (nr, arch,
/// six arguments). Only the instructions the compilers emit.
fn run(p: &[libc::sock_filter], nr: u32, arch: u32, args: [u64; 6]) -> (u32, usize) {
    let word = |off: u32| -> u32 {
        match off {
            0 => nr,
            4 => arch,
            o if (16..64).contains(&o) && o % 4 == 0 => {
                let a = args[((o - 16) / 8) as usize];
                if (o - 16) % 8 == 0 {
                    a as u32
                } else {
                    (a >> 32) as u32
                }
            }
            o => panic!("load of seccomp_data offset {o}"),
        }
    };
    let (mut acc, mut pc, mut steps) = (0u32, 0usize, 0usize);
    loop {
        let i = p[pc];
        steps += 1;
        pc += 1;
        match i.code {
            0x20 => acc = word(i.k),
            0x54 => acc &= i.k,
            0x05 => pc += i.k as usize,
            0x15 | 0x35 | 0x25 | 0x45 => {
                let t = match i.code {
                    0x15 => acc == i.k,
                    0x35 => acc >= i.k,
                    0x25 => acc > i.k,
                    _ => acc & i.k != 0,
                };
                pc += if t { i.jt } else { i.jf } as usize;
            }
            0x06 => return (i.k, steps),
            c => panic!("unexpected BPF opcode {c:#x}"),
        }
    }
}

/// What the kernel answers when several filters are installed: the
/// action of highest precedence (KILL_PROCESS, then ERRNO, then ALLOW).
fn strictest(progs: &[Vec<libc::sock_filter>], nr: u32, arch: u32, args: [u64; 6]) -> u32 {
    let rank = |r: u32| (r & 0xffff_0000) as i32;
    progs
        .iter()
        .map(|p| run(p, nr, arch, args).0)
        .min_by_key(|r| rank(*r))
        .unwrap()
}

/// Argument values worth trying for a table: every constant and mask in
/// it, around them, with high bits set, and a few fixed patterns.
fn probes(t: &[Entry]) -> Vec<u64> {
    let mut v: Vec<u64> = vec![0, 1, 2, 0xf, 0x7fff_ffff, 0xffff_ffff, 1 << 32, u64::MAX];
    for e in t {
        for c in e.rules.iter().flat_map(|(c, _)| c).chain(&e.allow) {
            let (val, mask) = match *c {
                Cmp::Eq(_, x) | Cmp::Ne(_, x) => (x, 0),
                Cmp::Masked(_, m, x) => (x, m),
            };
            for x in [
                val,
                mask,
                val | mask,
                val ^ 1,
                val.wrapping_add(1),
                val | 0x8_0000,
            ] {
                v.push(x);
                v.push(x | 0xdead_0000_0000_0000);
            }
        }
    }
    v.sort_unstable();
    v.dedup();
    v
}

#[test]
fn the_filter_answers_every_syscall_as_seccompilers_chain_does() {
    let native: u32 = if cfg!(target_arch = "x86_64") {
        0xc000_003e
    } else {
        0xc000_00b7
    };
    for inet in [Inet::Deny, Inet::StreamOnly, Inet::Allow] {
        for unix in [Unix::Refuse, Unix::Named] {
            let s = SocketRules { unix, inet };
            let ours = compile(s, FsRules::OPEN).unwrap();
            assert_eq!(ours.0.len(), 1, "one program");
            let reference = compile_reference(s).unwrap();
            let t = table(s, FsRules::OPEN);
            let vals = probes(&t);
            let mut nrs: Vec<u32> = (0..1024).collect();
            nrs.extend([
                0x4000_0000,
                0x4000_0001,
                0x4000_0000 + 59,
                0x7fff_ffff,
                u32::MAX,
            ]);
            for arch in [
                native,
                0x4000_0003, /* i386 */
                0x4000_0028, /* arm */
            ] {
                for &nr in &nrs {
                    let args = [0u64; 6];
                    let brokered = arch == native
                        && t.iter().any(|e| {
                            e.nr as u32 == nr && e.default == Action::Broker && e.rules.is_empty()
                        });
                    let want = if brokered {
                        RET_USER_NOTIF
                    } else {
                        strictest(&reference, nr, arch, args)
                    };
                    assert_eq!(
                        run(&ours.0[0], nr, arch, args).0,
                        want,
                        "{s:?} arch {arch:#x} nr {nr}"
                    );
                }
            }
            // Every rule's syscall with every interesting value in each
            // argument it looks at, and pairs for the socket rules.
            for e in &t {
                let nr = e.nr as u32;
                let used: Vec<u8> = e
                    .rules
                    .iter()
                    .flat_map(|(c, _)| c)
                    .chain(&e.allow)
                    .map(|c| match *c {
                        Cmp::Eq(a, _) | Cmp::Ne(a, _) | Cmp::Masked(a, _, _) => a,
                    })
                    .collect();
                for &a in &used {
                    for &x in &vals {
                        for &y in &[0u64, 1, 6, 0x801, 0xffff_ffff] {
                            let mut args = [y; 6];
                            args[a as usize] = x;
                            assert_eq!(
                                run(&ours.0[0], nr, native, args).0,
                                strictest(&reference, nr, native, args),
                                "{s:?} {} args {args:x?}",
                                e.name
                            );
                        }
                    }
                }
                if e.name == "socket" {
                    for &f in &vals {
                        for ty in 0..32u64 {
                            for proto in [0u64, 6, 17, 132, 262] {
                                let args = [f, ty | 0x80000, proto, 0, 0, 0];
                                assert_eq!(
                                    run(&ours.0[0], nr, native, args).0,
                                    strictest(&reference, nr, native, args),
                                    "{s:?} socket {args:x?}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn an_unlisted_syscall_is_answered_in_a_few_steps() {
    let p = compile(NONE, BROKERED).unwrap();
    let native: u32 = if cfg!(target_arch = "x86_64") {
        0xc000_003e
    } else {
        0xc000_00b7
    };
    let listed: Vec<u32> = table(NONE, BROKERED).iter().map(|e| e.nr as u32).collect();
    let worst = (0..512)
        .filter(|nr| !listed.contains(nr))
        .map(|nr| run(&p.0[0], nr, native, [0; 6]))
        .filter(|(r, _)| *r == RET_ALLOW)
        .map(|(_, steps)| steps)
        .max()
        .unwrap();
    assert!(worst <= 16, "{worst} steps");
}

/// The kernel's test of whether a syscall's answer can be cached when
/// the filter is attached (`seccomp_is_const_allow`): the program is run
/// knowing only the number and the architecture, and any load of an
/// argument, or any instruction it does not model, means "not cached".
fn kernel_caches(p: &[libc::sock_filter], nr: u32, arch: u32) -> bool {
    let (mut acc, mut pc) = (0u32, 0usize);
    while pc < p.len() {
        let i = p[pc];
        pc += 1;
        match i.code {
            0x20 if i.k == DATA_NR => acc = nr,
            0x20 if i.k == DATA_ARCH => acc = arch,
            0x20 => return false,
            0x06 => return i.k == RET_ALLOW,
            0x05 => pc += i.k as usize,
            0x15 | 0x35 | 0x25 | 0x45 => {
                let t = match i.code {
                    0x15 => acc == i.k,
                    0x35 => acc >= i.k,
                    0x25 => acc > i.k,
                    _ => acc & i.k != 0,
                };
                pc += if t { i.jt } else { i.jf } as usize;
            }
            0x54 => acc &= i.k,
            _ => return false,
        }
    }
    false
}

#[test]
fn every_syscall_the_table_leaves_alone_is_cached_by_the_kernel() {
    let native: u32 = if cfg!(target_arch = "x86_64") {
        0xc000_003e
    } else {
        0xc000_00b7
    };
    for meta in [Meta::Allow, Meta::Refuse, Meta::Broker] {
        for create in [false, true] {
            let fs = FsRules {
                meta,
                create,
                observe: false,
            };
            for inet in [Inet::Deny, Inet::StreamOnly, Inet::Allow] {
                let s = SocketRules {
                    unix: Unix::Named,
                    inet,
                };
                let p = compile(s, fs).unwrap();
                let t = table(s, fs);
                for nr in 0..1024u32 {
                    let listed = t.iter().any(|e| e.nr as u32 == nr);
                    assert_eq!(
                        kernel_caches(&p.0[0], nr, native),
                        !listed,
                        "{fs:?} {s:?} nr {nr}"
                    );
                }
                // Another ABI is never answered Allow without a look.
                assert!(!kernel_caches(&p.0[0], 0, 0x4000_0003));
            }
        }
    }
}

#[test]
fn the_filter_stays_short() {
    // The kernel converts and compiles the program on every launch:
    // its length is paid each time (about 0.2 µs an instruction here).
    // Named unix sockets add connect and bind (to the broker) and the
    // datagram rules of socket and socketpair, and landlock_restrict_self.
    for (fs, most) in [
        (FsRules::OPEN, 190),
        (
            FsRules {
                meta: Meta::Refuse,
                create: false,
                observe: false,
            },
            240,
        ),
        (BROKERED, 250),
    ] {
        for s in [NONE, NAMED] {
            let n = compile(s, fs).unwrap().len();
            assert!(n <= most, "{s:?} {fs:?}: {n} instructions");
        }
    }
}

#[test]
fn far_jumps_become_trampolines() {
    // A jump over 300 instructions cannot be one conditional jump.
    let mut ops = vec![Op::Jump(JEQ_K, 7, 0, 1), Op::Here(1)];
    ops.extend(std::iter::repeat_n(Op::Stmt(RET_K, RET_ALLOW), 300));
    ops.push(Op::Here(0));
    ops.push(Op::Stmt(RET_K, RET_ERRNO | 1));
    let p = assemble(&ops, 2).unwrap();
    assert_eq!(p.len(), 304);
    assert_eq!(run(&p, 0, 0, [0; 6]).0, RET_ALLOW);
    // acc is 0 there; make it 7 through a load of nr.
    let mut with_load = vec![Op::Stmt(LD_W_ABS, 0)];
    with_load.extend(ops);
    let p = assemble(&with_load, 2).unwrap();
    assert_eq!(run(&p, 7, 0, [0; 6]).0, RET_ERRNO | 1);
    assert_eq!(run(&p, 8, 0, [0; 6]).0, RET_ALLOW);
    // Backwards is refused.
    assert!(assemble(&[Op::Here(0), Op::Jump(JEQ_K, 0, 0, 0)], 1).is_err());
}

#[test]
fn compiles_for_this_arch() {
    let p = compile(NONE, FsRules::OPEN).unwrap();
    assert!(p.len() > 10);
    let p = compile(
        SocketRules {
            unix: Unix::Named,
            inet: Inet::StreamOnly,
        },
        BROKERED,
    )
    .unwrap();
    assert!(p.len() > 10);
}

/// The table's own meaning: the short path, then the first rule whose
/// conjunction holds, else the default. What the BPF must agree with.
fn meaning(t: &[Entry], nr: u32, args: [u64; 6]) -> u32 {
    let holds = |c: &Cmp| {
        let lo = |a: u8| args[a as usize] & 0xffff_ffff;
        match *c {
            Cmp::Eq(a, v) => lo(a) == v & 0xffff_ffff,
            Cmp::Ne(a, v) => lo(a) != v & 0xffff_ffff,
            Cmp::Masked(a, m, v) => lo(a) & m == v,
        }
    };
    let Some(e) = t.iter().find(|e| e.nr as u32 == nr) else {
        return RET_ALLOW;
    };
    if !e.allow.is_empty() && e.allow.iter().all(holds) {
        return RET_ALLOW;
    }
    for (conj, a) in &e.rules {
        if conj.iter().all(holds) {
            return ret(*a);
        }
    }
    ret(e.default)
}

#[test]
fn the_filter_answers_every_rule_as_the_table_means_it() {
    let native: u32 = if cfg!(target_arch = "x86_64") {
        0xc000_003e
    } else {
        0xc000_00b7
    };
    for meta in [Meta::Allow, Meta::Refuse, Meta::Broker] {
        for create in [false, true] {
            let fs = FsRules {
                meta,
                create,
                observe: false,
            };
            for s in [
                NONE,
                SocketRules {
                    unix: Unix::Named,
                    inet: Inet::StreamOnly,
                },
            ] {
                let p = compile(s, fs).unwrap();
                let t = table(s, fs);
                let vals = probes(&t);
                for nr in 0..600u32 {
                    assert_eq!(run(&p.0[0], nr, native, [0; 6]).0, meaning(&t, nr, [0; 6]));
                }
                for e in &t {
                    for a in 0..4usize {
                        for &x in &vals {
                            for &y in &[0u64, 0o100, 0o4755, 0o20000000, 0o2644] {
                                let mut args = [y; 6];
                                args[a] = x;
                                assert_eq!(
                                    run(&p.0[0], e.nr as u32, native, args).0,
                                    meaning(&t, e.nr as u32, args),
                                    "{fs:?} {} {args:?}",
                                    e.name
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn modes_with_setuid_or_setgid_are_refused_in_every_mode() {
    let native: u32 = if cfg!(target_arch = "x86_64") {
        0xc000_003e
    } else {
        0xc000_00b7
    };
    let eperm = RET_ERRNO | libc::EPERM as u32;
    for meta in [Meta::Allow, Meta::Refuse, Meta::Broker] {
        for create in [false, true] {
            let p = compile(
                NONE,
                FsRules {
                    meta,
                    create,
                    observe: false,
                },
            )
            .unwrap();
            let at = |nr: i64, args: [u64; 6]| run(&p.0[0], nr as u32, native, args).0;
            for mode in [0o4755u64, 0o2755, 0o6755] {
                assert_eq!(at(libc::SYS_fchmod, [3, mode, 0, 0, 0, 0]), eperm);
                assert_eq!(at(libc::SYS_fchmodat, [3, 0, mode, 0, 0, 0]), eperm);
                assert_eq!(at(libc::SYS_fchmodat2, [3, 0, mode, 0, 0, 0]), eperm);
                assert_eq!(at(libc::SYS_openat, [3, 0, 0o101, mode, 0, 0]), eperm);
                assert_eq!(at(libc::SYS_openat, [3, 0, 0o20200002, mode, 0, 0]), eperm);
                assert_eq!(
                    at(libc::SYS_mknodat, [3, 0, 0o100000 | mode, 0, 0, 0]),
                    eperm
                );
            }
            // Without O_CREAT or O_TMPFILE the mode means nothing.
            assert_eq!(at(libc::SYS_openat, [3, 0, 0, 0o4755, 0, 0]), RET_ALLOW);
            assert_eq!(
                at(libc::SYS_openat2, [3, 0, 0, 0, 0, 0]),
                RET_ERRNO | libc::ENOSYS as u32
            );
        }
    }
}

#[test]
fn metadata_and_creation_go_where_the_mode_says() {
    let native: u32 = if cfg!(target_arch = "x86_64") {
        0xc000_003e
    } else {
        0xc000_00b7
    };
    let go = |fs: FsRules, nr: i64, args: [u64; 6]| {
        run(&compile(NONE, fs).unwrap().0[0], nr as u32, native, args).0
    };
    let erofs = RET_ERRNO | libc::EROFS as u32;
    let ro = FsRules {
        meta: Meta::Refuse,
        create: false,
        observe: false,
    };
    let ww = FsRules {
        meta: Meta::Broker,
        create: true,
        observe: false,
    };
    assert_eq!(go(ro, libc::SYS_fchmodat, [3, 0, 0o644, 0, 0, 0]), erofs);
    assert_eq!(go(ro, libc::SYS_utimensat, [3, 0, 0, 0, 0, 0]), erofs);
    assert_eq!(go(ro, libc::SYS_fsetxattr, [3, 0, 0, 0, 0, 0]), erofs);
    assert_eq!(go(ro, libc::SYS_fchown, [3, 0, 0, 0, 0, 0]), erofs);
    assert_eq!(
        go(ro, libc::SYS_openat, [3, 0, 0o101, 0o644, 0, 0]),
        RET_ALLOW
    );
    assert_eq!(
        go(ww, libc::SYS_fchmodat, [3, 0, 0o644, 0, 0, 0]),
        RET_USER_NOTIF
    );
    assert_eq!(
        go(ww, libc::SYS_openat, [3, 0, 0o101, 0o644, 0, 0]),
        RET_USER_NOTIF
    );
    assert_eq!(go(ww, libc::SYS_openat, [3, 0, 0o2, 0, 0, 0]), RET_ALLOW);
    assert_eq!(
        go(ww, libc::SYS_mkdirat, [3, 0, 0o755, 0, 0, 0]),
        RET_USER_NOTIF
    );
    assert_eq!(
        go(ww, libc::SYS_renameat2, [3, 0, 3, 0, 0, 0]),
        RET_USER_NOTIF
    );
    assert_eq!(go(ww, libc::SYS_linkat, [3, 0, 3, 0, 0, 0]), RET_USER_NOTIF);
    assert_eq!(
        go(FsRules::OPEN, libc::SYS_fchmodat, [3, 0, 0o644, 0, 0, 0]),
        RET_ALLOW
    );
    // chattr's ioctl is refused wherever metadata is limited.
    assert_eq!(
        go(ro, libc::SYS_ioctl, [3, 0x4008_6602, 0, 0, 0, 0]),
        RET_ERRNO | 1
    );
    assert_eq!(
        go(FsRules::OPEN, libc::SYS_ioctl, [3, 0x4008_6602, 0, 0, 0, 0]),
        RET_ALLOW
    );
}
