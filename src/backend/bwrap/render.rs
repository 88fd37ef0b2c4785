//! The pure half of the bwrap backend: the bwrap argv from a `Plan`, and
//! the names a broker must keep uncreatable. Its only window on the host is
//! [`Host`] (tests give it a made-up tree). It never writes anything.

use crate::plan::{PathRule, Plan};
use crate::policy::{NetMode, SandboxMode};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// What is at a host path, as the renderer needs to know it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Node {
    Missing,
    Dir,
    File,
    Symlink,
    /// Someone else's entry in a sticky directory not ours (/tmp): this uid
    /// can neither remove nor rename it, and its programs trust no other
    /// user's git dir or start-up file, so nothing in it is protected and
    /// it makes no run refuse.
    Foreign,
}

impl Node {
    fn exists(self) -> bool {
        self != Node::Missing
    }
    fn is_dir(self) -> bool {
        self == Node::Dir
    }
}

/// The renderer's only window on the host: tests give it a made-up tree.
pub trait Host {
    fn node(&self, p: &Path) -> Node;
}

/// The real filesystem, never following a final symlink, as the user
/// `euid` (the caller's, from the facts) sees whose entries are foreign.
pub struct RealHost {
    pub euid: u32,
}

impl Host for RealHost {
    fn node(&self, p: &Path) -> Node {
        let Ok(m) = std::fs::symlink_metadata(p) else {
            return Node::Missing;
        };
        let ft = m.file_type();
        if foreign_in_sticky(p, &m, self.euid) {
            Node::Foreign
        } else if ft.is_symlink() {
            Node::Symlink
        } else if ft.is_dir() {
            Node::Dir
        } else {
            Node::File
        }
    }
}

/// Another user's entry in a sticky directory (/tmp), whoever owns the
/// directory: root's own /tmp included, since no program of this user
/// trusts another user's git dir or start-up file there (git refuses a
/// repository owned by someone else).
fn foreign_in_sticky(p: &Path, m: &std::fs::Metadata, me: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    let sticky = p
        .parent()
        .and_then(|d| std::fs::metadata(d).ok())
        .is_some_and(|d| d.mode() & 0o1000 != 0);
    sticky && m.uid() != me
}

/// A missing protected name: `name` cannot be created in the existing
/// directory `dir` (its first missing component). The broker inside holds
/// it; nothing is put on the host.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Guard {
    pub dir: PathBuf,
    pub name: OsString,
}

/// The rendered launch: bwrap's options (passed through `--args`) and the
/// names the broker must keep uncreatable.
#[derive(Clone, Debug, Default)]
pub struct Rendered {
    pub args: Vec<OsString>,
    pub guards: Vec<Guard>,
    /// Whether a guard is for a name missing at launch: only then must
    /// every creation go through the broker (the other guards only keep an
    /// entry that vanishes during the run from coming back).
    pub missing: bool,
    /// What `explain` should say about how the plan is enforced.
    pub notes: Vec<String>,
    /// The paths only the mounts hold (read-only inside a writable root, or
    /// masked): a descriptor the caller opened on one of them, or on a
    /// directory, reaches it through the caller's mount instead.
    pub held: Vec<PathBuf>,
    /// The worktree tops of the repositories found at launch: the broker
    /// makes no `.git` in them or below them, and moves in no directory
    /// from outside them (`stub_format::ZONE`).
    pub zones: Vec<PathBuf>,
}

impl Rendered {
    /// No network namespace of the command's own: it shares the one bwrap
    /// runs in (`backend::layers::bwrap_without_netns` decides when, and
    /// what holds the network then).
    pub fn share_network(&mut self) {
        self.args.retain(|a| a != "--unshare-net");
        self.notes.push(
            "no network namespace of its own (see `layers`): the command shares the one dcjail \
             runs in, and the layer inside holds `none`"
                .into(),
        );
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Role {
    /// A writable root.
    Root,
    /// A directory on the way to a protected path: bound onto itself so it
    /// is a mount point and cannot be renamed or removed.
    Pin,
    /// Read-only whatever the roots say (protected, deny_write).
    Ro,
    /// Read-only by class (`FsPlan::held`, the home directory): the
    /// writable roots inside it are mounted again, deeper, on top.
    Held,
    /// Masked (deny_read).
    Mask,
    /// Re-opened inside a mask (allow_read).
    Reopen,
}

#[derive(Debug)]
struct Point {
    path: PathBuf,
    node: Node,
    roles: Vec<Role>,
}

/// Number of components: mounts are emitted shallow first, so a deeper mount
/// always overrides the shallower one it sits in.
fn depth(p: &Path) -> usize {
    p.components().count()
}

/// Globs are expanded once per launch by `walk::expand_plan` (in
/// `backend::select`), which hands the renderer a plan of literal paths; a
/// glob reaching this point was not expanded, and is refused, never dropped.
fn refuse_globs(plan: &Plan) -> Result<(), String> {
    for (key, list) in [
        ("deny_read", &plan.fs.deny_read),
        ("allow_read", &plan.fs.allow_read),
        ("deny_write", &plan.fs.deny_write),
    ] {
        if let Some(PathRule::Glob(g)) = list.iter().find(|r| r.literal().is_none()) {
            return Err(format!(
                "the glob `{}` in {key} reached the bwrap renderer without the launch-time walk",
                g.written
            ));
        }
    }
    Ok(())
}

/// Renders bwrap's options from the plan. Pure but for `host`, which says
/// what exists; the result is the same for the same plan and host. Two
/// steps, as bubblewrap itself works: collect the mount points with their
/// roles, then emit them shallow first, so the list order is the mount order.
pub fn render(plan: &Plan, host: &dyn Host) -> Result<Rendered, String> {
    refuse_globs(plan)?;
    let mut out = Rendered::default();
    let points = collect_points(plan, host, &mut out)?;
    emit(plan, &points, &mut out.args);
    out.held = points
        .iter()
        .filter(|p| {
            p.roles.contains(&Role::Ro) || p.roles.contains(&Role::Held) || hidden(plan, &p.path)
        })
        .map(|p| p.path.clone())
        .collect();
    if !plan.fs.protected.is_empty() || !plan.fs.deny_write.is_empty() {
        out.notes.push(
            "protected and deny_write paths are subtracted by read-only mounts (landlock cannot subtract inside a granted tree); the landlock + seccomp layer inside grants writes to the writable roots only and enforces reads, network and the process rules".to_string(),
        );
    }
    if !plan.fs.held.is_empty() {
        out.notes.push(
            "the home directory is mounted read-only by class, and the writable roots inside it are mounted writable on top of it".to_string(),
        );
    }
    out.zones = plan
        .fs
        .git_checkouts
        .iter()
        .filter(|c| host.node(c) == Node::Dir)
        .cloned()
        .collect();
    if !out.zones.is_empty() {
        out.notes.push(
            "no `.git` can be made in or below a repository's worktree found at launch, and no directory can be moved in from outside one (EXDEV: mv copies it, name by name): a repository made there would be entered by a later git status through a gitlink; the broker performs every call that creates a name".to_string(),
        );
    }
    if out.missing {
        out.notes.push(
            "missing protected names are kept uncreatable by the broker inside the sandbox, which performs every call that creates a name; nothing is created on the host".to_string(),
        );
    }
    Ok(out)
}

/// The innermost writable root holding `p`.
fn root_of(plan: &Plan, p: &Path) -> Option<PathBuf> {
    plan.fs
        .writable
        .iter()
        .filter(|r| p.starts_with(r))
        .max_by_key(|r| depth(r))
        .cloned()
}

/// Whether `p` is masked: denied and not re-opened.
fn hidden(plan: &Plan, p: &Path) -> bool {
    plan.fs.deny_read.iter().any(|r| r.covers(p)) && !plan.fs.allow_read.iter().any(|r| r.covers(p))
}

/// The mount points being collected, each path once with all its roles.
#[derive(Default)]
struct Points {
    list: Vec<Point>,
    // Policies with thousands of paths stay linear.
    index: std::collections::HashMap<PathBuf, usize>,
}

impl Points {
    fn add(&mut self, path: &Path, node: Node, role: Role) {
        if let Some(&i) = self.index.get(path) {
            if !self.list[i].roles.contains(&role) {
                self.list[i].roles.push(role);
            }
        } else {
            self.index.insert(path.to_path_buf(), self.list.len());
            self.list.push(Point {
                path: path.to_path_buf(),
                node,
                roles: vec![role],
            });
        }
    }
}

/// Every mount point the plan needs, sorted shallow first; the guards and
/// whether one is missing go to `out`.
fn collect_points(plan: &Plan, host: &dyn Host, out: &mut Rendered) -> Result<Vec<Point>, String> {
    let mut points = Points::default();
    for r in plan
        .fs
        .writable
        .iter()
        .filter(|r| r.as_path() != Path::new("/"))
    {
        points.add(r, host.node(r), Role::Root);
    }
    for h in &plan.fs.held {
        let node = host.node(h);
        if node.is_dir() && root_of(plan, h).is_some() {
            points.add(h, node, Role::Held);
        }
    }
    read_only_points(plan, host, &mut points, out)?;
    pin_ways_to_masks(plan, host, &mut points);
    for r in plan.fs.deny_read.iter().filter_map(PathRule::literal) {
        let node = host.node(r);
        if node.exists() {
            points.add(r, node, Role::Mask);
        }
    }
    for r in plan.fs.allow_read.iter().filter_map(PathRule::literal) {
        let node = host.node(r);
        if node.exists() && plan.fs.deny_read.iter().any(|d| d.covers(r)) {
            points.add(r, node, Role::Reopen);
        }
    }
    let mut list = points.list;
    list.sort_by(|a, b| {
        depth(&a.path)
            .cmp(&depth(&b.path))
            .then_with(|| a.path.cmp(&b.path))
    });
    Ok(list)
}

/// Read-only points: protected paths and literal deny_write, wherever a
/// writable root contains them (elsewhere the read-only root covers them).
fn read_only_points(
    plan: &Plan,
    host: &dyn Host,
    points: &mut Points,
    out: &mut Rendered,
) -> Result<(), String> {
    let mut guarded: std::collections::HashSet<Guard> = std::collections::HashSet::new();
    let mut ro_targets: Vec<PathBuf> = plan.fs.protected.clone();
    ro_targets.extend(
        plan.fs
            .deny_write
            .iter()
            .filter_map(|r| r.literal().map(Path::to_path_buf)),
    );
    for target in &ro_targets {
        let Some(root) = root_of(plan, target) else {
            continue;
        };
        if hidden(plan, target) {
            // Inside a mask: a read-only tmpfs, nothing can be created there.
            continue;
        }
        if target == &root {
            points.add(target, host.node(target), Role::Ro);
            continue;
        }
        walk_to_read_only(host, &root, target, points, out, &mut guarded)?;
    }
    Ok(())
}

/// Walks down from `root` to `target`: pins existing directories, stops at
/// the first missing component or non-directory. Every name on the way is
/// a guard too: should it vanish (a host process removing it), the broker
/// keeps the command from making it again.
fn walk_to_read_only(
    host: &dyn Host,
    root: &Path,
    target: &Path,
    points: &mut Points,
    out: &mut Rendered,
    guarded: &mut std::collections::HashSet<Guard>,
) -> Result<(), String> {
    let rel = target.strip_prefix(root).map_err(|e| e.to_string())?;
    let mut cur = root.to_path_buf();
    let comps: Vec<_> = rel.components().collect();
    for (i, c) in comps.iter().enumerate() {
        cur.push(c.as_os_str());
        let last = i + 1 == comps.len();
        let node = host.node(&cur);
        if node == Node::Foreign {
            break;
        }
        if let (Some(dir), Some(name)) = (cur.parent(), cur.file_name()) {
            let g = Guard {
                dir: dir.to_path_buf(),
                name: name.to_os_string(),
            };
            if guarded.insert(g.clone()) {
                out.guards.push(g);
            }
        }
        match node {
            Node::Foreign => break,
            Node::Symlink => {
                return Err(format!(
                    "`{}` is a symlink inside the writable root `{}`: a mount cannot keep `{}` read-only through it",
                    cur.display(),
                    root.display(),
                    target.display()
                ));
            }
            Node::Missing => {
                out.missing = true;
                break;
            }
            Node::File => {
                // A file on the way (a `.git` gitdir pointer): the child
                // cannot exist, but the file could be replaced by a
                // directory, so it is held read-only itself.
                points.add(&cur, node, Role::Ro);
                break;
            }
            Node::Dir if last => points.add(&cur, node, Role::Ro),
            Node::Dir => points.add(&cur, node, Role::Pin),
        }
    }
    Ok(())
}

/// A masked path inside a writable root: the directories on the way are
/// pinned, so that renaming one cannot carry the denied file to a name
/// the next run does not deny.
fn pin_ways_to_masks(plan: &Plan, host: &dyn Host, points: &mut Points) {
    for r in plan.fs.deny_read.iter().filter_map(PathRule::literal) {
        let Some(root) = root_of(plan, r) else {
            continue;
        };
        let Ok(rel) = r.strip_prefix(&root) else {
            continue;
        };
        let mut cur = root.clone();
        let comps: Vec<_> = rel.components().collect();
        for c in comps.iter().take(comps.len().saturating_sub(1)) {
            cur.push(c.as_os_str());
            if hidden(plan, &cur) {
                break;
            }
            match host.node(&cur) {
                Node::Dir => points.add(&cur, Node::Dir, Role::Pin),
                _ => break,
            }
        }
    }
}

fn push(a: &mut Vec<OsString>, words: &[&OsStr]) {
    a.extend(words.iter().map(|w| w.to_os_string()));
}

/// The argv from the sorted points: the order of the list is the order in
/// which bwrap mounts, and a deeper mount overrides the one it sits in.
fn emit(plan: &Plan, points: &[Point], a: &mut Vec<OsString>) {
    // 1. The whole host read-only (writable in danger-full-access), then
    //    fresh /dev and /proc over it.
    let full_fs = plan.fs.access == SandboxMode::DangerFullAccess;
    let root_bind = if full_fs { "--bind" } else { "--ro-bind" };
    push(a, &[root_bind.as_ref(), "/".as_ref(), "/".as_ref()]);
    push(a, &["--dev".as_ref(), "/dev".as_ref()]);
    push(a, &["--proc".as_ref(), "/proc".as_ref()]);
    // 2. Every point, shallow first: writable roots, pins, then the
    //    read-only protected paths inside them, masks, re-opened paths.
    let remount = emit_points(plan, points, a);
    // 3. Masks become read-only once everything inside them is mounted.
    for r in &remount {
        push(a, &["--remount-ro".as_ref(), r.as_os_str()]);
    }
    // 4. Namespaces and process hygiene.
    push(
        a,
        &[
            "--unshare-user".as_ref(),
            "--unshare-pid".as_ref(),
            "--unshare-ipc".as_ref(),
            "--unshare-uts".as_ref(),
            "--unshare-cgroup-try".as_ref(),
        ],
    );
    if plan.net.mode != NetMode::Full {
        push(a, &["--unshare-net".as_ref()]);
    }
    // No --new-session: the command keeps the caller's terminal (job
    // control, full-screen programs); TIOCSTI and TIOCLINUX, against which
    // bwrap makes a new session, are refused by the seccomp layer inside.
    push(
        a,
        &[
            "--die-with-parent".as_ref(),
            "--cap-drop".as_ref(),
            "ALL".as_ref(),
            "--chdir".as_ref(),
            plan.cwd.as_os_str(),
        ],
    );
}

/// The mounts of the points; returns the masked directories, to be made
/// read-only once everything inside them is mounted.
fn emit_points(plan: &Plan, points: &[Point], a: &mut Vec<OsString>) -> Vec<PathBuf> {
    let ro_paths: Vec<&PathBuf> = points
        .iter()
        .filter(|p| p.roles.contains(&Role::Ro))
        .map(|p| &p.path)
        .collect();
    let mut emitted: Vec<(PathBuf, bool)> = Vec::new(); // (path, is_mask)
    let mut remount: Vec<PathBuf> = Vec::new();
    for pt in points {
        let p = pt.path.as_os_str();
        if hidden(plan, &pt.path) {
            let under_mask = emitted
                .iter()
                .rev()
                .find(|(e, _)| pt.path.starts_with(e))
                .is_some_and(|(_, m)| *m);
            if under_mask {
                continue;
            }
            if pt.node.is_dir() {
                push(a, &["--tmpfs".as_ref(), p]);
                remount.push(pt.path.clone());
            } else {
                push(a, &["--ro-bind".as_ref(), "/dev/null".as_ref(), p]);
            }
            emitted.push((pt.path.clone(), true));
            continue;
        }
        let forced_ro = ro_paths.iter().any(|r| pt.path.starts_with(r));
        let writable = !forced_ro && plan.writable(&pt.path);
        // What is held in place (a pin, a protected entry) may vanish before
        // bwrap mounts it: then nothing is mounted (a guard keeps its name
        // uncreatable) rather than bwrap failing or making it on the host.
        let held = !pt.roles.contains(&Role::Root);
        let bind = match (writable, held) {
            (true, false) => "--bind",
            (false, false) => "--ro-bind",
            (true, true) => "--bind-try",
            (false, true) => "--ro-bind-try",
        };
        push(a, &[bind.as_ref(), p, p]);
        emitted.push((pt.path.clone(), false));
    }
    remount
}
