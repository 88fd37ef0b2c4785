//! Seccomp filters a test installs in front of dcjail, as a container
//! runtime or an outer sandbox would before its first process: each
//! refuses one thing the host's kernel could give (namespaces, landlock,
//! seccomp user notification), so a test makes that environment for real.
//! Written as classic BPF with labels; `with_filter` installs one in a
//! child between fork and exec.
#![allow(dead_code)]

use crate::scratch;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

/// A scratch root for a test in a made environment: the workspace `ws`
/// (the cwd) with a secret, a directory `outside` it with a host file;
/// owned by 65534 for the unprivileged runs; removed when dropped.
pub struct Dir {
    pub root: PathBuf,
    pub ws: PathBuf,
    pub outside: PathBuf,
}

impl Dir {
    pub fn new(name: &str, nobody: bool) -> Dir {
        let root = scratch::fresh(name);
        let ws = root.join("ws");
        let outside = root.join("outside");
        std::fs::create_dir(&ws).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(ws.join("secret.txt"), "s3cret\n").unwrap();
        std::fs::write(outside.join("in.txt"), "host file\n").unwrap();
        if nobody {
            let ok = Command::new("chown")
                .args(["-R", "65534:65534"])
                .arg(&ws)
                .arg(&outside)
                .status()
                .unwrap()
                .success();
            assert!(ok);
        }
        Dir { root, ws, outside }
    }

    /// Where the attacks outside the workspace write.
    pub fn marker(&self) -> PathBuf {
        self.outside.join("marker")
    }
}

/// A python program connecting a stream socket of `family` to `addr`
/// (python syntax), printing `connected` or `refused ERRNO`.
pub fn connect_py(family: &str, addr: &str) -> String {
    format!(
        "import socket\ntry:\n    s = socket.socket(socket.{family}, socket.SOCK_STREAM)\n    \
         s.settimeout(5)\n    s.connect({addr}); print('connected')\nexcept OSError as e:\n    \
         print('refused', e.errno)"
    )
}

/// A TCP listener on the host's loopback and a unix socket anyone may
/// connect to, with the python programs that reach each; closed and
/// removed when dropped.
pub struct HostListeners {
    pub tcp_py: String,
    pub unix_py: String,
    _tcp: std::net::TcpListener,
    _unix: std::os::unix::net::UnixListener,
    sockets: PathBuf,
}

impl HostListeners {
    pub fn new(tag: &str) -> HostListeners {
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = tcp.local_addr().unwrap().port();
        let sockets = scratch::socket_dir(&format!("{tag}-{}", std::process::id()));
        let sock = sockets.join("s.sock");
        let unix = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let ok = Command::new("chmod")
            .arg("777")
            .arg(&sock)
            .status()
            .unwrap()
            .success();
        assert!(ok);
        HostListeners {
            tcp_py: connect_py("AF_INET", &format!("('127.0.0.1', {port})")),
            unix_py: connect_py("AF_UNIX", &format!("{:?}", sock.to_str().unwrap())),
            _tcp: tcp,
            _unix: unix,
            sockets,
        }
    }
}

impl Drop for HostListeners {
    fn drop(&mut self) {
        scratch::remove(&self.sockets);
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        scratch::remove(&self.root);
    }
}

const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JEQ_K: u16 = 0x15;
const BPF_JSET_K: u16 = 0x45;
const BPF_RET_K: u16 = 0x06;
const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;
/// The namespace flags Docker's default profile keeps from `clone`.
const NS_FLAGS: u32 = 0x7E02_0000;
/// seccomp(2)'s SECCOMP_SET_MODE_FILTER and SECCOMP_FILTER_FLAG_NEW_LISTENER.
const SET_MODE_FILTER: u32 = 1;
const NEW_LISTENER: u32 = 1 << 3;

/// Where a jump goes: the next instruction, or one of the answers at the end.
#[derive(Clone, Copy, PartialEq, Eq)]
enum To {
    Next,
    Allow,
    Errno(i32),
    /// Over this many instructions.
    Skip(u8),
}

/// A program under construction: instructions whose jumps name answers.
struct Asm {
    ops: Vec<(u16, u32, To, To)>,
}

impl Asm {
    fn new() -> Asm {
        // Another architecture's numbers mean other calls: allowed untouched.
        let mut a = Asm { ops: Vec::new() };
        a.op(BPF_LD_W_ABS, 4);
        a.jump(BPF_JEQ_K, AUDIT_ARCH, To::Next, To::Allow);
        a.op(BPF_LD_W_ABS, 0);
        a
    }
    fn op(&mut self, code: u16, k: u32) {
        self.ops.push((code, k, To::Next, To::Next));
    }
    fn jump(&mut self, code: u16, k: u32, t: To, f: To) {
        self.ops.push((code, k, t, f));
    }
    /// `nr` answered with `errno`; the syscall number stays loaded.
    fn refuse(&mut self, nr: i64, errno: i32) {
        self.jump(BPF_JEQ_K, nr as u32, To::Errno(errno), To::Next);
    }
    fn build(self) -> Vec<libc::sock_filter> {
        let mut answers: Vec<To> = vec![To::Allow];
        for (_, _, t, f) in &self.ops {
            for x in [t, f] {
                if !matches!(x, To::Next | To::Skip(_)) && !answers.contains(x) {
                    answers.push(*x);
                }
            }
        }
        let n = self.ops.len();
        let at = |i: usize, to: To| -> u8 {
            match to {
                To::Next => 0,
                To::Skip(k) => k,
                _ => (n + answers.iter().position(|a| *a == to).unwrap() - i - 1) as u8,
            }
        };
        let mut out: Vec<libc::sock_filter> = self
            .ops
            .iter()
            .enumerate()
            .map(|(i, (code, k, t, f))| libc::sock_filter {
                code: *code,
                jt: at(i, *t),
                jf: at(i, *f),
                k: *k,
            })
            .collect();
        for a in answers {
            let k = match a {
                To::Errno(e) => RET_ERRNO | e as u32,
                _ => RET_ALLOW,
            };
            out.push(libc::sock_filter {
                code: BPF_RET_K,
                jt: 0,
                jf: 0,
                k,
            });
        }
        out
    }
}

/// Docker's default, in the part that matters here: `unshare` refused,
/// `clone` refused when it asks for a namespace, `clone3` ENOSYS (so libc
/// falls back to `clone`).
pub fn docker_like() -> Vec<libc::sock_filter> {
    let mut a = Asm::new();
    a.refuse(libc::SYS_unshare, libc::EPERM);
    a.refuse(libc::SYS_clone3, libc::ENOSYS);
    a.jump(BPF_JEQ_K, libc::SYS_clone as u32, To::Next, To::Allow);
    a.op(BPF_LD_W_ABS, 16);
    a.jump(BPF_JSET_K, NS_FLAGS, To::Errno(libc::EPERM), To::Allow);
    a.build()
}

/// CLONE_NEWUSER, the one namespace flag a user without privilege can ask for.
const NEWUSER: u32 = 0x1000_0000;

impl Asm {
    /// Ends the program: any of `nrs` whose first argument has a bit of
    /// `flags` answers EPERM; everything else is allowed.
    fn refuse_flags_then_allow(mut self, nrs: &[i64], flags: u32) -> Vec<libc::sock_filter> {
        let k = nrs.len();
        for (i, nr) in nrs.iter().enumerate() {
            let last = i + 1 == k;
            let t = if last {
                To::Next
            } else {
                To::Skip((k - 1 - i) as u8)
            };
            let f = if last { To::Allow } else { To::Next };
            self.jump(BPF_JEQ_K, *nr as u32, t, f);
        }
        self.op(BPF_LD_W_ABS, 16);
        self.jump(BPF_JSET_K, flags, To::Errno(libc::EPERM), To::Allow);
        self.build()
    }
}

/// The mount system calls, old and new.
const MOUNT_CALLS: [i64; 10] = [
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_fsconfig,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
];

/// User namespaces refused, as a program sees them under a profile that
/// refuses them (or `user.max_user_namespaces = 0`, which answers ENOSPC
/// instead): `unshare` and `clone` asking for CLONE_NEWUSER answer EPERM,
/// `clone3` ENOSYS (its flags are in memory, out of a filter's reach, so
/// libc falls back to `clone`). Mounts and the other namespaces stay as
/// the kernel has them.
pub fn no_userns() -> Vec<libc::sock_filter> {
    let mut a = Asm::new();
    a.refuse(libc::SYS_clone3, libc::ENOSYS);
    a.refuse_flags_then_allow(&[libc::SYS_unshare, libc::SYS_clone], NEWUSER)
}

/// Mounts refused: every mount system call answers EPERM (a profile that
/// keeps namespaces but not mounts); namespaces stay as the kernel has them.
pub fn no_mount() -> Vec<libc::sock_filter> {
    let mut a = Asm::new();
    for nr in MOUNT_CALLS {
        a.refuse(nr, libc::EPERM);
    }
    a.build()
}

/// What Docker's default profiles of the 20.10 releases allow only with
/// CAP_SYS_PTRACE, which a container does not get by default (Docker 23.0
/// and later also allow process_vm_readv and process_vm_writev without
/// it): EPERM. dcjail's broker reads the command's memory with
/// process_vm_readv (measured in a real Docker 20.10.24 container: every
/// call the broker answered failed with EFAULT before it learned to read
/// /proc/PID/mem instead).
pub const PTRACE_CALLS: [i64; 5] = [
    libc::SYS_kcmp,
    libc::SYS_pidfd_getfd,
    libc::SYS_process_madvise,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
];

/// docs/containers.md's recipe for the bwrap backend applied to Docker
/// 20.10's default profile: `unshare`, `clone`, `clone3`, `setns` and the
/// mount calls moved to the allowed list; `keyctl`, `add_key`,
/// `request_key`, `bpf` and `PTRACE_CALLS` still EPERM, as for a
/// container without CAP_SYS_ADMIN and CAP_SYS_PTRACE.
pub fn docker_recipe_for_bwrap() -> Vec<libc::sock_filter> {
    let mut a = Asm::new();
    for nr in [
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_bpf,
    ]
    .into_iter()
    .chain(PTRACE_CALLS)
    {
        a.refuse(nr, libc::EPERM);
    }
    a.build()
}

/// Only `pivot_root` refused (EPERM): a filter `auto`'s quick probes do
/// not see (they ask `unshare`, `clone` and `mount`), so bwrap fails at
/// launch, after its namespaces and mounts, before the command.
pub fn no_pivot_root() -> Vec<libc::sock_filter> {
    let mut a = Asm::new();
    a.refuse(libc::SYS_pivot_root, libc::EPERM);
    a.build()
}

/// Which release of Docker's default seccomp profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DockerProfile {
    /// Docker 20.10.18 and later (moby's profile since 2022): landlock's
    /// three system calls are allowed.
    Current,
    /// Docker 20.10.17 and earlier: landlock's calls are not on the list,
    /// so the profile's default action answers them (EPERM).
    Before2022,
}

/// Docker's default seccomp profile for a container without
/// CAP_SYS_ADMIN, in the part dcjail meets (moby's profiles/seccomp/
/// default.json, read for this): `unshare`, `setns`, the mount calls,
/// `keyctl`, `add_key`, `request_key` and `bpf` answer EPERM (the
/// profile's default action); `clone` asking for any namespace EPERM;
/// `clone3` ENOSYS; `seccomp` allowed with any flag (so user
/// notification works); `PTRACE_CALLS` EPERM, as in every 20.10 release;
/// landlock as `p` says.
pub fn docker_default(p: DockerProfile) -> Vec<libc::sock_filter> {
    let mut a = Asm::new();
    a.refuse(libc::SYS_clone3, libc::ENOSYS);
    for nr in MOUNT_CALLS
        .iter()
        .copied()
        .chain([
            libc::SYS_unshare,
            libc::SYS_setns,
            libc::SYS_keyctl,
            libc::SYS_add_key,
            libc::SYS_request_key,
            libc::SYS_bpf,
        ])
        .chain(PTRACE_CALLS)
    {
        a.refuse(nr, libc::EPERM);
    }
    if p == DockerProfile::Before2022 {
        a.refuse(libc::SYS_landlock_create_ruleset, libc::EPERM);
        a.refuse(libc::SYS_landlock_add_rule, libc::EPERM);
        a.refuse(libc::SYS_landlock_restrict_self, libc::EPERM);
    }
    a.refuse_flags_then_allow(&[libc::SYS_clone], NS_FLAGS)
}

/// NETLINK_ROUTE's family refused: `socket(AF_NETLINK, …)` answers EPERM,
/// every other socket is left alone (the part of Codex's network-off filter
/// that stops bwrap setting up a network namespace's loopback, without the
/// part that refuses the internet itself, so an attack can succeed).
pub fn no_netlink() -> Vec<libc::sock_filter> {
    let mut a = Asm::new();
    a.jump(BPF_JEQ_K, libc::SYS_socket as u32, To::Next, To::Allow);
    a.op(BPF_LD_W_ABS, 16);
    a.jump(
        BPF_JEQ_K,
        libc::AF_NETLINK as u32,
        To::Errno(libc::EPERM),
        To::Allow,
    );
    a.build()
}

/// What a test's environment refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refuse {
    /// landlock_create_ruleset, landlock_add_rule, landlock_restrict_self:
    /// ENOSYS (a kernel without landlock, gVisor).
    pub landlock: bool,
    /// seccomp(SECCOMP_SET_MODE_FILTER) with SECCOMP_FILTER_FLAG_NEW_LISTENER:
    /// EINVAL (no seccomp user notification, as under gVisor).
    pub listener: bool,
}

/// The filter that refuses what `r` says.
pub fn refusing(r: Refuse) -> Vec<libc::sock_filter> {
    let mut a = Asm::new();
    if r.landlock {
        a.refuse(libc::SYS_landlock_create_ruleset, libc::ENOSYS);
        a.refuse(libc::SYS_landlock_add_rule, libc::ENOSYS);
        a.refuse(libc::SYS_landlock_restrict_self, libc::ENOSYS);
    }
    if r.listener {
        a.jump(BPF_JEQ_K, libc::SYS_seccomp as u32, To::Next, To::Allow);
        a.op(BPF_LD_W_ABS, 16);
        a.jump(BPF_JEQ_K, SET_MODE_FILTER, To::Next, To::Allow);
        a.op(BPF_LD_W_ABS, 24);
        a.jump(BPF_JSET_K, NEW_LISTENER, To::Errno(libc::EINVAL), To::Allow);
    }
    a.build()
}

/// landlock's system calls: ENOSYS.
pub fn no_landlock() -> Vec<libc::sock_filter> {
    refusing(Refuse {
        landlock: true,
        listener: false,
    })
}

/// Installs `prog` in the child before it execs (and so in everything it
/// starts): what a container runtime does before the container's first
/// process.
pub fn with_filter(c: &mut Command, prog: Vec<libc::sock_filter>) {
    // SAFETY: between fork and exec the closure makes two system calls on
    // memory it owns; it allocates nothing.
    unsafe {
        c.pre_exec(move || {
            let fprog = libc::sock_fprog {
                len: prog.len() as u16,
                filter: prog.as_ptr() as *mut libc::sock_filter,
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0,
                    &fprog as *const libc::sock_fprog,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
