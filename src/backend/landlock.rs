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
//! socket scoping (ABI 6) for SPEC §5's "cannot signal or reach processes
//! outside"; the filesystem rules use refer (2), truncate (3) and device
//! ioctl (5), network `none` uses TCP rules (4).
//!
//! What landlock cannot say, and how this layer answers:
//! - rights are inherited down a tree and cannot be subtracted: `deny_read`
//!   inside a readable tree is enforced by granting read on the complement
//!   (every sibling along the path down to the denied path). Directories on
//!   that path keep `read_dir`, so names (not contents) under a denied
//!   directory stay listable, and new files created directly in those
//!   directories are not readable (narrower, never wider).
//! - write subtraction (`deny_write`, protected paths inside a writable
//!   root) has no complement that keeps the root usable: refused (122),
//!   a `deny_write` glob too when it could match inside a writable root.
//! - globs: the layer takes literal paths only. `backend::select` expands
//!   the plan's globs once with `walk::expand_plan` and gives this layer the
//!   paths they match at launch; a file created later that matches is not
//!   covered, except inside a matched `deny_read` directory.

use super::seccomp::{self, Inet, SocketRules};
use crate::plan::{PathRule, Plan};
use crate::policy::NetMode;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::FileTypeExt;
use std::path::{Component, Path, PathBuf};

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

/// The whole in-process layer, as data. Serializable byte-exactly
/// (`to_bytes`/`from_bytes`) so a second stage can receive it over an fd.
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
    let mut deny = expand(&plan.fs.deny_read, "deny_read")?;
    let allow = expand(&plan.fs.allow_read, "allow_read")?;
    if !deny.is_empty() {
        // Raw block devices would hand the denied files' bytes back through
        // the disk: they are denied along with anything else.
        deny.extend(block_devices());
    }
    let mut fs_rules = Vec::new();
    read_rules(&deny, &allow, &mut fs_rules)?;
    if !writable.iter().any(|w| w == Path::new("/")) {
        for t in ["/dev/null", "/dev/tty", "/dev/pts", "/dev/ptmx"] {
            fs_rules.push(FsRule {
                path: PathBuf::from(t),
                access: access::TERMINAL,
            });
        }
    }
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
                Origin::Table(_) => "or set sandbox.filesystem.protect_defaults = false",
                Origin::Other => {
                    "or set sandbox.filesystem.protect_defaults = false (the plan card: move it out of the writable roots)"
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

/// Budget for directory entries read while computing the `deny_read`
/// complement: past it the policy is refused rather than half-enforced.
const WALK_BUDGET: usize = 200_000;

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

/// Block devices under /dev (two levels deep).
fn block_devices() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![(PathBuf::from("/dev"), 0)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_block_device() {
                out.push(e.path());
            } else if ft.is_dir() && depth < 2 {
                stack.push((e.path(), depth + 1));
            }
        }
    }
    out
}

/// Read rights for "everything but `deny`, plus `allow` inside it".
fn read_rules(deny: &[PathBuf], allow: &[PathBuf], out: &mut Vec<FsRule>) -> Result<(), String> {
    let mut budget = WALK_BUDGET;
    visit(Path::new("/"), deny, allow, out, &mut budget)
}

fn covered(p: &Path, list: &[PathBuf]) -> bool {
    list.iter().any(|x| p.starts_with(x))
}

/// The child of `node` on the way down to `target`.
fn next_step(node: &Path, target: &Path) -> Option<PathBuf> {
    let rest = target.strip_prefix(node).ok()?;
    match rest.components().next()? {
        Component::Normal(c) => Some(node.join(c)),
        _ => None,
    }
}

fn visit(
    node: &Path,
    deny: &[PathBuf],
    allow: &[PathBuf],
    out: &mut Vec<FsRule>,
    budget: &mut usize,
) -> Result<(), String> {
    let denied = covered(node, deny) && !covered(node, allow);
    let below = |list: &[PathBuf]| -> Vec<PathBuf> {
        list.iter()
            .filter(|p| p.starts_with(node) && p.as_path() != node)
            .cloned()
            .collect()
    };
    let children: Vec<PathBuf> = if denied {
        // Only the way down to a re-allowed path matters.
        let mut c: Vec<PathBuf> = below(allow)
            .iter()
            .filter_map(|a| next_step(node, a))
            .collect();
        c.sort();
        c.dedup();
        c.retain(|p| std::fs::symlink_metadata(p).is_ok_and(|m| !m.file_type().is_symlink()));
        c
    } else {
        if covered(node, allow) || below(deny).is_empty() {
            out.push(FsRule {
                path: node.to_path_buf(),
                access: access::READ,
            });
            return Ok(());
        }
        out.push(FsRule {
            path: node.to_path_buf(),
            access: access::READ_DIR,
        });
        let Ok(rd) = std::fs::read_dir(node) else {
            // What dcjail cannot list it cannot grant: narrower, never wider.
            return Ok(());
        };
        let mut c = Vec::new();
        for e in rd.flatten() {
            *budget = budget.checked_sub(1).ok_or_else(|| {
                "deny_read needs more landlock rules than this backend allows; \
                 use --backend bwrap"
                    .to_string()
            })?;
            // A symlink is not granted: the path it resolves to carries
            // its own rule, so a link to a denied file gains nothing.
            if e.file_type().is_ok_and(|t| !t.is_symlink()) {
                c.push(e.path());
            }
        }
        c.sort();
        c
    };
    // A child only needs the entries on its own path (ancestors, for
    // `covered`) or below it: handing down just those keeps a wide tree with
    // many denied files (a glob's matches) linear instead of
    // files × rules.
    let on_path = |list: &[PathBuf], child: &Path| -> Vec<PathBuf> {
        list.iter()
            .filter(|x| child.starts_with(x) || x.starts_with(child))
            .cloned()
            .collect()
    };
    for child in children {
        let (d, a) = (on_path(deny, &child), on_path(allow, &child));
        visit(&child, &d, &a, out, budget)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Serialization: magic, then fields in order; integers little-endian,
// byte strings and lists prefixed by a u32 length. Paths are raw bytes.

const MAGIC: &[u8] = b"DCJAIL-LAYER\x01";

struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.b.len() < n {
            return Err("layer spec is truncated".into());
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Ok(h)
    }
    fn arr<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.arr::<1>()?[0])
    }
    fn bool(&mut self) -> Result<bool, String> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(format!("layer spec: bad boolean {v}")),
        }
    }
    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.arr()?))
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.arr()?))
    }
    fn i32(&mut self) -> Result<i32, String> {
        Ok(i32::from_le_bytes(self.arr()?))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.arr()?))
    }
    fn len(&mut self) -> Result<usize, String> {
        let n = self.u32()? as usize;
        // Every element takes at least one byte: a bigger count is a lie.
        if n > self.b.len() {
            return Err("layer spec: length exceeds the data".into());
        }
        Ok(n)
    }
    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.len()?;
        self.take(n)
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

impl LayerSpec {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut o = Vec::with_capacity(64 + self.fs_rules.len() * 48);
        o.extend_from_slice(MAGIC);
        o.extend_from_slice(&self.abi.to_le_bytes());
        o.extend_from_slice(&self.handled_fs.to_le_bytes());
        o.extend_from_slice(&(self.fs_rules.len() as u32).to_le_bytes());
        for r in &self.fs_rules {
            put_bytes(&mut o, r.path.as_os_str().as_bytes());
            o.extend_from_slice(&r.access.to_le_bytes());
        }
        o.push(self.restrict_tcp as u8);
        o.extend_from_slice(&(self.tcp_connect_ports.len() as u32).to_le_bytes());
        for p in &self.tcp_connect_ports {
            o.extend_from_slice(&p.to_le_bytes());
        }
        o.extend_from_slice(&self.scopes.to_le_bytes());
        o.push(self.sockets.allow_unix as u8);
        o.push(match self.sockets.inet {
            Inet::Deny => 0,
            Inet::StreamOnly => 1,
            Inet::Allow => 2,
        });
        o.extend_from_slice(&(self.keep_fds.len() as u32).to_le_bytes());
        for fd in &self.keep_fds {
            o.extend_from_slice(&fd.to_le_bytes());
        }
        o
    }

    pub fn from_bytes(b: &[u8]) -> Result<LayerSpec, String> {
        let mut r = Reader { b };
        if r.take(MAGIC.len())? != MAGIC {
            return Err("not a dcjail layer spec (bad magic)".into());
        }
        let abi = r.u32()?;
        let handled_fs = r.u64()?;
        let n = r.len()?;
        let mut fs_rules = Vec::with_capacity(n);
        for _ in 0..n {
            let path = PathBuf::from(OsString::from_vec(r.bytes()?.to_vec()));
            if !path.is_absolute() {
                return Err(format!(
                    "layer spec: rule path `{}` is not absolute",
                    path.display()
                ));
            }
            let access = r.u64()?;
            if access & !handled_fs != 0 {
                return Err("layer spec: a rule grants an unhandled right".into());
            }
            fs_rules.push(FsRule { path, access });
        }
        let restrict_tcp = r.bool()?;
        let n = r.len()?;
        let mut tcp_connect_ports = Vec::with_capacity(n);
        for _ in 0..n {
            tcp_connect_ports.push(r.u16()?);
        }
        let scopes = r.u64()?;
        let allow_unix = r.bool()?;
        let inet = match r.u8()? {
            0 => Inet::Deny,
            1 => Inet::StreamOnly,
            2 => Inet::Allow,
            v => return Err(format!("layer spec: bad inet value {v}")),
        };
        let n = r.len()?;
        let mut keep_fds = Vec::with_capacity(n);
        for _ in 0..n {
            keep_fds.push(r.i32()?);
        }
        if !r.b.is_empty() {
            return Err("layer spec: trailing bytes".into());
        }
        Ok(LayerSpec {
            abi,
            handled_fs,
            fs_rules,
            restrict_tcp,
            tcp_connect_ports,
            scopes,
            sockets: SocketRules { allow_unix, inet },
            keep_fds,
        })
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
        seccomp::probe()?;
        let have = kernel_abi()?;
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
    /// the first step the process must exec or exit.
    pub fn apply(&self) -> Result<(), String> {
        let ruleset = self.build_ruleset()?;
        let program = seccomp::compile(self.sockets)?;

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
        seccomp::install(&program)?;
        close_fds(&self.keep_fds)
    }

    fn build_ruleset(&self) -> Result<::landlock::RulesetCreated, String> {
        use ::landlock::{
            AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, PathFd, Ruleset,
            RulesetAttr, RulesetCreatedAttr, Scope,
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
        for rule in &self.fs_rules {
            let fd = match PathFd::new(&rule.path) {
                Ok(fd) => fd,
                // A grant on a path that is gone only narrows the sandbox.
                Err(_) if std::fs::symlink_metadata(&rule.path).is_err() => continue,
                Err(e) => return Err(format!("landlock: {e}")),
            };
            let mut bits = rule.access;
            if !fd_is_dir(&fd) {
                bits &= access::FILE;
            }
            if bits == 0 {
                continue;
            }
            created = created
                .add_rule(PathBeneath::new(fd, fs_bits(bits)?))
                .map_err(ll)?;
        }
        for port in &self.tcp_connect_ports {
            created = created
                .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                .map_err(ll)?;
        }
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
                "deny_read is enforced by granting read on its complement: directories on the way \
                 to a denied path stay listable (names, not contents), and files created later \
                 directly in them are not readable",
            );
        }
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
                "rules": seccomp::describe(self.sockets).iter().map(|r| json!({
                    "syscall": r.syscall, "when": r.when, "errno": r.errno,
                })).collect::<Vec<_>>(),
            },
            "process": [
                "no_new_privs",
                "capabilities dropped: bounding, ambient, effective, permitted, inheritable",
                "file descriptors above 2 closed before exec",
                "supervised: signals forwarded, every descendant killed when the command exits",
            ],
            "keep_fds": self.keep_fds,
            "notes": notes,
        })
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
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the version query reads no memory.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if r > 0 {
        return Ok(r as u32);
    }
    let e = std::io::Error::last_os_error();
    Err(match e.raw_os_error() {
        Some(libc::ENOSYS) => {
            "landlock is not built into this kernel (Linux 6.12+ needed, ABI 6)".into()
        }
        Some(libc::EOPNOTSUPP) => {
            "landlock is built in but disabled (add `landlock` to the lsm= boot parameter)".into()
        }
        _ => format!("cannot query landlock: {e}"),
    })
}

/// Empties every capability set. The bounding set needs CAP_SETPCAP to
/// shrink: without it (an unprivileged caller) it stays, which is harmless
/// because no_new_privs caps what execve can grant at the (empty)
/// permitted set.
fn drop_capabilities() -> Result<(), String> {
    let err = |what: &str| format!("cannot {what}: {}", std::io::Error::last_os_error());
    // The kernel's last capability is where PR_CAPBSET_READ says EINVAL
    // (cheaper than reading /proc/sys/kernel/cap_last_cap, and needs no /proc).
    for cap in 0..64 as libc::c_ulong {
        // SAFETY: plain prctl calls.
        unsafe {
            let held = libc::prctl(libc::PR_CAPBSET_READ, cap, 0, 0, 0);
            if held < 0 {
                break;
            }
            if held == 1 && libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::EPERM) {
                    return Err(format!(
                        "cannot drop capability {cap} from the bounding set: {e}"
                    ));
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

/// `doctor`: whether the layer works here for the default policy
/// (read-only, no network), and why not.
pub fn doctor() -> (bool, Vec<String>, Option<String>) {
    let mut details = Vec::new();
    let mut works = true;
    let mut fix = None;
    match kernel_abi() {
        Ok(a) if a >= MIN_ABI => details.push(format!("landlock ABI {a} (needs {MIN_ABI})")),
        Ok(a) => {
            works = false;
            details.push(format!(
                "landlock ABI {a}: ABI {MIN_ABI} (Linux 6.12) is needed for signal and abstract-socket scoping"
            ));
            fix = Some("run a Linux 6.12 or newer kernel, or install bubblewrap".to_string());
        }
        Err(e) => {
            works = false;
            details.push(e);
            fix =
                Some("enable landlock (Linux 6.12+, lsm=…,landlock) or install bubblewrap".into());
        }
    }
    match seccomp::probe() {
        Ok(()) => details.push(format!(
            "seccomp filters available ({})",
            seccomp::arch().unwrap_or("?")
        )),
        Err(e) => {
            works = false;
            details.push(e);
        }
    }
    if works {
        details.push(
            "holds: read-only and workspace-write without protected paths, deny_read, network none/full, \
             no_new_privs, no capabilities, seccomp filter, signal/abstract-socket scoping"
                .into(),
        );
        details.push(
            "refuses: protected paths or deny_write inside writable roots, danger-full-access, \
             the network allowlist (connect is filtered by port, not address); bwrap enforces them"
                .into(),
        );
    }
    (works, details, fix)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules_for(deny: &[&str], allow: &[&str]) -> Vec<FsRule> {
        let d: Vec<PathBuf> = deny.iter().map(PathBuf::from).collect();
        let a: Vec<PathBuf> = allow.iter().map(PathBuf::from).collect();
        let mut out = Vec::new();
        read_rules(&d, &a, &mut out).unwrap();
        out
    }

    fn tempdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("dcjail-ll-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::canonicalize(&d).unwrap()
    }

    #[test]
    fn no_deny_read_grants_read_on_root_only() {
        let r = rules_for(&[], &[]);
        assert_eq!(
            r,
            vec![FsRule {
                path: "/".into(),
                access: access::READ
            }]
        );
    }

    #[test]
    fn deny_read_grants_the_complement_and_not_the_denied_path() {
        let d = tempdir("complement");
        std::fs::create_dir_all(d.join("secret/inner")).unwrap();
        std::fs::write(d.join("secret/key"), "k").unwrap();
        std::fs::write(d.join("open.txt"), "o").unwrap();
        std::fs::create_dir_all(d.join("sub")).unwrap();
        std::os::unix::fs::symlink(d.join("secret"), d.join("link")).unwrap();
        let secret = d.join("secret");
        let r = rules_for(&[secret.to_str().unwrap()], &[]);
        let get = |p: &Path| r.iter().find(|x| x.path == p).map(|x| x.access);
        assert_eq!(get(&d.join("open.txt")), Some(access::READ));
        assert_eq!(get(&d.join("sub")), Some(access::READ));
        assert_eq!(get(&d), Some(access::READ_DIR));
        assert_eq!(get(Path::new("/")), Some(access::READ_DIR));
        // Neither the denied path, anything in it, nor a link to it.
        assert!(r.iter().all(|x| !x.path.starts_with(&secret)));
        assert_eq!(get(&d.join("link")), None);
        // Every ancestor is only listable.
        for a in d.ancestors() {
            assert_eq!(get(a), Some(access::READ_DIR), "{}", a.display());
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn allow_read_reopens_inside_a_denied_directory() {
        let d = tempdir("reopen");
        std::fs::create_dir_all(d.join("secret/pub")).unwrap();
        std::fs::write(d.join("secret/key"), "k").unwrap();
        let r = rules_for(
            &[d.join("secret").to_str().unwrap()],
            &[d.join("secret/pub").to_str().unwrap()],
        );
        let get = |p: &Path| r.iter().find(|x| x.path == p).map(|x| x.access);
        assert_eq!(get(&d.join("secret/pub")), Some(access::READ));
        assert_eq!(get(&d.join("secret")), None);
        assert_eq!(get(&d.join("secret/key")), None);
        std::fs::remove_dir_all(&d).unwrap();
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
        assert_eq!(s.handled_fs, access::READ | access::WRITE);
        assert_eq!(
            s.fs_rules[0],
            FsRule {
                path: "/".into(),
                access: access::READ
            }
        );
        let writers: Vec<&Path> = s
            .fs_rules
            .iter()
            .filter(|r| r.access & access::WRITE_FILE != 0)
            .map(|r| r.path.as_path())
            .collect();
        assert_eq!(
            writers,
            ["/dev/null", "/dev/tty", "/dev/pts", "/dev/ptmx"].map(Path::new)
        );
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
                    path: PathBuf::from(OsString::from_vec(b"/odd\xff\n(path)".to_vec())),
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
            keep_fds: vec![5, 9],
        }
    }

    #[test]
    fn spec_round_trips_byte_exactly() {
        let s = sample();
        let b = s.to_bytes();
        let back = LayerSpec::from_bytes(&b).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.to_bytes(), b);
    }

    #[test]
    fn spec_rejects_truncation_trailing_bytes_and_bad_magic() {
        let b = sample().to_bytes();
        for n in 0..b.len() {
            assert!(
                LayerSpec::from_bytes(&b[..n]).is_err(),
                "prefix {n} accepted"
            );
        }
        let mut t = b.clone();
        t.push(0);
        assert!(LayerSpec::from_bytes(&t).is_err());
        let mut m = b.clone();
        m[0] ^= 1;
        assert!(LayerSpec::from_bytes(&m).is_err());
    }

    #[test]
    fn spec_rejects_rights_it_does_not_handle() {
        let mut s = sample();
        s.handled_fs = access::READ;
        assert!(LayerSpec::from_bytes(&s.to_bytes()).is_err());
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
