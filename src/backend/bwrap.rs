//! The `bwrap` backend: bubblewrap builds the namespaces and the mount tree,
//! then runs dcjail's second stage inside it, which applies the landlock +
//! seccomp layer and execs the command. Two independent layers.
//!
//! This module owns: finding a trustworthy `bwrap` (fixed absolute paths,
//! never one the workspace could plant), the cheap probe `auto` uses, the
//! pure rendering of the bwrap argv from a `Plan` (the mount order is the
//! security argument and is unit-tested), the guards that keep a missing
//! protected name uncreatable (held by the broker inside, see
//! `backend::broker`), and the launch under `exec::supervise_with`. What
//! stops bwrap on a machine, and `doctor`'s real namespace test, are
//! `backend::obstacle`'s.
//!
//! It must never: run a `bwrap` found inside a writable root, write anything
//! on the host, cache probe results on disk, or start the command when any
//! piece of the plan cannot be expressed (it refuses).

use crate::plan::{PathRule, Plan};
use crate::policy::{NetMode, SandboxMode};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Where a distribution installs bubblewrap. Only these, or a PATH entry
/// that no sandbox can write, are ever executed.
pub const BWRAP_PATHS: &[&str] = &[
    "/usr/bin/bwrap",
    "/bin/bwrap",
    "/usr/local/bin/bwrap",
    "/usr/libexec/bwrap",
    "/run/current-system/sw/bin/bwrap",
];

/// Oldest bubblewrap that has every option rendered here
/// (`--args`, `--die-with-parent`, `--new-session`, `--cap-drop`,
/// `--unshare-cgroup-try`, `--remount-ro`) or passed at launch
/// (`--json-status-fd`).
pub const MIN_VERSION: (u32, u32, u32) = (0, 4, 0);

/// The hidden subcommand bwrap runs inside the sandbox.
pub const STAGE2: &str = "__stage2";

/// The name of the sealed memfd that carries the layer into stage 2; stage 2
/// refuses any other descriptor, so a caller who controls only dcjail's argv
/// (and stdin) cannot feed it a layer of their own.
pub const STAGE2_MEMFD: &str = "dcjail-stage2";

/// dcjail's own binary, as the second stage is started from it.
const SELF_EXE: &str = "/proc/self/exe";

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

/// The real filesystem, never following a final symlink.
pub struct RealHost;

impl Host for RealHost {
    fn node(&self, p: &Path) -> Node {
        let Ok(m) = std::fs::symlink_metadata(p) else {
            return Node::Missing;
        };
        let ft = m.file_type();
        if foreign_in_sticky(p, &m) {
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
fn foreign_in_sticky(p: &Path, m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid never fails.
    let me = unsafe { libc::geteuid() };
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
/// what exists; the result is the same for the same plan and host.
pub fn render(plan: &Plan, host: &dyn Host) -> Result<Rendered, String> {
    refuse_globs(plan)?;
    let full_fs = plan.fs.access == SandboxMode::DangerFullAccess;
    let roots: Vec<&PathBuf> = plan
        .fs
        .writable
        .iter()
        .filter(|r| r.as_path() != Path::new("/"))
        .collect();
    let root_of = |p: &Path| -> Option<PathBuf> {
        plan.fs
            .writable
            .iter()
            .filter(|r| p.starts_with(r))
            .max_by_key(|r| depth(r))
            .cloned()
    };
    let hidden = |p: &Path| {
        plan.fs.deny_read.iter().any(|r| r.covers(p))
            && !plan.fs.allow_read.iter().any(|r| r.covers(p))
    };

    let mut out = Rendered::default();
    let mut guarded: std::collections::HashSet<Guard> = std::collections::HashSet::new();
    let mut points: Vec<Point> = Vec::new();
    // Policies with thousands of paths stay linear.
    let mut index: std::collections::HashMap<PathBuf, usize> = std::collections::HashMap::new();
    let mut add = |points: &mut Vec<Point>, path: &Path, node: Node, role: Role| {
        if let Some(&i) = index.get(path) {
            if !points[i].roles.contains(&role) {
                points[i].roles.push(role);
            }
        } else {
            index.insert(path.to_path_buf(), points.len());
            points.push(Point {
                path: path.to_path_buf(),
                node,
                roles: vec![role],
            });
        }
    };

    for r in &roots {
        add(&mut points, r, host.node(r), Role::Root);
    }

    // Read-only points: protected paths and literal deny_write, wherever a
    // writable root contains them (elsewhere the read-only root covers them).
    let mut ro_targets: Vec<PathBuf> = plan.fs.protected.clone();
    ro_targets.extend(
        plan.fs
            .deny_write
            .iter()
            .filter_map(|r| r.literal().map(Path::to_path_buf)),
    );
    for target in &ro_targets {
        let Some(root) = root_of(target) else {
            continue;
        };
        if hidden(target) {
            // Inside a mask: a read-only tmpfs, nothing can be created there.
            continue;
        }
        if target == &root {
            add(&mut points, target, host.node(target), Role::Ro);
            continue;
        }
        // Walk down from the root: pin existing directories, stop at the
        // first missing component or non-directory. Every name on the way
        // is a guard too: should it vanish (a host process removing it),
        // the broker keeps the command from making it again.
        let rel = target.strip_prefix(&root).map_err(|e| e.to_string())?;
        let mut cur = root.clone();
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
                    add(&mut points, &cur, node, Role::Ro);
                    break;
                }
                Node::Dir if last => add(&mut points, &cur, node, Role::Ro),
                Node::Dir => add(&mut points, &cur, node, Role::Pin),
            }
        }
    }

    // A masked path inside a writable root: the directories on the way are
    // pinned, so that renaming one cannot carry the denied file to a name
    // the next run does not deny.
    for r in plan.fs.deny_read.iter().filter_map(PathRule::literal) {
        let Some(root) = root_of(r) else {
            continue;
        };
        let Ok(rel) = r.strip_prefix(&root) else {
            continue;
        };
        let mut cur = root.clone();
        let comps: Vec<_> = rel.components().collect();
        for c in comps.iter().take(comps.len().saturating_sub(1)) {
            cur.push(c.as_os_str());
            if hidden(&cur) {
                break;
            }
            match host.node(&cur) {
                Node::Dir => add(&mut points, &cur, Node::Dir, Role::Pin),
                _ => break,
            }
        }
    }

    for r in plan.fs.deny_read.iter().filter_map(PathRule::literal) {
        let node = host.node(r);
        if node.exists() {
            add(&mut points, r, node, Role::Mask);
        }
    }
    for r in plan.fs.allow_read.iter().filter_map(PathRule::literal) {
        let node = host.node(r);
        if node.exists() && plan.fs.deny_read.iter().any(|d| d.covers(r)) {
            add(&mut points, r, node, Role::Reopen);
        }
    }

    points.sort_by(|a, b| {
        depth(&a.path)
            .cmp(&depth(&b.path))
            .then_with(|| a.path.cmp(&b.path))
    });

    let ro_paths: Vec<PathBuf> = points
        .iter()
        .filter(|p| p.roles.contains(&Role::Ro))
        .map(|p| p.path.clone())
        .collect();

    let a = &mut out.args;
    let push = |a: &mut Vec<OsString>, words: &[&OsStr]| {
        a.extend(words.iter().map(|w| w.to_os_string()));
    };
    // 1. The whole host read-only (writable in danger-full-access), then
    //    fresh /dev and /proc over it.
    let root_bind = if full_fs { "--bind" } else { "--ro-bind" };
    push(a, &[root_bind.as_ref(), "/".as_ref(), "/".as_ref()]);
    push(a, &["--dev".as_ref(), "/dev".as_ref()]);
    push(a, &["--proc".as_ref(), "/proc".as_ref()]);
    // 2. Every point, shallow first: writable roots, pins, then the
    //    read-only protected paths inside them, masks, re-opened paths.
    let mut emitted: Vec<(PathBuf, bool)> = Vec::new(); // (path, is_mask)
    let mut remount: Vec<PathBuf> = Vec::new();
    for pt in &points {
        let p = pt.path.as_os_str();
        if hidden(&pt.path) {
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
    if !plan.fs.protected.is_empty() || !plan.fs.deny_write.is_empty() {
        out.notes.push(
            "protected and deny_write paths are subtracted by read-only mounts (landlock cannot subtract inside a granted tree); the landlock + seccomp layer inside grants writes to the writable roots only and enforces reads, network and the process rules".to_string(),
        );
    }
    if out.missing {
        out.notes.push(
            "missing protected names are kept uncreatable by the broker inside the sandbox, which performs every call that creates a name; nothing is created on the host".to_string(),
        );
    }
    Ok(out)
}

/// Parses "bubblewrap X.Y.Z".
pub fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let rest = text.split("bubblewrap ").nth(1)?;
    let word: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let mut it = word.split('.').map(|n| n.parse::<u32>().ok());
    Some((
        it.next()??,
        it.next().flatten().unwrap_or(0),
        it.next().flatten().unwrap_or(0),
    ))
}

/// An absolute path no sandbox can have planted: owned by root or by us,
/// writable by nobody else, and outside every writable root of the plan.
fn trusted(p: &Path, plan: Option<&Plan>) -> bool {
    use std::os::unix::fs::MetadataExt;
    let (canon, meta) = match without_symlinks(p) {
        Some((c, m)) => (c, Some(m)),
        None => match std::fs::canonicalize(p) {
            Ok(c) => (c, None),
            Err(_) => return false,
        },
    };
    if let Some(plan) = plan {
        let inside = plan
            .fs
            .writable
            .iter()
            .filter(|r| r.as_path() != Path::new("/"))
            .chain([&plan.workspace, &plan.cwd])
            .chain(plan.worktree.iter())
            .any(|r| canon.starts_with(r));
        if inside {
            return false;
        }
    }
    let Some(m) = meta.or_else(|| std::fs::metadata(&canon).ok()) else {
        return false;
    };
    // SAFETY: getuid never fails.
    let me = unsafe { libc::getuid() };
    m.is_file() && (m.uid() == 0 || m.uid() == me) && m.mode() & 0o022 == 0 && m.mode() & 0o111 != 0
}

/// `p` itself when it is absolute, plain (no `.`, `..`, `//`) and no
/// component of it is a symlink: then it is its own canonical path. One path
/// walk (openat2 with RESOLVE_NO_SYMLINKS) instead of realpath's one per
/// component, on every launch. None means "find out the slow way".
#[cfg(target_os = "linux")]
fn without_symlinks(p: &Path) -> Option<(PathBuf, std::fs::Metadata)> {
    let plain = p.is_absolute()
        && p.components()
            .skip(1)
            .all(|c| matches!(c, std::path::Component::Normal(_)))
        && !p.as_os_str().as_bytes().windows(2).any(|w| w == b"//")
        && !p.as_os_str().as_bytes().ends_with(b"/");
    if !plain {
        return None;
    }
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).ok()?;
    // SAFETY: open_how is plain data.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_PATH | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_NO_SYMLINKS;
    // SAFETY: valid C string and open_how of the size given.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: the fd was just opened and is owned from here.
    let f = std::fs::File::from(unsafe {
        <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd as i32)
    });
    // fstat works on an O_PATH descriptor: the metadata of what was opened.
    let m = f.metadata().ok()?;
    Some((p.to_path_buf(), m))
}

#[cfg(not(target_os = "linux"))]
fn without_symlinks(_p: &Path) -> Option<(PathBuf, std::fs::Metadata)> {
    None
}

/// The distribution's install command for bubblewrap, from /etc/os-release.
pub fn install_hint() -> String {
    let text = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    let ids: String = text
        .lines()
        .filter(|l| l.starts_with("ID=") || l.starts_with("ID_LIKE="))
        .collect::<Vec<_>>()
        .join(" ");
    let cmd = if ids.contains("debian") || ids.contains("ubuntu") {
        "sudo apt-get install bubblewrap"
    } else if ids.contains("fedora") || ids.contains("rhel") || ids.contains("centos") {
        "sudo dnf install bubblewrap"
    } else if ids.contains("arch") {
        "sudo pacman -S bubblewrap"
    } else if ids.contains("alpine") {
        "sudo apk add bubblewrap"
    } else if ids.contains("suse") {
        "sudo zypper install bubblewrap"
    } else {
        "install the bubblewrap package"
    };
    cmd.to_string()
}

/// Finds bwrap: the fixed list first, then PATH entries that are absolute
/// and outside every writable root.
pub fn find(plan: Option<&Plan>) -> Result<PathBuf, String> {
    for p in BWRAP_PATHS {
        let p = Path::new(p);
        if trusted(p, plan) {
            return Ok(p.to_path_buf());
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if !dir.is_absolute() {
                continue;
            }
            let c = dir.join("bwrap");
            if trusted(&c, plan) {
                return std::fs::canonicalize(&c).map_err(|e| e.to_string());
            }
        }
    }
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut untrusted: Vec<String> = Vec::new();
    for p in BWRAP_PATHS {
        let Ok(c) = std::fs::canonicalize(p) else {
            continue;
        };
        if !seen.contains(&c) {
            untrusted.extend(untrusted_because(&c));
            seen.push(c);
        }
    }
    if !untrusted.is_empty() {
        return Err(format!(
            "{NO_TRUSTED_BWRAP}: {}; dcjail runs only a bwrap owned by root or by the user running dcjail, writable by no one else, outside the writable roots",
            untrusted.join("; ")
        ));
    }
    Err(format!(
        "bubblewrap is not installed (no trusted bwrap in {} or on PATH); {}",
        BWRAP_PATHS.join(", "),
        install_hint()
    ))
}

/// How `find`'s refusal starts when a bwrap exists but is not trusted.
pub const NO_TRUSTED_BWRAP: &str = "bubblewrap is installed but not trusted";

/// Why an existing bwrap is not trusted (owner and mode), for the refusal:
/// inside a user namespace that does not map root, root's files belong to
/// the overflow uid, and "not installed" would send the user the wrong way.
fn untrusted_because(p: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(p).ok()?;
    let overflow = std::fs::read_to_string("/proc/sys/kernel/overflowuid")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok());
    // SAFETY: getuid never fails.
    let me = unsafe { libc::getuid() };
    if (m.uid() == 0 || m.uid() == me) && m.mode() & 0o022 == 0 {
        return Some(format!(
            "{} is inside a writable root of this policy",
            p.display()
        ));
    }
    let note = if Some(m.uid()) == overflow {
        " (the overflow uid: its owner is not mapped into this user namespace)"
    } else {
        ""
    };
    Some(format!(
        "{} is owned by uid {}{note}, mode {:o}",
        p.display(),
        m.uid(),
        m.mode() & 0o7777
    ))
}

/// bwrap's version, read from the string compiled into the binary (cheap:
/// no process), falling back to `bwrap --version`.
pub fn version(bwrap: &Path) -> Option<(u32, u32, u32)> {
    use std::io::Read;
    let mut data = Vec::new();
    if let Ok(f) = std::fs::File::open(bwrap) {
        let _ = f.take(16 << 20).read_to_end(&mut data);
    }
    let needle = b"bubblewrap ";
    if let Some(i) = data
        .windows(needle.len() + 1)
        .position(|w| w.starts_with(needle) && w[needle.len()].is_ascii_digit())
    {
        let end = (i + 32).min(data.len());
        if let Some(v) = parse_version(&String::from_utf8_lossy(&data[i..end])) {
            return Some(v);
        }
    }
    let out = std::process::Command::new(bwrap)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    parse_version(&String::from_utf8_lossy(&out.stdout))
}

/// What `auto` (and `--backend bwrap`) checks before rendering: a trusted
/// bwrap, and nothing that stops its namespaces (`obstacle::userns_obstacle`:
/// kernel switches, a seccomp filter, AppArmor). The version is not
/// read here (that costs a read of the whole binary per launch): a bwrap too
/// old for an option rendered here stops with "Unknown option" before the
/// second stage, which `launch` turns into a refusal or an `auto` fallback;
/// `doctor` reports the version.
#[cfg(target_os = "linux")]
pub fn probe(plan: &Plan, host: &dyn super::host::Probe) -> Result<PathBuf, String> {
    let bwrap = find(Some(plan))?;
    if let Some(o) = super::obstacle::userns_obstacle(host, &bwrap) {
        return Err(o.to_string());
    }
    Ok(bwrap)
}

/// The layer as data, for `explain` (Linux only: elsewhere there is none).
#[cfg(target_os = "linux")]
pub type Layer = super::landlock::LayerSpec;
#[cfg(not(target_os = "linux"))]
pub type Layer = ();

/// Everything `exec` needs to start the command under bwrap.
#[derive(Debug)]
pub struct BwrapLaunch {
    pub bwrap: PathBuf,
    pub rendered: Rendered,
    /// The landlock + seccomp layer the second stage applies.
    pub layer: Layer,
    /// The same layer as the second stage runs it (`stub_format`), with
    /// the guards' directories known by inode: what the embedded stub, or
    /// dcjail itself where memfds cannot be executed, reads.
    pub program: Vec<u8>,
    /// dcjail's own binary, run again inside as stage 2.
    pub exe: PathBuf,
}

/// The layer the second stage applies: the landlock ruleset for what
/// landlock can express (writable roots, reads) and the seccomp filter. The
/// write subtraction (protected paths, deny_write) is left to the read-only
/// mounts, which landlock cannot express and bwrap enforces.
#[cfg(target_os = "linux")]
fn layer(plan: &Plan, host: &dyn super::host::Probe) -> Result<super::landlock::LayerSpec, String> {
    use super::landlock::{layer_spec_with, WriteSubtraction};
    let mut spec = layer_spec_with(plan, WriteSubtraction::ByMounts)?;
    if plan.effective_net() == NetMode::Allowlist {
        // The proxy's listener inside the namespace (net::session).
        spec.tcp_connect_ports = vec![crate::net::session::SANDBOX_PROXY_PORT];
    }
    spec.check_supported_with(host)?;
    Ok(spec)
}

/// The embedded second stage (build.rs compiles `stub/main.rs`); empty
/// where it cannot run, and then dcjail itself is the second stage.
#[cfg(target_os = "linux")]
pub const STUB: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/stage2-stub"));

/// A guard as the stub program carries it: the directory by inode.
pub type GuardId = (u64, u64, Vec<u8>);

/// The layer as the second stage executes it (`stub_format`): the same
/// rules, with the seccomp filter already compiled and the guards by inode,
/// so the stage decides nothing. Checked by the stub's own parser here, so
/// that what the stub would refuse is refused before anything starts.
#[cfg(target_os = "linux")]
pub fn stub_program(
    spec: &super::landlock::LayerSpec,
    guards: &[GuardId],
) -> Result<Vec<u8>, String> {
    use super::stub_format::{Program, BROKER, MAGIC, MAX_INSNS, MAX_NAME, MAX_PATH};
    let u32_of = |n: usize, what: &str| {
        u32::try_from(n).map_err(|_| format!("the second stage takes no more than 2^32 {what}"))
    };
    let filters = super::seccomp::compile(spec.sockets, spec.fs)?.raw();
    let mut o = Vec::with_capacity(256 + spec.fs_rules.len() * 48 + guards.len() * 32);
    o.extend_from_slice(MAGIC);
    o.extend_from_slice(&spec.handled_fs.to_le_bytes());
    // LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP.
    let net: u64 = if spec.restrict_tcp { 0b11 } else { 0 };
    o.extend_from_slice(&net.to_le_bytes());
    o.extend_from_slice(&spec.scopes.to_le_bytes());
    o.extend_from_slice(&u32_of(spec.fs_rules.len(), "rules")?.to_le_bytes());
    for r in &spec.fs_rules {
        let p = r.path.as_os_str().as_bytes();
        if p.len() > MAX_PATH {
            return Err(format!(
                "a landlock rule path is longer than {MAX_PATH} bytes: `{}`",
                r.path.display()
            ));
        }
        o.extend_from_slice(&u32_of(p.len(), "bytes")?.to_le_bytes());
        o.extend_from_slice(p);
        o.extend_from_slice(&r.access.to_le_bytes());
    }
    o.extend_from_slice(&u32_of(spec.tcp_connect_ports.len(), "ports")?.to_le_bytes());
    for p in &spec.tcp_connect_ports {
        o.extend_from_slice(&p.to_le_bytes());
    }
    o.extend_from_slice(&u32_of(spec.keep_fds.len(), "descriptors")?.to_le_bytes());
    for fd in &spec.keep_fds {
        o.extend_from_slice(&fd.to_le_bytes());
    }
    o.extend_from_slice(&u32_of(filters.len(), "filters")?.to_le_bytes());
    for f in &filters {
        let n = f.len() / super::stub_format::INSN;
        if n > MAX_INSNS {
            return Err(format!(
                "a seccomp program has more than {MAX_INSNS} instructions"
            ));
        }
        o.extend_from_slice(&u32_of(n, "instructions")?.to_le_bytes());
        o.extend_from_slice(f);
    }
    let flags = if spec.fs.brokered() { BROKER } else { 0 };
    o.extend_from_slice(&flags.to_le_bytes());
    o.extend_from_slice(&u32_of(guards.len(), "guards")?.to_le_bytes());
    for (dev, ino, name) in guards {
        if name.len() > MAX_NAME {
            return Err(format!(
                "a protected name is longer than {MAX_NAME} bytes: `{}`",
                String::from_utf8_lossy(name)
            ));
        }
        o.extend_from_slice(&dev.to_le_bytes());
        o.extend_from_slice(&ino.to_le_bytes());
        o.extend_from_slice(&u32_of(name.len(), "bytes")?.to_le_bytes());
        o.extend_from_slice(name);
    }
    // No denial report until the launch sets one (`set_report_fd`).
    o.extend_from_slice(&(-1i32).to_le_bytes());
    Program::parse(&o).map_err(|e| format!("the second stage's program: {e}"))?;
    Ok(o)
}

/// Each guard's directory by inode, as the broker inside compares it. The
/// directory was seen on the way from a writable root in `render`; it must
/// still be a directory, and not a symlink, now.
#[cfg(target_os = "linux")]
fn guard_ids(guards: &[Guard]) -> Result<Vec<GuardId>, String> {
    use std::os::unix::fs::MetadataExt;
    guards
        .iter()
        .map(|g| {
            let m = std::fs::symlink_metadata(&g.dir).map_err(|e| {
                format!(
                    "`{}` (where `{}` must stay uncreatable): {}",
                    g.dir.display(),
                    g.name.to_string_lossy(),
                    crate::policy::io_words(&e)
                )
            })?;
            if !m.is_dir() {
                return Err(format!(
                    "`{}` changed while the sandbox was being set up",
                    g.dir.display()
                ));
            }
            Ok((m.dev(), m.ino(), g.name.as_bytes().to_vec()))
        })
        .collect()
}

/// Probes and renders: the `prepare` step of backend selection.
#[cfg(target_os = "linux")]
pub fn prepare(plan: &Plan, host: &dyn super::host::Probe) -> Result<BwrapLaunch, String> {
    let bwrap = probe(plan, host)?;
    let rendered = render(plan, &RealHost)?;
    let mut spec = layer(plan, host)?;
    let guards = guard_ids(&rendered.guards)?;
    spec.fs.create = rendered.missing;
    let program = stub_program(&spec, &guards)?;
    // Opened through the magic link at launch: no readlink (its path walk
    // contends with every mount namespace being set up or torn down on the
    // machine), and no window in which the path could name another file.
    let exe = PathBuf::from(SELF_EXE);
    Ok(BwrapLaunch {
        bwrap,
        rendered,
        layer: spec,
        program,
        exe,
    })
}

/// `explain`'s view of the launch.
pub fn describe(l: &BwrapLaunch) -> serde_json::Value {
    let lossy = |v: &[OsString]| -> Vec<String> {
        v.iter().map(|a| a.to_string_lossy().into_owned()).collect()
    };
    serde_json::json!({
        "kind": "bwrap",
        "bwrap": l.bwrap.to_string_lossy(),
        "argv": lossy(&l.rendered.args),
        "args_via": "--args FD (NUL-separated) and --json-status-fd FD, then `-- STAGE2 __stage2 FD IGN ERR STD -- COMMAND...`",
        "uncreatable": l.rendered.guards.iter().map(|g| {
            g.dir.join(&g.name).to_string_lossy().into_owned()
        }).collect::<Vec<_>>(),
        "stage2": {
            "exe": if l.exe == Path::new(SELF_EXE) {
                crate::plan::own_exe().unwrap_or_else(|| l.exe.clone())
            } else {
                l.exe.clone()
            }
            .to_string_lossy(),
            "runs": stage2_runs(l),
            "layer": layer_json(&l.layer),
        },
        "notes": l.rendered.notes,
    })
}

/// Which second stage a launch starts, for `explain`.
#[cfg(target_os = "linux")]
fn stage2_runs(_l: &BwrapLaunch) -> String {
    if STUB.is_empty() {
        "dcjail itself (`exe`), re-executed inside".into()
    } else {
        format!(
            "the embedded stub ({} bytes, static, no libc) from a sealed memfd; dcjail itself \
             (`exe`) where this system refuses to execute memfds (vm.memfd_noexec = 2)",
            STUB.len()
        )
    }
}

#[cfg(not(target_os = "linux"))]
fn stage2_runs(_l: &BwrapLaunch) -> String {
    "dcjail itself (`exe`), re-executed inside".into()
}

#[cfg(target_os = "linux")]
fn layer_json(layer: &Layer) -> serde_json::Value {
    layer.describe()
}

#[cfg(not(target_os = "linux"))]
fn layer_json(_layer: &Layer) -> serde_json::Value {
    serde_json::Value::Null
}

#[cfg(target_os = "linux")]
fn cpath(p: &Path) -> Result<std::ffi::CString, String> {
    std::ffi::CString::new(p.as_os_str().as_bytes())
        .map_err(|_| format!("`{}` contains a NUL byte", p.display()))
}

/// `memfd_create` flag (Linux 6.3): executable even where
/// `vm.memfd_noexec` = 1 would seal new memfds non-executable.
#[cfg(target_os = "linux")]
const MFD_EXEC: libc::c_uint = 0x10;

/// The embedded stub in a sealed memfd, to be exec'd through
/// /proc/self/fd: nothing on disk can be swapped for it. None where there
/// is no stub or this system forbids executing memfds (`vm.memfd_noexec` =
/// 2, EACCES): dcjail itself is the second stage then, applying the same
/// layer, only slower to start.
#[cfg(target_os = "linux")]
fn stub_memfd() -> Result<Option<std::os::fd::OwnedFd>, String> {
    if STUB.is_empty() {
        return Ok(None);
    }
    match memfd(c"dcjail-stub", STUB, true, MFD_EXEC) {
        Ok(fd) => Ok(Some(fd)),
        Err((_, libc::EACCES | libc::EPERM)) => Ok(None),
        // A kernel before 6.3 does not know MFD_EXEC (and has no noexec
        // memfds either).
        Err((_, libc::EINVAL)) => match memfd(c"dcjail-stub", STUB, true, 0) {
            Ok(fd) => Ok(Some(fd)),
            Err((m, _)) => Err(m),
        },
        Err((m, _)) => Err(m),
    }
}

/// A memfd holding `data` (sealed if asked), inherited by bwrap (no
/// CLOEXEC). The error carries the errno of the step that failed.
#[cfg(target_os = "linux")]
fn memfd(
    name: &std::ffi::CStr,
    data: &[u8],
    seal: bool,
    flags: libc::c_uint,
) -> Result<std::os::fd::OwnedFd, (String, i32)> {
    use std::os::fd::FromRawFd;
    let err = |what: &str| {
        let e = std::io::Error::last_os_error();
        (format!("{what}: {e}"), e.raw_os_error().unwrap_or(0))
    };
    // SAFETY: valid C string.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_ALLOW_SEALING | flags) };
    if fd < 0 {
        return Err(err("memfd_create"));
    }
    // SAFETY: fresh fd, owned from here.
    let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    let mut off = 0;
    while off < data.len() {
        // SAFETY: valid fd and slice.
        let n = unsafe { libc::write(fd, data[off..].as_ptr().cast(), data.len() - off) };
        if n <= 0 {
            return Err(err("writing the memfd"));
        }
        off += n as usize;
    }
    // SAFETY: valid fd.
    unsafe {
        libc::lseek(fd, 0, libc::SEEK_SET);
        if seal
            && libc::fcntl(
                fd,
                libc::F_ADD_SEALS,
                libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL,
            ) != 0
        {
            return Err(err("sealing the memfd"));
        }
    }
    Ok(owned)
}

/// Signals a terminal or a process group sends to dcjail and bwrap alike;
/// bwrap ignores them (dcjail forwards them to the command itself) and stage
/// 2 restores them.
pub const SHIELDED: [libc::c_int; 4] = [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP, libc::SIGTERM];

/// The command inside: bwrap (our child) → its pid-1 reaper → the command.
#[cfg(target_os = "linux")]
fn sandbox_commands(bwrap: libc::pid_t) -> Vec<libc::pid_t> {
    let kids = |p: libc::pid_t| -> Vec<libc::pid_t> {
        std::fs::read_to_string(format!("/proc/{p}/task/{p}/children"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|s| s.parse().ok())
            .collect()
    };
    kids(bwrap).into_iter().flat_map(kids).collect()
}

/// What stage 2 writes on bwrap's stderr pipe once it runs, before it puts
/// the caller's stderr back: everything before it is bwrap's own words.
pub const STARTED: &[u8] = b"\0dcjail-stage2-started\0";

/// A pipe whose read end stays with dcjail (close-on-exec).
#[cfg(target_os = "linux")]
fn pipe() -> Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd), String> {
    use std::os::fd::FromRawFd;
    let mut fds = [0i32; 2];
    // SAFETY: valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("pipe: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: both fds are fresh and ours.
    Ok(unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    })
}

/// Runs bwrap under the supervisor and cleans up after it. `Ok` is the
/// command's status (128+N on a signal, 124 at the timeout); `Err` means
/// the sandbox could not be built and nothing of the command ran.
#[cfg(target_os = "linux")]
pub fn launch(
    plan: &Plan,
    l: &BwrapLaunch,
    argv: &[std::ffi::CString],
    envp: &[std::ffi::CString],
) -> Result<i32, String> {
    use std::ffi::CString;
    use std::os::fd::{AsRawFd, FromRawFd};
    let mut args_data = Vec::new();
    for a in &l.rendered.args {
        args_data.extend_from_slice(a.as_bytes());
        args_data.push(0);
    }
    let args_fd = memfd(c"dcjail-bwrap-args", &args_data, false, 0).map_err(|(m, _)| m)?;
    // The second stage: the embedded stub, or dcjail itself where a memfd
    // cannot be executed; both read the same program.
    let stub_fd = stub_memfd()?;
    let layer_fd = memfd(c"dcjail-stage2", &l.program, true, 0).map_err(|(m, _)| m)?;
    // bwrap's stderr goes to a pipe until stage 2 runs, so that a bwrap that
    // cannot build the sandbox is one refusal line (or an `auto` fallback),
    // not bwrap's words followed by ours. The caller's stderr travels as a
    // duplicate that stage 2 puts back on fd 2.
    let (err_r, err_w) = pipe()?;
    // SAFETY: dup of our own stderr; owned right after.
    let saved = unsafe { libc::fcntl(2, libc::F_DUPFD, 3) };
    if saved < 0 {
        return Err(format!("dup stderr: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: fresh fd, ours.
    let saved = unsafe { std::os::fd::OwnedFd::from_raw_fd(saved) };
    let mut ign = 0u32;
    for (i, s) in SHIELDED.iter().enumerate() {
        // SAFETY: querying the current disposition only.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        unsafe { libc::sigaction(*s, std::ptr::null(), &mut old) };
        if old.sa_sigaction == libc::SIG_IGN {
            ign |= 1 << i;
        }
    }
    // Stage 2 is exec'd through a descriptor, so it starts even when the
    // policy hides dcjail's own directory (deny_read of ~, say).
    let exe_fd = match stub_fd {
        Some(fd) => fd,
        None => {
            let exe_c = cpath(&l.exe)?;
            // SAFETY: valid C string; owned right after.
            let fd = unsafe { libc::open(exe_c.as_ptr(), libc::O_PATH) };
            if fd < 0 {
                return Err(format!(
                    "cannot open dcjail's own binary `{}`: {}",
                    l.exe.display(),
                    std::io::Error::last_os_error()
                ));
            }
            // SAFETY: fresh fd, ours.
            unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }
        }
    };
    // bwrap reports the command's exit status here as soon as its init
    // has it, before bwrap itself exits: dcjail returns without waiting for
    // that exit (see `StatusReader`).
    let (status_r, status_w) = pipe()?;
    let num = |n: i64| CString::new(n.to_string()).map_err(|e| e.to_string());
    let mut bargv: Vec<CString> = vec![
        cpath(&l.bwrap)?,
        CString::from(c"--args"),
        num(args_fd.as_raw_fd().into())?,
        CString::from(c"--json-status-fd"),
        num(status_w.as_raw_fd().into())?,
        CString::from(c"--"),
        CString::new(format!("/proc/self/fd/{}", exe_fd.as_raw_fd())).map_err(|e| e.to_string())?,
        CString::new(STAGE2).map_err(|e| e.to_string())?,
        num(layer_fd.as_raw_fd().into())?,
        num(ign.into())?,
        num(saved.as_raw_fd().into())?,
        // The standard descriptors the caller left closed: bwrap and the
        // second stage run with /dev/null there, the command without.
        num(crate::exec::stdfds::closed().into())?,
        CString::from(c"--"),
    ];
    bargv.extend(argv.iter().cloned());
    let bwrap_path = cpath(&l.bwrap)?;
    let mut interrupted: Option<i32> = None;
    let mut forward = |pid: libc::pid_t, sig: libc::c_int, code: libc::c_int| {
        let cmds = sandbox_commands(pid);
        if cmds.is_empty() {
            if SHIELDED.contains(&sig) {
                // Not started yet: nothing to be graceful with.
                interrupted = Some(128 + sig);
                // SAFETY: our own child.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            return;
        }
        // The command shares the caller's terminal and process group: a
        // terminal's ^C already reached it.
        if code == libc::SI_KERNEL {
            return;
        }
        for c in cmds {
            // SAFETY: a process of our own sandbox.
            unsafe { libc::kill(c, sig) };
        }
    };
    let err_w_raw = err_w.as_raw_fd();
    let status_w_raw = status_w.as_raw_fd();
    let mut reader = StatusReader::new(status_r)?;
    let status_fd = reader.fd();
    let mut ready = || reader.ready();
    let watch = crate::exec::Watch {
        fd: status_fd,
        ready: &mut ready,
    };
    // The teardown kills bwrap alone and counts on its children dying with
    // it: never without the option that makes them.
    if !l.rendered.args.iter().any(|a| a == "--die-with-parent") {
        return Err("the bwrap command line lacks --die-with-parent".into());
    }
    let teardown = crate::exec::Teardown::PidNamespace;
    let status =
        crate::exec::supervise_with(plan.timeout, &mut forward, teardown, Some(watch), || {
            let argv_p: Vec<*const libc::c_char> = bargv
                .iter()
                .map(|a| a.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect();
            let envp_p: Vec<*const libc::c_char> = envp
                .iter()
                .map(|a| a.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect();
            // SAFETY: NUL-terminated arrays of live CStrings; SIG_IGN survives
            // execve, which is the point.
            unsafe {
                for s in SHIELDED {
                    libc::signal(s, libc::SIG_IGN);
                }
                // The status pipe is the one descriptor bwrap must keep (made
                // close-on-exec so that nothing else inherits it).
                libc::fcntl(status_w_raw, libc::F_SETFD, 0);
                libc::dup2(err_w_raw, 2);
                libc::execve(bwrap_path.as_ptr(), argv_p.as_ptr(), envp_p.as_ptr());
            }
            let e = std::io::Error::last_os_error();
            let msg = format!("cannot run {}: {e}", l.bwrap.display());
            // SAFETY: writing to our stderr (the pipe) before _exit.
            unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
            1
        });
    drop(err_w);
    drop(status_w);
    drop(args_fd);
    drop(layer_fd);
    drop(saved);
    drop(exe_fd);
    let said = bwrap_said(std::fs::File::from(err_r));
    if let Some(i) = said.windows(STARTED.len()).position(|w| w == STARTED) {
        use std::io::Write;
        let mut e = std::io::stderr();
        let _ = e.write_all(&said[..i]);
        let _ = e.write_all(&said[i + STARTED.len()..]);
        return Ok(status);
    }
    if let Some(code) = interrupted {
        return Ok(code);
    }
    if status == crate::exec::TIMEOUT_STATUS {
        return Ok(status);
    }
    let text = String::from_utf8_lossy(&said);
    let text = text.trim().trim_start_matches("bwrap: ");
    Err(format!(
        "bubblewrap could not build the sandbox: {}",
        if text.is_empty() {
            "it exited before the second stage"
        } else {
            text
        }
    ))
}

/// Reads bwrap's `--json-status-fd` reports: one JSON object per line, first
/// `child-pid` (the sandbox's init, pinned here as a pidfd), at the end
/// `exit-code`. On the exit code the init gets SIGKILL at once: the state
/// dcjail used to wait for bwrap's exit to reach (bwrap's children die with
/// it), without waiting for bwrap to tear itself down.
#[cfg(target_os = "linux")]
struct StatusReader {
    fd: std::os::fd::OwnedFd,
    buf: Vec<u8>,
    init: Option<std::os::fd::OwnedFd>,
}

#[cfg(target_os = "linux")]
impl StatusReader {
    fn new(fd: std::os::fd::OwnedFd) -> Result<StatusReader, String> {
        use std::os::fd::AsRawFd;
        let raw = fd.as_raw_fd();
        // SAFETY: fcntl on a descriptor we own.
        let ok = unsafe {
            let fl = libc::fcntl(raw, libc::F_GETFL);
            fl >= 0 && libc::fcntl(raw, libc::F_SETFL, fl | libc::O_NONBLOCK) == 0
        };
        if !ok {
            return Err(format!("status pipe: {}", std::io::Error::last_os_error()));
        }
        Ok(StatusReader {
            fd,
            buf: Vec::new(),
            init: None,
        })
    }

    fn fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.fd.as_raw_fd()
    }

    fn ready(&mut self) -> crate::exec::Heard {
        use crate::exec::Heard;
        let mut chunk = [0u8; 1024];
        loop {
            // SAFETY: a buffer of chunk.len() bytes.
            let n = unsafe { libc::read(self.fd(), chunk.as_mut_ptr().cast(), chunk.len()) };
            match n {
                0 => return Heard::Closed,
                n if n > 0 => {
                    // Bounded: bwrap writes two short lines.
                    if self.buf.len() < 64 * 1024 {
                        self.buf.extend_from_slice(&chunk[..n as usize]);
                    }
                }
                _ if crate::exec::errno() == libc::EINTR => {}
                _ => break,
            }
        }
        while let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=i).collect();
            let Ok(v) = serde_json::from_slice::<serde_json::Value>(&line) else {
                continue;
            };
            if let Some(pid) = v.get("child-pid").and_then(|p| p.as_i64()) {
                self.init = pidfd(pid);
            }
            let code = v.get("exit-code").and_then(|c| c.as_i64());
            let code = code.and_then(|c| u8::try_from(c).ok());
            if let (Some(code), Some(init)) = (code, &self.init) {
                use std::os::fd::AsRawFd;
                // SAFETY: a pidfd we hold; no siginfo.
                unsafe {
                    libc::syscall(
                        libc::SYS_pidfd_send_signal,
                        init.as_raw_fd(),
                        libc::SIGKILL,
                        std::ptr::null::<libc::siginfo_t>(),
                        0u32,
                    )
                };
                return Heard::Status(i32::from(code));
            }
        }
        Heard::Nothing
    }
}

/// A pidfd for `pid`, or None (then the status is taken from bwrap's exit).
#[cfg(target_os = "linux")]
fn pidfd(pid: i64) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let pid = libc::pid_t::try_from(pid).ok().filter(|p| *p > 0)?;
    // SAFETY: pidfd_open takes a pid and flags.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0u32) };
    let fd = i32::try_from(fd).ok().filter(|f| *f >= 0)?;
    // SAFETY: a fresh descriptor, ours.
    Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// What bwrap (and stage 2, up to its mark) wrote on the stderr pipe, read
/// once the supervisor is done. Whatever reached the pipe is in it by then;
/// when stage 2's mark is there, what is still to come could only be
/// bwrap's init speaking on its way out, and waiting for the pipe's end
/// would wait for that init to exit, which waits for the teardown of the
/// whole pid namespace (it already has SIGKILL pending). Without the mark
/// bwrap failed: then its last words are waited for.
#[cfg(target_os = "linux")]
fn bwrap_said(mut f: std::fs::File) -> Vec<u8> {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let fd = f.as_raw_fd();
    let mut said = Vec::new();
    // SAFETY: fcntl on a descriptor we own.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags >= 0 && unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } == 0 {
        let mut buf = [0u8; 4096];
        loop {
            match f.read(&mut buf) {
                Ok(0) => return said,
                Ok(n) => said.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if said.windows(STARTED.len()).any(|w| w == STARTED) {
            return said;
        }
        // SAFETY: as above.
        unsafe { libc::fcntl(fd, libc::F_SETFL, flags) };
    }
    let _ = f.read_to_end(&mut said);
    said
}

/// Reads the layer from `fd` only if it is the sealed memfd the first stage
/// made: nothing a caller can pass through argv or stdin qualifies.
#[cfg(target_os = "linux")]
fn read_sealed(fd: i32) -> Result<Vec<u8>, String> {
    let link = std::fs::read_link(format!("/proc/self/fd/{fd}"))
        .map_err(|e| format!("descriptor {fd}: {e}"))?;
    let want = format!("/memfd:{STAGE2_MEMFD}");
    if !link.as_os_str().as_bytes().starts_with(want.as_bytes()) {
        return Err(format!("descriptor {fd} is not dcjail's layer"));
    }
    let all = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL;
    // SAFETY: plain fcntl on an fd number.
    let seals = unsafe { libc::fcntl(fd, libc::F_GET_SEALS) };
    if seals < 0 || seals & all != all {
        return Err(format!("descriptor {fd} is not sealed"));
    }
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid buffer.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(format!(
            "descriptor {fd}: {}",
            std::io::Error::last_os_error()
        ));
    }
    let size = usize::try_from(st.st_size).map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; size];
    let mut off = 0;
    while off < size {
        // SAFETY: valid fd and buffer range.
        let n = unsafe {
            libc::pread(
                fd,
                buf[off..].as_mut_ptr().cast(),
                size - off,
                off as libc::off_t,
            )
        };
        if n <= 0 {
            return Err(format!(
                "reading the layer: {}",
                std::io::Error::last_os_error()
            ));
        }
        off += n as usize;
    }
    // SAFETY: the fd is not used again.
    unsafe { libc::close(fd) };
    Ok(buf)
}

/// `dcjail __stage2 FD IGN ERR STD -- COMMAND...`, run by bwrap inside the
/// sandbox: reads the layer from the sealed memfd FD, puts the caller's
/// stderr (ERR) back on fd 2, restores the signal dispositions bwrap was
/// shielded from (IGN: those that were ignored before), applies the layer
/// and execs COMMAND with the standard descriptors the caller left closed
/// (STD: bit N for fd N) closed again. It can only add restrictions to its
/// caller.
#[cfg(target_os = "linux")]
pub fn stage2_main(args: &[OsString]) -> i32 {
    use crate::error::Refusal;
    if args.len() < 8 || args[6] != "--" {
        let r = Refusal::usage(format!("`{STAGE2}` is internal to dcjail"));
        eprintln!("{}", r.line());
        return r.exit_code();
    }
    let parse = |a: &OsString| a.to_str().and_then(|s| s.parse::<u32>().ok());
    let (Some(fd), Some(ign), Some(err), Some(closed @ 0..=7)) = (
        parse(&args[2]),
        parse(&args[3]),
        parse(&args[4]),
        parse(&args[5]),
    ) else {
        let r = Refusal::usage(format!("`{STAGE2}` is internal to dcjail"));
        eprintln!("{}", r.line());
        return r.exit_code();
    };
    let fail = |m: String| {
        let r = Refusal::unavailable(format!("second stage: {m}"));
        eprintln!("{}", r.line());
        r.exit_code()
    };
    let bytes = match i32::try_from(fd)
        .map_err(|e| e.to_string())
        .and_then(read_sealed)
    {
        Ok(b) => b,
        Err(e) => return fail(e),
    };
    for (i, s) in SHIELDED.iter().enumerate() {
        if ign & (1 << i) == 0 {
            // SAFETY: restoring the default disposition.
            unsafe { libc::signal(*s, libc::SIG_DFL) };
        }
    }
    // From here on the caller's stderr is fd 2 again; bwrap's pipe hears
    // only that we started.
    // SAFETY: plain writes and dup2 on fd numbers given by the first stage.
    unsafe {
        libc::write(2, STARTED.as_ptr().cast(), STARTED.len());
        if err > 2 && libc::dup2(err as i32, 2) == 2 {
            libc::close(err as i32);
        }
    }
    // exec_command closes them right before the command's execve.
    crate::exec::stdfds::note_closed(closed as u8);
    let argv = match crate::exec::c_argv(&args[7..]) {
        Ok(a) => a,
        Err(e) => return fail(e),
    };
    let proxy_fd = std::env::var_os(crate::net::STAGE2_VAR);
    let envp: Vec<std::ffi::CString> = std::env::vars_os()
        .filter(|(k, _)| k != crate::net::STAGE2_VAR)
        .filter_map(|(k, v)| {
            let mut b = k.as_bytes().to_vec();
            b.push(b'=');
            b.extend_from_slice(v.as_bytes());
            std::ffi::CString::new(b).ok()
        })
        .collect();
    let path_var = std::env::var_os("PATH");
    if let Some(v) = proxy_fd {
        // Network allowlist: the proxy outside accepts on a socket bound
        // in this namespace; it must exist before the command starts.
        let fd = v.to_str().and_then(|s| s.parse::<i32>().ok());
        let sent = fd
            .ok_or_else(|| "bad proxy channel".to_string())
            .and_then(crate::net::session::send_listener);
        if let Err(e) = sent {
            return fail(e);
        }
    }
    let program = match super::stub_format::Program::parse(&bytes) {
        Ok(p) => p,
        Err(e) => return fail(e.to_string()),
    };
    // The stub's own sequence (stage2.rs), so that this second stage applies
    // the very same layer and brokers the same calls.
    let mut exec = || crate::exec::exec_command(&argv, &envp, path_var.as_deref());
    match super::stage2::run(&program, &mut exec) {
        Ok(code) => code,
        Err(f) => {
            let mut m = String::from_utf8_lossy(f.what).into_owned();
            if let Some(p) = f.path {
                m.push_str(&String::from_utf8_lossy(p));
            }
            if let Some(e) = f.errno {
                m.push_str(&format!(": {}", std::io::Error::from_raw_os_error(e)));
            }
            fail(m)
        }
    }
}

/// Whether the second stage's layer is available for the default policy
/// (`doctor`).
#[cfg(target_os = "linux")]
pub fn layer_bytes_for_default() -> Result<(), String> {
    let mut policy = crate::policy::Policy::embedded().map_err(|r| r.message)?;
    policy.sandbox.backend = crate::policy::BackendChoice::Bwrap;
    let facts = crate::plan::Facts::gather().map_err(|r| r.message)?;
    let plan = crate::plan::build(&policy, vec!["true".into()], &facts).map_err(|r| r.message)?;
    let spec = layer(&plan, &super::host::Real)?;
    if !STUB.is_empty() {
        stub_program(&spec, &[])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{FsPlan, NetPlan};
    use crate::policy::{BackendChoice, Mode, Tool};
    use std::collections::HashMap;

    struct Fake(HashMap<PathBuf, Node>);
    impl Host for Fake {
        fn node(&self, p: &Path) -> Node {
            self.0.get(p).copied().unwrap_or(Node::Missing)
        }
    }
    fn fake(entries: &[(&str, Node)]) -> Fake {
        Fake(
            entries
                .iter()
                .map(|(p, n)| (PathBuf::from(p), *n))
                .collect(),
        )
    }

    fn plan(access: SandboxMode, writable: &[&str], protected: &[&str]) -> Plan {
        Plan {
            argv: vec!["true".into()],
            cwd: "/ws".into(),
            workspace: "/ws".into(),
            worktree: None,
            mode: Mode::Default,
            tool: Tool::Bash,
            sandboxed: true,
            backend: BackendChoice::Bwrap,
            fs: FsPlan {
                access,
                writable: writable.iter().map(PathBuf::from).collect(),
                deny_read: vec![],
                allow_read: vec![],
                deny_write: vec![],
                protected: protected.iter().map(PathBuf::from).collect(),
            },
            net: NetPlan {
                mode: NetMode::None,
                allow: vec![],
                deny: vec![],
                allow_unix_sockets: false,
            },
            timeout: None,
            policy_file: None,
            observe: false,
        }
    }

    fn words(r: &Rendered) -> Vec<String> {
        r.args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    fn pos(w: &[String], seq: &[&str]) -> usize {
        w.windows(seq.len())
            .position(|win| win.iter().zip(seq).all(|(a, b)| a == b))
            .unwrap_or_else(|| panic!("{seq:?} not in {w:?}"))
    }

    #[test]
    fn read_only_renders_root_ro_dev_proc_and_every_namespace() {
        let r = render(&plan(SandboxMode::ReadOnly, &[], &[]), &fake(&[])).unwrap();
        let w = words(&r);
        assert_eq!(
            &w[..7],
            &["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        );
        for ns in [
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--unshare-net",
            "--die-with-parent",
        ] {
            assert!(w.contains(&ns.to_string()), "{ns} missing");
        }
        // The caller's terminal stays the command's (job control works);
        // TIOCSTI is refused by the seccomp layer instead.
        assert!(!w.contains(&"--new-session".to_string()));
        pos(&w, &["--cap-drop", "ALL"]);
        assert!(!w.contains(&"--bind".to_string()));
        assert!(r.guards.is_empty());
    }

    #[test]
    fn full_network_keeps_the_host_network_namespace_only() {
        let mut p = plan(SandboxMode::ReadOnly, &[], &[]);
        p.net.mode = NetMode::Full;
        let w = words(&render(&p, &fake(&[])).unwrap());
        assert!(!w.contains(&"--unshare-net".to_string()));
        assert!(w.contains(&"--unshare-pid".to_string()));
    }

    #[test]
    fn protected_paths_are_bound_read_only_after_the_writable_root_with_the_git_dir_pinned() {
        let p = plan(
            SandboxMode::WorkspaceWrite,
            &["/ws"],
            &["/ws/.git/hooks", "/ws/.git/config", "/ws/.bashrc"],
        );
        let host = fake(&[
            ("/ws", Node::Dir),
            ("/ws/.git", Node::Dir),
            ("/ws/.git/hooks", Node::Dir),
            ("/ws/.git/config", Node::File),
            ("/ws/.bashrc", Node::File),
        ]);
        let r = render(&p, &host).unwrap();
        let w = words(&r);
        let root = pos(&w, &["--bind", "/ws", "/ws"]);
        // Held entries are bound with -try: one that vanished before bwrap
        // mounts it is skipped (its guard keeps it uncreatable).
        let pin = pos(&w, &["--bind-try", "/ws/.git", "/ws/.git"]);
        let hooks = pos(&w, &["--ro-bind-try", "/ws/.git/hooks", "/ws/.git/hooks"]);
        let config = pos(&w, &["--ro-bind-try", "/ws/.git/config", "/ws/.git/config"]);
        let rc = pos(&w, &["--ro-bind-try", "/ws/.bashrc", "/ws/.bashrc"]);
        assert!(pos(&w, &["--ro-bind", "/", "/"]) < root);
        assert!(root < pin && pin < hooks && pin < config && root < rc);
        assert!(!r.missing);
    }

    #[test]
    fn a_missing_protected_path_is_guarded_at_its_first_missing_component_and_nothing_is_mounted() {
        let p = plan(
            SandboxMode::WorkspaceWrite,
            &["/ws"],
            &[
                "/ws/.claude/commands",
                "/ws/.claude/agents",
                "/ws/.mcp.json",
                "/ws/.git/hooks",
            ],
        );
        let host = fake(&[("/ws", Node::Dir)]);
        let r = render(&p, &host).unwrap();
        let w = words(&r);
        let g = |d: &str, n: &str| Guard {
            dir: d.into(),
            name: n.into(),
        };
        assert_eq!(
            r.guards,
            vec![g("/ws", ".claude"), g("/ws", ".mcp.json"), g("/ws", ".git")]
        );
        // A mount would need a placeholder on the host: there is none.
        for m in ["/ws/.claude", "/ws/.mcp.json", "/ws/.git"] {
            assert!(!w.contains(&m.to_string()), "{m} mounted: {w:?}");
        }
    }

    #[test]
    fn a_missing_name_inside_an_existing_git_dir_is_guarded_in_it() {
        let p = plan(
            SandboxMode::WorkspaceWrite,
            &["/ws"],
            &["/ws/.git/hooks", "/ws/.git/config"],
        );
        let host = fake(&[
            ("/ws", Node::Dir),
            ("/ws/.git", Node::Dir),
            ("/ws/.git/config", Node::File),
        ]);
        let r = render(&p, &host).unwrap();
        let g = |d: &str, n: &str| Guard {
            dir: d.into(),
            name: n.into(),
        };
        // The missing hooks, and every name on the way to a protected path
        // (should one vanish during the run, it cannot come back).
        assert_eq!(
            r.guards,
            vec![
                g("/ws", ".git"),
                g("/ws/.git", "hooks"),
                g("/ws/.git", "config")
            ]
        );
        assert!(r.missing);
        // The directory holding the guard is pinned, so it cannot be
        // renamed away and recreated unguarded.
        pos(&words(&r), &["--bind-try", "/ws/.git", "/ws/.git"]);
    }

    #[test]
    fn a_gitdir_pointer_file_is_held_read_only_itself() {
        let p = plan(SandboxMode::WorkspaceWrite, &["/ws"], &["/ws/.git/hooks"]);
        let host = fake(&[("/ws", Node::Dir), ("/ws/.git", Node::File)]);
        let r = render(&p, &host).unwrap();
        pos(&words(&r), &["--ro-bind-try", "/ws/.git", "/ws/.git"]);
        assert!(!r.missing);
    }

    #[test]
    fn a_symlinked_protected_path_inside_a_writable_root_is_refused() {
        let p = plan(SandboxMode::WorkspaceWrite, &["/ws"], &["/ws/.bashrc"]);
        let host = fake(&[("/ws", Node::Dir), ("/ws/.bashrc", Node::Symlink)]);
        let e = render(&p, &host).unwrap_err();
        assert!(e.contains("symlink"), "{e}");
    }

    #[test]
    fn another_users_symlink_in_a_sticky_tmp_needs_no_mount_and_is_no_refusal() {
        let p = plan(SandboxMode::WorkspaceWrite, &["/tmp"], &["/tmp/.bashrc"]);
        let host = fake(&[("/tmp", Node::Dir), ("/tmp/.bashrc", Node::Foreign)]);
        let r = render(&p, &host).unwrap();
        assert!(!words(&r).contains(&"/tmp/.bashrc".to_string()));
        assert!(r.guards.is_empty());
    }

    #[test]
    fn protected_paths_outside_every_writable_root_need_no_mount() {
        let p = plan(
            SandboxMode::WorkspaceWrite,
            &["/ws"],
            &["/elsewhere/.git/hooks"],
        );
        let r = render(&p, &fake(&[("/ws", Node::Dir)])).unwrap();
        assert!(!words(&r).iter().any(|w| w.starts_with("/elsewhere")));
    }

    #[test]
    fn deny_read_masks_and_allow_read_reopens_inside_then_remounts_read_only() {
        let mut p = plan(SandboxMode::WorkspaceWrite, &["/ws"], &[]);
        p.fs.deny_read = vec![
            PathRule::Literal("/ws/secret".into()),
            PathRule::Literal("/ws/key".into()),
        ];
        p.fs.allow_read = vec![PathRule::Literal("/ws/secret/public".into())];
        let host = fake(&[
            ("/ws", Node::Dir),
            ("/ws/secret", Node::Dir),
            ("/ws/secret/public", Node::Dir),
            ("/ws/key", Node::File),
        ]);
        let w = words(&render(&p, &host).unwrap());
        let mask = pos(&w, &["--tmpfs", "/ws/secret"]);
        let file = pos(&w, &["--ro-bind", "/dev/null", "/ws/key"]);
        let reopen = pos(
            &w,
            &["--bind-try", "/ws/secret/public", "/ws/secret/public"],
        );
        let remount = pos(&w, &["--remount-ro", "/ws/secret"]);
        assert!(pos(&w, &["--bind", "/ws", "/ws"]) < mask);
        assert!(file > 0 && mask < reopen && reopen < remount);
    }

    #[test]
    fn deny_write_beats_a_writable_root_it_names() {
        let mut p = plan(SandboxMode::WorkspaceWrite, &["/ws", "/ws/out"], &[]);
        p.fs.deny_write = vec![PathRule::Literal("/ws/out".into())];
        let host = fake(&[("/ws", Node::Dir), ("/ws/out", Node::Dir)]);
        let w = words(&render(&p, &host).unwrap());
        pos(&w, &["--ro-bind", "/ws/out", "/ws/out"]);
        assert!(!w.windows(3).any(|x| x[0] == "--bind" && x[1] == "/ws/out"));
    }

    #[test]
    fn danger_full_access_binds_the_root_writable_but_keeps_protected_paths_read_only() {
        let p = plan(
            SandboxMode::DangerFullAccess,
            &["/"],
            &["/usr/local/bin/dcjail"],
        );
        let host = fake(&[
            ("/usr", Node::Dir),
            ("/usr/local", Node::Dir),
            ("/usr/local/bin", Node::Dir),
            ("/usr/local/bin/dcjail", Node::File),
        ]);
        let r = render(&p, &host).unwrap();
        let w = words(&r);
        assert_eq!(&w[..3], &["--bind", "/", "/"]);
        pos(
            &w,
            &[
                "--ro-bind-try",
                "/usr/local/bin/dcjail",
                "/usr/local/bin/dcjail",
            ],
        );
        // Nothing is missing: no broker for creations.
        assert!(!r.missing);
    }

    #[test]
    fn the_directories_on_the_way_to_a_masked_file_in_a_writable_root_are_pinned() {
        let mut p = plan(SandboxMode::WorkspaceWrite, &["/ws"], &[]);
        p.fs.deny_read = vec![PathRule::Literal("/ws/sub/deeper/key".into())];
        let host = fake(&[
            ("/ws", Node::Dir),
            ("/ws/sub", Node::Dir),
            ("/ws/sub/deeper", Node::Dir),
            ("/ws/sub/deeper/key", Node::File),
        ]);
        let w = words(&render(&p, &host).unwrap());
        let sub = pos(&w, &["--bind-try", "/ws/sub", "/ws/sub"]);
        let deeper = pos(&w, &["--bind-try", "/ws/sub/deeper", "/ws/sub/deeper"]);
        let mask = pos(&w, &["--ro-bind", "/dev/null", "/ws/sub/deeper/key"]);
        assert!(sub < deeper && deeper < mask);
    }

    #[test]
    fn the_allowlist_keeps_a_private_network_namespace() {
        let mut p = plan(SandboxMode::ReadOnly, &[], &[]);
        p.net.mode = NetMode::Allowlist;
        let w = words(&render(&p, &fake(&[])).unwrap());
        assert!(w.contains(&"--unshare-net".to_string()));
    }

    #[test]
    fn globs_are_refused_not_dropped() {
        let mut p = plan(SandboxMode::ReadOnly, &[], &[]);
        p.fs.deny_read = vec![PathRule::Glob(crate::plan::Glob {
            pattern: "**/.env".into(),
            written: "**/.env".into(),
            matcher: globset::Glob::new("**/.env").unwrap().compile_matcher(),
        })];
        assert!(render(&p, &fake(&[])).unwrap_err().contains("**/.env"));
    }

    #[test]
    fn a_bwrap_planted_in_a_writable_root_is_never_trusted() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("dcjail-trust-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let dir = std::fs::canonicalize(&dir).unwrap();
        let fake_bwrap = dir.join("bwrap");
        std::fs::write(&fake_bwrap, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&fake_bwrap, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut p = plan(SandboxMode::WorkspaceWrite, &[dir.to_str().unwrap()], &[]);
        p.workspace = dir.clone();
        p.cwd = dir.clone();
        assert!(!trusted(&fake_bwrap, Some(&p)));
        p.fs.writable.clear();
        assert!(!trusted(&fake_bwrap, Some(&p)), "inside the workspace");
        p.workspace = "/elsewhere".into();
        p.cwd = "/elsewhere".into();
        assert!(trusted(&fake_bwrap, Some(&p)));
        std::fs::set_permissions(&fake_bwrap, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(!trusted(&fake_bwrap, Some(&p)), "world-writable");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_bwrap_reached_through_a_symlinked_directory_in_the_workspace_is_never_trusted() {
        use std::os::unix::fs::PermissionsExt;
        let ws = std::env::temp_dir().join(format!("dcjail-trust-link-{}", std::process::id()));
        let out = std::env::temp_dir().join(format!("dcjail-trust-out-{}", std::process::id()));
        std::fs::create_dir_all(ws.join("real")).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        let ws = std::fs::canonicalize(&ws).unwrap();
        let out = std::fs::canonicalize(&out).unwrap();
        let fake_bwrap = ws.join("real").join("bwrap");
        std::fs::write(&fake_bwrap, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&fake_bwrap, std::fs::Permissions::from_mode(0o755)).unwrap();
        // A path outside the workspace whose directory is a symlink into it.
        let link = out.join("bin");
        std::os::unix::fs::symlink(ws.join("real"), &link).unwrap();
        let via_link = link.join("bwrap");
        assert!(
            without_symlinks(&via_link).is_none(),
            "a symlinked path is not its own canonical path"
        );
        assert!(without_symlinks(&fake_bwrap).is_some());
        let mut p = plan(SandboxMode::ReadOnly, &[], &[]);
        p.workspace = ws.clone();
        p.cwd = ws.clone();
        assert!(!trusted(&via_link, Some(&p)), "resolves into the workspace");
        std::fs::remove_file(&link).unwrap();
        std::fs::remove_dir(&out).unwrap();
        std::fs::remove_dir_all(&ws).unwrap();
    }

    #[test]
    fn versions_parse() {
        assert_eq!(parse_version("bubblewrap 0.8.0\n"), Some((0, 8, 0)));
        assert_eq!(parse_version("bubblewrap 0.11"), Some((0, 11, 0)));
        assert_eq!(parse_version("nope"), None);
        assert!(parse_version("bubblewrap 0.3.3").unwrap() < MIN_VERSION);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_status_reader_takes_the_exit_code_and_kills_the_init_it_pinned() {
        use crate::exec::Heard;
        use std::io::Write;
        let mut init = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let (r, w) = pipe().unwrap();
        let mut w = std::fs::File::from(w);
        let mut reader = StatusReader::new(r).unwrap();
        assert!(matches!(reader.ready(), Heard::Nothing));
        // Split across writes, with a line that is not JSON in between.
        write!(
            w,
            "{{ \"child-pid\": {}, \"pid-namespace\": 4026",
            init.id()
        )
        .unwrap();
        assert!(matches!(reader.ready(), Heard::Nothing));
        write!(w, "531836 }}\nnot json\n{{ \"exit-code\": 300 }}\n").unwrap();
        // An out-of-range code settles nothing.
        assert!(matches!(reader.ready(), Heard::Nothing));
        assert!(init.try_wait().unwrap().is_none(), "killed too early");
        writeln!(w, "{{ \"exit-code\": 42 }}").unwrap();
        assert!(matches!(reader.ready(), Heard::Status(42)));
        let st = init.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(st.signal(), Some(libc::SIGKILL));
        drop(w);
        assert!(matches!(reader.ready(), Heard::Closed));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn without_a_pinned_init_the_exit_code_is_not_taken() {
        use crate::exec::Heard;
        use std::io::Write;
        let (r, w) = pipe().unwrap();
        let mut w = std::fs::File::from(w);
        let mut reader = StatusReader::new(r).unwrap();
        writeln!(w, "{{ \"exit-code\": 0 }}").unwrap();
        // bwrap's own exit then brings the status.
        assert!(matches!(reader.ready(), Heard::Nothing));
    }

    #[cfg(target_os = "linux")]
    fn spec_for_stub() -> crate::backend::landlock::LayerSpec {
        use crate::backend::landlock::{access, FsRule, LayerSpec};
        use crate::backend::seccomp::{FsRules, Inet, Meta, SocketRules};
        LayerSpec {
            fs: FsRules {
                meta: Meta::Broker,
                create: true,
                observe: false,
            },
            abi: 6,
            handled_fs: access::READ | access::WRITE,
            fs_rules: vec![
                FsRule {
                    path: "/".into(),
                    access: access::READ,
                },
                FsRule {
                    path: "/work/a b\nc".into(),
                    access: access::READ | access::WRITE,
                },
            ],
            restrict_tcp: true,
            tcp_connect_ports: vec![3128],
            scopes: 3,
            sockets: SocketRules {
                allow_unix: true,
                inet: Inet::StreamOnly,
            },
            keep_fds: vec![7, 4],
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_stub_program_carries_the_whole_layer_and_the_compiled_filters() {
        use crate::backend::stub_format::Program;
        let spec = spec_for_stub();
        let guards: Vec<GuardId> = vec![(5, 77, b".bashrc".to_vec()), (5, 78, b"hooks".to_vec())];
        let bytes = stub_program(&spec, &guards).unwrap();
        let p = Program::parse(&bytes).unwrap();
        assert!(p.broker());
        let got: Vec<GuardId> = p.guards().map(|(d, i, n)| (d, i, n.to_vec())).collect();
        assert_eq!(got, guards);
        assert_eq!(p.handled_fs, spec.handled_fs);
        assert_eq!(p.handled_net, 0b11);
        assert_eq!(p.scoped, 3);
        let rules: Vec<(Vec<u8>, u64)> = p.fs_rules().map(|(a, b)| (a.to_vec(), b)).collect();
        let want: Vec<(Vec<u8>, u64)> = spec
            .fs_rules
            .iter()
            .map(|r| (r.path.as_os_str().as_bytes().to_vec(), r.access))
            .collect();
        assert_eq!(rules, want);
        assert_eq!(p.ports().collect::<Vec<_>>(), vec![3128]);
        assert_eq!(p.keep_fds().collect::<Vec<_>>(), vec![7, 4]);
        let filters: Vec<Vec<u8>> = p.filters().map(|(_, b)| b.to_vec()).collect();
        let compiled = crate::backend::seccomp::compile(spec.sockets, spec.fs)
            .unwrap()
            .raw();
        assert_eq!(filters, compiled);
        for (n, b) in p.filters() {
            assert_eq!(usize::from(n) * 8, b.len());
        }
        // Without TCP rules no network right is handled.
        let mut open = spec.clone();
        open.restrict_tcp = false;
        open.tcp_connect_ports.clear();
        open.fs = crate::backend::seccomp::FsRules::OPEN;
        let b = stub_program(&open, &[]).unwrap();
        let q = Program::parse(&b).unwrap();
        assert_eq!(q.handled_net, 0);
        assert!(!q.broker());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_stub_parser_refuses_every_truncation_trailing_bytes_and_bad_rules() {
        use crate::backend::stub_format::Program;
        let bytes = stub_program(&spec_for_stub(), &[(1, 2, b"x".to_vec())]).unwrap();
        for n in 0..bytes.len() {
            assert!(Program::parse(&bytes[..n]).is_err(), "truncated at {n}");
        }
        let mut t = bytes.clone();
        t.push(0);
        assert!(Program::parse(&t).is_err());
        let mut bad = bytes.clone();
        bad[0] ^= 1;
        assert!(Program::parse(&bad).is_err());
        // What the stub would refuse is refused when the program is made.
        let mut rel = spec_for_stub();
        rel.fs_rules[0].path = "relative".into();
        assert!(stub_program(&rel, &[]).is_err());
        let mut wide = spec_for_stub();
        wide.handled_fs = crate::backend::landlock::access::READ;
        assert!(stub_program(&wide, &[]).is_err());
        let mut long = spec_for_stub();
        long.fs_rules[0].path = format!("/{}", "x".repeat(5000)).into();
        assert!(stub_program(&long, &[]).is_err());
        // A guard must be a plain file name.
        for bad in [&b"a/b"[..], b"", b".", b"..", b"x\0y"] {
            assert!(stub_program(&spec_for_stub(), &[(1, 2, bad.to_vec())]).is_err());
        }
    }

    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    #[test]
    fn the_stub_is_embedded_static_and_small() {
        assert!(STUB.starts_with(b"\x7fELF"), "not an ELF binary");
        assert!(STUB.len() < 64 * 1024, "stub is {} bytes", STUB.len());
        // No PT_INTERP program header: it starts without the dynamic loader.
        let u16_at = |o: usize| u16::from_le_bytes([STUB[o], STUB[o + 1]]) as usize;
        let mut phoff = [0u8; 8];
        phoff.copy_from_slice(&STUB[0x20..0x28]);
        let (phoff, phentsize, phnum) = (
            u64::from_le_bytes(phoff) as usize,
            u16_at(0x36),
            u16_at(0x38),
        );
        assert!(phnum > 0);
        for i in 0..phnum {
            let o = phoff + i * phentsize;
            let kind = u32::from_le_bytes([STUB[o], STUB[o + 1], STUB[o + 2], STUB[o + 3]]);
            assert_ne!(kind, 3, "the stub asks for a program interpreter");
        }
    }
}
