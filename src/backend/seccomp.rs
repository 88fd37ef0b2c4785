//! The seccomp filter of SPEC §5, for x86_64 and aarch64: one rule table that
//! both compiles to BPF (through seccompiler) and describes itself for
//! `explain`, so what is shown is what is installed. It owns building and
//! installing the filter; it never decides policy (the layer spec says which
//! socket families are allowed) and refuses to build for any other
//! architecture rather than install a filter with the wrong numbers.

use std::collections::BTreeMap;

/// Which `socket()` calls the command may make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SocketRules {
    /// AF_UNIX sockets may be created.
    pub allow_unix: bool,
    pub inet: Inet,
}

/// AF_INET/AF_INET6 socket creation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inet {
    /// No internet socket (and no other family but AF_UNIX when allowed).
    Deny,
    /// Only SOCK_STREAM over AF_INET/AF_INET6 (a proxy reached over TCP,
    /// with landlock limiting the port); every other family refused.
    StreamOnly,
    /// Any family, any type: no socket rule at all.
    Allow,
}

/// One comparison on a syscall argument. Arguments are compared on their
/// low 32 bits (ioctl requests, socket families and clone flags all live
/// there, and a caller cannot dodge a match by setting the high bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cmp {
    Eq(u8, u64),
    Ne(u8, u64),
    /// (arg & mask) == value
    Masked(u8, u64, u64),
}

/// One refused syscall: refused when any of `when` matches (each an AND of
/// comparisons); an empty `when` refuses it always.
struct Entry {
    name: &'static str,
    nr: i64,
    when: Vec<Vec<Cmp>>,
    errno: i32,
    /// What `when` means, for people.
    says: String,
}

/// A rule as `explain` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleDesc {
    pub syscall: &'static str,
    pub when: String,
    pub errno: &'static str,
}

/// The architecture the filter is built for, or why there is none.
pub fn arch() -> Result<&'static str, String> {
    if cfg!(target_arch = "x86_64") {
        Ok("x86_64")
    } else if cfg!(target_arch = "aarch64") {
        Ok("aarch64")
    } else {
        Err(format!(
            "no seccomp filter for the {} architecture (only x86_64 and aarch64)",
            std::env::consts::ARCH
        ))
    }
}

/// Namespace flags of clone/unshare. CLONE_NEWTIME (0x80) only exists for
/// unshare and clone3: for clone it is part of the exit signal byte.
const NS_FLAGS: &[(&str, u64)] = &[
    ("CLONE_NEWNS", libc::CLONE_NEWNS as u64),
    ("CLONE_NEWCGROUP", libc::CLONE_NEWCGROUP as u64),
    ("CLONE_NEWUTS", libc::CLONE_NEWUTS as u64),
    ("CLONE_NEWIPC", libc::CLONE_NEWIPC as u64),
    ("CLONE_NEWUSER", libc::CLONE_NEWUSER as u64),
    ("CLONE_NEWPID", libc::CLONE_NEWPID as u64),
    ("CLONE_NEWNET", libc::CLONE_NEWNET as u64),
];

fn any_flag(arg: u8, flags: &[(&str, u64)]) -> Vec<Vec<Cmp>> {
    flags
        .iter()
        .map(|(_, f)| vec![Cmp::Masked(arg, *f, *f)])
        .collect()
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn table(sockets: SocketRules) -> Vec<Entry> {
    use libc::*;
    let always = |name: &'static str, nr: i64| Entry {
        name,
        nr,
        when: Vec::new(),
        errno: EPERM,
        says: "always".into(),
    };
    let mut t = vec![
        always("ptrace", SYS_ptrace),
        always("process_vm_readv", SYS_process_vm_readv),
        always("process_vm_writev", SYS_process_vm_writev),
        always("io_uring_setup", SYS_io_uring_setup),
        always("io_uring_enter", SYS_io_uring_enter),
        always("io_uring_register", SYS_io_uring_register),
        always("setns", SYS_setns),
        always("mount", SYS_mount),
        always("umount2", SYS_umount2),
        always("pivot_root", SYS_pivot_root),
        always("chroot", SYS_chroot),
        always("move_mount", SYS_move_mount),
        always("open_tree", SYS_open_tree),
        always("fsopen", SYS_fsopen),
        always("fsconfig", SYS_fsconfig),
        always("fsmount", SYS_fsmount),
        always("fspick", SYS_fspick),
        always("mount_setattr", SYS_mount_setattr),
        always("bpf", SYS_bpf),
        always("perf_event_open", SYS_perf_event_open),
        always("keyctl", SYS_keyctl),
        always("add_key", SYS_add_key),
        always("request_key", SYS_request_key),
        always("kexec_load", SYS_kexec_load),
        always("kexec_file_load", SYS_kexec_file_load),
        always("init_module", SYS_init_module),
        always("finit_module", SYS_finit_module),
        always("delete_module", SYS_delete_module),
    ];
    let mut unshare_flags = NS_FLAGS.to_vec();
    unshare_flags.push(("CLONE_NEWTIME", CLONE_NEWTIME as u64));
    t.push(Entry {
        name: "unshare",
        nr: SYS_unshare,
        when: any_flag(0, &unshare_flags),
        errno: EPERM,
        says: "flags include a CLONE_NEW* namespace flag".into(),
    });
    t.push(Entry {
        name: "clone",
        nr: SYS_clone,
        when: any_flag(0, NS_FLAGS),
        errno: EPERM,
        says: "flags include a CLONE_NEW* namespace flag".into(),
    });
    // Its flags sit in a struct seccomp cannot read: ENOSYS makes libc fall
    // back to clone, whose flags the rule above checks.
    t.push(Entry {
        name: "clone3",
        nr: SYS_clone3,
        when: Vec::new(),
        errno: ENOSYS,
        says: "always (libc falls back to clone)".into(),
    });
    // The request type is c_ulong on glibc and c_int on musl.
    #[allow(clippy::unnecessary_cast)]
    let (sti, linux) = (TIOCSTI as u64 & 0xffff_ffff, TIOCLINUX as u64 & 0xffff_ffff);
    t.push(Entry {
        name: "ioctl",
        nr: SYS_ioctl,
        when: vec![vec![Cmp::Eq(1, sti)], vec![Cmp::Eq(1, linux)]],
        errno: EPERM,
        says: "request is TIOCSTI or TIOCLINUX (low 32 bits)".into(),
    });
    if let Some(e) = socket_entry(sockets) {
        t.push(e);
    }
    t
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn table(_sockets: SocketRules) -> Vec<Entry> {
    Vec::new()
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn socket_entry(s: SocketRules) -> Option<Entry> {
    use libc::{SYS_socket, AF_INET, AF_INET6, AF_UNIX, EPERM, SOCK_STREAM};
    let mut allowed: Vec<(u64, &str)> = Vec::new();
    if s.allow_unix {
        allowed.push((AF_UNIX as u64, "AF_UNIX"));
    }
    let (when, says) = match s.inet {
        Inet::Allow => return None,
        Inet::Deny if allowed.is_empty() => (Vec::new(), "always (every family)".to_string()),
        Inet::Deny => (
            vec![allowed.iter().map(|(f, _)| Cmp::Ne(0, *f)).collect()],
            "family is not AF_UNIX".to_string(),
        ),
        Inet::StreamOnly => {
            allowed.push((AF_INET as u64, "AF_INET"));
            allowed.push((AF_INET6 as u64, "AF_INET6"));
            let mut when: Vec<Vec<Cmp>> =
                vec![allowed.iter().map(|(f, _)| Cmp::Ne(0, *f)).collect()];
            // The socket type is the low 4 bits (the rest are SOCK_NONBLOCK
            // and SOCK_CLOEXEC); every type but SOCK_STREAM is refused.
            for fam in [AF_INET as u64, AF_INET6 as u64] {
                for ty in (0..16u64).filter(|t| *t != SOCK_STREAM as u64) {
                    when.push(vec![Cmp::Eq(0, fam), Cmp::Masked(1, 0xf, ty)]);
                }
                // Landlock's TCP rules cover TCP only: an MPTCP or SCTP
                // stream socket would connect anywhere. Protocol 0 or TCP.
                when.push(vec![
                    Cmp::Eq(0, fam),
                    Cmp::Ne(2, 0),
                    Cmp::Ne(2, libc::IPPROTO_TCP as u64),
                ]);
            }
            let names: Vec<&str> = allowed.iter().map(|(_, n)| *n).collect();
            (
                when,
                format!(
                    "family is not one of {}, or an AF_INET/AF_INET6 type is not SOCK_STREAM, or its protocol is not TCP",
                    names.join(", ")
                ),
            )
        }
    };
    Some(Entry {
        name: "socket",
        nr: SYS_socket,
        when,
        errno: EPERM,
        says,
    })
}

fn errno_name(e: i32) -> &'static str {
    match e {
        libc::ENOSYS => "ENOSYS",
        _ => "EPERM",
    }
}

/// The rule list as `explain` shows it; everything not listed is allowed.
pub fn describe(sockets: SocketRules) -> Vec<RuleDesc> {
    let mut out: Vec<RuleDesc> = table(sockets)
        .into_iter()
        .map(|e| RuleDesc {
            syscall: e.name,
            when: e.says,
            errno: errno_name(e.errno),
        })
        .collect();
    out.push(RuleDesc {
        syscall: "(another ABI: i386, x32)",
        when: "always (i386 kills the process, x32 numbers get ENOSYS)".into(),
        errno: "ENOSYS",
    });
    out
}

/// A compiled filter, ready to install: one BPF program per errno, because
/// seccompiler gives a filter a single match action.
pub struct Program(Vec<seccompiler::BpfProgram>);

impl Program {
    /// Instructions in all, for `explain`.
    pub fn len(&self) -> usize {
        self.0.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Each BPF program as the kernel reads a `struct sock_filter` array
    /// (native byte order), in installation order: what the embedded
    /// second stage installs.
    pub fn raw(&self) -> Vec<Vec<u8>> {
        self.0
            .iter()
            .map(|p| {
                let mut b = Vec::with_capacity(p.len() * 8);
                for i in p {
                    b.extend_from_slice(&i.code.to_ne_bytes());
                    b.push(i.jt);
                    b.push(i.jf);
                    b.extend_from_slice(&i.k.to_ne_bytes());
                }
                b
            })
            .collect()
    }
}

/// Compiles the filter. Nothing is installed.
pub fn compile(sockets: SocketRules) -> Result<Program, String> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition,
        SeccompFilter, SeccompRule,
    };
    let target = match arch()? {
        "x86_64" => seccompiler::TargetArch::x86_64,
        _ => seccompiler::TargetArch::aarch64,
    };
    let bad = |e: seccompiler::BackendError| format!("cannot build the seccomp filter: {e}");
    // seccompiler has one match action per filter: so that clone3 can get
    // ENOSYS while the rest get EPERM, each errno gets its own filter, and
    // the kernel runs every installed filter (the strictest answer wins).
    let mut by_errno: BTreeMap<i32, BTreeMap<i64, Vec<SeccompRule>>> = BTreeMap::new();
    for e in table(sockets) {
        let mut rules = Vec::new();
        for conj in &e.when {
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
        by_errno.entry(e.errno).or_default().insert(e.nr, rules);
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
        out.push(prog);
    }
    if let Some(first) = out.first_mut() {
        guard_x32(first);
    }
    Ok(Program(out))
}

/// On x86_64 the x32 ABI shares the architecture token but numbers its
/// syscalls from 0x40000000: seccompiler only matches the 64-bit numbers, so
/// every x32 call is refused right after the architecture check.
fn guard_x32(p: &mut seccompiler::BpfProgram) {
    if !cfg!(target_arch = "x86_64") || p.len() < 3 {
        return;
    }
    const BPF_LD_W_ABS: u16 = 0x20;
    const BPF_JGE_K: u16 = 0x05 | 0x30;
    const BPF_RET_K: u16 = 0x06;
    let ins = |code, jt, jf, k| seccompiler::sock_filter { code, jt, jf, k };
    let guard = [
        ins(BPF_LD_W_ABS, 0, 0, 0), // seccomp_data.nr
        ins(BPF_JGE_K, 0, 1, 0x4000_0000),
        ins(BPF_RET_K, 0, 0, 0x0005_0000 | libc::ENOSYS as u32),
    ];
    // The first three instructions are seccompiler's architecture check,
    // whose only jump lands on instruction 3: the guard goes there, and the
    // rest of the program reloads the number itself.
    let rest = p.split_off(3);
    p.extend(guard);
    p.extend(rest);
}

/// Installs the filter(s) on the calling thread. Needs no_new_privs (or
/// CAP_SYS_ADMIN); the caller has set it.
pub fn install(prog: &Program) -> Result<(), String> {
    for p in &prog.0 {
        seccompiler::apply_filter(p)
            .map_err(|e| format!("cannot install the seccomp filter: {e}"))?;
    }
    Ok(())
}

/// Whether this kernel takes seccomp filters returning errno.
pub fn probe() -> Result<(), String> {
    arch()?;
    let action: u32 = 0x0005_0000; // SECCOMP_RET_ERRNO
                                   // SAFETY: SECCOMP_GET_ACTION_AVAIL only reads the u32 it is given.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_ACTION_AVAIL,
            0,
            &action as *const u32,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        let e = std::io::Error::last_os_error();
        Err(format!(
            "seccomp filters are not available in this kernel ({e})"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: SocketRules = SocketRules {
        allow_unix: false,
        inet: Inet::Deny,
    };

    #[test]
    fn describes_every_guarantee_of_spec_5() {
        let names: Vec<&str> = describe(NONE).iter().map(|r| r.syscall).collect();
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
    fn full_network_has_no_socket_rule() {
        let r = describe(SocketRules {
            allow_unix: true,
            inet: Inet::Allow,
        });
        assert!(!r.iter().any(|d| d.syscall == "socket"));
    }

    #[test]
    fn unix_allowed_refuses_other_families() {
        let r = describe(SocketRules {
            allow_unix: true,
            inet: Inet::Deny,
        });
        let s = r.iter().find(|d| d.syscall == "socket").unwrap();
        assert_eq!(s.when, "family is not AF_UNIX");
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn x32_guard_sits_between_the_arch_check_and_the_syscall_load() {
        let p = compile(NONE).unwrap();
        let first = &p.0[0];
        // seccompiler: load arch (offset 4), jump over the kill, kill.
        assert_eq!((first[0].code, first[0].k), (0x20, 4));
        assert_eq!((first[1].jt, first[1].jf), (1, 0));
        // The guard: load nr, x32 numbers get ENOSYS.
        assert_eq!((first[3].code, first[3].k), (0x20, 0));
        assert_eq!(first[4].k, 0x4000_0000);
        assert_eq!(first[5].k, 0x0005_0000 | libc::ENOSYS as u32);
        // seccompiler's own code reloads the number after it.
        assert_eq!((first[6].code, first[6].k), (0x20, 0));
    }

    #[test]
    fn compiles_for_this_arch() {
        let p = compile(NONE).unwrap();
        assert!(p.len() > 10);
        let p = compile(SocketRules {
            allow_unix: false,
            inet: Inet::StreamOnly,
        })
        .unwrap();
        assert!(p.len() > 10);
    }
}
