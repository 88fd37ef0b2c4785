//! The in-process sandbox layer: landlock + seccomp + no_new_privs + no
//! capabilities + closed file descriptors, applied by dcjail to itself just
//! before `execve`. Used alone by the `landlock` backend and, inside the
//! namespaces, by the `bwrap` backend's second stage.
//!
//! It owns three steps: `layer_spec` turns a `Plan` into a `LayerSpec`
//! (pure data; it reads directories to compute complements, never probes the
//! kernel) and refuses what landlock cannot express; `check_supported` probes
//! the kernel; `apply` builds everything first and then applies it in one
//! irreversible sequence. It must never weaken a rule to make it fit: a right
//! the kernel cannot enforce is a refusal, never a silent downgrade.
//!
//! Minimum ABI: 6 (Linux 6.12). Every policy needs signal and abstract
//! socket scoping (ABI 6) for "cannot signal or reach processes outside";
//! the filesystem rules use refer (2), truncate (3) and device ioctl (5),
//! network `none` uses TCP rules (4).
//!
//! What landlock cannot say, and how this layer answers:
//! - rights are inherited down a tree and cannot be subtracted: `deny_read`
//!   inside a readable tree is enforced by granting read on the complement
//!   (`reads`: every sibling along the path down to the denied path). A file
//!   created later directly in a directory on that path would be in no
//!   grant, so landlock alone refuses (122) a `deny_read` path inside a
//!   writable root, where the command creates files; under bwrap the mounts
//!   mask every `deny_read` path and this layer takes the complement only
//!   outside the writable roots. The same complement, inside `/dev` only,
//!   leaves every terminal but the command's own out of reach.
//! - write subtraction (`deny_write`, protected paths inside a writable
//!   root) has no complement that keeps the root usable: refused (122),
//!   a `deny_write` glob too when it could match inside a writable root.
//! - globs: the layer takes literal paths only. `backend::select` expands
//!   the plan's globs once with `walk::expand_plan` and gives this layer the
//!   paths they match at launch (and every other name of a denied file it
//!   finds, `walk::hard_links`); a file created later that matches is not
//!   covered, except inside a matched `deny_read` directory.

mod reads;

use super::seccomp::{self, FsRules, Inet, Meta, SocketRules};
use crate::plan::{PathRule, Plan};
use crate::policy::NetMode;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Landlock filesystem rights, with their uapi bit values.
pub mod access {
    pub const EXECUTE: u64 = 1 << 0;
    pub const WRITE_FILE: u64 = 1 << 1;
    pub const READ_FILE: u64 = 1 << 2;
    pub const READ_DIR: u64 = 1 << 3;
    pub const REMOVE_DIR: u64 = 1 << 4;
    pub const REMOVE_FILE: u64 = 1 << 5;
    pub const MAKE_CHAR: u64 = 1 << 6;
    pub const MAKE_DIR: u64 = 1 << 7;
    pub const MAKE_REG: u64 = 1 << 8;
    pub const MAKE_SOCK: u64 = 1 << 9;
    pub const MAKE_FIFO: u64 = 1 << 10;
    pub const MAKE_BLOCK: u64 = 1 << 11;
    pub const MAKE_SYM: u64 = 1 << 12;
    pub const REFER: u64 = 1 << 13;
    pub const TRUNCATE: u64 = 1 << 14;
    pub const IOCTL_DEV: u64 = 1 << 15;

    pub const READ: u64 = EXECUTE | READ_FILE | READ_DIR;
    pub const WRITE: u64 = WRITE_FILE
        | REMOVE_DIR
        | REMOVE_FILE
        | MAKE_CHAR
        | MAKE_DIR
        | MAKE_REG
        | MAKE_SOCK
        | MAKE_FIFO
        | MAKE_BLOCK
        | MAKE_SYM
        | REFER
        | TRUNCATE
        | IOCTL_DEV;
    /// What a terminal or /dev/null needs beyond reading.
    pub const TERMINAL: u64 = WRITE_FILE | TRUNCATE | IOCTL_DEV;
    /// Rights that mean something on a non-directory.
    pub const FILE: u64 = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV;

    pub const NAMES: &[(u64, &str)] = &[
        (EXECUTE, "execute"),
        (WRITE_FILE, "write_file"),
        (READ_FILE, "read_file"),
        (READ_DIR, "read_dir"),
        (REMOVE_DIR, "remove_dir"),
        (REMOVE_FILE, "remove_file"),
        (MAKE_CHAR, "make_char"),
        (MAKE_DIR, "make_dir"),
        (MAKE_REG, "make_reg"),
        (MAKE_SOCK, "make_sock"),
        (MAKE_FIFO, "make_fifo"),
        (MAKE_BLOCK, "make_block"),
        (MAKE_SYM, "make_sym"),
        (REFER, "refer"),
        (TRUNCATE, "truncate"),
        (IOCTL_DEV, "ioctl_dev"),
    ];

    /// Every filesystem right a given ABI knows.
    pub fn handled(abi: u32) -> u64 {
        let mut a = READ | WRITE;
        if abi < 5 {
            a &= !IOCTL_DEV;
        }
        if abi < 3 {
            a &= !TRUNCATE;
        }
        if abi < 2 {
            a &= !REFER;
        }
        a
    }

    pub fn names(bits: u64) -> Vec<&'static str> {
        NAMES
            .iter()
            .filter(|(b, _)| bits & b != 0)
            .map(|(_, n)| *n)
            .collect()
    }
}

/// Landlock scopes (ABI 6), uapi bit values.
pub mod scope {
    pub const ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
    pub const SIGNAL: u64 = 1 << 1;
}

/// The lowest landlock ABI this backend accepts for any policy.
pub const MIN_ABI: u32 = 6;

/// One landlock path rule: `access` granted on `path` and everything beneath.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsRule {
    pub path: PathBuf,
    pub access: u64,
}

/// The whole in-process layer, as data. A second stage receives it as a
/// stub program (`bwrap::stub_program`, `stub_format`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerSpec {
    /// The landlock ABI every right below needs.
    pub abi: u32,
    /// Filesystem rights the ruleset handles (denied unless a rule grants).
    pub handled_fs: u64,
    pub fs_rules: Vec<FsRule>,
    /// TCP bind and connect are handled: denied but for `tcp_connect_ports`.
    pub restrict_tcp: bool,
    /// Ports the command may connect to (a local proxy); empty by default.
    pub tcp_connect_ports: Vec<u16>,
    /// `scope::*` bits.
    pub scopes: u64,
    pub sockets: SocketRules,
    /// Metadata and creation rules of the seccomp filter.
    pub fs: FsRules,
    /// Descriptors above 2 that survive into the command.
    pub keep_fds: Vec<i32>,
}

/// Who keeps protected and `deny_write` paths inside writable roots
/// read-only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteSubtraction {
    /// Landlock alone: it cannot, so such a plan is refused.
    Refuse,
    /// Read-only bind mounts do it (the bwrap backend): landlock grants
    /// the writable roots whole, as a second, coarser layer.
    ByMounts,
}

/// Builds the layer for a plan, or says which part landlock cannot enforce.
pub fn layer_spec(plan: &Plan) -> Result<LayerSpec, String> {
    layer_spec_with(plan, WriteSubtraction::Refuse)
}

/// `layer_spec`, saying who enforces write subtraction.
pub fn layer_spec_with(plan: &Plan, subtraction: WriteSubtraction) -> Result<LayerSpec, String> {
    let (restrict_tcp, sockets) = match plan.effective_net() {
        NetMode::None => (
            true,
            SocketRules {
                allow_unix: plan.net.allow_unix_sockets,
                inet: Inet::Deny,
            },
        ),
        NetMode::Full => (
            false,
            SocketRules {
                allow_unix: true,
                inet: Inet::Allow,
            },
        ),
        // TCP only, and only to the proxy's port (added at launch, when the
        // proxy has bound it): landlock filters connect by port, seccomp
        // refuses every other kind of socket.
        NetMode::Allowlist => (
            true,
            SocketRules {
                allow_unix: plan.net.allow_unix_sockets,
                inet: Inet::StreamOnly,
            },
        ),
    };

    let writable = writable_roots(plan, subtraction)?;
    let deny = expand(&plan.fs.deny_read, "deny_read")?;
    let allow = expand(&plan.fs.allow_read, "allow_read")?;
    let mut fs_rules = reads::rules(&deny, &allow, &writable, subtraction)?;
    for w in writable {
        fs_rules.push(FsRule {
            path: w,
            access: access::WRITE,
        });
    }
    let mut abi = 5; // refer (2), truncate (3), device ioctl (5)
    if restrict_tcp {
        abi = abi.max(4);
    }
    abi = abi.max(6); // scopes
    Ok(LayerSpec {
        abi,
        handled_fs: access::handled(abi),
        fs_rules,
        restrict_tcp,
        tcp_connect_ports: Vec::new(),
        scopes: scope::ABSTRACT_UNIX_SOCKET | scope::SIGNAL,
        sockets,
        fs: FsRules {
            // Nothing may change in read-only; in workspace-write metadata
            // changes go to the broker, which allows them where writes are.
            meta: match plan.fs.access {
                crate::policy::SandboxMode::ReadOnly => Meta::Refuse,
                crate::policy::SandboxMode::WorkspaceWrite => Meta::Broker,
                crate::policy::SandboxMode::DangerFullAccess => Meta::Allow,
            },
            create: false,
            observe: plan.observe,
        },
        keep_fds: Vec::new(),
    })
}

/// The writable roots that can be granted, or the refusal for a write
/// subtraction inside one. A root that lies inside a `deny_write` or
/// protected path is simply not granted: that is exactly the policy.
fn writable_roots(plan: &Plan, subtraction: WriteSubtraction) -> Result<Vec<PathBuf>, String> {
    let fs = &plan.fs;
    let roots = grantable_roots(plan);
    if subtraction == WriteSubtraction::ByMounts {
        return Ok(roots);
    }
    for p in &fs.protected {
        if let Some(w) = roots.iter().find(|w| p.starts_with(w)) {
            use crate::protected::Origin;
            let origin = Origin::of(p, plan.policy_file.as_deref());
            let hint = match origin {
                Origin::PolicyFile | Origin::OwnBinary => "or move it out of the writable roots",
                Origin::Table(_) => {
                    "or --no-protect-defaults (sandbox.filesystem.protect_defaults = false)"
                }
                Origin::Other => {
                    "or --no-protect-defaults (sandbox.filesystem.protect_defaults = false; the plan card: move it out of the writable roots)"
                }
            };
            return Err(format!(
                "landlock cannot keep the protected path `{}` ({}) read-only and uncreatable inside the writable root `{}`: \
                 it cannot subtract rights inside a granted tree; --backend bwrap can, {hint}",
                p.display(),
                origin.describe(),
                w.display()
            ));
        }
    }
    for r in &fs.deny_write {
        refuse_deny_write_in(r, &roots)?;
    }
    Ok(roots)
}

/// The refusal of a `deny_write` glob that could match inside a writable
/// root. Checked on the plan as written, before its globs are replaced by
/// what they match now: a glob that matches nothing yet is still a write
/// subtraction landlock cannot make.
pub fn refuse_glob_write_subtraction(plan: &Plan) -> Result<(), String> {
    let roots = grantable_roots(plan);
    for r in plan.fs.deny_write.iter().filter(|r| r.literal().is_none()) {
        refuse_deny_write_in(r, &roots)?;
    }
    Ok(())
}

/// The writable roots but those lying inside a protected or literal
/// `deny_write` path.
fn grantable_roots(plan: &Plan) -> Vec<PathBuf> {
    let fs = &plan.fs;
    let hidden = |w: &Path| {
        fs.protected.iter().any(|p| w.starts_with(p))
            || fs
                .deny_write
                .iter()
                .any(|r| r.literal().is_some_and(|d| w.starts_with(d)))
    };
    fs.writable.iter().filter(|w| !hidden(w)).cloned().collect()
}

fn refuse_deny_write_in(r: &PathRule, roots: &[PathBuf]) -> Result<(), String> {
    let inside = match r {
        PathRule::Literal(d) => roots.iter().find(|w| d.starts_with(w)),
        PathRule::Glob(g) => match glob_prefix(&g.pattern) {
            None => roots.first(),
            Some(pre) => roots
                .iter()
                .find(|w| pre.starts_with(w) || w.starts_with(&pre)),
        },
    };
    match inside {
        Some(w) => Err(format!(
            "landlock cannot enforce deny_write `{}` inside the writable root `{}` \
             (rights cannot be subtracted inside a granted tree); use --backend bwrap",
            rule_text(r),
            w.display()
        )),
        None => Ok(()),
    }
}

fn rule_text(r: &PathRule) -> String {
    match r {
        PathRule::Literal(p) => p.display().to_string(),
        PathRule::Glob(g) => g.written.clone(),
    }
}

/// The literal directory a glob pattern starts with; `None` when it is
/// unanchored (`**/x`) or relative.
fn glob_prefix(pattern: &str) -> Option<PathBuf> {
    if !pattern.starts_with('/') {
        return None;
    }
    let mut pre = PathBuf::from("/");
    for part in pattern.split('/').filter(|s| !s.is_empty()) {
        if part.contains(['*', '?', '[', '{', '\\']) {
            break;
        }
        pre.push(part);
    }
    Some(pre)
}

/// Literal paths for a list of rules. Globs are expanded once per launch by
/// `walk::expand_plan` (in `backend::select`), which hands this layer a plan
/// of literal paths; a glob reaching this point was not expanded, and is
/// refused rather than dropped.
fn expand(rules: &[PathRule], key: &str) -> Result<Vec<PathBuf>, String> {
    rules
        .iter()
        .map(|r| match r {
            PathRule::Literal(p) => Ok(p.clone()),
            PathRule::Glob(g) => Err(format!(
                "the {key} glob `{}` reached the landlock layer without the launch-time walk",
                g.written
            )),
        })
        .collect()
}

impl LayerSpec {
    /// What each ABI-dependent feature needs, for refusal messages.
    fn needs(&self) -> Vec<(u32, &'static str)> {
        let mut v = vec![
            (2, "refer (no rename/link that gains rights)"),
            (3, "truncate"),
            (5, "device ioctl"),
        ];
        if self.restrict_tcp {
            v.push((4, "TCP bind/connect rules (network none or allowlist)"));
        }
        if self.scopes != 0 {
            v.push((6, "signal and abstract-socket scoping"));
        }
        v
    }

    /// Probes the kernel: landlock ABI, seccomp, architecture.
    pub fn check_supported(&self) -> Result<(), String> {
        self.check_supported_with(&super::host::Real)
    }

    /// `check_supported` with the machine's answers given.
    pub fn check_supported_with(&self, host: &dyn super::host::Probe) -> Result<(), String> {
        host.seccomp_available()?;
        let have = super::obstacle::landlock_abi(host).map_err(|o| o.to_string())?;
        if have < self.abi.max(MIN_ABI) {
            let missing: Vec<String> = self
                .needs()
                .into_iter()
                .filter(|(a, _)| *a > have)
                .map(|(a, what)| format!("{what} (ABI {a})"))
                .collect();
            return Err(format!(
                "landlock ABI {} needed for {}; this kernel has {have}",
                self.abi.max(MIN_ABI),
                missing.join(", ")
            ));
        }
        Ok(())
    }

    /// Builds the ruleset and the seccomp program, then applies, in this
    /// order: no_new_privs, capabilities dropped, landlock, seccomp, file
    /// descriptors closed. Nothing is applied when building fails; after
    /// the first step the process must exec or exit. When the filter hands
    /// calls to a broker, returns its listener (already closed in the
    /// command's descriptor table but for the one returned, which the
    /// caller must hand out and close before exec).
    pub fn apply(&self) -> Result<Option<std::os::fd::OwnedFd>, String> {
        let ruleset = self.build_ruleset()?;
        let program = seccomp::compile(self.sockets, self.fs)?;

        // SAFETY: plain prctl.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(format!(
                "cannot set no_new_privs: {}",
                std::io::Error::last_os_error()
            ));
        }
        drop_capabilities()?;
        let status = ruleset
            .restrict_self()
            .map_err(|e| format!("landlock restrict_self failed: {e}"))?;
        if status.ruleset != ::landlock::RulesetStatus::FullyEnforced {
            return Err(format!(
                "landlock enforced the ruleset only partly ({:?})",
                status.ruleset
            ));
        }
        let listener = seccomp::install(&program, self.fs.brokered())?;
        let mut keep = self.keep_fds.clone();
        if let Some(l) = &listener {
            use std::os::fd::AsRawFd;
            keep.push(l.as_raw_fd());
        }
        close_fds(&keep)?;
        Ok(listener)
    }

    fn build_ruleset(&self) -> Result<::landlock::RulesetCreated, String> {
        use ::landlock::{
            AccessNet, BitFlags, CompatLevel, Compatible, NetPort, Ruleset, RulesetAttr,
            RulesetCreatedAttr, Scope,
        };
        let ll = |e: ::landlock::RulesetError| format!("landlock: {e}");
        let fs_bits = |bits: u64| {
            BitFlags::<::landlock::AccessFs>::from_bits(bits)
                .map_err(|_| format!("landlock: unknown filesystem rights {bits:#x}"))
        };
        let mut rs = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(fs_bits(self.handled_fs)?)
            .map_err(ll)?;
        if self.restrict_tcp {
            rs = rs
                .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
                .map_err(ll)?;
        }
        let mut scopes = BitFlags::<Scope>::empty();
        if self.scopes & scope::ABSTRACT_UNIX_SOCKET != 0 {
            scopes |= Scope::AbstractUnixSocket;
        }
        if self.scopes & scope::SIGNAL != 0 {
            scopes |= Scope::Signal;
        }
        if !scopes.is_empty() {
            rs = rs.scope(scopes).map_err(ll)?;
        }
        let mut created = rs.create().map_err(ll)?;
        for port in &self.tcp_connect_ports {
            created = created
                .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                .map_err(ll)?;
        }
        // The path rules go straight to the kernel through a duplicate of
        // the ruleset's descriptor (the same ruleset): the crate's checks
        // cost two more syscalls per rule, and a layer has dozens.
        let dup: Option<std::os::fd::OwnedFd> = created
            .try_clone()
            .map_err(|e| format!("landlock: cannot duplicate the ruleset: {e}"))?
            .into();
        let dup = dup.ok_or("landlock: the kernel created no ruleset")?;
        add_path_rules(&dup, &self.fs_rules)?;
        Ok(created)
    }

    /// The layer as `explain` shows it.
    pub fn describe(&self) -> serde_json::Value {
        use serde_json::json;
        let tcp = if !self.restrict_tcp {
            "unrestricted".to_string()
        } else if self.tcp_connect_ports.is_empty() {
            "bind and connect denied".to_string()
        } else {
            format!(
                "bind denied; connect only to ports {:?}",
                self.tcp_connect_ports
            )
        };
        let mut scopes = Vec::new();
        if self.scopes & scope::SIGNAL != 0 {
            scopes.push("signal");
        }
        if self.scopes & scope::ABSTRACT_UNIX_SOCKET != 0 {
            scopes.push("abstract_unix_socket");
        }
        let mut notes = Vec::new();
        if self.fs_rules.iter().any(|r| r.access == access::READ_DIR) {
            notes.push(
                "reads are denied by granting read on the complement: the siblings along the \
                 path down to each denied path; directories on the way stay listable (names, not \
                 contents). It is taken only outside the writable roots, so what the command \
                 creates is readable: landlock alone refuses a deny_read path inside a writable \
                 root, and under bwrap the mounts mask every deny_read path",
            );
        }
        let pts = self
            .fs_rules
            .iter()
            .any(|r| r.path == Path::new("/dev/pts") && r.access & access::WRITE_FILE != 0);
        notes.push(if pts {
            "terminals: /dev is bwrap's own; its devpts instance holds only the pseudo-terminals \
             the command opens itself, and /dev/console is the command's own terminal"
        } else {
            "terminals: only the command's own (the terminal device of descriptors 0-2, found \
             at launch), /dev/tty (its controlling terminal) and /dev/null. /dev holds what \
             bwrap's own /dev holds: those and /dev/zero, full, random, urandom and shm; every \
             other device there, other sessions' terminals, consoles and input devices \
             included, is neither readable nor writable, and no new pseudo-terminal can be \
             opened (landlock cannot tell it from another session's)"
        });
        if self.sockets.inet == Inet::StreamOnly {
            notes.push(
                "network allowlist: landlock filters TCP connect by port only, so the proxy's \
                 port (chosen at launch) is reachable on any address; the bwrap backend confines \
                 the command to a namespace where only the proxy is reachable",
            );
        }
        json!({
            "kind": "landlock",
            "landlock_abi": { "required": self.abi, "kernel": kernel_abi().ok() },
            "filesystem": {
                "handled": access::names(self.handled_fs),
                "rules": self.fs_rules.iter().map(|r| json!({
                    "path": r.path.to_string_lossy(),
                    "rights": access::names(r.access),
                })).collect::<Vec<_>>(),
            },
            "network": {
                "tcp": tcp,
                "tcp_connect_ports": self.tcp_connect_ports,
            },
            "scopes": scopes,
            "seccomp": {
                "arch": seccomp::arch().ok(),
                "default": "allow",
                "rules": seccomp::describe(self.sockets, self.fs).iter().map(|r| json!({
                    "syscall": r.syscall, "when": r.when, "errno": r.errno,
                })).collect::<Vec<_>>(),
            },
            "process": [
                "no_new_privs",
                capabilities_held(),
                "file descriptors above 2 closed before exec",
                "supervised: signals forwarded, every descendant killed when the command exits",
            ],
            "keep_fds": self.keep_fds,
            "notes": notes,
        })
    }
}

/// Adds one `LANDLOCK_RULE_PATH_BENEATH` rule per entry to `ruleset`: an
/// `O_PATH` open, the rule, a close. Rights that only mean something on a
/// directory are dropped for a non-directory (checked only when the kernel
/// says they do not fit); a path that is gone is skipped, which only
/// narrows the sandbox.
fn add_path_rules(ruleset: &std::os::fd::OwnedFd, rules: &[FsRule]) -> Result<(), String> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    #[repr(C, packed)]
    struct PathBeneath {
        allowed_access: u64,
        parent_fd: i32,
    }
    const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;
    let add = |fd: &OwnedFd, bits: u64| -> std::io::Result<()> {
        let attr = PathBeneath {
            allowed_access: bits,
            parent_fd: fd.as_raw_fd(),
        };
        // SAFETY: the attribute struct is the uapi layout and outlives the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                ruleset.as_raw_fd(),
                LANDLOCK_RULE_PATH_BENEATH,
                &attr as *const PathBeneath,
                0u32,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    };
    for rule in rules {
        let c = std::ffi::CString::new(rule.path.as_os_str().as_bytes())
            .map_err(|_| format!("landlock: `{}` contains a NUL byte", rule.path.display()))?;
        // SAFETY: a valid C string; the descriptor is owned right away.
        let raw = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
        if raw < 0 {
            let e = std::io::Error::last_os_error();
            if std::fs::symlink_metadata(&rule.path).is_err() {
                continue;
            }
            return Err(format!(
                "landlock: cannot open `{}`: {e}",
                rule.path.display()
            ));
        }
        // SAFETY: `raw` is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let e = match add(&fd, rule.access) {
            Ok(()) => continue,
            Err(e) => e,
        };
        let bits = rule.access & access::FILE;
        let retried = e.raw_os_error() == Some(libc::EINVAL)
            && bits != rule.access
            && !fd_is_dir(&fd)
            && (bits == 0 || add(&fd, bits).is_ok());
        if !retried {
            return Err(format!(
                "landlock: cannot add the rule for `{}`: {e}",
                rule.path.display()
            ));
        }
    }
    Ok(())
}

/// What `drop_capabilities` leaves, as `explain` and `doctor` say it.
pub fn capabilities_held() -> &'static str {
    // SAFETY: geteuid never fails.
    if unsafe { libc::geteuid() } == 0 {
        "capabilities: every set emptied (bounding, ambient, effective, permitted, inheritable)"
    } else {
        "capabilities: effective, permitted, inheritable and ambient sets empty; the bounding set \
         stays as inherited (shrinking it needs CAP_SETPCAP, which an unprivileged caller lacks) \
         and grants nothing: with no_new_privs and an empty permitted set no execve can gain a \
         capability, setuid or file capabilities included"
    }
}

fn fd_is_dir(fd: &impl std::os::fd::AsFd) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: fstat on a valid descriptor into a zeroed stat buffer.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(fd.as_fd().as_raw_fd(), &mut st) == 0
            && (st.st_mode & libc::S_IFMT) == libc::S_IFDIR
    }
}

/// The landlock ABI of the running kernel, or why there is none.
pub fn kernel_abi() -> Result<u32, String> {
    super::obstacle::landlock_abi(&super::host::Real).map_err(|o| o.to_string())
}

/// Empties every capability set. The bounding set needs CAP_SETPCAP to
/// shrink: without it (an unprivileged caller) it stays, which is harmless
/// because no_new_privs caps what execve can grant at the (empty)
/// permitted set.
fn drop_capabilities() -> Result<(), String> {
    let err = |what: &str| format!("cannot {what}: {}", std::io::Error::last_os_error());
    // Dropping a capability the set lacks succeeds, so none is read first;
    // EINVAL marks the kernel's last capability (no /proc needed), EPERM a
    // caller without CAP_SETPCAP, for whom no drop can succeed.
    for cap in 0..64 as libc::c_ulong {
        // SAFETY: plain prctl.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINVAL) | Some(libc::EPERM) => break,
                _ => {
                    return Err(format!(
                        "cannot drop capability {cap} from the bounding set: {e}"
                    ))
                }
            }
        }
    }
    // SAFETY: plain prctl.
    if unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    } != 0
    {
        return Err(err("clear the ambient capabilities"));
    }
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const V3: u32 = 0x2008_0522;
    let mut hdr = Header {
        version: V3,
        pid: 0,
    };
    let data = [Data::default(); 2];
    // SAFETY: capset reads the header and two data structs (version 3).
    if unsafe { libc::syscall(libc::SYS_capset, &mut hdr, data.as_ptr()) } != 0 {
        return Err(err("drop the capabilities"));
    }
    let mut got = [Data::default(); 2];
    let mut hdr = Header {
        version: V3,
        pid: 0,
    };
    // SAFETY: capget writes two data structs (version 3).
    if unsafe { libc::syscall(libc::SYS_capget, &mut hdr, got.as_mut_ptr()) } != 0 {
        return Err(err("read the capabilities back"));
    }
    if got
        .iter()
        .any(|d| d.effective != 0 || d.permitted != 0 || d.inheritable != 0)
    {
        return Err("capabilities are still held after dropping them".into());
    }
    Ok(())
}

/// Closes every descriptor above 2 but `keep`.
fn close_fds(keep: &[i32]) -> Result<(), String> {
    let mut keep: Vec<u32> = keep
        .iter()
        .filter(|fd| **fd > 2)
        .map(|fd| *fd as u32)
        .collect();
    keep.sort_unstable();
    keep.dedup();
    let mut lo: u32 = 3;
    for k in keep.iter().copied().chain(std::iter::once(u32::MAX)) {
        if k > lo {
            let hi = if k == u32::MAX { u32::MAX } else { k - 1 };
            // SAFETY: close_range only closes descriptors.
            let r = unsafe { libc::syscall(libc::SYS_close_range, lo, hi, 0u32) };
            if r != 0 {
                return Err(format!(
                    "cannot close inherited file descriptors: {}",
                    std::io::Error::last_os_error()
                ));
            }
        }
        lo = k.saturating_add(1);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tempdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("dcjail-ll-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::canonicalize(&d).unwrap()
    }

    #[test]
    fn glob_prefix_is_the_literal_head() {
        assert_eq!(glob_prefix("/a/b/*.pem"), Some(PathBuf::from("/a/b")));
        assert_eq!(glob_prefix("/a/**/x"), Some(PathBuf::from("/a")));
        assert_eq!(glob_prefix("**/.env"), None);
    }

    /// A plan from the default policy, changed by `f`, with made-up facts
    /// rooted in `ws` (no dcjail binary: its protection is tested apart).
    fn plan_with(ws: &Path, f: impl FnOnce(&mut crate::policy::Policy)) -> Plan {
        let mut pol = crate::policy::Policy::default();
        f(&mut pol);
        let facts = crate::plan::Facts {
            cwd: ws.to_path_buf(),
            home: None,
            tmpdir: None,
            exe: None,
        };
        crate::plan::build(&pol, vec!["true".into()], &facts).unwrap()
    }

    #[test]
    fn read_only_no_network_spec_reads_everything_writes_only_terminals() {
        let ws = tempdir("spec-ro");
        let s = layer_spec(&plan_with(&ws, |_| {})).unwrap();
        assert_eq!(s.abi, 6);
        assert_eq!(s.handled_fs, access::handled(6));
        // Everything is readable but /dev, which holds only what bwrap's
        // own /dev holds: `/` is split, every other top-level entry is
        // readable whole.
        let get = |p: &str| {
            s.fs_rules
                .iter()
                .find(|r| r.path == Path::new(p))
                .map(|r| r.access)
        };
        assert_eq!(get("/"), Some(access::READ_DIR));
        assert_eq!(get("/usr"), Some(access::READ));
        assert_eq!(get("/dev"), None);
        assert_eq!(get("/dev/pts"), None);
        let own = reads::own_terminals();
        let writers: Vec<&Path> = s
            .fs_rules
            .iter()
            .filter(|r| r.access & access::WRITE_FILE != 0)
            .map(|r| r.path.as_path())
            .collect();
        let mut want = vec![Path::new("/dev/null"), Path::new("/dev/tty")];
        want.extend(own.iter().map(PathBuf::as_path));
        assert_eq!(writers, want);
        assert!(s
            .fs_rules
            .iter()
            .all(|r| r.access & (access::MAKE_REG | access::REMOVE_FILE) == 0));
        assert!(s.restrict_tcp && s.tcp_connect_ports.is_empty());
        assert_eq!(
            s.sockets,
            SocketRules {
                allow_unix: false,
                inet: Inet::Deny
            }
        );
        assert_eq!(s.scopes, scope::SIGNAL | scope::ABSTRACT_UNIX_SOCKET);
        assert!(s.keep_fds.is_empty());
        std::fs::remove_dir_all(&ws).unwrap();
    }

    #[test]
    fn full_network_spec_has_no_network_rules() {
        let ws = tempdir("spec-full");
        let s = layer_spec(&plan_with(&ws, |p| {
            p.sandbox.network.mode = NetMode::Full;
        }))
        .unwrap();
        assert!(!s.restrict_tcp);
        assert_eq!(s.sockets.inet, Inet::Allow);
        std::fs::remove_dir_all(&ws).unwrap();
    }

    #[test]
    fn allowlist_restricts_tcp_and_allows_only_stream_sockets() {
        let ws = tempdir("spec-allow");
        let s = layer_spec(&plan_with(&ws, |p| {
            p.sandbox.network.mode = NetMode::Allowlist;
        }))
        .unwrap();
        assert!(s.restrict_tcp);
        assert_eq!(s.sockets.inet, Inet::StreamOnly);
        // The proxy's port is added at launch, once it is bound.
        assert!(s.tcp_connect_ports.is_empty());
        std::fs::remove_dir_all(&ws).unwrap();
    }

    #[test]
    fn workspace_write_with_protected_paths_is_refused() {
        let ws = tempdir("spec-prot");
        let e = layer_spec(&plan_with(&ws, |p| {
            p.sandbox.mode = crate::policy::SandboxMode::WorkspaceWrite;
        }))
        .unwrap_err();
        assert!(e.contains("protect_defaults = false"), "{e}");
        std::fs::remove_dir_all(&ws).unwrap();
    }

    #[test]
    fn workspace_write_without_protected_paths_grants_write_on_the_roots() {
        let ws = tempdir("spec-ww");
        let s = layer_spec(&plan_with(&ws, |p| {
            p.sandbox.mode = crate::policy::SandboxMode::WorkspaceWrite;
            p.sandbox.filesystem.protect_defaults = false;
        }))
        .unwrap();
        let tmp = std::fs::canonicalize("/tmp").unwrap();
        for root in [&ws, &tmp] {
            assert!(
                s.fs_rules.contains(&FsRule {
                    path: root.clone(),
                    access: access::WRITE
                }),
                "{}",
                root.display()
            );
        }
        std::fs::remove_dir_all(&ws).unwrap();
    }

    #[test]
    fn under_mounts_protected_paths_leave_the_roots_writable() {
        let ws = tempdir("spec-mounts");
        let plan = plan_with(&ws, |p| {
            p.sandbox.mode = crate::policy::SandboxMode::WorkspaceWrite;
        });
        assert!(!plan.fs.protected.is_empty());
        let s = layer_spec_with(&plan, WriteSubtraction::ByMounts).unwrap();
        assert!(s.fs_rules.contains(&FsRule {
            path: ws.clone(),
            access: access::WRITE
        }));
        std::fs::remove_dir_all(&ws).unwrap();
    }

    #[test]
    fn deny_write_inside_a_root_is_refused_and_a_root_inside_one_is_dropped() {
        let ws = tempdir("spec-dw");
        std::fs::create_dir_all(ws.join("keep")).unwrap();
        let e = layer_spec(&plan_with(&ws, |p| {
            p.sandbox.mode = crate::policy::SandboxMode::WorkspaceWrite;
            p.sandbox.filesystem.protect_defaults = false;
            p.sandbox.filesystem.deny_write = vec!["keep".into()];
        }))
        .unwrap_err();
        assert!(e.contains("deny_write"), "{e}");
        let s = layer_spec(&plan_with(&ws, |p| {
            p.sandbox.mode = crate::policy::SandboxMode::WorkspaceWrite;
            p.sandbox.filesystem.protect_defaults = false;
            p.sandbox.filesystem.deny_write = vec![ws.parent().unwrap().to_path_buf()];
        }))
        .unwrap();
        assert!(!s.fs_rules.iter().any(|r| r.path == ws));
        std::fs::remove_dir_all(&ws).unwrap();
    }

    fn sample() -> LayerSpec {
        LayerSpec {
            abi: 6,
            handled_fs: access::handled(6),
            fs_rules: vec![
                FsRule {
                    path: PathBuf::from(std::ffi::OsString::from("/odd\n(path)")),
                    access: access::READ,
                },
                FsRule {
                    path: "/tmp".into(),
                    access: access::WRITE,
                },
            ],
            restrict_tcp: true,
            tcp_connect_ports: vec![3128, 1080],
            scopes: scope::SIGNAL | scope::ABSTRACT_UNIX_SOCKET,
            sockets: SocketRules {
                allow_unix: false,
                inet: Inet::StreamOnly,
            },
            fs: FsRules::OPEN,
            keep_fds: vec![5, 9],
        }
    }

    #[test]
    fn minimum_abi_names_what_is_missing() {
        let s = sample();
        let missing: Vec<&str> = s
            .needs()
            .into_iter()
            .filter(|(a, _)| *a > 3)
            .map(|(_, w)| w)
            .collect();
        assert!(missing.iter().any(|w| w.contains("scoping")));
        assert!(missing.iter().any(|w| w.contains("TCP")));
    }

    #[test]
    fn handled_rights_follow_the_abi() {
        assert_eq!(access::handled(6) & access::IOCTL_DEV, access::IOCTL_DEV);
        assert_eq!(access::handled(4) & access::IOCTL_DEV, 0);
        assert_eq!(access::handled(1) & access::REFER, 0);
    }
}
