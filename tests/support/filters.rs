//! Seccomp filters a test installs in front of dcjail, as a container
//! runtime or an outer sandbox would before its first process: each
//! refuses one thing the host's kernel could give (namespaces, landlock,
//! seccomp user notification), so a test makes that environment for real.
//! Written as classic BPF with labels; `with_filter` installs one in a
//! child between fork and exec.
#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::process::Command;

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
                if *x != To::Next && !answers.contains(x) {
                    answers.push(*x);
                }
            }
        }
        let n = self.ops.len();
        let at = |i: usize, to: To| -> u8 {
            match to {
                To::Next => 0,
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
