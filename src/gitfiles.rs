//! git's files: every file through which git finds its configuration, hooks
//! or another git dir, reached from the writable roots — the root's `.git`,
//! the git dir a `.git` file names and its common dir, the admin dirs of
//! linked worktrees, submodule git dirs (recursively), and what the
//! configuration itself points at (includes, `core.hooksPath`, programs).
//! Also the git dirs a linked worktree or a submodule checkout needs
//! writable, so that git keeps working there.
//!
//! Owns: that audit. It only reads: `lstat`, `readdir` and small files,
//! opened without blocking — a repository's own files only when they belong
//! to the caller or root (git itself refuses another user's repository),
//! included and global configuration whoever owns it (git reads it). Must
//! never: write, panic, or let another user's repository decide what is
//! protected; its work is bounded, and past the bound it refuses rather
//! than protect less.

mod find;

use crate::error::Error;
use crate::gitconfig::{self, Entry};
use crate::paths::resolve_lenient;
use crate::paths::{inside, HostEnv, PathSet, RealPaths};
use std::collections::HashSet;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

/// What a common (or main) git dir holds that git reads to find config,
/// hooks or objects.
const COMMON: &[&str] = &[
    "config",
    "config.worktree",
    "hooks",
    "commondir",
    "objects/info/alternates",
    "objects/info/http-alternates",
];

/// What a linked worktree's admin dir holds that git follows.
const ADMIN: &[&str] = &["commondir", "gitdir", "config.worktree"];

/// A main checkout's own state, kept as it was when a linked worktree gets
/// the common dir writable: git in the linked worktree never writes it.
const MAIN_STATE: &[&str] = &["HEAD", "index", "rebase-merge", "rebase-apply", "sequencer"];

/// Settings whose value is a program git runs (its first word).
const PROGRAMS: &[(&str, &str)] = &[
    ("core", "sshcommand"),
    ("core", "editor"),
    ("core", "pager"),
    ("core", "askpass"),
    ("core", "gitproxy"),
    ("sequence", "editor"),
    ("diff", "external"),
    ("credential", "helper"),
    ("gpg", "program"),
    ("interactive", "difffilter"),
    ("uploadpack", "packobjectshook"),
    ("sendemail", "smtpserver"),
    ("sendemail", "tocmd"),
    ("sendemail", "cccmd"),
    ("sendemail", "headercmd"),
];

/// The same, with a subsection (`diff.<driver>.textconv`, …).
const SUB_PROGRAMS: &[(&str, &str)] = &[
    ("diff", "textconv"),
    ("diff", "command"),
    ("difftool", "cmd"),
    ("difftool", "path"),
    ("mergetool", "cmd"),
    ("mergetool", "path"),
    ("filter", "clean"),
    ("filter", "smudge"),
    ("filter", "process"),
    ("merge", "driver"),
    ("credential", "helper"),
    ("gpg", "program"),
    ("gpg", "defaultkeycommand"),
    ("browser", "cmd"),
    ("browser", "path"),
    ("man", "cmd"),
    ("man", "path"),
    ("remote", "uploadpack"),
    ("remote", "receivepack"),
    ("tar", "command"),
    ("trailer", "command"),
    ("trailer", "cmd"),
    ("lfs", "path"),
];

/// Bounds: nesting of git dirs (submodules of submodules), of includes
/// (git's own limit), and the total work of one launch.
const MAX_DEPTH: usize = 8;
const MAX_INCLUDE_DEPTH: usize = 10;
const MAX_WORK: usize = 4096;
const MAX_CONFIG_BYTES: u64 = 4 << 20;
const MAX_POINTER_BYTES: u64 = 4096;

/// Whose files are read: a repository's own files only when they are the
/// caller's or root's (git refuses another user's repository); included
/// and global files whoever owns them, as git reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    Ours,
    Any,
}

/// A setting of the global or system config that is relative to the
/// repository it is used in: resolved against each worktree found.
#[derive(Clone, Debug)]
enum Relative {
    HooksDir(Vec<u8>),
    Program(Vec<u8>),
}

pub struct Audit<'a> {
    /// What the class rule keeps read-only (the home directory): not
    /// walked for repositories.
    held: Vec<PathBuf>,
    roots: &'a [PathBuf],
    home: Option<&'a Path>,
    env: &'a HostEnv,
    protect: bool,
    euid: u32,
    out: PathSet,
    grants: Vec<PathBuf>,
    /// Git dirs audited, and whether as used by a checkout in a root.
    gitdirs: std::collections::HashMap<PathBuf, bool>,
    worktrees: HashSet<PathBuf>,
    /// The worktrees that hold a `.git`: where a repository lives.
    checkouts: Vec<PathBuf>,
    files: HashSet<(PathBuf, Option<PathBuf>)>,
    global: Vec<Relative>,
    work: usize,
    real: RealPaths,
    commondirs: std::collections::HashMap<std::ffi::OsString, Option<PathBuf>>,
    own_dirs: std::collections::HashMap<std::ffi::OsString, bool>,
    /// Auditing the repositories the walk found below the roots: none of
    /// them gets its git dir granted (a linked worktree nested in the
    /// workspace must not make its main repository writable).
    nested: bool,
}

impl<'a> Audit<'a> {
    pub fn new(
        roots: &'a [PathBuf],
        home: Option<&'a Path>,
        env: &'a HostEnv,
        protect: bool,
    ) -> Audit<'a> {
        Audit {
            held: Vec::new(),
            roots,
            home,
            env,
            protect,
            // SAFETY: geteuid never fails.
            euid: unsafe { libc::geteuid() },
            out: PathSet::default(),
            grants: Vec::new(),
            gitdirs: Default::default(),
            worktrees: HashSet::new(),
            checkouts: Vec::new(),
            files: HashSet::new(),
            global: Vec::new(),
            work: 0,
            real: RealPaths::default(),
            commondirs: Default::default(),
            own_dirs: Default::default(),
            nested: false,
        }
    }

    /// The directories the class rule keeps read-only (`paths::held_home`):
    /// the repository walk skips them.
    pub fn skip_held(&mut self, held: Vec<PathBuf>) {
        self.held = held;
    }

    pub fn run(&mut self) -> Result<(), Error> {
        if self.protect {
            self.global_files()?;
        }
        for r in self.roots {
            self.worktree(r, 0)?;
        }
        if self.protect {
            self.nested()?;
        }
        Ok(())
    }

    /// Every repository below the roots, at any depth, audited like the
    /// roots' own: checkouts first (their settings are relative to them),
    /// then the git dirs no checkout led to (bare repositories, module
    /// git dirs, a `.git` a checkout's settings moved).
    fn nested(&mut self) -> Result<(), Error> {
        let limit = self.env.walk_limit.unwrap_or(find::DEFAULT_LIMIT);
        let found = find::find(self.roots, &self.held, self.euid, limit)?;
        self.nested = true;
        for wt in &found.checkouts {
            self.worktree(wt, 1)?;
        }
        for g in &found.gitdirs {
            self.gitdir(g, None, 1, true)?;
        }
        self.nested = false;
        Ok(())
    }

    /// The protected paths found (not yet filtered by the roots), the
    /// grants, and the worktree tops of the repositories found.
    pub fn finish(self) -> (Vec<PathBuf>, Vec<PathBuf>, Vec<PathBuf>) {
        (self.out.into_vec(), self.grants, self.checkouts)
    }

    fn spend(&mut self, at: &Path) -> Result<(), Error> {
        self.work += 1;
        if self.work > MAX_WORK {
            return Err(Error::GitTooLarge {
                at: at.to_path_buf(),
                max_work: MAX_WORK,
            });
        }
        Ok(())
    }

    fn add(&mut self, p: PathBuf) {
        if self.protect {
            self.out.add(p);
        }
    }

    /// `p` as named (its directory resolved, its own name kept, so a
    /// symlink there is seen as one) and, when that is a symlink, where it
    /// points.
    fn add_real(&mut self, p: &Path) {
        let named = self.named(p);
        let target = self.real.of(p);
        if target != named {
            self.add(target);
        }
        self.add(named);
    }

    /// `p` with its directory resolved and its own name kept.
    fn named(&mut self, p: &Path) -> PathBuf {
        match (p.parent(), p.file_name()) {
            (Some(dir), Some(name)) => self.real.of(dir).join(name),
            _ => self.real.of(p),
        }
    }

    fn inside_root(&self, p: &Path) -> bool {
        self.roots.iter().any(|r| inside(p, r))
    }

    fn trusted(&self, m: &std::fs::Metadata) -> bool {
        m.uid() == self.euid || m.uid() == 0
    }

    /// A small regular file of ours or root's, opened without blocking (a
    /// FIFO planted there cannot stall the launch).
    fn read_small(&self, p: &Path, max: u64) -> Option<Vec<u8>> {
        self.read(p, max, Owner::Ours).ok().flatten()
    }

    /// A regular file, opened without blocking; `None` when it is missing,
    /// not a regular file or not of the owner asked for, an error when it is
    /// larger than `max` (it would be read by git, and cannot be audited).
    fn read(&self, p: &Path, max: u64, owner: Owner) -> Result<Option<Vec<u8>>, Error> {
        let Ok(f) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(p)
        else {
            return Ok(None);
        };
        let Ok(m) = f.metadata() else {
            return Ok(None);
        };
        if !m.is_file() || (owner == Owner::Ours && !self.trusted(&m)) {
            return Ok(None);
        }
        if m.len() > max {
            return Err(Error::GitFileTooLarge {
                path: p.to_path_buf(),
                max_mib: max >> 20,
            });
        }
        let mut buf = Vec::with_capacity(usize::try_from(m.len()).unwrap_or(0) + 1);
        if f.take(max).read_to_end(&mut buf).is_err() {
            return Ok(None);
        }
        Ok(Some(buf))
    }

    /// A real directory (not a symlink) of ours or root's; asked once per
    /// directory.
    fn own_dir(&mut self, p: &Path) -> bool {
        if let Some(&yes) = self.own_dirs.get(p.as_os_str()) {
            return yes;
        }
        let yes = std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir() && self.trusted(&m));
        self.own_dirs.insert(p.as_os_str().to_os_string(), yes);
        yes
    }

    /// The entries of an own directory, as names.
    fn list(&mut self, dir: &Path) -> Result<Vec<PathBuf>, Error> {
        let mut out = Vec::new();
        if !self.own_dir(dir) {
            return Ok(out);
        }
        let Ok(rd) = std::fs::read_dir(dir) else {
            return Ok(out);
        };
        for e in rd.flatten() {
            self.spend(dir)?;
            out.push(dir.join(e.file_name()));
        }
        Ok(out)
    }

    /// The worktree at `wt`: its `.git`, whatever that is, its submodules,
    /// and the global settings relative to it.
    fn worktree(&mut self, wt: &Path, depth: usize) -> Result<(), Error> {
        if depth > MAX_DEPTH || !self.worktrees.insert(wt.to_path_buf()) {
            return Ok(());
        }
        self.spend(wt)?;
        let near = self.inside_root(wt);
        let dotgit = wt.join(".git");
        let meta = std::fs::symlink_metadata(&dotgit);
        if !self.protect {
            // Only the grants: a `.git` file of ours naming a git dir.
            if meta.is_ok_and(|m| m.is_file() && self.trusted(&m)) {
                if let Some(g) = self.gitfile(&dotgit) {
                    self.grant(wt, &dotgit, &g);
                }
            }
            return Ok(());
        }
        // Submodule git dirs live in the worktree's own git dir (`modules`
        // is per worktree in git, not in the common dir).
        let mut own = None;
        if meta.is_ok() {
            self.checkouts.push(wt.to_path_buf());
        }
        match meta {
            Err(_) => {
                if depth == 0 {
                    self.enclosing(wt)?;
                }
                self.add(dotgit);
            }
            Ok(m) if m.is_file() => {
                self.add(dotgit.clone());
                if self.trusted(&m) {
                    if let Some(g) = self.gitfile(&dotgit) {
                        self.gitdir(&g, Some(wt), depth, near)?;
                        self.grant(wt, &dotgit, &g);
                        own = Some(g);
                    }
                }
            }
            Ok(m) if m.is_dir() && !m.file_type().is_symlink() => {
                self.gitdir(&dotgit, Some(wt), depth, near)?;
                own = Some(dotgit);
            }
            // A symlink (followed by git, refused by the mounts) or
            // something else: the name itself is what can be held.
            Ok(_) => self.add(dotgit),
        }
        self.submodules(wt, own.as_deref(), depth)?;
        for r in self.global.clone() {
            self.relative(&r, wt);
        }
        Ok(())
    }

    /// A root without `.git` may lie inside a repository: git finds it by
    /// walking up, and its settings may point into the root.
    fn enclosing(&mut self, wt: &Path) -> Result<(), Error> {
        for a in wt.ancestors().skip(1).take(64) {
            if std::fs::symlink_metadata(a.join(".git")).is_ok() {
                return self.worktree(a, 1);
            }
        }
        Ok(())
    }

    /// The git dir a `.git` file names (`gitdir: X`, relative to the file).
    fn gitfile(&mut self, dotgit: &Path) -> Option<PathBuf> {
        let text = self.read_small(dotgit, MAX_POINTER_BYTES)?;
        let line = text.split(|c| *c == b'\n').next()?;
        let target = line.strip_prefix(b"gitdir:")?;
        let target = trim(target);
        if target.is_empty() {
            return None;
        }
        let parent = dotgit.parent().unwrap_or(Path::new("/"));
        let target = parent.join(OsStr::from_bytes(target));
        Some(self.real.of(&target))
    }

    /// The common dir `g/commondir` names, if it has one.
    fn commondir(&mut self, g: &Path) -> Option<PathBuf> {
        if let Some(c) = self.commondirs.get(g.as_os_str()) {
            return c.clone();
        }
        let c = self
            .read_small(&g.join("commondir"), MAX_POINTER_BYTES)
            .map(|text| trim(&text).to_vec())
            .filter(|t| !t.is_empty())
            .map(|t| self.real.of(&g.join(OsStr::from_bytes(&t))));
        self.commondirs
            .insert(g.as_os_str().to_os_string(), c.clone());
        c
    }

    /// One git dir: its protected entries, its configuration, and the git
    /// dirs it leads to. Every entry is protected
    /// whatever `commondir` says now: a `commondir` that names nothing
    /// usable today may be fixed (or removed) tomorrow, and then git reads
    /// this dir's own config and hooks again. `near`: a checkout inside a
    /// writable root uses it, so its module git dirs matter too.
    fn gitdir(
        &mut self,
        g: &Path,
        wt: Option<&Path>,
        depth: usize,
        near: bool,
    ) -> Result<(), Error> {
        // Seen already, and as closely: done. A dir first reached from far
        // away (an enclosing repository) is done again when a checkout
        // inside a root turns out to use it.
        match self.gitdirs.get(g) {
            Some(&was_near) if was_near || !near => return Ok(()),
            _ => {}
        }
        if depth > MAX_DEPTH {
            return Ok(());
        }
        self.gitdirs.insert(g.to_path_buf(), near);
        self.spend(g)?;
        for n in COMMON.iter().chain(ADMIN) {
            self.add(g.join(n));
        }
        if !self.own_dir(g) {
            return Ok(());
        }
        let common = self.commondir(g).filter(|c| c != g);
        let entries = self.load(&g.join("config"), Owner::Ours)?;
        let wt = core_worktree(&entries, g).or_else(|| wt.map(Path::to_path_buf));
        self.settings(&entries, &g.join("config"), wt.as_deref(), 0)?;
        self.config_file(&g.join("config.worktree"), wt.as_deref(), 0, Owner::Ours)?;
        self.linked(g, depth)?;
        if near {
            self.modules(g, depth)?;
        }
        if let Some(c) = common {
            let main = default_worktree(&c);
            self.gitdir(&c, main.as_deref(), depth + 1, near)?;
        }
        Ok(())
    }

    /// Every linked worktree's admin dir, and the worktree it names when that
    /// lies inside a writable root (elsewhere nothing of it is writable).
    fn linked(&mut self, c: &Path, depth: usize) -> Result<(), Error> {
        for a in self.list(&c.join("worktrees"))? {
            for n in ADMIN {
                self.add(a.join(n));
            }
            if !self.own_dir(&a) {
                continue;
            }
            // git writes this pointer as a real, absolute path: normalized
            // without a syscall, it is compared with the roots as it is.
            let back = self
                .read_small(&a.join("gitdir"), MAX_POINTER_BYTES)
                .map(|t| normalize(&a.join(OsStr::from_bytes(trim(&t)))));
            let wt = back
                .as_deref()
                .and_then(Path::parent)
                .map(Path::to_path_buf);
            if let Some(dotgit) = &back {
                self.add(dotgit.clone());
            }
            self.config_file(&a.join("config.worktree"), wt.as_deref(), 0, Owner::Ours)?;
            if let Some(wt) = wt.filter(|w| self.inside_root(w)) {
                self.worktree(&wt, depth + 1)?;
            }
        }
        Ok(())
    }

    /// The module git dirs under `c/modules`, found by walking (a module
    /// name may hold slashes), each audited as a git dir.
    fn modules(&mut self, c: &Path, depth: usize) -> Result<(), Error> {
        let mut stack = vec![(c.join("modules"), 0usize)];
        while let Some((dir, level)) = stack.pop() {
            for m in self.list(&dir)? {
                if !self.own_dir(&m) {
                    continue;
                }
                let is_gitdir = std::fs::symlink_metadata(m.join("HEAD")).is_ok();
                if is_gitdir {
                    self.gitdir(&m, None, depth + 1, true)?;
                } else if level < 4 {
                    stack.push((m, level + 1));
                }
            }
        }
        Ok(())
    }

    /// The submodules `.gitmodules` names: their git dirs (also when not
    /// cloned yet, so none can be planted), their `.git` and `.gitmodules`,
    /// and each checkout as a worktree.
    fn submodules(&mut self, wt: &Path, gitdir: Option<&Path>, depth: usize) -> Result<(), Error> {
        let entries = self.load(&wt.join(".gitmodules"), Owner::Ours)?;
        for e in entries.iter().filter(|e| e.section == "submodule") {
            let (Some(name), Some(value)) = (&e.sub, &e.value) else {
                continue;
            };
            if e.name != "path" {
                continue;
            }
            let Some(rel) = safe_rel(value) else { continue };
            let sub = wt.join(rel);
            let near = self.inside_root(&sub);
            if let (Some(c), Some(name)) = (gitdir, safe_rel(name)) {
                self.gitdir(&c.join("modules").join(name), None, depth + 1, near)?;
            }
            self.add(sub.join(".git"));
            self.add(sub.join(".gitmodules"));
            if self.own_dir(&sub) {
                self.worktree(&sub, depth + 1)?;
            }
        }
        Ok(())
    }

    /// The global and system configuration files, wherever they are.
    fn global_files(&mut self) -> Result<(), Error> {
        let mut files = Vec::new();
        if let Some(g) = &self.env.git_config_global {
            files.push(g.clone());
        }
        match (&self.env.xdg_config_home, self.home) {
            (Some(x), _) => files.push(x.join("git/config")),
            (None, Some(h)) => files.push(h.join(".config/git/config")),
            _ => {}
        }
        if let Some(h) = self.home {
            files.push(h.join(".gitconfig"));
        }
        files.push(
            self.env
                .git_config_system
                .clone()
                .unwrap_or_else(|| PathBuf::from("/etc/gitconfig")),
        );
        for f in files {
            self.add_real(&f);
            let entries = self.load(&f, Owner::Any)?;
            self.settings_global(&entries, &f, 0)?;
        }
        Ok(())
    }

    /// A configuration file's entries: none when it is missing or git would
    /// refuse it (then git reads nothing from it either).
    fn load(&self, f: &Path, owner: Owner) -> Result<Vec<Entry>, Error> {
        Ok(self
            .read(f, MAX_CONFIG_BYTES, owner)?
            .and_then(|t| gitconfig::parse(&t))
            .unwrap_or_default())
    }

    fn config_file(
        &mut self,
        f: &Path,
        wt: Option<&Path>,
        depth: usize,
        owner: Owner,
    ) -> Result<(), Error> {
        if depth > MAX_INCLUDE_DEPTH
            || !self
                .files
                .insert((f.to_path_buf(), wt.map(Path::to_path_buf)))
        {
            return Ok(());
        }
        self.spend(f)?;
        let entries = self.load(f, owner)?;
        self.settings(&entries, f, wt, depth)
    }

    /// What one repository configuration file points at. Relative
    /// `core.hooksPath` and programs are relative to the worktree's top,
    /// where git runs them; includes to the including file.
    fn settings(
        &mut self,
        entries: &[Entry],
        file: &Path,
        wt: Option<&Path>,
        depth: usize,
    ) -> Result<(), Error> {
        for e in entries {
            let Some(v) = e.value.as_deref().filter(|v| !v.is_empty()) else {
                continue;
            };
            if is_include(e) {
                if let Some(t) = self.path_value(v, file.parent()) {
                    let t = self.named(&t);
                    self.add_real(&t);
                    // git reads an included file whoever owns it.
                    self.config_file(&t, wt, depth + 1, Owner::Any)?;
                }
            } else if e.is("core", "hookspath") {
                if let Some(d) = self.path_value(v, wt) {
                    self.hooks_dir(&d);
                }
            } else if e.is("init", "templatedir") {
                if let Some(d) = self.path_value(v, None) {
                    self.add_real(&d);
                }
            } else if let Some(w) = program(e, v) {
                if let Some(p) = self.path_value(&w, wt) {
                    self.add_real(&p);
                }
            }
        }
        Ok(())
    }

    /// The same for a global or system file: what is relative to the
    /// repository is kept for every worktree found.
    fn settings_global(
        &mut self,
        entries: &[Entry],
        file: &Path,
        depth: usize,
    ) -> Result<(), Error> {
        for e in entries {
            let Some(v) = e.value.as_deref().filter(|v| !v.is_empty()) else {
                continue;
            };
            if is_include(e) {
                if let Some(t) = self.path_value(v, file.parent()) {
                    let t = self.named(&t);
                    self.add_real(&t);
                    if depth < MAX_INCLUDE_DEPTH && self.files.insert((t.clone(), None)) {
                        self.spend(&t)?;
                        let inc = self.load(&t, Owner::Any)?;
                        self.settings_global(&inc, &t, depth + 1)?;
                    }
                }
            } else if e.is("core", "hookspath") {
                match self.path_value(v, None) {
                    Some(d) => self.hooks_dir(&d),
                    None => self.global.push(Relative::HooksDir(v.to_vec())),
                }
            } else if e.is("init", "templatedir") {
                if let Some(d) = self.path_value(v, None) {
                    self.add_real(&d);
                }
            } else if let Some(w) = program(e, v) {
                match self.path_value(&w, None) {
                    Some(p) => self.add_real(&p),
                    None => self.global.push(Relative::Program(w)),
                }
            }
        }
        Ok(())
    }

    fn relative(&mut self, r: &Relative, wt: &Path) {
        match r {
            Relative::HooksDir(v) => {
                if let Some(d) = self.path_value(v, Some(wt)) {
                    self.hooks_dir(&d);
                }
            }
            Relative::Program(w) => {
                if let Some(p) = self.path_value(w, Some(wt)) {
                    self.add_real(&p);
                }
            }
        }
    }

    /// A hooks directory; husky's `.husky/_` runs the scripts of `.husky`.
    fn hooks_dir(&mut self, d: &Path) {
        self.add_real(d);
        if d.file_name() == Some(OsStr::new("_")) {
            if let Some(p) = d.parent() {
                self.add_real(p);
            }
        }
    }

    /// A path-valued setting: `~/` from HOME, absolute as is, relative to
    /// `base` (none: not resolvable here). `~user` and `%(prefix)` are left
    /// alone: they cannot name a writable root of this run.
    fn path_value(&self, v: &[u8], base: Option<&Path>) -> Option<PathBuf> {
        if v == b"~" {
            return self.home.map(Path::to_path_buf);
        }
        if let Some(rest) = v.strip_prefix(b"~/") {
            return self.home.map(|h| h.join(OsStr::from_bytes(rest)));
        }
        if v.starts_with(b"~") || v.starts_with(b"%(") {
            return None;
        }
        let p = Path::new(OsStr::from_bytes(v));
        if p.is_absolute() {
            return Some(p.to_path_buf());
        }
        base.map(|b| b.join(p))
    }

    /// A linked worktree (`.git` names `<common>/worktrees/<id>`, which
    /// names this `.git` back) gets its admin dir and the common dir; a
    /// submodule checkout (`.git` names a git dir whose `core.worktree` is
    /// this checkout) gets that git dir. A `.git` file planted elsewhere
    /// gains nothing: the git dir it names must point back.
    fn grant(&mut self, wt: &Path, dotgit: &Path, g: &Path) {
        // Only a checkout the command may write needs its git dir writable,
        // and only a root: a nested checkout's git dir is protected, not
        // granted.
        if self.nested || !self.roots.iter().any(|r| wt.starts_with(r)) {
            return;
        }
        let canon_dotgit = self.real.of(dotgit);
        if !self.own_dir(g) {
            return;
        }
        match self.commondir(g) {
            Some(common) => {
                let admin = g.parent();
                let in_worktrees = admin.and_then(Path::file_name) == Some(OsStr::new("worktrees"));
                let owned = admin.and_then(Path::parent) == Some(common.as_path());
                let is_gitdir = common.join("HEAD").is_file()
                    && common.join("objects").is_dir()
                    && self.own_dir(&common);
                let back = self
                    .read_small(&g.join("gitdir"), MAX_POINTER_BYTES)
                    .map(|t| self.real.of(&g.join(OsStr::from_bytes(trim(&t)))));
                if !(in_worktrees && owned && is_gitdir && back.as_ref() == Some(&canon_dotgit)) {
                    return;
                }
                let inside_root = self.roots.iter().any(|r| common.starts_with(r));
                if !inside_root {
                    for n in MAIN_STATE {
                        self.add(common.join(n));
                    }
                }
                self.push_grant(g.to_path_buf());
                self.push_grant(common);
            }
            None => {
                let Ok(entries) = self.load(&g.join("config"), Owner::Ours) else {
                    return;
                };
                let Some(back) = core_worktree(&entries, g) else {
                    return;
                };
                if self.real.of(&back) == wt {
                    self.push_grant(g.to_path_buf());
                }
            }
        }
    }

    fn push_grant(&mut self, p: PathBuf) {
        if !self.grants.contains(&p) && !self.roots.iter().any(|r| p.starts_with(r)) {
            self.grants.push(p);
        }
    }
}

fn is_include(e: &Entry) -> bool {
    e.is("include", "path") || e.is_sub("includeif", "path")
}

/// The first word of a command-valued setting, when it names a path (a bare
/// name is looked up on PATH, whose directories are protected apart).
fn program(e: &Entry, v: &[u8]) -> Option<Vec<u8>> {
    let listed = PROGRAMS.iter().any(|(s, n)| e.is(s, n))
        || SUB_PROGRAMS.iter().any(|(s, n)| e.is_sub(s, n))
        || (e.is("core", "fsmonitor") && !gitconfig::is_bool(v))
        || (e.section == "pager" && !gitconfig::is_bool(v))
        || ((e.section == "alias" || (e.is_sub("submodule", "update"))) && v.starts_with(b"!"));
    if !listed {
        return None;
    }
    gitconfig::first_word(v).filter(|w| w.contains(&b'/'))
}

/// `core.worktree` of a git dir's config, relative to the git dir.
fn core_worktree(entries: &[Entry], g: &Path) -> Option<PathBuf> {
    let v = entries
        .iter()
        .rev()
        .find(|e| e.is("core", "worktree"))?
        .value
        .as_deref()?;
    Some(resolve_lenient(&g.join(OsStr::from_bytes(v))))
}

/// The main worktree of a common dir named `.git`: its parent.
fn default_worktree(c: &Path) -> Option<PathBuf> {
    if c.file_name() == Some(OsStr::new(".git")) {
        c.parent().map(Path::to_path_buf)
    } else {
        None
    }
}

/// A relative path with no `..`, as git accepts for submodule names and
/// paths.
fn safe_rel(v: &[u8]) -> Option<&Path> {
    let p = Path::new(OsStr::from_bytes(v));
    let ok = !v.is_empty()
        && p.components()
            .all(|c| matches!(c, Component::Normal(n) if n != ".git"));
    ok.then_some(p)
}

/// `..` and `.` applied lexically.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |i| i + 1);
    &b[start..end.max(start)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_relative_paths_only() {
        assert!(safe_rel(b"a/b").is_some());
        for bad in [&b""[..], b"/abs", b"../x", b"a/../b", b"a/.git"] {
            assert!(
                safe_rel(bad).is_none(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn programs_are_the_first_word_when_it_is_a_path() {
        let e = |s: &str, sub: Option<&str>, n: &str| Entry {
            section: s.into(),
            sub: sub.map(|x| x.as_bytes().to_vec()),
            name: n.into(),
            value: None,
        };
        assert_eq!(
            program(&e("core", None, "fsmonitor"), b".git/fsmon --x"),
            Some(b".git/fsmon".to_vec())
        );
        assert_eq!(program(&e("core", None, "fsmonitor"), b"true"), None);
        assert_eq!(program(&e("core", None, "pager"), b"less -R"), None);
        assert_eq!(
            program(&e("diff", Some("x"), "textconv"), b"./tools/conv"),
            Some(b"./tools/conv".to_vec())
        );
        assert_eq!(
            program(&e("alias", None, "st"), b"!./run.sh"),
            Some(b"./run.sh".to_vec())
        );
        assert_eq!(program(&e("alias", None, "st"), b"status ./x"), None);
        assert_eq!(program(&e("user", None, "name"), b"./x"), None);
    }

    #[test]
    fn trim_both_ends() {
        assert_eq!(trim(b"  ../..\n"), b"../..");
        assert_eq!(trim(b"\n"), b"");
    }
}
