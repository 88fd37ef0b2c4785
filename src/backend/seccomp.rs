//! The seccomp filter of SPEC §5, for x86_64 and aarch64: one rule table that
//! both compiles to BPF and describes itself for `explain`, so what is shown
//! is what is installed. The BPF is generated here, one program shaped as a
//! binary search over syscall numbers: the kernel evaluates a new filter
//! for every syscall number when it is attached, and seccompiler's output
//! (one program per errno, each a chain of one test per rule) cost ~180 µs
//! to attach on every launch. The tests hold this program to seccompiler's
//! answers for every syscall number and every argument value that matters. It owns building and
//! installing the filter; it never decides policy (the layer spec says which
//! socket families are allowed) and refuses to build for any other
//! architecture rather than install a filter with the wrong numbers.

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

/// What the filter answers for a system call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Allow,
    Errno(i32),
    /// Handed to the broker (SECCOMP_RET_USER_NOTIF), which performs it or
    /// answers with an error.
    Broker,
}

/// One syscall with rules: `rules` are tried in order (each an AND of
/// comparisons; the first that holds decides), then `default`. `allow`,
/// when it holds, answers Allow before any rule: a short path for the
/// common case of a syscall whose rules all concern rarer arguments.
struct Entry {
    name: &'static str,
    nr: i64,
    allow: Vec<Cmp>,
    rules: Vec<(Vec<Cmp>, Action)>,
    default: Action,
    /// What the rules mean, for people: one line per rule, then the default.
    says: Vec<String>,
}

/// What a layer does with metadata changes (mode, owner, times, extended
/// attributes, inode flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Meta {
    /// No limit but the setuid/setgid rule (danger-full-access).
    Allow,
    /// Refused everywhere (EROFS): nothing is writable (read-only).
    Refuse,
    /// Handed to the broker, which allows them where writing is allowed.
    Broker,
}

/// The filesystem part of the filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsRules {
    pub meta: Meta,
    /// Every call that creates a name is handed to the broker (which keeps
    /// missing protected names uncreatable).
    pub create: bool,
}

impl FsRules {
    /// What needs no broker: metadata limited only by setuid/setgid.
    pub const OPEN: FsRules = FsRules {
        meta: Meta::Allow,
        create: false,
    };

    /// Whether anything is handed to a broker.
    pub fn brokered(&self) -> bool {
        self.create || self.meta == Meta::Broker
    }
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

/// An entry refused with `errno` when any conjunction of `when` holds.
fn refused(name: &'static str, nr: i64, when: Vec<Vec<Cmp>>, errno: i32, says: &str) -> Entry {
    let always = when.is_empty();
    Entry {
        name,
        nr,
        allow: Vec::new(),
        rules: if always {
            Vec::new()
        } else {
            when.into_iter()
                .map(|c| (c, Action::Errno(errno)))
                .collect()
        },
        default: if always {
            Action::Errno(errno)
        } else {
            Action::Allow
        },
        says: vec![says.to_string()],
    }
}

/// setuid or setgid in the mode argument `arg`: refused (EPERM) so that no
/// file the command creates or changes carries either bit.
fn setid(arg: u8, also: &[Cmp]) -> Vec<(Vec<Cmp>, Action)> {
    [0o4000u64, 0o2000]
        .iter()
        .map(|bit| {
            let mut c = also.to_vec();
            c.push(Cmp::Masked(arg, *bit, *bit));
            (c, Action::Errno(libc::EPERM))
        })
        .collect()
}

/// Numbers of the unified table that libc does not name yet.
const SYS_SETXATTRAT: i64 = 463;
const SYS_REMOVEXATTRAT: i64 = 466;
const SYS_OPEN_TREE_ATTR: i64 = 467;
const SYS_FILE_SETATTR: i64 = 469;

/// ioctls that change an inode's flags or attributes (chattr and the like):
/// FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS, FS_IOC_FSSETXATTR, FS_IOC_SETVERSION,
/// FS_IOC32_SETVERSION, FS_IOC_SET_ENCRYPTION_POLICY, FS_IOC_ENABLE_VERITY,
/// FS_IOC_SETFSLABEL (low 32 bits).
const INODE_IOCTLS: &[u64] = &[
    0x4008_6602,
    0x4004_6602,
    0x401c_5820,
    0x4008_7602,
    0x4004_7602,
    0x800c_6613,
    0x4080_6685,
    0x4100_9432,
];

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn table(sockets: SocketRules, fs: FsRules) -> Vec<Entry> {
    use libc::*;
    let always = |name: &'static str, nr: i64| refused(name, nr, Vec::new(), EPERM, "always");
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
        always("open_tree_attr", SYS_OPEN_TREE_ATTR),
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
    t.push(refused(
        "unshare",
        SYS_unshare,
        any_flag(0, &unshare_flags),
        EPERM,
        "flags include a CLONE_NEW* namespace flag",
    ));
    t.push(refused(
        "clone",
        SYS_clone,
        any_flag(0, NS_FLAGS),
        EPERM,
        "flags include a CLONE_NEW* namespace flag",
    ));
    // Its flags sit in a struct seccomp cannot read: ENOSYS makes libc fall
    // back to clone, whose flags the rule above checks.
    t.push(refused(
        "clone3",
        SYS_clone3,
        Vec::new(),
        ENOSYS,
        "always (libc falls back to clone)",
    ));
    // Its flags and mode sit in a struct too (a setuid file, a creation the
    // broker must see): ENOSYS makes callers fall back to openat.
    t.push(refused(
        "openat2",
        SYS_openat2,
        Vec::new(),
        ENOSYS,
        "always (callers fall back to openat)",
    ));
    // The request type is c_ulong on glibc and c_int on musl.
    #[allow(clippy::unnecessary_cast)]
    let (sti, linux) = (TIOCSTI as u64 & 0xffff_ffff, TIOCLINUX as u64 & 0xffff_ffff);
    let mut ioctls = vec![vec![Cmp::Eq(1, sti)], vec![Cmp::Eq(1, linux)]];
    let mut ioctl_says = "request is TIOCSTI or TIOCLINUX (low 32 bits)".to_string();
    if fs.meta != Meta::Allow {
        ioctls.extend(INODE_IOCTLS.iter().map(|r| vec![Cmp::Eq(1, *r)]));
        ioctl_says = "request is TIOCSTI, TIOCLINUX, or one that changes inode flags or attributes (FS_IOC_SETFLAGS, FS_IOC_FSSETXATTR, …; low 32 bits)".into();
    }
    t.push(refused("ioctl", SYS_ioctl, ioctls, EPERM, &ioctl_says));
    if let Some(e) = socket_entry(sockets) {
        t.push(e);
    }
    t.extend(fs_table(fs));
    t
}

/// The filesystem rules: no setuid/setgid mode, metadata as `fs.meta`
/// says, creations to the broker when `fs.create`.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn fs_table(fs: FsRules) -> Vec<Entry> {
    use libc::*;
    const O_CREAT_: u64 = 0o100;
    const O_TMPFILE_BIT: u64 = 0o20000000;
    let meta_default = match fs.meta {
        Meta::Allow => Action::Allow,
        Meta::Refuse => Action::Errno(EROFS),
        Meta::Broker => Action::Broker,
    };
    let meta_says = match fs.meta {
        Meta::Allow => "allowed",
        Meta::Refuse => "refused (nothing is writable)",
        Meta::Broker => "to the broker: allowed where writing is, never on a device",
    };
    let create_default = if fs.create {
        Action::Broker
    } else {
        Action::Allow
    };
    let create_says = if fs.create {
        "to the broker: a missing protected name cannot be created"
    } else {
        "allowed"
    };
    let setid_says = "mode has setuid or setgid: refused (EPERM)";
    let entry = |name: &'static str,
                 nr: i64,
                 allow: Vec<Cmp>,
                 rules: Vec<(Vec<Cmp>, Action)>,
                 default: Action,
                 says: Vec<String>| Entry {
        name,
        nr,
        allow,
        rules,
        default,
        says,
    };
    // A metadata call: setuid/setgid refused when `mode` is an argument.
    let meta = |name: &'static str, nr: i64, mode: Option<u8>| {
        let rules = mode.map(|a| setid(a, &[])).unwrap_or_default();
        let mut says = Vec::new();
        if mode.is_some() {
            says.push(setid_says.to_string());
        }
        says.push(format!("otherwise {meta_says}"));
        entry(name, nr, Vec::new(), rules, meta_default, says)
    };
    // A call that creates a name: setuid/setgid refused when `mode` is an
    // argument (with `also` holding: open's O_CREAT), then the creation.
    let create = |name: &'static str, nr: i64, mode: Option<u8>| {
        let rules = mode.map(|a| setid(a, &[])).unwrap_or_default();
        let mut says = Vec::new();
        if mode.is_some() {
            says.push(setid_says.to_string());
        }
        says.push(format!("otherwise {create_says}"));
        entry(name, nr, Vec::new(), rules, create_default, says)
    };
    // open/openat: only O_CREAT and O_TMPFILE carry a mode or make a name.
    let open = |name: &'static str, nr: i64, flags: u8, mode: u8| {
        let mut rules = setid(mode, &[Cmp::Masked(flags, O_CREAT_, O_CREAT_)]);
        rules.extend(setid(
            mode,
            &[Cmp::Masked(flags, O_TMPFILE_BIT, O_TMPFILE_BIT)],
        ));
        if fs.create {
            rules.push((vec![Cmp::Masked(flags, O_CREAT_, O_CREAT_)], Action::Broker));
        }
        let mut says = vec![format!("with O_CREAT or O_TMPFILE, {setid_says}")];
        if fs.create {
            says.push(format!("with O_CREAT, {create_says}"));
        }
        says.push("otherwise allowed".into());
        entry(
            name,
            nr,
            vec![Cmp::Masked(flags, O_CREAT_ | O_TMPFILE_BIT, 0)],
            rules,
            Action::Allow,
            says,
        )
    };
    let mut t = vec![
        open("openat", SYS_openat, 2, 3),
        meta("fchmod", SYS_fchmod, Some(1)),
        meta("fchmodat", SYS_fchmodat, Some(2)),
        meta("fchmodat2", SYS_fchmodat2, Some(2)),
        meta("fchown", SYS_fchown, None),
        meta("fchownat", SYS_fchownat, None),
        meta("utimensat", SYS_utimensat, None),
        meta("setxattr", SYS_setxattr, None),
        meta("lsetxattr", SYS_lsetxattr, None),
        meta("fsetxattr", SYS_fsetxattr, None),
        meta("removexattr", SYS_removexattr, None),
        meta("lremovexattr", SYS_lremovexattr, None),
        meta("fremovexattr", SYS_fremovexattr, None),
        create("mkdirat", SYS_mkdirat, None),
        create("mknodat", SYS_mknodat, Some(2)),
        create("symlinkat", SYS_symlinkat, None),
        create("linkat", SYS_linkat, None),
        create("renameat2", SYS_renameat2, None),
    ];
    #[cfg(target_arch = "x86_64")]
    t.extend([
        open("open", SYS_open, 1, 2),
        create("creat", SYS_creat, Some(1)),
        meta("chmod", SYS_chmod, Some(1)),
        meta("chown", SYS_chown, None),
        meta("lchown", SYS_lchown, None),
        meta("utime", SYS_utime, None),
        meta("utimes", SYS_utimes, None),
        meta("futimesat", SYS_futimesat, None),
        create("mkdir", SYS_mkdir, None),
        create("mknod", SYS_mknod, Some(1)),
        create("symlink", SYS_symlink, None),
        create("link", SYS_link, None),
        create("rename", SYS_rename, None),
        create("renameat", SYS_renameat, None),
    ]);
    if fs.meta != Meta::Allow {
        // The *at forms of 6.13 and the path form of the inode-flag ioctls:
        // no broker for them; callers fall back to the older calls.
        let errno = if fs.meta == Meta::Refuse {
            EROFS
        } else {
            ENOSYS
        };
        let says = if errno == EROFS {
            "always (nothing is writable)"
        } else {
            "always (callers fall back to setxattr, removexattr)"
        };
        t.push(refused(
            "setxattrat",
            SYS_SETXATTRAT,
            Vec::new(),
            errno,
            says,
        ));
        t.push(refused(
            "removexattrat",
            SYS_REMOVEXATTRAT,
            Vec::new(),
            errno,
            says,
        ));
        t.push(refused(
            "file_setattr",
            SYS_FILE_SETATTR,
            Vec::new(),
            EPERM,
            "always (changes inode flags)",
        ));
    }
    // Entries whose every answer is Allow say nothing and are left out.
    t.retain(|e| e.default != Action::Allow || !e.rules.is_empty());
    t
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn table(_sockets: SocketRules, _fs: FsRules) -> Vec<Entry> {
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
    Some(refused("socket", SYS_socket, when, EPERM, &says))
}

fn action_name(a: Action) -> &'static str {
    match a {
        Action::Allow => "allow",
        Action::Errno(libc::ENOSYS) => "ENOSYS",
        Action::Errno(libc::EROFS) => "EROFS",
        Action::Errno(_) => "EPERM",
        Action::Broker => "broker",
    }
}

/// The rule list as `explain` shows it; everything not listed is allowed.
/// An entry with several rules shows one line per rule, then its default.
pub fn describe(sockets: SocketRules, fs: FsRules) -> Vec<RuleDesc> {
    let mut out = Vec::new();
    for e in table(sockets, fs) {
        let actions = e
            .rules
            .iter()
            .map(|(_, a)| *a)
            .chain(std::iter::once(e.default));
        let mut says = e.says.iter();
        let mut shown: Vec<Action> = Vec::new();
        for a in actions {
            // Rules with one action read as one line (the socket family list).
            if shown.contains(&a) || (a == Action::Allow && e.says.len() <= shown.len()) {
                continue;
            }
            shown.push(a);
            out.push(RuleDesc {
                syscall: e.name,
                when: says.next().cloned().unwrap_or_default(),
                errno: action_name(a),
            });
        }
    }
    out.push(RuleDesc {
        syscall: "(another ABI: i386, x32)",
        when: "always (i386 kills the process, x32 numbers get ENOSYS)".into(),
        errno: "ENOSYS",
    });
    out
}

/// A compiled filter, ready to install: one BPF program that gives every
/// syscall the answer of its rule in the table.
pub struct Program(Vec<Vec<libc::sock_filter>>);

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

// Classic BPF, as seccomp runs it.
const LD_W_ABS: u16 = 0x20; // BPF_LD (0) | BPF_W (0) | BPF_ABS
const AND_K: u16 = 0x04 | 0x50; // BPF_ALU | BPF_AND | BPF_K
const JEQ_K: u16 = 0x05 | 0x10; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K: u16 = 0x05 | 0x30; // BPF_JMP | BPF_JGE | BPF_K
const JGT_K: u16 = 0x05 | 0x20; // BPF_JMP | BPF_JGT | BPF_K
const JSET_K: u16 = 0x05 | 0x40; // BPF_JMP | BPF_JSET | BPF_K
const JA: u16 = 0x05; // BPF_JMP | BPF_JA
const RET_K: u16 = 0x06; // BPF_RET | BPF_K
const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const RET_ALLOW: u32 = 0x7fff_0000;
const RET_USER_NOTIF: u32 = 0x7fc0_0000;
/// `struct seccomp_data`: nr, arch, then the arguments from offset 16.
const DATA_NR: u32 = 0;
const DATA_ARCH: u32 = 4;
const DATA_ARGS: u32 = 16;

type Label = usize;

/// An instruction before jump offsets are known.
#[derive(Clone, Copy)]
enum Op {
    Stmt(u16, u32),
    /// A conditional jump: code, constant, where to go when true / false.
    Jump(u16, u32, Label, Label),
    Here(Label),
}

/// Lays out `ops`: labels become forward offsets. A conditional jump
/// reaches at most 255 instructions; one that would reach further becomes
/// `jcond 0, 1; ja true; ja false` (32-bit offsets), until all fit.
fn assemble(ops: &[Op], labels: usize) -> Result<Vec<libc::sock_filter>, String> {
    let mut wide = vec![false; ops.len()];
    loop {
        let mut at = vec![usize::MAX; labels];
        let mut pos = Vec::with_capacity(ops.len());
        let mut n = 0usize;
        for (i, op) in ops.iter().enumerate() {
            pos.push(n);
            match op {
                Op::Here(l) => at[*l] = n,
                Op::Stmt(..) => n += 1,
                Op::Jump(..) => n += if wide[i] { 3 } else { 1 },
            }
        }
        let off = |from: usize, to: Label| -> Result<usize, String> {
            let t = at[to];
            if t == usize::MAX || t < from {
                return Err("seccomp filter: a jump goes backwards or nowhere".into());
            }
            Ok(t - from)
        };
        let mut grew = false;
        for (i, op) in ops.iter().enumerate() {
            if let Op::Jump(_, _, t, f) = *op {
                if !wide[i] && (off(pos[i] + 1, t)? > 255 || off(pos[i] + 1, f)? > 255) {
                    wide[i] = true;
                    grew = true;
                }
            }
        }
        if grew {
            continue;
        }
        if n > 4096 {
            return Err(format!(
                "seccomp filter: {n} instructions, the kernel takes 4096"
            ));
        }
        let ins = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
        let mut out = Vec::with_capacity(n);
        for (i, op) in ops.iter().enumerate() {
            match *op {
                Op::Here(_) => {}
                Op::Stmt(code, k) => out.push(ins(code, 0, 0, k)),
                Op::Jump(code, k, t, f) if !wide[i] => {
                    let (jt, jf) = (off(pos[i] + 1, t)?, off(pos[i] + 1, f)?);
                    out.push(ins(code, jt as u8, jf as u8, k));
                }
                Op::Jump(code, k, t, f) => {
                    out.push(ins(code, 0, 1, k));
                    let to = |from, l| {
                        off(from, l).and_then(|o| u32::try_from(o).map_err(|e| e.to_string()))
                    };
                    out.push(ins(JA, 0, 0, to(pos[i] + 2, t)?));
                    out.push(ins(JA, 0, 0, to(pos[i] + 3, f)?));
                }
            }
        }
        return Ok(out);
    }
}

/// The low 32 bits of a constant the filter compares against.
fn dword(v: u64) -> Result<u32, String> {
    u32::try_from(v).map_err(|_| format!("seccomp filter: constant {v:#x} is wider than 32 bits"))
}

fn ret(a: Action) -> u32 {
    match a {
        Action::Allow => RET_ALLOW,
        Action::Errno(e) => RET_ERRNO | (e as u32 & 0xffff),
        Action::Broker => RET_USER_NOTIF,
    }
}

/// Emits the tests of one conjunction: jumps to `pass` when every
/// comparison holds, to `fail` otherwise. A bit test (JSET) leaves the
/// argument in the accumulator, so the next test of the same argument needs
/// no new load (see `drop_reloads`).
fn conjunction(
    conj: &[Cmp],
    pass: Label,
    fail: Label,
    ops: &mut Vec<Op>,
    label: &mut dyn FnMut() -> Label,
) -> Result<(), String> {
    for (i, c) in conj.iter().enumerate() {
        let a = match *c {
            Cmp::Eq(a, _) | Cmp::Ne(a, _) | Cmp::Masked(a, _, _) => a,
        };
        if a > 5 {
            return Err(format!("seccomp filter: no argument {a}"));
        }
        let cont = if i + 1 == conj.len() { pass } else { label() };
        // The low half of the argument (little-endian targets only).
        ops.push(Op::Stmt(LD_W_ABS, DATA_ARGS + 8 * u32::from(a)));
        let test = match *c {
            Cmp::Eq(_, v) => Op::Jump(JEQ_K, dword(v)?, cont, fail),
            Cmp::Ne(_, v) => Op::Jump(JEQ_K, dword(v)?, fail, cont),
            // No bit of the mask set.
            Cmp::Masked(_, m, 0) => Op::Jump(JSET_K, dword(m)?, fail, cont),
            // The one bit of the mask set.
            Cmp::Masked(_, m, v) if v == m && m.is_power_of_two() => {
                Op::Jump(JSET_K, dword(m)?, cont, fail)
            }
            Cmp::Masked(_, m, v) => {
                ops.push(Op::Stmt(AND_K, dword(m)?));
                Op::Jump(JEQ_K, dword(v)?, cont, fail)
            }
        };
        ops.push(test);
        if cont != pass {
            ops.push(Op::Here(cont));
        }
    }
    if conj.is_empty() {
        return Err("seccomp filter: a rule without a condition".into());
    }
    Ok(())
}

/// The label of the shared return of `action` in `pool`, made on first use;
/// `flush_returns` emits them.
fn return_to(
    action: Action,
    pool: &mut Vec<(Action, Label)>,
    label: &mut dyn FnMut() -> Label,
) -> Label {
    if let Some((_, l)) = pool.iter().find(|(a, _)| *a == action) {
        return *l;
    }
    let l = label();
    pool.push((action, l));
    l
}

fn flush_returns(pool: Vec<(Action, Label)>, ops: &mut Vec<Op>) {
    for (action, l) in pool {
        ops.push(Op::Here(l));
        ops.push(Op::Stmt(RET_K, ret(action)));
    }
}

/// Emits the answer for one table entry: its short path to Allow, then the
/// action of the first rule whose conjunction holds, else its default.
/// Ends in a return on every path; the rules' answers jump to the returns
/// of `pool`.
fn entry_block(
    e: &Entry,
    pool: &mut Vec<(Action, Label)>,
    ops: &mut Vec<Op>,
    label: &mut dyn FnMut() -> Label,
) -> Result<(), String> {
    if !e.allow.is_empty() {
        let no = label();
        let yes = return_to(Action::Allow, pool, label);
        conjunction(&e.allow, yes, no, ops, label)?;
        ops.push(Op::Here(no));
    }
    for (conj, action) in &e.rules {
        let fail = label();
        let hit = return_to(*action, pool, label);
        conjunction(conj, hit, fail, ops, label)?;
        ops.push(Op::Here(fail));
    }
    ops.push(Op::Stmt(RET_K, ret(e.default)));
    Ok(())
}

/// What the search tells apart: a run of consecutive syscall numbers that
/// all get one answer whatever their arguments (`ptrace`, the mount
/// family…), or one entry with rules of its own.
enum Item<'a> {
    Always { lo: u32, hi: u32, action: Action },
    Rules(&'a Entry),
}

impl Item<'_> {
    fn lo(&self) -> Result<u32, String> {
        match self {
            Item::Always { lo, .. } => Ok(*lo),
            Item::Rules(e) => dword(e.nr as u64),
        }
    }
}

/// The entries, sorted by number, with consecutive numbers that have the
/// same constant answer merged into one run.
fn items<'a>(entries: &[&'a Entry]) -> Result<Vec<Item<'a>>, String> {
    let mut out: Vec<Item<'a>> = Vec::new();
    for e in entries {
        let nr = dword(e.nr as u64)?;
        if !e.allow.is_empty() || !e.rules.is_empty() {
            out.push(Item::Rules(e));
            continue;
        }
        match out.last_mut() {
            Some(Item::Always { hi, action, .. })
                if *action == e.default && hi.checked_add(1) == Some(nr) =>
            {
                *hi = nr
            }
            _ => out.push(Item::Always {
                lo: nr,
                hi: nr,
                action: e.default,
            }),
        }
    }
    Ok(out)
}

/// A binary search over the sorted syscall numbers: the kernel checks
/// every syscall number against the filter when it is attached (to cache
/// those always allowed), and a search costs a few steps where a chain
/// costs one per rule. Small ranges end in a chain, each rule's block
/// inline after its own test; the chain's constant answers share one
/// return each, after its final Allow. The accumulator holds the syscall
/// number throughout (only the blocks load arguments, and they end in a
/// return), so no path that reaches Allow here ever loads an argument:
/// what the kernel needs to cache it.
fn search(
    items: &[Item<'_>],
    ops: &mut Vec<Op>,
    label: &mut dyn FnMut() -> Label,
) -> Result<(), String> {
    if items.len() > 4 {
        let mid = items.len() / 2;
        let (lo, hi) = (label(), label());
        ops.push(Op::Jump(JGE_K, items[mid].lo()?, hi, lo));
        ops.push(Op::Here(lo));
        search(&items[..mid], ops, label)?;
        ops.push(Op::Here(hi));
        return search(&items[mid..], ops, label);
    }
    let mut shared: Vec<(Action, Label)> = Vec::new();
    for it in items {
        let next = label();
        match it {
            Item::Always { lo, hi, action } => {
                let to = return_to(*action, &mut shared, label);
                if lo == hi {
                    ops.push(Op::Jump(JEQ_K, *lo, to, next));
                } else {
                    let within = label();
                    ops.push(Op::Jump(JGE_K, *lo, within, next));
                    ops.push(Op::Here(within));
                    ops.push(Op::Jump(JGT_K, *hi, next, to));
                }
            }
            Item::Rules(e) => {
                let hit = label();
                ops.push(Op::Jump(JEQ_K, dword(e.nr as u64)?, hit, next));
                ops.push(Op::Here(hit));
                entry_block(e, &mut shared, ops, label)?;
            }
        }
        ops.push(Op::Here(next));
    }
    ops.push(Op::Stmt(RET_K, RET_ALLOW));
    flush_returns(shared, ops);
    Ok(())
}

/// Drops every load of a word the accumulator already holds on all paths
/// that reach it (a rule chain tests one argument again and again). Jumps
/// only go forward, so one pass in order sees every way into a label before
/// the label itself.
fn drop_reloads(ops: Vec<Op>, labels: usize) -> Vec<Op> {
    /// What the accumulator holds: a word of seccomp_data, or nothing known.
    type Acc = Option<u32>;
    // Per label: what every jump seen so far leaves in the accumulator
    // (None: no jump yet; Some(None): they disagree or it is unknown).
    let mut into: Vec<Option<Acc>> = vec![None; labels];
    let meet = |slot: &mut Option<Acc>, acc: Acc| {
        *slot = Some(match *slot {
            None => acc,
            Some(a) if a == acc => a,
            Some(_) => None,
        })
    };
    let mut out = Vec::with_capacity(ops.len());
    // `None`: this point cannot be reached by falling through.
    let mut acc: Option<Acc> = Some(None);
    for op in ops {
        match op {
            Op::Here(l) => {
                let mut here = into[l];
                if let Some(a) = acc {
                    meet(&mut here, a);
                }
                acc = Some(here.unwrap_or(None));
                out.push(op);
            }
            Op::Stmt(LD_W_ABS, k) => {
                if acc != Some(Some(k)) {
                    out.push(op);
                }
                acc = Some(Some(k));
            }
            Op::Stmt(RET_K, _) => {
                out.push(op);
                acc = None;
            }
            Op::Stmt(..) => {
                out.push(op);
                acc = Some(None);
            }
            Op::Jump(_, _, t, f) => {
                let a = acc.unwrap_or(None);
                meet(&mut into[t], a);
                meet(&mut into[f], a);
                out.push(op);
                acc = None;
            }
        }
    }
    out
}

/// Compiles the filter. Nothing is installed.
pub fn compile(sockets: SocketRules, fs: FsRules) -> Result<Program, String> {
    let token: u32 = match arch()? {
        "x86_64" => 0xc000_003e, // AUDIT_ARCH_X86_64
        _ => 0xc000_00b7,        // AUDIT_ARCH_AARCH64
    };
    if cfg!(target_endian = "big") {
        return Err("seccomp filter: arguments are read as little-endian".into());
    }
    let table = table(sockets, fs);
    let mut entries: Vec<&Entry> = table.iter().collect();
    entries.sort_by_key(|e| e.nr);
    if entries.windows(2).any(|w| w[0].nr == w[1].nr) {
        return Err("seccomp filter: two rules for one syscall".into());
    }
    let mut labels = 0usize;
    let mut label = || {
        labels += 1;
        labels - 1
    };
    let mut ops = Vec::new();
    let (native, foreign) = (label(), label());
    ops.push(Op::Stmt(LD_W_ABS, DATA_ARCH));
    // Another ABI (i386 on x86_64, arm32 on aarch64) numbers its syscalls
    // differently: the process is killed rather than matched against
    // numbers that mean something else there.
    ops.push(Op::Jump(JEQ_K, token, native, foreign));
    ops.push(Op::Here(foreign));
    ops.push(Op::Stmt(RET_K, RET_KILL_PROCESS));
    ops.push(Op::Here(native));
    ops.push(Op::Stmt(LD_W_ABS, DATA_NR));
    if cfg!(target_arch = "x86_64") {
        // x32 shares the x86_64 token but numbers its syscalls from
        // 0x40000000: every one of them gets ENOSYS.
        let (x32, native64) = (label(), label());
        ops.push(Op::Jump(JGE_K, 0x4000_0000, x32, native64));
        ops.push(Op::Here(x32));
        ops.push(Op::Stmt(RET_K, RET_ERRNO | libc::ENOSYS as u32));
        ops.push(Op::Here(native64));
    }
    search(&items(&entries)?, &mut ops, &mut label)?;
    let ops = drop_reloads(ops, labels);
    Ok(Program(vec![assemble(&ops, labels)?]))
}

/// seccompiler's build of the same table (one program per errno, in a
/// chain): the reference the tests hold `compile` to.
#[cfg(test)]
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

/// `SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV`
/// (stage2::LISTENER_FLAGS): once the broker has taken a notification,
/// only a fatal signal interrupts the waiting command, so an operation done
/// for it is never done twice by a restarted call.
const LISTENER_FLAGS: libc::c_ulong = (1 << 3) | (1 << 5);

/// Installs the filter(s) on the calling thread. Needs no_new_privs (or
/// CAP_SYS_ADMIN); the caller has set it. With `listener`, the last one
/// hands its notifications to the descriptor returned.
pub fn install(prog: &Program, listener: bool) -> Result<Option<std::os::fd::OwnedFd>, String> {
    use std::os::fd::FromRawFd;
    let mut got = None;
    for (i, p) in prog.0.iter().enumerate() {
        let len = u16::try_from(p.len())
            .map_err(|_| "cannot install the seccomp filter: too long".to_string())?;
        let fprog = libc::sock_fprog {
            len,
            filter: p.as_ptr().cast_mut(),
        };
        let flags = if listener && i + 1 == prog.0.len() {
            LISTENER_FLAGS
        } else {
            0
        };
        // SAFETY: a sock_fprog pointing at `len` instructions that outlive the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                flags,
                &fprog as *const libc::sock_fprog,
            )
        };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            return Err(if e.raw_os_error() == Some(libc::EBUSY) {
                "cannot install the seccomp filter: this sandbox runs inside another one that already brokers its system calls".to_string()
            } else {
                format!("cannot install the seccomp filter: {e}")
            });
        }
        if flags != 0 {
            // SAFETY: the listener descriptor the kernel just made, ours.
            got = Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(r as i32) });
        }
    }
    if listener && got.is_none() {
        return Err("the broker's seccomp filter is missing".into());
    }
    Ok(got)
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
    const BROKERED: FsRules = FsRules {
        meta: Meta::Broker,
        create: true,
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
    fn full_network_has_no_socket_rule() {
        let r = describe(
            SocketRules {
                allow_unix: true,
                inet: Inet::Allow,
            },
            FsRules::OPEN,
        );
        assert!(!r.iter().any(|d| d.syscall == "socket"));
    }

    #[test]
    fn unix_allowed_refuses_other_families() {
        let r = describe(
            SocketRules {
                allow_unix: true,
                inet: Inet::Deny,
            },
            FsRules::OPEN,
        );
        let s = r.iter().find(|d| d.syscall == "socket").unwrap();
        assert_eq!(s.when, "family is not AF_UNIX");
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
            for allow_unix in [false, true] {
                let s = SocketRules { allow_unix, inet };
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
                        assert_eq!(
                            run(&ours.0[0], nr, arch, args).0,
                            strictest(&reference, nr, arch, args),
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
                let fs = FsRules { meta, create };
                for inet in [Inet::Deny, Inet::StreamOnly, Inet::Allow] {
                    let s = SocketRules {
                        allow_unix: true,
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
        for (fs, most) in [
            (FsRules::OPEN, 170),
            (
                FsRules {
                    meta: Meta::Refuse,
                    create: false,
                },
                220,
            ),
            (BROKERED, 240),
        ] {
            let n = compile(NONE, fs).unwrap().len();
            assert!(n <= most, "{fs:?}: {n} instructions");
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
                allow_unix: false,
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
                let fs = FsRules { meta, create };
                for s in [
                    NONE,
                    SocketRules {
                        allow_unix: true,
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
                let p = compile(NONE, FsRules { meta, create }).unwrap();
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
        };
        let ww = FsRules {
            meta: Meta::Broker,
            create: true,
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
}
