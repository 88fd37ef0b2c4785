//! Every repository under the writable roots, found at launch: git finds a
//! repository from any directory below it, so a repository nested at any
//! depth (a clone in a home directory, a vendored checkout, a scratch repo
//! under `/tmp`) has hooks and config a later `git` of the user's runs,
//! exactly like the workspace's own. The walk finds each directory holding
//! a `.git` (a checkout) and each directory that is itself a git dir (a
//! bare repository, a `.git` directory, a module git dir).
//!
//! Owns: that walk. It reads directories with `readdir` (the entry's type
//! from the directory, no `stat` per entry) and one small file per git dir
//! (its `HEAD`). It skips only what no `git` of the user's would use: what
//! lies behind a symlink (walked under its own root if it is one), the
//! object store of a git dir (git never finds a repository there), and,
//! in a world-writable directory such as `/tmp`, entries of other users
//! (git refuses another user's repository, and another user's files must
//! never make this user's run refuse). Must never: write, follow a
//! symlink, or return less than it says without refusing — past its bound,
//! or at a directory it cannot read for another reason than "not there"
//! or "not allowed", it is an error and the launch refuses.

use crate::error::Error;
use std::ffi::OsStr;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The bound on directory entries read per launch, as the glob walk's.
pub const DEFAULT_LIMIT: usize = 1_000_000;

/// The bound on repositories found. Each one costs the bwrap backend a
/// read-only mount for its config and hooks and a pin for every directory
/// on the way, and bubblewrap's cost per mount grows with the mounts made
/// before it: past this many a launch would take many seconds, so it
/// refuses instead (fail closed: protecting fewer is not an option).
pub const MAX_REPOS: usize = 128;

/// Pseudo filesystems, never entered (no writable root is one).
const PSEUDO: &[&str] = &["/proc", "/sys", "/dev"];

/// What the walk found, in the order found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// Directories holding a `.git` (directory, file or symlink).
    pub checkouts: Vec<PathBuf>,
    /// Directories that are themselves git dirs.
    pub gitdirs: Vec<PathBuf>,
    /// Directory entries read.
    pub entries: usize,
    /// Repositories: git dirs, and checkouts whose `.git` is not one.
    pub repos: usize,
}

/// Walks `roots` (canonical; one inside another is walked once).
///
/// `held` directories (the home directory the class rule keeps read-only)
/// are not walked: nothing in them can change, and a home directory is
/// the largest tree a launch could meet. The roots inside them are walked
/// as roots of their own.
pub fn find(roots: &[PathBuf], held: &[PathBuf], euid: u32, limit: usize) -> Result<Found, Error> {
    let mut found = Found::default();
    let is_held = |r: &Path| crate::paths::held_by(held, roots, r);
    let walked: Vec<&PathBuf> = roots.iter().filter(|r| !is_held(r)).collect();
    let outer: Vec<&PathBuf> = walked
        .iter()
        .filter(|r| {
            !walked.iter().any(|o| {
                o != *r
                    && r.starts_with(o)
                    && !held.iter().any(|h| r.starts_with(h) && h.starts_with(o))
            })
        })
        .copied()
        .collect();
    for root in outer {
        if PSEUDO.iter().any(|p| root.starts_with(p)) {
            continue;
        }
        walk_root(root, held, euid, limit, &mut found)?;
    }
    Ok(found)
}

/// One directory's listing, as the walk needs it.
#[derive(Default)]
struct Listing {
    subdirs: Vec<PathBuf>,
    dotgit: bool,
    /// `.git` is a directory (a git dir, counted as such).
    dotgit_dir: bool,
    head: bool,
    objects: bool,
    refs: bool,
}

fn walk_root(
    root: &Path,
    held: &[PathBuf],
    euid: u32,
    limit: usize,
    found: &mut Found,
) -> Result<(), Error> {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        if dir != root && held.contains(&dir) {
            continue;
        }
        let Some(l) = list(&dir, root, euid, limit, found)? else {
            continue;
        };
        if l.dotgit {
            found.checkouts.push(dir.clone());
        }
        let is_gitdir = l.head && l.objects && l.refs && valid_head(&dir.join("HEAD"));
        if is_gitdir {
            found.gitdirs.push(dir.clone());
        }
        found.repos += usize::from(is_gitdir) + usize::from(l.dotgit && !l.dotgit_dir);
        if found.repos > MAX_REPOS {
            return Err(refuse(
                root,
                format!(
                    "more than {MAX_REPOS} git repositories under the writable roots, each kept \
                     read-only in its config and hooks by mounts that would make the launch slow"
                ),
            ));
        }
        for s in l.subdirs {
            // The object store holds objects only; git never looks for a
            // repository inside it, and it is most of a repository's
            // entries.
            if is_gitdir && s.file_name() == Some(OsStr::new("objects")) {
                continue;
            }
            stack.push(s);
        }
    }
    Ok(())
}

/// The listing of `dir`, or `None` where the user cannot list it or it is
/// gone: what cannot be listed is looked up by name (a `.git` in it, or it
/// being a git dir), since the command, as this user, may still reach
/// those names.
fn list(
    dir: &Path,
    root: &Path,
    euid: u32,
    limit: usize,
    found: &mut Found,
) -> Result<Option<Listing>, Error> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == ErrorKind::PermissionDenied => {
            return Ok(Some(by_name(dir)));
        }
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => {
            return Ok(None);
        }
        Err(e) => {
            return Err(refuse(
                root,
                format!("cannot list `{}`: {e}", dir.display()),
            ))
        }
    };
    // Other users' entries in a world-writable directory (sticky or not,
    // as the glob walk) are not this user's repositories, and could be
    // planted to make runs refuse.
    let shared = std::fs::symlink_metadata(dir).is_ok_and(|m| m.mode() & 0o002 != 0);
    let mut l = Listing::default();
    for e in rd {
        let e = e.map_err(|e| refuse(root, format!("cannot list `{}`: {e}", dir.display())))?;
        found.entries += 1;
        if found.entries > limit {
            return Err(refuse(
                root,
                format!(
                    "more than {limit} directory entries under the writable roots; \
                     DCJAIL_WALK_LIMIT raises the bound"
                ),
            ));
        }
        let name = e.file_name();
        let Ok(ft) = e.file_type() else { continue };
        match name.as_encoded_bytes() {
            b".git" => {
                l.dotgit = true;
                l.dotgit_dir = ft.is_dir();
            }
            b"HEAD" => l.head = !ft.is_dir(),
            b"objects" => l.objects = ft.is_dir(),
            b"refs" => l.refs = ft.is_dir(),
            _ => {}
        }
        if !ft.is_dir() {
            continue;
        }
        let path = e.path();
        if shared && !ours(&path, euid) {
            continue;
        }
        l.subdirs.push(path);
    }
    Ok(Some(l))
}

/// A directory that can be entered but not listed: the names git looks
/// for, looked up.
fn by_name(dir: &Path) -> Listing {
    let is = |n: &str, want_dir: bool| {
        std::fs::symlink_metadata(dir.join(n)).is_ok_and(|m| m.is_dir() == want_dir)
    };
    Listing {
        subdirs: Vec::new(),
        dotgit: std::fs::symlink_metadata(dir.join(".git")).is_ok(),
        dotgit_dir: is(".git", true),
        head: is("HEAD", false),
        objects: is("objects", true),
        refs: is("refs", true),
    }
}

fn ours(p: &Path, euid: u32) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.uid() == euid || m.uid() == 0)
}

/// `HEAD` as git accepts it: a symbolic ref (`ref: refs/…`), a symlink
/// into `refs/`, or an object name. Read without blocking (a FIFO named
/// HEAD cannot stall the launch) and at most 256 bytes.
fn valid_head(p: &Path) -> bool {
    if let Ok(t) = std::fs::read_link(p) {
        return t.starts_with("refs/");
    }
    let Ok(f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW)
        .open(p)
    else {
        return false;
    };
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut buf = Vec::with_capacity(128);
    if f.take(256).read_to_end(&mut buf).is_err() {
        return false;
    }
    let t = buf.trim_ascii();
    t.starts_with(b"ref: refs/")
        || ((t.len() == 40 || t.len() == 64) && t.iter().all(u8::is_ascii_hexdigit))
}

fn refuse(root: &Path, why: String) -> Error {
    Error::GitWalk {
        root: root.to_path_buf(),
        why,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("dcjail-gitfind-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn gitdir(d: &Path) {
        std::fs::create_dir_all(d.join("objects/ab")).unwrap();
        std::fs::create_dir_all(d.join("refs/heads")).unwrap();
        std::fs::write(d.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    }

    #[test]
    fn finds_checkouts_and_git_dirs_at_any_depth_but_not_inside_objects() {
        let d = tree("depth");
        gitdir(&d.join("a/b/c/.git"));
        gitdir(&d.join("bare.git"));
        // Inside an object store: not looked at.
        gitdir(&d.join("bare.git/objects/ab/x"));
        std::fs::create_dir_all(d.join("wt")).unwrap();
        std::fs::write(d.join("wt/.git"), "gitdir: ../bare.git\n").unwrap();
        // HEAD that git would not accept: not a git dir.
        std::fs::create_dir_all(d.join("fake/objects")).unwrap();
        std::fs::create_dir_all(d.join("fake/refs")).unwrap();
        std::fs::write(d.join("fake/HEAD"), "hello\n").unwrap();
        // SAFETY: geteuid never fails.
        let f = find(
            std::slice::from_ref(&d),
            &[],
            unsafe { libc::geteuid() },
            10_000,
        )
        .unwrap();
        let mut c = f.checkouts.clone();
        c.sort();
        assert_eq!(c, vec![d.join("a/b/c"), d.join("wt")]);
        let mut g = f.gitdirs.clone();
        g.sort();
        assert_eq!(g, vec![d.join("a/b/c/.git"), d.join("bare.git")]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn other_users_entries_in_a_world_writable_directory_are_not_walked() {
        use std::os::unix::fs::PermissionsExt;
        let d = tree("shared");
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
        gitdir(&d.join("theirs/r/.git"));
        gitdir(&d.join("mine/r/.git"));
        // SAFETY: geteuid never fails.
        let me = unsafe { libc::geteuid() };
        // "Theirs" is another uid's: as root, chown it; otherwise walk as
        // if this user were someone else, for whom both are foreign but
        // for the one root owns (none here).
        let walker = if me == 0 {
            std::os::unix::fs::chown(d.join("theirs"), Some(65534), Some(65534)).unwrap();
            0
        } else {
            me + 1
        };
        let f = find(std::slice::from_ref(&d), &[], walker, 10_000).unwrap();
        assert!(
            !f.checkouts.iter().any(|c| c.starts_with(d.join("theirs"))),
            "{f:?}"
        );
        if me == 0 {
            assert!(f.checkouts.contains(&d.join("mine/r")), "{f:?}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn past_the_bound_it_refuses() {
        let d = tree("bound");
        for i in 0..20 {
            std::fs::create_dir_all(d.join(format!("d{i}"))).unwrap();
        }
        // SAFETY: geteuid never fails.
        let e = find(
            std::slice::from_ref(&d),
            &[],
            unsafe { libc::geteuid() },
            10,
        )
        .unwrap_err();
        assert!(matches!(e, Error::GitWalk { .. }), "{e:?}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_held_home_is_not_walked_but_the_roots_inside_it_are() {
        let d = tree("held");
        let home = d.join("home");
        gitdir(&home.join("dotfiles/.git"));
        gitdir(&home.join("proj/.git"));
        for i in 0..40 {
            std::fs::create_dir_all(home.join(format!("big/d{i}"))).unwrap();
        }
        let roots = vec![d.clone(), home.join("proj")];
        // SAFETY: geteuid never fails.
        let f = find(
            &roots,
            std::slice::from_ref(&home),
            unsafe { libc::geteuid() },
            20,
        )
        .unwrap();
        assert_eq!(f.checkouts, vec![home.join("proj")]);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
