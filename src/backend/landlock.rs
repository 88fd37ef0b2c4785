//! The in-process sandbox layer: landlock + seccomp + no_new_privs + no
//! capabilities + closed file descriptors, applied by dcjail to itself just
//! before `execve`. Used alone by the `landlock` backend and, inside the
//! namespaces, by the `bwrap` backend's second stage.
//!
//! It owns three steps: `layer_spec` turns a `Plan` into a `LayerSpec`
//! (pure data; it reads directories to compute complements, never probes the
//! kernel) and refuses what landlock cannot express; `check_supported` probes
//! the kernel; `apply` (written in `exec::landlock`, the side-effect edge)
//! builds everything first and then applies it in one irreversible sequence. It must never weaken a rule to make it fit: a right
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

use super::seccomp::{self, FsRules, Inet, Meta, SocketRules, Unix};
use crate::plan::{PathRule, Plan};
use crate::policy::NetMode;
use std::path::{Path, PathBuf};

/// Landlock filesystem rights, with their uapi bit values.
pub mod access {
    pub use crate::inside::stub_format::access::*;

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
/// stub program (`program::encode`, `stub_format`).
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
    /// Unix sockets, or directories of them, the broker lets the command
    /// connect to besides those it bound (`Unix::Named`).
    pub unix_sockets: Vec<PathBuf>,
    /// Metadata and creation rules of the seccomp filter.
    pub fs: FsRules,
    /// Descriptors above 2 that survive into the command.
    pub keep_fds: Vec<i32>,
    /// Writable roots the broker may link between through the host's own
    /// mount (bwrap mounts each one apart); empty: none.
    pub host_roots: Vec<PathBuf>,
    /// The layers this launch runs without, and what that narrows
    /// (`backend::layers`); empty for a full launch.
    pub without: super::layers::Without,
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
                unix: Unix::Named,
                inet: Inet::Deny,
            },
        ),
        // Every internet socket; unix sockets as in the other modes (the
        // network mode says nothing about local IPC).
        NetMode::Full => (
            false,
            SocketRules {
                unix: Unix::Named,
                inet: Inet::Allow,
            },
        ),
        // TCP only, and only to the proxy's port (added at launch, when the
        // proxy has bound it): landlock filters connect by port, seccomp
        // refuses every other kind of socket.
        NetMode::Allowlist => (
            true,
            SocketRules {
                unix: Unix::Named,
                inet: Inet::StreamOnly,
            },
        ),
    };

    let writable = writable_roots(plan, subtraction)?;
    let deny = expand(&plan.fs.deny_read, "deny_read")?;
    let allow = expand(&plan.fs.allow_read, "allow_read")?;
    let terminals = reads::own_terminals(&plan.facts.stdio);
    let mut fs_rules = reads::rules(&deny, &allow, &writable, subtraction, &terminals)?;
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
        unix_sockets: plan.net.allow_unix_sockets.clone(),
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
        host_roots: Vec::new(),
        without: Default::default(),
    })
}

/// A landlock refusal where bwrap cannot run (`why`): its advice to use
/// bwrap is taken out, and it says why bwrap is no way out here.
pub fn without_bwrap(m: String, why: &str) -> String {
    let m = m
        .replace("--backend bwrap can, or ", "")
        .replace("--backend bwrap can, ", "")
        .replace("use --backend bwrap (which masks it with a mount), or ", "");
    let m = m.strip_suffix("; use --backend bwrap").unwrap_or(&m);
    format!("{m}; bwrap, which would hold it, cannot run here: {why}")
}

/// The writable roots that can be granted, or the refusal for a write
/// subtraction inside one. A root that lies inside a `deny_write` or
/// protected path is simply not granted: that is exactly the policy.
fn writable_roots(plan: &Plan, subtraction: WriteSubtraction) -> Result<Vec<PathBuf>, String> {
    let fs = &plan.fs;
    if subtraction == WriteSubtraction::ByMounts {
        return Ok(grantable_roots(plan));
    }
    // A root the held home directory keeps read-only (the home directory
    // itself as the workspace) is simply not granted; the roots inside it
    // are. One that holds it strictly would need a subtraction.
    let roots: Vec<PathBuf> = grantable_roots(plan)
        .into_iter()
        .filter(|w| plan.held_at(w).is_none())
        .collect();
    for h in &fs.held {
        if let Some(w) = roots.iter().find(|w| h.starts_with(w)) {
            return Err(format!(
                "landlock cannot keep the home directory `{}` read-only inside the writable root `{}` \
                 (rights cannot be subtracted inside a granted tree); --backend bwrap can, \
                 or make the workspace the home directory or a directory inside it",
                h.display(),
                w.display()
            ));
        }
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
    /// What holds unix sockets, for `explain`.
    fn unix_sockets_json(&self) -> serde_json::Value {
        use serde_json::json;
        match self.sockets.unix {
            Unix::Named => json!({
                "connect": "a path only when it is named below or the command bound it during \
                            this run (the broker checks the socket file it reaches, by inode, \
                            and connects the command's own socket to that file)",
                "named": self.unix_sockets.iter().map(|p| p.to_string_lossy()).collect::<Vec<_>>(),
                "datagram": "refused (socket and socketpair): a datagram names its destination \
                            on every send",
                "abstract": "only those made inside the sandbox (landlock scope)",
            }),
            Unix::Refuse => json!({
                "connect": "no unix socket can be made (this sandbox runs inside one whose \
                            broker holds the seccomp listener); socketpair works",
            }),
        }
    }

    /// Whether a broker serves the filter's notifications: metadata,
    /// creations, the denial report, or unix sockets' `connect`.
    pub fn brokered(&self) -> bool {
        self.fs.brokered() || self.sockets.unix == Unix::Named
    }

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
            .map_err(|m| m.to_string())
    }

    /// `check_supported` with the machine's answers given.
    pub fn check_supported_with(
        &self,
        host: &dyn super::host::Probe,
    ) -> Result<(), super::Missing> {
        use super::Missing;
        host.seccomp_available().map_err(Missing::Host)?;
        let have = super::obstacle::landlock_abi(host).map_err(Missing::Obstacle)?;
        let needed = self.abi.max(MIN_ABI);
        if have < needed {
            return Err(Missing::LandlockAbi {
                needed,
                have,
                needs: self
                    .needs()
                    .into_iter()
                    .filter(|(a, _)| *a > have)
                    .collect(),
            });
        }
        Ok(())
    }

    /// The layer as `explain` shows it; `euid` is the caller's (the facts).
    pub fn describe(&self, euid: u32) -> serde_json::Value {
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
        let landlock_abi = match &self.without.landlock {
            None => json!({ "required": self.abi, "kernel": kernel_abi().ok() }),
            Some(why) => json!({ "required": null, "not_applied": why }),
        };
        json!({
            "kind": "landlock",
            "landlock_abi": landlock_abi,
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
            "unix_sockets": self.unix_sockets_json(),
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
                capabilities_held(euid == 0),
                "file descriptors above 2 closed before exec",
                "supervised: signals forwarded, every descendant killed when the command exits",
            ],
            "keep_fds": self.keep_fds,
            "notes": notes,
        })
    }
}

/// The fact behind the terminal rules of landlock alone, for `explain`:
/// which terminals fds 0–2 held (those are granted, with /dev/tty and
/// /dev/null), or that none did.
pub fn terminal_fact(stdio: &[crate::plan::StdFd; 3]) -> String {
    use crate::plan::{StdFd, STD_NAMES};
    let own = reads::own_terminals(stdio);
    if own.is_empty() {
        return "terminal: none granted but /dev/tty and /dev/null, no standard descriptor is a \
                terminal found under /dev"
            .into();
    }
    let on: Vec<String> = own
        .iter()
        .map(|d| {
            let fds: Vec<&str> = stdio
                .iter()
                .zip(STD_NAMES)
                .filter(|(s, _)| matches!(s, StdFd::Terminal { device: Some(x) } if x == d))
                .map(|(_, n)| n)
                .collect();
            format!("{} ({})", d.display(), fds.join(", "))
        })
        .collect();
    format!(
        "terminal: granted {}, the terminal of the command's standard descriptors",
        on.join("; ")
    )
}

/// What `drop_capabilities` leaves, as `explain` and `doctor` say it, for
/// a caller who is root or not.
pub fn capabilities_held(root: bool) -> &'static str {
    if root {
        "capabilities: every set emptied (bounding, ambient, effective, permitted, inheritable)"
    } else {
        "capabilities: effective, permitted, inheritable and ambient sets empty; the bounding set \
         stays as inherited (shrinking it needs CAP_SETPCAP, which an unprivileged caller lacks) \
         and grants nothing: with no_new_privs and an empty permitted set no execve can gain a \
         capability, setuid or file capabilities included"
    }
}

/// The landlock ABI of the running kernel, or why there is none.
pub fn kernel_abi() -> Result<u32, String> {
    super::obstacle::landlock_abi(&super::host::Real).map_err(|o| o.to_string())
}

#[cfg(test)]
mod tests;
