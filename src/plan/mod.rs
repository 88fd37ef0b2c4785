//! The enforcement plan: what must hold for this run, said once and
//! independently of any backend. Building it resolves paths (the only
//! filesystem reads here, all through `fs::Fs`: canonicalization, whether a
//! `.git` is there, and the protected-table audit), runs the
//! worktree gate and the `paths` pre-check of the sandbox gate. Backends only
//! read a `Plan`; they never go back to the policy.

use crate::error::{Error, Refusal, Result};
use crate::net::domain::DomainRule;
use crate::paths::{held_at, held_home};
use crate::policy::{BackendChoice, Mode, NetMode, Policy, SandboxMode, Tool};
use crate::protected::HostEnv;

pub mod caches;
mod facts;
mod fs;
mod storage;
#[cfg(test)]
mod tests;

pub use crate::paths::own_exe;
pub use facts::{Facts, StdFd, STD_NAMES, WALK_LIMIT_ENV};
pub use fs::{Fs, FsOf, MemFs, Node, RealFs, EXT4_MAGIC};
use globset::{GlobBuilder, GlobMatcher};
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

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
    /// Directories kept read-only by class inside a writable root that
    /// holds them, except the writable roots that lie strictly inside them:
    /// `$HOME`, when the workspace or an `allow_write` root is it or lies
    /// above it (a list of names never ends; every program reads
    /// configuration there).
    pub held: Vec<PathBuf>,
    /// Caches of the command's own, one directory per workspace, handed
    /// to the tools through their variables (`caches`).
    pub caches: Option<caches::Private>,
    /// The worktree tops of the repositories found at launch (with the
    /// protected table): in them and below them no `.git` can be made
    /// during the run, and no directory moved in from outside them.
    pub git_checkouts: Vec<PathBuf>,
}

#[derive(Clone, Debug)]
pub struct NetPlan {
    pub mode: NetMode,
    pub allow: Vec<DomainRule>,
    pub deny: Vec<DomainRule>,
    /// Unix sockets (or directories of them) the command may connect to
    /// besides those it binds: canonical where they exist, else their
    /// directory canonical, else as written made absolute.
    pub allow_unix_sockets: Vec<PathBuf>,
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
    /// What of dcjail's environment the command does not inherit.
    pub env: crate::policy::env::EnvRules,
    pub policy_file: Option<PathBuf>,
    /// Denials are recorded for a report (`crate::denials`): set by the
    /// caller of `build`, before a backend renders the plan.
    pub observe: bool,
    /// Where the broker writes the denial records (`inside::denial_wire`):
    /// set by the caller with `observe`, once the pipe exists; an input of
    /// the second stage's program (`backend::program::encode`).
    pub report_fd: Option<i32>,
    /// The facts the plan was built from: the backends read the caller's
    /// descriptors, `PATH`, `HOME`, ids and walk limit here, never from
    /// the process around them.
    pub facts: Facts,
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
            && self.held_at(path).is_none()
            && !self.fs.deny_write.iter().any(|r| r.covers(path))
            && !self.fs.protected.iter().any(|p| path.starts_with(p))
    }

    /// The held directory (`FsPlan::held`) that keeps `path` read-only: one
    /// holding it that is as deep as the innermost writable root holding it,
    /// or deeper. A writable root strictly inside it opens that root again.
    pub fn held_at(&self, path: &Path) -> Option<&Path> {
        held_at(&self.fs.held, &self.fs.writable, path)
    }
}

/// Builds the plan: worktree gate (5), path resolution, and the `paths`
/// pre-check of the sandbox gate (6). Backend choice comes after.
pub fn build(policy: &Policy, argv: Vec<OsString>, facts: &Facts) -> Result<Plan> {
    build_with(policy, argv, facts, &facts.host_env())
}

/// `build`, with the environment the host's programs see given (what
/// decides where git and the shells look for what they run).
pub fn build_with(
    policy: &Policy,
    argv: Vec<OsString>,
    facts: &Facts,
    env: &HostEnv,
) -> Result<Plan> {
    build_in(policy, argv, facts, env, &RealFs)
}

/// Where the run happens: the worktree (when one is set), the cwd, the
/// workspace, and the directory relative policy paths start from.
struct Places {
    worktree: Option<PathBuf>,
    cwd: PathBuf,
    workspace: PathBuf,
    base: PathBuf,
}

/// `build_with`, reading the filesystem only through `fs`.
pub fn build_in(
    policy: &Policy,
    argv: Vec<OsString>,
    facts: &Facts,
    env: &HostEnv,
    fs: &dyn Fs,
) -> Result<Plan> {
    let at = places(policy, facts, fs)?;
    if policy.sandbox.enabled {
        workspace_on_storage(policy, &at, facts, fs)?;
    }
    let home = facts.home.as_deref();
    let fs_pol = &policy.sandbox.filesystem;
    let held_read = policy.tool == Tool::Read;
    let access = if held_read {
        SandboxMode::ReadOnly
    } else {
        policy.sandbox.mode
    };
    let mut writable = writable_roots(access, &at, policy, facts, fs)?;
    let rule = |list: &[PathBuf], key: &str| rules(list, &at.base, home, key, fs);
    let deny_read = rule(&fs_pol.deny_read, "sandbox.filesystem.deny_read")?;
    let allow_read = rule(&fs_pol.allow_read, "sandbox.filesystem.allow_read")?;
    let deny_write = rule(&fs_pol.deny_write, "sandbox.filesystem.deny_write")?;
    let (protected, git_checkouts) =
        protected_paths(policy, access, &mut writable, &at, facts, env, fs)?;
    let held = match (access, home) {
        (SandboxMode::WorkspaceWrite, Some(h)) if policy.sandbox.filesystem.protect_defaults => {
            held_home(&writable, &resolve_lenient_in(fs, h))
        }
        _ => Vec::new(),
    };
    let caches = match (access, home) {
        (SandboxMode::WorkspaceWrite, Some(h)) if policy.sandbox.enabled => {
            caches::Private::for_workspace(&resolve_lenient_in(fs, h), &at.workspace)
        }
        _ => None,
    };
    if let Some(c) = &caches {
        writable.push(c.root.clone());
    }
    // What the held directory keeps read-only needs no entry of its own:
    // each one would cost a bwrap mount or a landlock refusal for nothing.
    let protected: Vec<PathBuf> = protected
        .into_iter()
        .filter(|p| held_at(&held, &writable, p).is_none())
        .collect();
    let git_checkouts: Vec<PathBuf> = git_checkouts
        .into_iter()
        .filter(|p| held_at(&held, &writable, p).is_none())
        .collect();
    let net_pol = &policy.sandbox.network;
    let net = NetPlan {
        mode: if held_read {
            NetMode::None
        } else {
            net_pol.mode
        },
        allow: parse_domains(&net_pol.allow_domains)?,
        deny: parse_domains(&net_pol.deny_domains)?,
        allow_unix_sockets: named_sockets(&net_pol.allow_unix_sockets, &at, facts, fs)?,
    };
    let plan = Plan {
        argv,
        cwd: at.cwd,
        workspace: at.workspace,
        worktree: at.worktree,
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
            held,
            caches,
            git_checkouts,
        },
        net,
        timeout: (!policy.sandbox.timeout.is_zero()).then_some(policy.sandbox.timeout),
        env: crate::policy::env::EnvRules::new(&policy.sandbox.env).map_err(Error::Env)?,
        policy_file: policy.source.clone(),
        observe: false,
        report_fd: None,
        facts: facts.clone(),
    };
    if plan.sandboxed {
        precheck(&plan, policy, &at.base, home, fs)?;
    }
    Ok(plan)
}

/// The worktree gate (5), then the cwd, the workspace and the base of
/// relative policy paths (the worktree root when one is set).
fn places(policy: &Policy, facts: &Facts, fs: &dyn Fs) -> Result<Places> {
    let worktree = match &policy.worktree.root {
        None => None,
        Some(root) => Some(worktree_gate(root, facts, fs)?),
    };
    let cwd = match &worktree {
        Some(w) => w.clone(),
        None => facts.cwd.clone(),
    };
    let workspace = match &policy.sandbox.workspace {
        None => cwd.clone(),
        Some(w) => {
            let p = absolutize(w, &facts.cwd, facts.home.as_deref())?;
            fs.canonicalize(&p).map_err(|e| Error::Workspace {
                written: w.clone(),
                why: crate::policy::io_words(&e),
            })?
        }
    };
    let base = worktree.clone().unwrap_or_else(|| workspace.clone());
    Ok(Places {
        worktree,
        cwd,
        workspace,
        base,
    })
}

/// The roots the command may write, canonical and without duplicates.
/// Each one must be storage, not a kernel interface (`storage`): refused,
/// naming the key and the path as written, when the sandbox is on.
fn writable_roots(
    access: SandboxMode,
    at: &Places,
    policy: &Policy,
    facts: &Facts,
    fs: &dyn Fs,
) -> Result<Vec<PathBuf>> {
    let fs_pol = &policy.sandbox.filesystem;
    let mut writable = Vec::new();
    let push = |writable: &mut Vec<PathBuf>, key, written: &Path, c: PathBuf| -> Result<()> {
        if policy.sandbox.enabled {
            storage_only(fs, key, written, &c)?;
        }
        writable.push(c);
        Ok(())
    };
    match access {
        SandboxMode::ReadOnly => {}
        SandboxMode::DangerFullAccess => writable.push(PathBuf::from("/")),
        SandboxMode::WorkspaceWrite => {
            // Checked by `workspace_on_storage` already.
            writable.push(at.workspace.clone());
            if let Some(w) = &at.worktree {
                writable.push(w.clone());
            }
            for p in &fs_pol.allow_write {
                // A missing extra root grants nothing; skipping it only narrows.
                let abs = absolutize(p, &at.base, facts.home.as_deref())?;
                if let Ok(c) = fs.canonicalize(&abs) {
                    push(&mut writable, "sandbox.filesystem.allow_write", p, c)?;
                }
            }
            let tmp = PathBuf::from("/tmp");
            for (key, t) in [("/tmp", Some(&tmp)), ("TMPDIR", facts.tmpdir.as_ref())] {
                if let Some(t) = t {
                    if let Ok(c) = fs.canonicalize(t) {
                        push(&mut writable, key, t, c)?;
                    }
                }
            }
        }
    }
    dedup_roots(&mut writable);
    Ok(writable)
}

/// Refuses `canonical` (written as `written` under `key`) when it lies on
/// a kernel interface filesystem rather than storage (`storage`).
fn storage_only(fs: &dyn Fs, key: &'static str, written: &Path, canonical: &Path) -> Result<()> {
    match storage::pseudo(fs, canonical) {
        None => Ok(()),
        Some(kind) => Err(Error::NotStorage {
            key,
            written: written.to_path_buf(),
            resolved: canonical.to_path_buf(),
            kind,
        }
        .into()),
    }
}

/// The workspace and the worktree root must be storage in every access
/// mode: a read-only run there is refused too, as the workspace names
/// where the work is, and `/proc` is no such place.
fn workspace_on_storage(policy: &Policy, at: &Places, facts: &Facts, fs: &dyn Fs) -> Result<()> {
    match &policy.sandbox.workspace {
        Some(w) => storage_only(fs, "sandbox.workspace", w, &at.workspace)?,
        None => storage_only(
            fs,
            "the workspace (the current directory)",
            &facts.cwd,
            &at.workspace,
        )?,
    }
    if let (Some(w), Some(root)) = (&at.worktree, &policy.worktree.root) {
        storage_only(fs, "worktree.root", root, w)?;
    }
    Ok(())
}

/// The protected table and git's files (with git's own grants, whatever
/// `protect_defaults` says, added to `writable`), and the policy, the plan
/// card and dcjail itself, which are never writable from inside; with the
/// worktree tops of the repositories found.
fn protected_paths(
    policy: &Policy,
    access: SandboxMode,
    writable: &mut Vec<PathBuf>,
    at: &Places,
    facts: &Facts,
    env: &HostEnv,
    fs: &dyn Fs,
) -> Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let home = facts.home.as_deref();
    let mut protected = Vec::new();
    let mut checkouts = Vec::new();
    if access == SandboxMode::WorkspaceWrite {
        let protect = policy.sandbox.filesystem.protect_defaults;
        let found = fs
            .protected(writable, home, env, protect)
            .map_err(Refusal::from)?;
        writable.extend(found.grants);
        dedup_roots(writable);
        protected = found.protected;
        checkouts = found.checkouts;
    }
    let mut own: Vec<PathBuf> = Vec::new();
    if let Some(p) = &policy.source {
        own.push(resolve_lenient_in(fs, &absolutize(p, &facts.cwd, home)?));
    }
    if let Some(p) = &policy.plan.card {
        own.push(resolve_lenient_in(fs, &absolutize(p, &at.base, home)?));
    }
    if let Some(p) = facts.exe.as_ref().filter(|_| !writable.is_empty()) {
        own.push(resolve_lenient_in(fs, p));
    }
    for p in own {
        if writable.iter().any(|r| p.starts_with(r)) && !protected.contains(&p) {
            protected.push(p);
        }
    }
    Ok((protected, checkouts))
}

/// Gate 6, first half: each declared path must be usable as the tool says.
fn precheck(
    plan: &Plan,
    policy: &Policy,
    base: &Path,
    home: Option<&Path>,
    fs: &dyn Fs,
) -> Result<()> {
    for written in &policy.paths {
        let resolved = resolve_lenient_in(fs, &absolutize(written, base, home)?);
        let (ok, what) = match policy.tool {
            Tool::Read => (plan.readable(&resolved), "readable"),
            Tool::Edit | Tool::Write => (plan.writable(&resolved), "writable"),
            Tool::Bash | Tool::Net => (true, ""),
        };
        if !ok {
            return Err(Error::NotUsable {
                path: written.clone(),
                what,
                call: format!("{} call, {}", policy.tool, plan.fs.access),
            }
            .into());
        }
    }
    Ok(())
}

/// Gate 5: the root must be an existing git worktree (a directory with a
/// `.git` directory or `.git` file); it becomes the cwd.
fn worktree_gate(root: &Path, facts: &Facts, fs: &dyn Fs) -> Result<PathBuf> {
    let refuse = |why: String| Error::WorktreeRoot {
        root: root.to_path_buf(),
        why,
    };
    let abs = absolutize(root, &facts.cwd, facts.home.as_deref())?;
    let canon = fs
        .canonicalize(&abs)
        .map_err(|e| refuse(crate::policy::io_words(&e)))?;
    if !fs.is_dir(&canon) {
        return Err(refuse("not a directory".into()).into());
    }
    if !fs.exists_nofollow(&canon.join(".git")) {
        return Err(refuse("not a git worktree (no .git at its top)".into()).into());
    }
    Ok(canon)
}

/// Makes a policy path absolute: `~`/`~/x` from HOME, relative from `base`.
/// The named unix sockets, each made absolute and canonical as far as it
/// exists: a socket may appear only once its server starts.
fn named_sockets(
    named: &[PathBuf],
    at: &Places,
    facts: &Facts,
    fs: &dyn Fs,
) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in named {
        let abs = absolutize(p, &at.base, facts.home.as_deref())?;
        let c = crate::paths::resolve_lenient_with(|q| fs.canonicalize(q), &abs);
        if !out.contains(&c) {
            out.push(c);
        }
    }
    Ok(out)
}

pub fn absolutize(p: &Path, base: &Path, home: Option<&Path>) -> Result<PathBuf> {
    let mut comps = p.components();
    if let Some(Component::Normal(first)) = comps.clone().next() {
        if first == "~" {
            comps.next();
            let home = home.ok_or_else(|| Error::HomeUnset {
                what: format!("`{}`", p.display()),
            })?;
            return Ok(home.join(comps.as_path()));
        }
        if first.to_string_lossy().starts_with('~') {
            return Err(Error::TildeUser(p.to_path_buf()).into());
        }
    }
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    })
}

pub use crate::paths::resolve_lenient;

/// `resolve_lenient` on `fs`.
pub fn resolve_lenient_in(fs: &dyn Fs, p: &Path) -> PathBuf {
    crate::paths::resolve_lenient_with(|p| fs.canonicalize(p), p)
}

fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// Where a written path rule starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// `/…`
    Root,
    /// `~/…` (or `~` alone)
    Home,
    /// Relative: the workspace (the worktree root when one is set).
    Base,
    /// `**/…` written without `./`: under every root the glob walk looks in.
    Anywhere,
}

/// A path rule as written, normalised so that it means what it reads as:
/// `.` components and repeated or trailing `/` dropped (`./x`, `x/./y`,
/// `x//y`, `x/`, `x/.` are `x`, `x/y`), and a trailing `/**` dropped when
/// something precedes it (`x/**` is `x`: a rule on a directory covers the
/// directory and everything below it, including what is created there
/// later). Refused, naming `key` and the pattern: an empty pattern, and
/// `..` in a glob (a glob is matched against resolved paths, where no `..`
/// is left; a literal path with `..` is resolved instead).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    pub anchor: Anchor,
    /// The components after the anchor, none of them empty or `.`.
    pub parts: Vec<String>,
}

impl Written {
    pub fn parse(written: &str, key: &str) -> Result<Written> {
        if written.is_empty() {
            return Err(Refusal::policy(format!(
                "`{key}`: an empty path names nothing; write `.` for the workspace, or remove it"
            )));
        }
        let (anchor, rest) = if let Some(r) = written.strip_prefix('/') {
            (Anchor::Root, r)
        } else if written == "~" {
            (Anchor::Home, "")
        } else if let Some(r) = written.strip_prefix("~/") {
            (Anchor::Home, r)
        } else if written.starts_with("**") {
            (Anchor::Anywhere, written)
        } else {
            (Anchor::Base, written)
        };
        let mut parts: Vec<String> = rest
            .split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .map(str::to_string)
            .collect();
        let glob = is_glob(written);
        if glob && parts.iter().any(|c| c == "..") {
            return Err(Refusal::policy(format!(
                "`{key}`: `{}`: a glob cannot hold `..` (it is matched against resolved paths); write the path without it",
                crate::error::one_line(written)
            )));
        }
        if glob {
            while parts.len() > 1 && parts.last().is_some_and(|c| c == "**") {
                parts.pop();
            }
            if anchor != Anchor::Anywhere && parts.len() == 1 && parts[0] == "**" {
                parts.clear();
            }
        }
        Ok(Written { anchor, parts })
    }

    /// The rest after the anchor, `/`-joined.
    pub fn rest(&self) -> String {
        self.parts.join("/")
    }

    pub fn is_glob(&self) -> bool {
        self.parts.iter().any(|c| is_glob(c))
    }

    /// The normalised rule as it would be written again.
    pub fn text(&self) -> String {
        let rest = self.rest();
        match self.anchor {
            Anchor::Root => format!("/{rest}"),
            Anchor::Home if rest.is_empty() => "~".to_string(),
            Anchor::Home => format!("~/{rest}"),
            Anchor::Base if rest.is_empty() => ".".to_string(),
            Anchor::Base if rest.starts_with("**") => format!("./{rest}"),
            Anchor::Base | Anchor::Anywhere => rest,
        }
    }
}

fn rules(
    list: &[PathBuf],
    base: &Path,
    home: Option<&Path>,
    key: &str,
    fs: &dyn Fs,
) -> Result<Vec<PathRule>> {
    let mut out = Vec::with_capacity(list.len());
    for p in list {
        let s = p.to_string_lossy().into_owned();
        let w = Written::parse(&s, key)?;
        let rest = w.rest();
        if w.is_glob() {
            let under = |dir: &Path| {
                let dir = globset::escape(&dir.to_string_lossy());
                format!("{}/{rest}", dir.trim_end_matches('/'))
            };
            let pattern = match w.anchor {
                Anchor::Anywhere => rest.clone(),
                Anchor::Root => format!("/{rest}"),
                Anchor::Home => under(home.ok_or_else(|| Error::HomeUnset {
                    what: format!("`{key}`: `{s}`"),
                })?),
                Anchor::Base => under(base),
            };
            let matcher = GlobBuilder::new(&pattern)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|e| Error::BadGlob {
                    key: key.to_string(),
                    glob: s.clone(),
                    why: e.kind().to_string(),
                })?
                .compile_matcher();
            out.push(PathRule::Glob(Glob {
                pattern,
                written: s,
                matcher,
            }));
        } else {
            out.push(PathRule::Literal(resolve_lenient_in(
                fs,
                &absolutize(Path::new(&w.text()), base, home)?,
            )));
        }
    }
    Ok(out)
}

/// For a `.git` file (`gitdir: X`), the git dir it names and that dir's
/// `commondir`; empty when `.git` is a directory or absent.
pub fn git_dirs(dotgit: &Path) -> Vec<PathBuf> {
    git_dirs_in(&RealFs, dotgit)
}

/// `git_dirs` on `fs`.
pub fn git_dirs_in(fs: &dyn Fs, dotgit: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if !fs.is_file_nofollow(dotgit) {
        return out;
    }
    let Ok(text) = fs.read_text(dotgit) else {
        return out;
    };
    let Some(target) = text.lines().next().and_then(|l| l.strip_prefix("gitdir:")) else {
        return out;
    };
    let parent = dotgit.parent().unwrap_or(Path::new("/"));
    let gitdir = resolve_lenient_in(fs, &parent.join(target.trim()));
    if let Ok(common) = fs.read_text(&gitdir.join("commondir")) {
        let common = resolve_lenient_in(fs, &gitdir.join(common.trim()));
        out.push(gitdir);
        out.push(common);
    } else {
        out.push(gitdir);
    }
    out
}

fn parse_domains(list: &[String]) -> Result<Vec<DomainRule>> {
    list.iter()
        .map(|d| DomainRule::parse(d).map_err(|e| Error::Domain(e).into()))
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
