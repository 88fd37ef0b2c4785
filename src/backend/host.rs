//! What this Linux machine lets a sandbox do, read through one interface:
//! kernel switches (sysctls), the LSM list, AppArmor's profile files, the
//! kernel and WSL identity, container markers, and the answers of a few
//! system calls (landlock's version query; `unshare`/`clone` with namespace
//! flags). [`Probe`] is that interface; [`Real`] asks this machine, tests
//! give made-up answers, and everything that judges the answers
//! (`backend::obstacle`) is pure over it. On macOS, the one question the
//! Seatbelt backend asks (`already_sandboxed`).
//!
//! It is the only place under `backend/` that calls into libc or holds
//! `unsafe` (`tests/layering.rs` holds that).
//!
//! Owns: the probes themselves, made so that asking never changes anything
//! (no namespace is created, no landlock ruleset), and never kills dcjail: a
//! system call that a seccomp filter might answer with death is asked in a
//! throwaway child. It must never cache an answer on disk, nor run a program
//! other than the trusted bwrap (and only in `try_bwrap`, for `doctor`).

use std::path::{Path, PathBuf};

#[cfg(target_os = "linux")]
mod real;
#[cfg(target_os = "linux")]
pub use real::{on_read_only_mount, without_symlinks, Real};
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
pub use macos::already_sandboxed;

/// The answer of one system call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sys {
    /// It returned this (non-negative) value.
    Ok(libc::c_long),
    /// It failed with this errno.
    Err(i32),
    /// The process asking was killed by this signal (a seccomp filter's
    /// SECCOMP_RET_KILL; the child that asked, never dcjail).
    Killed(i32),
}

/// `unshare` and `clone` asked for a user namespace with a flag the kernel
/// always rejects (EINVAL, before it creates anything): any other answer
/// comes from a seccomp filter in front of the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NsCalls {
    /// No seccomp filter is installed: the kernel answers both.
    Unfiltered,
    /// Under a filter: what each call got.
    Filtered { unshare: Sys, clone: Sys },
}

/// The one window `backend::obstacle` has on the machine.
pub trait Probe {
    /// A small text file of /proc, /sys or /etc; `None` when missing or
    /// unreadable.
    fn read(&self, path: &str) -> Option<String>;
    /// Whether a name exists (a dangling symlink counts: it is AppArmor's
    /// way of disabling a profile).
    fn exists(&self, path: &str) -> bool;
    /// The names in a directory, sorted; empty when unreadable.
    fn list(&self, dir: &str) -> Vec<String>;
    fn env(&self, name: &str) -> Option<String>;
    fn euid(&self) -> u32;
    /// `uname -r`.
    fn kernel_release(&self) -> String;
    /// Whether this process runs under a seccomp filter (PR_GET_SECCOMP).
    fn seccomp_filtered(&self) -> bool;
    /// Whether dcjail can install a seccomp filter of its own.
    fn seccomp_available(&self) -> Result<(), String>;
    /// Whether a filter of dcjail's can hand calls to a broker: not when an
    /// outer sandbox's filter holds the listener already (the kernel takes
    /// one per chain of filters).
    fn seccomp_listener(&self) -> bool {
        !self.seccomp_filtered()
    }
    /// What a filter with a listener got when dcjail tried one (`None`:
    /// no filter above dcjail, so nothing was tried and one can be had).
    fn seccomp_listener_answer(&self) -> Option<Sys> {
        (!self.seccomp_listener()).then_some(Sys::Err(libc::EBUSY))
    }
    /// landlock_create_ruleset's version query: the ABI, or why not.
    fn landlock_abi(&self) -> Sys;
    /// Whether a NETLINK_ROUTE socket can be made (bwrap sets up a new
    /// network namespace's loopback over one): `socket(AF_NETLINK,
    /// SOCK_RAW, NETLINK_ROUTE)`'s answer under a seccomp filter, asked in
    /// a throwaway child; `Ok` with no filter above dcjail, where nothing
    /// but the kernel answers.
    fn netlink_route(&self) -> Sys {
        Sys::Ok(0)
    }
    fn ns_calls(&self) -> NsCalls;
    /// `mount` asked with a flag the kernel always rejects (MS_NOUSER:
    /// EINVAL, before it checks any privilege or mounts anything): any
    /// other answer comes from a seccomp filter in front of the kernel, one
    /// that refuses the mounts bwrap makes. `None` when no seccomp filter
    /// is installed (nothing is asked: the kernel would answer).
    fn mount_call(&self) -> Option<Sys> {
        None
    }
    /// A symlink-free path (realpath); `None` when it cannot be resolved.
    fn canonical(&self, p: &Path) -> Option<PathBuf>;
    /// A root-owned file with the setuid bit: it creates namespaces with
    /// root's privileges, which no user-namespace switch restricts.
    fn setuid_root(&self, p: &Path) -> bool;
    /// The bwrap dcjail would run, as `bwrap::find` picks it.
    fn bwrap(&self) -> Result<PathBuf, String>;
    fn bwrap_version(&self, bwrap: &Path) -> Option<(u32, u32, u32)>;
    /// Runs bwrap with every namespace dcjail asks for (a network
    /// namespace only when `net`) and `true` inside; `Err` holds bwrap's
    /// words.
    fn try_bwrap(&self, bwrap: &Path, net: bool) -> Result<(), String>;
    /// Builds the second stage's landlock + seccomp layer for the default
    /// policy as a launch would.
    fn second_stage(&self) -> Result<(), String>;
}

/// Sysctl and file names the probes read.
pub mod paths {
    pub const MAX_USER_NAMESPACES: &str = "/proc/sys/user/max_user_namespaces";
    pub const UNPRIVILEGED_USERNS_CLONE: &str = "/proc/sys/kernel/unprivileged_userns_clone";
    pub const APPARMOR_RESTRICT: &str = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns";
    pub const APPARMOR_ENABLED: &str = "/sys/module/apparmor/parameters/enabled";
    pub const APPARMOR_DIR: &str = "/etc/apparmor.d";
    pub const APPARMOR_DISABLED_DIR: &str = "/etc/apparmor.d/disable";
    pub const LSM: &str = "/sys/kernel/security/lsm";
    pub const CMDLINE: &str = "/proc/cmdline";
    pub const VERSION: &str = "/proc/version";
    pub const OSRELEASE: &str = "/proc/sys/kernel/osrelease";
    pub const WSL_INTEROP: &str = "/proc/sys/fs/binfmt_misc/WSLInterop";
    pub const INIT_CGROUP: &str = "/proc/1/cgroup";
    pub const MOUNTINFO: &str = "/proc/self/mountinfo";
    pub const SELF_STATUS: &str = "/proc/self/status";
    pub const DOCKERENV: &str = "/.dockerenv";
    pub const CONTAINERENV: &str = "/run/.containerenv";
}

/// A machine that answers nothing: what the backends see off Linux, where
/// no Linux backend asks, and a base for made-up answers in tests.
pub struct Absent;

impl Probe for Absent {
    fn read(&self, _path: &str) -> Option<String> {
        None
    }
    fn exists(&self, _path: &str) -> bool {
        false
    }
    fn list(&self, _dir: &str) -> Vec<String> {
        Vec::new()
    }
    fn env(&self, _name: &str) -> Option<String> {
        None
    }
    fn euid(&self) -> u32 {
        0
    }
    fn kernel_release(&self) -> String {
        String::new()
    }
    fn seccomp_filtered(&self) -> bool {
        false
    }
    fn seccomp_available(&self) -> Result<(), String> {
        Err("no seccomp here".into())
    }
    fn landlock_abi(&self) -> Sys {
        Sys::Err(libc::ENOSYS)
    }
    fn ns_calls(&self) -> NsCalls {
        NsCalls::Unfiltered
    }
    fn canonical(&self, _p: &Path) -> Option<PathBuf> {
        None
    }
    fn setuid_root(&self, _p: &Path) -> bool {
        false
    }
    fn bwrap(&self) -> Result<PathBuf, String> {
        Err("no bubblewrap here".into())
    }
    fn bwrap_version(&self, _bwrap: &Path) -> Option<(u32, u32, u32)> {
        None
    }
    fn try_bwrap(&self, _bwrap: &Path, _net: bool) -> Result<(), String> {
        Err("no bubblewrap here".into())
    }
    fn second_stage(&self) -> Result<(), String> {
        Err("no second stage here".into())
    }
}
