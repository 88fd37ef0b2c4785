//! The enforcement plan: what must hold for this run, said once and
//! independently of any backend. Building it resolves paths (the only
//! filesystem reads here: canonicalization, `.git` pointers), runs the
//! worktree gate and the `paths` pre-check of the sandbox gate. Backends only
//! read a `Plan`; they never go back to the policy.

use crate::domain::DomainRule;
use crate::error::{Gate, Reason, Refusal, Result};
use crate::policy::{BackendChoice, Mode, NetMode, Policy, SandboxMode, Tool};
use crate::protected::HostEnv;
use globset::{GlobBuilder, GlobMatcher};
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// Facts about the calling process the plan is built from; gathered once at
/// the edge so the rest can be tested with made-up values.
#[derive(Clone, Debug)]
pub struct Facts {
    pub cwd: PathBuf,
    pub home: Option<PathBuf>,
    pub tmpdir: Option<PathBuf>,
    /// dcjail's own binary: never writable from inside.
    pub exe: Option<PathBuf>,
}

/// dcjail's own binary, resolved once per process (`readlink` of
/// /proc/self/exe is not free, and several steps need it).
pub fn own_exe() -> Option<PathBuf> {
    static EXE: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    EXE.get_or_init(|| std::env::current_exe().ok()).clone()
}

impl Facts {
    /// `gather`, minus what this policy cannot use: dcjail's own path only
    /// matters when something is writable (it is kept unwritable from
    /// inside), so a read-only or unsandboxed run does not resolve it.
    pub fn gather_for(policy: &Policy) -> Result<Facts> {
        let mut f = Facts::gather_base()?;
        let writable = policy.tool != Tool::Read && policy.sandbox.mode != SandboxMode::ReadOnly;
        if policy.sandbox.enabled && writable {
            f.exe = own_exe();
        }
        Ok(f)
    }

    pub fn gather() -> Result<Facts> {
        let mut f = Facts::gather_base()?;
        f.exe = own_exe();
        Ok(f)
    }

    fn gather_base() -> Result<Facts> {
        let cwd = std::env::current_dir().map_err(|e| {
            Refusal::policy(format!(
                "cannot read the current directory: {}",
                crate::policy::io_words(&e)
            ))
        })?;
        let nonempty = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Ok(Facts {
            cwd,
            home: nonempty("HOME"),
            tmpdir: nonempty("TMPDIR"),
            exe: None,
        })
    }
}

/// A path rule after resolution: a canonical literal path, or a glob.
#[derive(Clone, Debug)]
pub enum PathRule {
    Literal(PathBuf),
    Glob(Glob),
}

#[derive(Clone, Debug)]
pub struct Glob {
    /// The absolute (or `**`-leading, unanchored) pattern matched against
    /// canonical paths.
    pub pattern: String,
    /// What the caller wrote.
    pub written: String,
    pub matcher: GlobMatcher,
}

impl PathRule {
    /// Whether `path` (canonical) or one of its ancestors is covered.
    pub fn covers(&self, path: &Path) -> bool {
        match self {
            PathRule::Literal(p) => path.starts_with(p),
            PathRule::Glob(g) => path.ancestors().any(|a| g.matcher.is_match(a)),
        }
    }

    pub fn literal(&self) -> Option<&Path> {
        match self {
            PathRule::Literal(p) => Some(p),
            PathRule::Glob(_) => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct FsPlan {
    /// The effective access: a `read` call is held to `ReadOnly`.
    pub access: SandboxMode,
    /// Roots the command may write, canonical; empty in read-only, `/` in
    /// danger-full-access.
    pub writable: Vec<PathBuf>,
    pub deny_read: Vec<PathRule>,
    /// Re-allowed inside `deny_read`.
    pub allow_read: Vec<PathRule>,
    pub deny_write: Vec<PathRule>,
    /// Read-only when present, uncreatable when missing: the protected
    /// table (`crate::protected`) and git's files.
    pub protected: Vec<PathBuf>,
}

#[derive(Clone, Debug)]
pub struct NetPlan {
    pub mode: NetMode,
    pub allow: Vec<DomainRule>,
    pub deny: Vec<DomainRule>,
    pub allow_unix_sockets: bool,
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub argv: Vec<OsString>,
    /// Where the command starts: the worktree root when one is set.
    pub cwd: PathBuf,
    pub workspace: PathBuf,
    pub worktree: Option<PathBuf>,
    pub mode: Mode,
    pub tool: Tool,
    /// `false` only when `sandbox.enabled = false`.
    pub sandboxed: bool,
    pub backend: BackendChoice,
    pub fs: FsPlan,
    pub net: NetPlan,
    pub timeout: Option<Duration>,
    pub policy_file: Option<PathBuf>,
    /// Denials are recorded for a report (`crate::denials`): set by the
    /// caller of `build`, before a backend renders the plan.
    pub observe: bool,
}

impl Plan {
    /// The network the command actually gets, for `DCJAIL_NETWORK`.
    pub fn effective_net(&self) -> NetMode {
        if self.sandboxed {
            self.net.mode
        } else {
            NetMode::Full
        }
    }

    /// Whether `path` (canonical) is readable under this plan.
    pub fn readable(&self, path: &Path) -> bool {
        !self.fs.deny_read.iter().any(|r| r.covers(path))
            || self.fs.allow_read.iter().any(|r| r.covers(path))
    }

    /// Whether `path` (canonical) is writable under this plan.
    pub fn writable(&self, path: &Path) -> bool {
        self.fs.writable.iter().any(|r| path.starts_with(r))
            && !self.fs.deny_write.iter().any(|r| r.covers(path))
            && !self.fs.protected.iter().any(|p| path.starts_with(p))
    }
}

/// Builds the plan: worktree gate (5), path resolution, and the `paths`
/// pre-check of the sandbox gate (6). Backend choice comes after.
pub fn build(policy: &Policy, argv: Vec<OsString>, facts: &Facts) -> Result<Plan> {
    build_with(policy, argv, facts, &HostEnv::current())
}

/// `build`, with the environment the host's programs see given (what
/// decides where git and the shells look for what they run).
pub fn build_with(
    policy: &Policy,
    argv: Vec<OsString>,
    facts: &Facts,
    env: &HostEnv,
) -> Result<Plan> {
    let worktree = match &policy.worktree.root {
        None => None,
        Some(root) => Some(worktree_gate(root, facts)?),
    };
    let cwd = match &worktree {
        Some(w) => w.clone(),
        None => facts.cwd.clone(),
    };
    let workspace = match &policy.sandbox.workspace {
        None => cwd.clone(),
        Some(w) => {
            let p = absolutize(w, &facts.cwd, facts.home.as_deref())?;
            std::fs::canonicalize(&p).map_err(|e| {
                Refusal::policy(format!(
                    "sandbox.workspace `{}`: {}",
                    w.display(),
                    crate::policy::io_words(&e)
                ))
            })?
        }
    };
    // Relative policy paths are relative to the worktree root when one is set.
    let base = worktree.clone().unwrap_or_else(|| workspace.clone());
    let home = facts.home.as_deref();
    let fs_pol = &policy.sandbox.filesystem;
    let held_read = policy.tool == Tool::Read;
    let access = if held_read {
        SandboxMode::ReadOnly
    } else {
        policy.sandbox.mode
    };

    let mut writable = Vec::new();
    match access {
        SandboxMode::ReadOnly => {}
        SandboxMode::DangerFullAccess => writable.push(PathBuf::from("/")),
        SandboxMode::WorkspaceWrite => {
            writable.push(workspace.clone());
            if let Some(w) = &worktree {
                writable.push(w.clone());
            }
            for p in &fs_pol.allow_write {
                // A missing extra root grants nothing; skipping it only narrows.
                if let Ok(c) = std::fs::canonicalize(absolutize(p, &base, home)?) {
                    writable.push(c);
                }
            }
            for t in [Some(PathBuf::from("/tmp")), facts.tmpdir.clone()]
                .into_iter()
                .flatten()
            {
                if let Ok(c) = std::fs::canonicalize(&t) {
                    writable.push(c);
                }
            }
        }
    }
    dedup_roots(&mut writable);

    let deny_read = rules(
        &fs_pol.deny_read,
        &base,
        home,
        "sandbox.filesystem.deny_read",
    )?;
    let allow_read = rules(
        &fs_pol.allow_read,
        &base,
        home,
        "sandbox.filesystem.allow_read",
    )?;
    let deny_write = rules(
        &fs_pol.deny_write,
        &base,
        home,
        "sandbox.filesystem.deny_write",
    )?;

    // The protected table and git's files; git's own grants (a linked
    // worktree's common dir) come with them, whatever protect_defaults says.
    let mut protected = Vec::new();
    if access == SandboxMode::WorkspaceWrite {
        let found = crate::protected::collect(&writable, home, env, fs_pol.protect_defaults)
            .map_err(Refusal::unavailable)?;
        writable.extend(found.grants);
        dedup_roots(&mut writable);
        protected = found.protected;
    }
    // The policy, the plan card and dcjail itself are never writable from inside.
    let mut own: Vec<PathBuf> = Vec::new();
    if let Some(p) = &policy.source {
        own.push(resolve_lenient(&absolutize(p, &facts.cwd, home)?));
    }
    if let Some(p) = &policy.plan.card {
        own.push(resolve_lenient(&absolutize(p, &base, home)?));
    }
    if let Some(p) = facts.exe.as_ref().filter(|_| !writable.is_empty()) {
        own.push(resolve_lenient(p));
    }
    for p in own {
        if writable.iter().any(|r| p.starts_with(r)) && !protected.contains(&p) {
            protected.push(p);
        }
    }

    let net_pol = &policy.sandbox.network;
    let net = NetPlan {
        mode: if held_read {
            NetMode::None
        } else {
            net_pol.mode
        },
        allow: parse_domains(&net_pol.allow_domains)?,
        deny: parse_domains(&net_pol.deny_domains)?,
        allow_unix_sockets: net_pol.allow_unix_sockets,
    };

    let plan = Plan {
        argv,
        cwd,
        workspace,
        worktree,
        mode: policy.mode,
        tool: policy.tool,
        sandboxed: policy.sandbox.enabled,
        backend: policy.sandbox.backend,
        fs: FsPlan {
            access,
            writable,
            deny_read,
            allow_read,
            deny_write,
            protected,
        },
        net,
        timeout: (!policy.sandbox.timeout.is_zero()).then_some(policy.sandbox.timeout),
        policy_file: policy.source.clone(),
        observe: false,
    };
    if plan.sandboxed {
        precheck(&plan, policy, &base, home)?;
    }
    Ok(plan)
}

/// Gate 6, first half: each declared path must be usable as the tool says.
fn precheck(plan: &Plan, policy: &Policy, base: &Path, home: Option<&Path>) -> Result<()> {
    for written in &policy.paths {
        let resolved = resolve_lenient(&absolutize(written, base, home)?);
        let (ok, what) = match policy.tool {
            Tool::Read => (plan.readable(&resolved), "readable"),
            Tool::Edit | Tool::Write => (plan.writable(&resolved), "writable"),
            Tool::Bash | Tool::Net => (true, ""),
        };
        if !ok {
            return Err(Refusal::new(
                Reason::SandboxDenied,
                Some(Gate::Sandbox),
                format!(
                    "`{}` is not {what} under the sandbox policy ({} call, {})",
                    written.display(),
                    policy.tool,
                    plan.fs.access
                ),
            ));
        }
    }
    Ok(())
}

/// Gate 5: the root must be an existing git worktree (a directory with a
/// `.git` directory or `.git` file); it becomes the cwd.
fn worktree_gate(root: &Path, facts: &Facts) -> Result<PathBuf> {
    let refuse = |why: String| {
        Refusal::new(
            Reason::PolicyError,
            Some(Gate::Worktree),
            format!("worktree.root `{}`: {why}", root.display()),
        )
    };
    let abs = absolutize(root, &facts.cwd, facts.home.as_deref())?;
    let canon = std::fs::canonicalize(&abs).map_err(|e| refuse(crate::policy::io_words(&e)))?;
    if !canon.is_dir() {
        return Err(refuse("not a directory".into()));
    }
    if std::fs::symlink_metadata(canon.join(".git")).is_err() {
        return Err(refuse("not a git worktree (no .git at its top)".into()));
    }
    Ok(canon)
}

/// Makes a policy path absolute: `~`/`~/x` from HOME, relative from `base`.
pub fn absolutize(p: &Path, base: &Path, home: Option<&Path>) -> Result<PathBuf> {
    let mut comps = p.components();
    if let Some(Component::Normal(first)) = comps.clone().next() {
        if first == "~" {
            comps.next();
            let home = home.ok_or_else(|| {
                Refusal::policy(format!("`{}` uses ~ but HOME is not set", p.display()))
            })?;
            return Ok(home.join(comps.as_path()));
        }
        if first.to_string_lossy().starts_with('~') {
            return Err(Refusal::policy(format!(
                "`{}`: only `~` and `~/…` are understood, not `~user`",
                p.display()
            )));
        }
    }
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    })
}

/// Canonical form of a path that may not exist: the longest existing
/// ancestor is canonicalized (symlinks first), the rest is normalized
/// lexically. Never fails: on a symlink loop the lexical form is kept, which
/// for a deny rule still covers what the caller wrote.
pub fn resolve_lenient(p: &Path) -> PathBuf {
    if let Ok(c) = std::fs::canonicalize(p) {
        return c;
    }
    let mut rest = Vec::new();
    let mut cur = p.to_path_buf();
    loop {
        match cur.file_name() {
            Some(name) => {
                rest.push(name.to_os_string());
                cur.pop();
                if let Ok(c) = std::fs::canonicalize(&cur) {
                    let mut out = c;
                    for n in rest.iter().rev() {
                        push_normal(&mut out, Path::new(n));
                    }
                    return out;
                }
            }
            None => return lexical(p),
        }
    }
}

fn push_normal(out: &mut PathBuf, p: &Path) {
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
}

fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    push_normal(&mut out, p);
    out
}

fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

fn rules(list: &[PathBuf], base: &Path, home: Option<&Path>, key: &str) -> Result<Vec<PathRule>> {
    let mut out = Vec::with_capacity(list.len());
    for p in list {
        let s = p.to_string_lossy();
        if is_glob(&s) {
            let s = s.into_owned();
            let pattern = if s.starts_with("**") || s.starts_with('/') {
                s.clone()
            } else if let Some(rest) = s.strip_prefix("~/") {
                let home = home.ok_or_else(|| {
                    Refusal::policy(format!("`{key}`: `{s}` uses ~ but HOME is not set"))
                })?;
                format!("{}/{rest}", globset::escape(&home.to_string_lossy()))
            } else {
                format!("{}/{s}", globset::escape(&base.to_string_lossy()))
            };
            let matcher = GlobBuilder::new(&pattern)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|e| Refusal::policy(format!("`{key}`: bad glob `{s}`: {}", e.kind())))?
                .compile_matcher();
            out.push(PathRule::Glob(Glob {
                pattern,
                written: s,
                matcher,
            }));
        } else {
            out.push(PathRule::Literal(resolve_lenient(&absolutize(
                p, base, home,
            )?)));
        }
    }
    Ok(out)
}

/// For a `.git` file (`gitdir: X`), the git dir it names and that dir's
/// `commondir`; empty when `.git` is a directory or absent.
pub fn git_dirs(dotgit: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(meta) = std::fs::symlink_metadata(dotgit) else {
        return out;
    };
    if !meta.is_file() {
        return out;
    }
    let Ok(text) = std::fs::read_to_string(dotgit) else {
        return out;
    };
    let Some(target) = text.lines().next().and_then(|l| l.strip_prefix("gitdir:")) else {
        return out;
    };
    let parent = dotgit.parent().unwrap_or(Path::new("/"));
    let gitdir = resolve_lenient(&parent.join(target.trim()));
    if let Ok(common) = std::fs::read_to_string(gitdir.join("commondir")) {
        let common = resolve_lenient(&gitdir.join(common.trim()));
        out.push(gitdir);
        out.push(common);
    } else {
        out.push(gitdir);
    }
    out
}

fn parse_domains(list: &[String]) -> Result<Vec<DomainRule>> {
    list.iter()
        .map(|d| DomainRule::parse(d).map_err(Refusal::policy))
        .collect()
}

/// Drops exact duplicates, keeping the order of first use. Nested roots stay:
/// each one's protected paths must be computed.
fn dedup_roots(roots: &mut Vec<PathBuf>) {
    let mut seen: Vec<PathBuf> = Vec::new();
    roots.retain(|r| {
        let dup = seen.contains(r);
        if !dup {
            seen.push(r.clone());
        }
        !dup
    });
}
