//! The seccomp filter of every Linux backend, for x86_64 and aarch64: one rule table that
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

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod observe;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod observe {
    pub fn action_name(_t: u16) -> &'static str {
        "observed"
    }
}

/// Which `socket()` calls the command may make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SocketRules {
    pub unix: Unix,
    pub inet: Inet,
}

/// Unix-domain sockets. A socket reaches code outside the sandbox (D-Bus,
/// docker.sock, an agent, a terminal multiplexer) through its path, which
/// only `connect` (and a datagram's address) names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unix {
    /// Stream and seqpacket sockets may be made; `connect` and `bind` go to
    /// the broker, which reaches a path only when the policy names it or
    /// the command bound it during the run. Datagram sockets are refused,
    /// from `socketpair` too: every send may carry an address, and the
    /// broker could check it only by making the send itself.
    Named,
    /// No unix socket at all but a stream or seqpacket `socketpair` (a
    /// sandbox inside one whose broker holds the listener: nothing here
    /// can check a `connect`).
    Refuse,
}
/// AF_INET/AF_INET6 socket creation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inet {
    /// No internet socket (and no other family but AF_UNIX when allowed).
    Deny,
    /// Only SOCK_STREAM over AF_INET/AF_INET6 (a proxy reached over TCP,
    /// with landlock limiting the port); every other family refused.
    StreamOnly,
    /// Any family, any type (AF_UNIX as `Unix` says).
    Allow,
    /// The command has a network namespace of its own (bwrap, `none` and
    /// `allowlist`): AF_INET/AF_INET6 of any type, which reach only that
    /// namespace's loopback (the command's own servers, and the proxy's
    /// listener), and AF_NETLINK's NETLINK_ROUTE, which lists its
    /// interfaces; every other family refused (AF_VSOCK, for one, is not
    /// namespaced).
    OwnNamespace,
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
    /// Handed to the broker with a `denial_wire` tag: observed for the
    /// denial report, answered as the tag says (`observe`).
    Notify(u16),
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
    /// Denials are recorded: write-intent calls go to the broker, which
    /// lets the kernel run them or refuses what the filter refuses (`observe`).
    pub observe: bool,
}

impl FsRules {
    /// What needs no broker: metadata limited only by setuid/setgid.
    pub const OPEN: FsRules = FsRules {
        meta: Meta::Allow,
        create: false,
        observe: false,
    };

    /// Whether anything is handed to a broker.
    pub fn brokered(&self) -> bool {
        self.create || self.meta == Meta::Broker || self.observe
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
const SYS_LANDLOCK_RESTRICT_SELF: i64 = 446;
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
    let sock = socket_entry(sockets);
    if sock.default != Action::Allow || !sock.rules.is_empty() {
        t.push(sock);
    }
    t.push(socketpair_entry());
    if sockets.unix == Unix::Named {
        t.extend(named_entries(fs));
        // bind and connect are the broker's in every mode: so is a domain
        // the command adds to itself (`fs_table` has it with creations).
        if !fs.create {
            t.push(restrict_self_entry());
        }
    }
    t.extend(fs_table(fs));
    if fs.observe {
        observe::apply(&mut t);
    }
    t
}

/// The filesystem rules: no setuid/setgid mode, metadata as `fs.meta`
/// says, creations to the broker when `fs.create`.
const O_CREAT_: u64 = 0o100;
const O_TMPFILE_BIT: u64 = 0o20000000;
const SETID_SAYS: &str = "mode has setuid or setgid: refused (EPERM)";

/// How the filesystem entries answer under one `FsRules`.
struct FsAnswers {
    fs: FsRules,
    meta_default: Action,
    meta_says: &'static str,
    create_default: Action,
    create_says: &'static str,
}

impl FsAnswers {
    fn new(fs: FsRules) -> FsAnswers {
        let (meta_default, meta_says) = match fs.meta {
            Meta::Allow => (Action::Allow, "allowed"),
            Meta::Refuse => (Action::Errno(libc::EROFS), "refused (nothing is writable)"),
            Meta::Broker => (
                Action::Broker,
                "to the broker: allowed where writing is, never on a device",
            ),
        };
        let (create_default, create_says) = if fs.create {
            (
                Action::Broker,
                "to the broker: a missing protected name cannot be created",
            )
        } else {
            (Action::Allow, "allowed")
        };
        FsAnswers {
            fs,
            meta_default,
            meta_says,
            create_default,
            create_says,
        }
    }

    /// A call with setuid/setgid refused when `mode` is an argument, then
    /// `default`.
    fn with_mode(
        name: &'static str,
        nr: i64,
        mode: Option<u8>,
        default: Action,
        otherwise: &str,
    ) -> Entry {
        let rules = mode.map(|a| setid(a, &[])).unwrap_or_default();
        let mut says = Vec::new();
        if mode.is_some() {
            says.push(SETID_SAYS.to_string());
        }
        says.push(format!("otherwise {otherwise}"));
        Entry {
            name,
            nr,
            allow: Vec::new(),
            rules,
            default,
            says,
        }
    }

    /// A metadata call.
    fn meta(&self, name: &'static str, nr: i64, mode: Option<u8>) -> Entry {
        Self::with_mode(name, nr, mode, self.meta_default, self.meta_says)
    }

    /// A call that creates a name.
    fn create(&self, name: &'static str, nr: i64, mode: Option<u8>) -> Entry {
        Self::with_mode(name, nr, mode, self.create_default, self.create_says)
    }

    /// open/openat: only O_CREAT and O_TMPFILE carry a mode or make a name.
    fn open(&self, name: &'static str, nr: i64, flags: u8, mode: u8) -> Entry {
        let mut rules = setid(mode, &[Cmp::Masked(flags, O_CREAT_, O_CREAT_)]);
        rules.extend(setid(
            mode,
            &[Cmp::Masked(flags, O_TMPFILE_BIT, O_TMPFILE_BIT)],
        ));
        if self.fs.create {
            rules.push((vec![Cmp::Masked(flags, O_CREAT_, O_CREAT_)], Action::Broker));
        }
        let mut says = vec![format!("with O_CREAT or O_TMPFILE, {SETID_SAYS}")];
        if self.fs.create {
            says.push(format!("with O_CREAT, {}", self.create_says));
        }
        says.push("otherwise allowed".into());
        Entry {
            name,
            nr,
            allow: vec![Cmp::Masked(flags, O_CREAT_ | O_TMPFILE_BIT, 0)],
            rules,
            default: Action::Allow,
            says,
        }
    }
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn fs_table(fs: FsRules) -> Vec<Entry> {
    use libc::*;
    let f = FsAnswers::new(fs);
    let mut t = vec![
        f.open("openat", SYS_openat, 2, 3),
        f.meta("fchmod", SYS_fchmod, Some(1)),
        f.meta("fchmodat", SYS_fchmodat, Some(2)),
        f.meta("fchmodat2", SYS_fchmodat2, Some(2)),
        f.meta("fchown", SYS_fchown, None),
        f.meta("fchownat", SYS_fchownat, None),
        f.meta("utimensat", SYS_utimensat, None),
        f.meta("setxattr", SYS_setxattr, None),
        f.meta("lsetxattr", SYS_lsetxattr, None),
        f.meta("fsetxattr", SYS_fsetxattr, None),
        f.meta("removexattr", SYS_removexattr, None),
        f.meta("lremovexattr", SYS_lremovexattr, None),
        f.meta("fremovexattr", SYS_fremovexattr, None),
        f.create("mkdirat", SYS_mkdirat, None),
        f.create("mknodat", SYS_mknodat, Some(2)),
        f.create("symlinkat", SYS_symlinkat, None),
        f.create("linkat", SYS_linkat, None),
        f.create("renameat2", SYS_renameat2, None),
        // A unix socket's bind makes a name.
        f.create("bind", SYS_bind, None),
    ];
    #[cfg(target_arch = "x86_64")]
    t.extend([
        f.open("open", SYS_open, 1, 2),
        f.create("creat", SYS_creat, Some(1)),
        f.meta("chmod", SYS_chmod, Some(1)),
        f.meta("chown", SYS_chown, None),
        f.meta("lchown", SYS_lchown, None),
        f.meta("utime", SYS_utime, None),
        f.meta("utimes", SYS_utimes, None),
        f.meta("futimesat", SYS_futimesat, None),
        f.create("mkdir", SYS_mkdir, None),
        f.create("mknod", SYS_mknod, Some(1)),
        f.create("symlink", SYS_symlink, None),
        f.create("link", SYS_link, None),
        f.create("rename", SYS_rename, None),
        f.create("renameat", SYS_renameat, None),
    ]);
    if fs.meta != Meta::Allow {
        t.extend(unbrokered(fs.meta));
    }
    if fs.create {
        t.push(restrict_self_entry());
    }
    // Entries whose every answer is Allow say nothing and are left out.
    t.retain(|e| e.default != Action::Allow || !e.rules.is_empty());
    t
}

/// The broker must act only as the command could: a domain the command
/// adds to itself is applied to the broker's hands too.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn restrict_self_entry() -> Entry {
    Entry {
        name: "landlock_restrict_self",
        nr: SYS_LANDLOCK_RESTRICT_SELF,
        allow: Vec::new(),
        rules: Vec::new(),
        default: Action::Broker,
        says: vec![
            "to the broker, which applies the same ruleset to the process that makes its calls for this one, then lets the kernel apply it".into(),
        ],
    }
}

/// The *at forms of 6.13 and the path form of the inode-flag ioctls: no
/// broker for them; callers fall back to the older calls.
fn unbrokered(meta: Meta) -> [Entry; 3] {
    use libc::{ENOSYS, EPERM, EROFS};
    let errno = if meta == Meta::Refuse { EROFS } else { ENOSYS };
    let says = if errno == EROFS {
        "always (nothing is writable)"
    } else {
        "always (callers fall back to setxattr, removexattr)"
    };
    [
        refused("setxattrat", SYS_SETXATTRAT, Vec::new(), errno, says),
        refused("removexattrat", SYS_REMOVEXATTRAT, Vec::new(), errno, says),
        refused(
            "file_setattr",
            SYS_FILE_SETATTR,
            Vec::new(),
            EPERM,
            "always (changes inode flags)",
        ),
    ]
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn table(_sockets: SocketRules, _fs: FsRules) -> Vec<Entry> {
    Vec::new()
}

/// A unix datagram socket: SOCK_DGRAM (2) or SOCK_RAW (3, which the kernel
/// makes a datagram socket), in the low 4 bits of the type; `& 0xe == 2`
/// holds for exactly those two. A datagram socket sends to any address it
/// is given. The kernel refuses every other type but stream and seqpacket.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn unix_datagram(arg: u8) -> Vec<Vec<Cmp>> {
    vec![vec![
        Cmp::Eq(0, libc::AF_UNIX as u64),
        Cmp::Masked(arg, 0xe, libc::SOCK_DGRAM as u64),
    ]]
}

const DATAGRAM_SAYS: &str = "an AF_UNIX type is SOCK_DGRAM or SOCK_RAW (a datagram socket)";

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn socket_entry(s: SocketRules) -> Entry {
    use libc::{SYS_socket, AF_INET, AF_INET6, AF_UNIX, EPERM, SOCK_STREAM};
    let mut allowed: Vec<(u64, &str)> = Vec::new();
    if s.unix == Unix::Named {
        allowed.push((AF_UNIX as u64, "AF_UNIX"));
    }
    let (mut when, mut says) = match s.inet {
        Inet::Allow if s.unix == Unix::Named => (Vec::new(), Vec::new()),
        Inet::Allow => (
            vec![vec![Cmp::Eq(0, AF_UNIX as u64)]],
            vec!["family is AF_UNIX".to_string()],
        ),
        Inet::Deny if allowed.is_empty() => (Vec::new(), vec!["always (every family)".to_string()]),
        Inet::Deny => (
            vec![allowed.iter().map(|(f, _)| Cmp::Ne(0, *f)).collect()],
            vec!["family is not AF_UNIX".to_string()],
        ),
        Inet::OwnNamespace => {
            allowed.push((AF_INET as u64, "AF_INET"));
            allowed.push((AF_INET6 as u64, "AF_INET6"));
            allowed.push((libc::AF_NETLINK as u64, "AF_NETLINK"));
            let when = vec![
                allowed.iter().map(|(f, _)| Cmp::Ne(0, *f)).collect(),
                vec![
                    Cmp::Eq(0, libc::AF_NETLINK as u64),
                    Cmp::Ne(2, libc::NETLINK_ROUTE as u64),
                ],
            ];
            let names: Vec<&str> = allowed.iter().map(|(_, n)| *n).collect();
            (
                when,
                vec![format!(
                    "family is not one of {} (the namespace's own loopback only), or an AF_NETLINK protocol is not NETLINK_ROUTE",
                    names.join(", ")
                )],
            )
        }
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
                vec![format!(
                    "family is not one of {}, or an AF_INET/AF_INET6 type is not SOCK_STREAM, or its protocol is not TCP",
                    names.join(", ")
                )],
            )
        }
    };
    if s.unix == Unix::Named {
        when.extend(unix_datagram(1));
        says.push(DATAGRAM_SAYS.to_string());
    }
    let mut e = refused("socket", SYS_socket, when, EPERM, "");
    e.says = vec![says.join(", or ")];
    e
}

/// `socketpair` always works, but for a unix datagram pair (see `Unix`).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn socketpair_entry() -> Entry {
    refused(
        "socketpair",
        libc::SYS_socketpair,
        unix_datagram(1),
        libc::EPERM,
        DATAGRAM_SAYS,
    )
}

/// `connect` and `bind` to the broker, which checks a unix socket's path
/// and makes the call itself on the command's own socket: the kernel
/// re-reading the descriptor number and the address after a check could
/// meet another socket or another address.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn named_entries(fs: FsRules) -> Vec<Entry> {
    let broker = |name: &'static str, nr: i64, says: &str| Entry {
        name,
        nr,
        allow: Vec::new(),
        rules: Vec::new(),
        default: Action::Broker,
        says: vec![says.to_string()],
    };
    let mut v = vec![broker(
        "connect",
        libc::SYS_connect,
        "to the broker: a unix socket's path only when the policy names it or the command bound it",
    )];
    if !fs.create {
        v.push(broker(
            "bind",
            libc::SYS_bind,
            "to the broker: a unix socket it binds is one the command may connect to",
        ));
    }
    v
}

fn action_name(a: Action) -> &'static str {
    match a {
        Action::Allow => "allow",
        Action::Errno(libc::ENOSYS) => "ENOSYS",
        Action::Errno(libc::EROFS) => "EROFS",
        Action::Errno(_) => "EPERM",
        Action::Broker => "broker",
        Action::Notify(t) => observe::action_name(t),
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

mod bpf;
use bpf::*;

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

#[cfg(test)]
mod tests;
