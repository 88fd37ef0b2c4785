//! The other names of denied files, found at launch. A hard link is the
//! same file under a second name, and both backends enforce `deny_read` on
//! names (masks, landlock rules): `deny_read` denies the *file*, so each of
//! its names dcjail can find is denied too, and when it cannot find as many
//! names as the file has (`st_nlink`), the run is refused.
//!
//! Cost: one `lstat` per denied file, and one per regular file inside a
//! denied directory (a bounded walk). Only when one of them has more than
//! one name are the search roots walked — `getdents` only, an `lstat` just
//! for an entry whose inode number is a denied file's — so a launch whose
//! denied files have one name each pays nothing more.
//!
//! Search roots (`search_roots`): the workspace, the worktree, every
//! writable root but `/`, `$HOME`, `/tmp`, `/var/tmp`, and the directory
//! holding each linked file. A name elsewhere is not found, and the count
//! falls short: refused, naming the file and how many names were found.
//! The walk never follows a symlink and never enters /proc, /sys or /dev;
//! a directory it cannot list is not searched (a name there is not found,
//! so again the count falls short rather than a name being missed).

use super::{outermost, LIMIT_ENV, PSEUDO};
use crate::error::Refusal;
use crate::plan::{PathRule, Plan};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsString;
use std::os::unix::fs::{DirEntryExt, MetadataExt};
use std::path::{Path, PathBuf};

/// What the search found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Links {
    /// Denied regular files looked at.
    pub files: usize,
    /// Directory entries read (inside denied directories, then in the
    /// search roots).
    pub entries: usize,
    /// Where other names were looked for; empty when every denied file has
    /// one name.
    pub roots: Vec<PathBuf>,
    /// Each denied file with more than one name, and every name found.
    pub linked: Vec<Linked>,
    /// (a denied path or name, its second path through another mount of
    /// its filesystem: `mounts`).
    pub aliases: Vec<(PathBuf, PathBuf)>,
    /// The same search for the files bwrap keeps read-only (`held`), whose
    /// names count only inside the writable roots; `None` when bwrap is not
    /// a candidate or nothing is kept read-only.
    pub held: Option<Box<Links>>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Linked {
    pub path: PathBuf,
    pub nlink: u64,
    /// Every name of the file, `path` included, sorted.
    pub names: Vec<PathBuf>,
}

impl Links {
    /// `plan` with every other name of a denied file added to `deny_read`.
    pub fn apply(&self, plan: &Plan) -> Plan {
        let mut p = plan.clone();
        for n in self.paths() {
            if !p.fs.deny_read.iter().any(|r| r.covers(n)) {
                p.fs.deny_read.push(PathRule::Literal(n.clone()));
            }
        }
        p
    }

    /// Whether `apply` would change the plan.
    pub fn adds_names(&self) -> bool {
        !self.linked.is_empty() || !self.aliases.is_empty()
    }

    /// Every name found and every second path through a mount.
    pub(super) fn paths(&self) -> impl Iterator<Item = &PathBuf> {
        self.linked
            .iter()
            .flat_map(|l| &l.names)
            .chain(self.aliases.iter().map(|a| &a.1))
    }

    /// `explain`'s account.
    pub fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "files_checked": self.files,
            "entries": self.entries,
            "roots": self.roots.iter().map(|r| r.to_string_lossy()).collect::<Vec<_>>(),
            "linked": self.linked.iter().map(|l| serde_json::json!({
                "path": l.path.to_string_lossy(),
                "nlink": l.nlink,
                "names": l.names.iter().map(|n| n.to_string_lossy()).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "bind_mount_paths": self.aliases.iter().map(|(p, a)| serde_json::json!({
                "path": p.to_string_lossy(),
                "also_at": a.to_string_lossy(),
            })).collect::<Vec<_>>(),
            "kept_read_only": self.held.as_ref().map(|h| h.describe()),
        })
    }
}

/// A file with more than one name.
pub(super) struct Target {
    pub(super) path: PathBuf,
    pub(super) nlink: u64,
    /// (device and inode of the directory holding the name, the name):
    /// one name reached through two bind mounts is counted once.
    pub(super) names: BTreeMap<(u64, u64, OsString), PathBuf>,
}

impl Target {
    pub(super) fn new(path: &Path, nlink: u64) -> Target {
        Target {
            path: path.to_path_buf(),
            nlink,
            names: BTreeMap::new(),
        }
    }
}

pub(super) struct Budget {
    left: usize,
    limit: usize,
}

impl Budget {
    pub(super) fn new(limit: usize) -> Budget {
        Budget { left: limit, limit }
    }

    pub(super) fn left(&self) -> usize {
        self.left
    }

    pub(super) fn take(&mut self, what: &Path) -> Result<(), Refusal> {
        if self.left == 0 {
            return Err(self.exhausted(what));
        }
        self.left -= 1;
        Ok(())
    }

    /// The refusal once the bound is reached at `what`.
    pub(super) fn exhausted(&self, what: &Path) -> Refusal {
        Refusal::unavailable(format!(
            "looking for other names (hard links) of the denied files stopped after {} \
             directory entries (at {}); narrow deny_read or raise {LIMIT_ENV}",
            self.limit,
            what.display()
        ))
    }
}

/// Finds every name of the denied files of `plan` (literal paths: globs
/// already expanded) under the search roots; refuses (122) when a file has
/// more names than were found, or a name lies inside `allow_read`. `home`
/// is the caller's `$HOME`.
pub fn hard_links(
    plan: &Plan,
    home: Option<&Path>,
    limit: usize,
    mounts: &mut super::LazyMounts,
) -> Result<Links, Refusal> {
    let mut shared = vec![PathBuf::from("/tmp"), PathBuf::from("/var/tmp")];
    shared.extend(home.map(Path::to_path_buf));
    let mut out = find(plan, &shared, limit)?;
    out.aliases = second_paths(plan, &out, mounts)?;
    Ok(out)
}

/// Every denied path and name found, through another mount of its
/// filesystem (a bind mount): each is denied too; one inside `allow_read`
/// refuses (122), as a name there does.
fn second_paths(
    plan: &Plan,
    links: &Links,
    mounts: &mut super::LazyMounts,
) -> Result<Vec<(PathBuf, PathBuf)>, Refusal> {
    let allowed = |p: &Path| {
        plan.fs
            .allow_read
            .iter()
            .filter_map(|r| r.literal())
            .any(|a| p.starts_with(a))
    };
    let mut from: Vec<PathBuf> = plan
        .fs
        .deny_read
        .iter()
        .filter_map(|r| r.literal())
        .filter(|d| !allowed(d) && std::fs::symlink_metadata(d).is_ok())
        .map(Path::to_path_buf)
        .collect();
    from.extend(links.linked.iter().flat_map(|l| l.names.iter().cloned()));
    if from.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = mounts.get()?.alias_pairs(from.iter());
    out.retain(|(_, a)| !plan.fs.deny_read.iter().any(|r| r.covers(a)));
    if let Some((p, a)) = out.iter().find(|(_, a)| allowed(a)) {
        return Err(Refusal::unavailable(format!(
            "deny_read: `{}` is the denied `{}` through a bind mount, inside allow_read: \
             the file cannot be both; remove the mount or the allow_read entry",
            a.display(),
            p.display()
        )));
    }
    Ok(out)
}

/// `hard_links`, with the roots beyond the plan's own given.
fn find(plan: &Plan, extra_roots: &[PathBuf], limit: usize) -> Result<Links, Refusal> {
    let allow: Vec<&Path> = plan
        .fs
        .allow_read
        .iter()
        .filter_map(|r| r.literal())
        .collect();
    let allowed = |p: &Path| allow.iter().any(|a| p.starts_with(a));
    let mut budget = Budget { left: limit, limit };
    let mut out = Links::default();
    let mut targets = denied_targets(plan, &allowed, &mut budget, &mut out)?;
    out.entries = limit - budget.left;
    if targets.is_empty() {
        return Ok(out);
    }
    // Every denied path is a name already known.
    for d in plan.fs.deny_read.iter().filter_map(|r| r.literal()) {
        if let Ok(m) = std::fs::symlink_metadata(d) {
            if let Some(t) = targets.get_mut(&(m.dev(), m.ino())) {
                record(t, d);
            }
        }
    }
    let paths: Vec<PathBuf> = targets.values().map(|t| t.path.clone()).collect();
    for t in targets.values_mut() {
        let p = t.path.clone();
        record(t, &p);
    }
    out.roots = search_roots(plan, extra_roots, &paths);
    let inos: HashSet<u64> = targets.keys().map(|k| k.1).collect();
    for root in &out.roots {
        search(root, &inos, &mut targets, &mut budget)?;
    }
    out.entries = limit - budget.left;
    out.linked = every_name_found(targets, &out.roots, &allowed)?;
    Ok(out)
}

/// The denied files with more than one name, by (dev, ino): the literal
/// deny_read files and every file under a denied directory.
fn denied_targets(
    plan: &Plan,
    allowed: &(dyn Fn(&Path) -> bool + Sync),
    budget: &mut Budget,
    out: &mut Links,
) -> Result<HashMap<(u64, u64), Target>, Refusal> {
    let denied = plan.fs.deny_read.iter().filter_map(|r| r.literal());
    linked_files(denied, allowed, budget, &mut out.files, &mut Vec::new())
}

/// The regular files with more than one name among `paths` and below those
/// that are directories (a bounded walk, its directories read on up to one
/// thread per core: a kept `~/.vscode` holds tens of thousands of files,
/// each needing an `lstat`), by (dev, ino), but what `skip` says; `files`
/// counts the regular files looked at, `existing` gets each of `paths`
/// that exists.
pub(super) fn linked_files<'a>(
    paths: impl Iterator<Item = &'a Path>,
    skip: &(dyn Fn(&Path) -> bool + Sync),
    budget: &mut Budget,
    files: &mut usize,
    existing: &mut Vec<PathBuf>,
) -> Result<HashMap<(u64, u64), Target>, Refusal> {
    let mut targets: HashMap<(u64, u64), Target> = HashMap::new();
    let mut add = |path: &Path, dev: u64, ino: u64, nlink: u64| {
        if nlink > 1 {
            targets
                .entry((dev, ino))
                .or_insert_with(|| Target::new(path, nlink));
        }
    };
    let mut dirs: Vec<PathBuf> = Vec::new();
    for d in paths {
        if skip(d) {
            continue;
        }
        let Ok(m) = std::fs::symlink_metadata(d) else {
            continue;
        };
        existing.push(d.to_path_buf());
        if m.is_file() {
            *files += 1;
            add(d, m.dev(), m.ino(), m.nlink());
        } else if m.is_dir() && !PSEUDO.iter().any(|p| d.starts_with(p)) {
            dirs.push(d.to_path_buf());
        }
    }
    if dirs.is_empty() {
        return Ok(targets);
    }
    let left = std::sync::atomic::AtomicUsize::new(budget.left);
    let states = super::pool::run(
        dirs,
        super::cores().min(super::MAX_THREADS),
        || (0usize, Vec::<(PathBuf, u64, u64, u64)>::new()),
        |dir: PathBuf, st, more| {
            let Ok(rd) = std::fs::read_dir(&dir) else {
                return Ok(());
            };
            for e in rd.flatten() {
                use std::sync::atomic::Ordering::Relaxed;
                if left
                    .fetch_update(Relaxed, Relaxed, |l| l.checked_sub(1))
                    .is_err()
                {
                    return Err(budget.exhausted(&dir));
                }
                let Ok(t) = e.file_type() else { continue };
                let path = e.path();
                if skip(&path) {
                    continue;
                }
                if t.is_dir() {
                    more.push(path);
                } else if t.is_file() {
                    st.0 += 1;
                    if let Ok(m) = e.metadata() {
                        if m.nlink() > 1 {
                            st.1.push((path, m.dev(), m.ino(), m.nlink()));
                        }
                    }
                }
            }
            Ok(())
        },
        || Refusal::unavailable("looking for other names (hard links): a walking thread died"),
    )?;
    budget.left = left.into_inner();
    for (n, found) in states {
        *files += n;
        for (path, dev, ino, nlink) in found {
            add(&path, dev, ino, nlink);
        }
    }
    Ok(targets)
}

/// Each target with all its names found, none inside allow_read; refuses
/// (122) otherwise.
fn every_name_found(
    targets: HashMap<(u64, u64), Target>,
    roots: &[PathBuf],
    allowed: &dyn Fn(&Path) -> bool,
) -> Result<Vec<Linked>, Refusal> {
    let mut linked: Vec<Linked> = Vec::new();
    for t in targets.into_values() {
        let mut names: Vec<PathBuf> = t.names.into_values().collect();
        names.sort();
        if (names.len() as u64) < t.nlink {
            return Err(Refusal::unavailable(format!(
                "deny_read: `{}` has {} names (hard links) and dcjail found {} of them (under {}); \
                 a name it cannot find would still read the file: remove the other links \
                 (`find / -xdev -samefile` lists them) or name them in deny_read",
                t.path.display(),
                t.nlink,
                names.len(),
                roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        if let Some(n) = names.iter().find(|n| allowed(n)) {
            return Err(Refusal::unavailable(format!(
                "deny_read: `{}` is another name (a hard link) of the denied `{}`, inside \
                 allow_read: the file cannot be both; remove the link or the allow_read entry",
                n.display(),
                t.path.display()
            )));
        }
        linked.push(Linked {
            path: t.path,
            nlink: t.nlink,
            names,
        });
    }
    linked.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(linked)
}

/// Records `path` as a name of `t`, identified by its directory's inode.
pub(super) fn record(t: &mut Target, path: &Path) {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return;
    };
    let Ok(m) = std::fs::symlink_metadata(dir) else {
        return;
    };
    t.names
        .entry((m.dev(), m.ino(), name.to_os_string()))
        .or_insert_with(|| path.to_path_buf());
}

/// Where other names are looked for (see the module doc).
fn search_roots(plan: &Plan, extra: &[PathBuf], linked: &[PathBuf]) -> Vec<PathBuf> {
    let mut roots = vec![plan.workspace.clone()];
    roots.extend(plan.worktree.iter().cloned());
    roots.extend(plan.fs.writable.iter().cloned());
    roots.extend(extra.iter().map(|r| crate::plan::resolve_lenient(r)));
    roots.extend(
        linked
            .iter()
            .filter_map(|p| p.parent().map(Path::to_path_buf)),
    );
    roots.retain(|r| {
        r.as_path() != Path::new("/")
            && !PSEUDO.iter().any(|p| r.starts_with(p))
            && std::fs::symlink_metadata(r).is_ok_and(|m| m.is_dir())
    });
    outermost(&roots)
}

/// Walks `root` for entries whose inode is a target's.
fn search(
    root: &Path,
    inos: &HashSet<u64>,
    targets: &mut HashMap<(u64, u64), Target>,
    budget: &mut Budget,
) -> Result<(), Refusal> {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            budget.take(&dir)?;
            let Ok(t) = e.file_type() else { continue };
            let path = e.path();
            if t.is_dir() {
                if !PSEUDO.iter().any(|p| path == Path::new(p)) {
                    stack.push(path);
                }
            } else if t.is_file() && inos.contains(&e.ino()) {
                if let Ok(m) = e.metadata() {
                    if let Some(t) = targets.get_mut(&(m.dev(), m.ino())) {
                        record(t, &path);
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    use crate::walk::tests::Tmp;

    fn plan(ws: &Path, deny: &[PathBuf], allow: &[PathBuf]) -> Plan {
        let mut policy = crate::policy::Policy::default();
        policy.sandbox.filesystem.deny_read = deny.to_vec();
        policy.sandbox.filesystem.allow_read = allow.to_vec();
        let facts = crate::plan::Facts {
            cwd: ws.to_path_buf(),
            home: None,
            tmpdir: None,
            exe: None,
            ..Default::default()
        };
        crate::plan::build(&policy, vec!["true".into()], &facts).unwrap()
    }

    #[test]
    fn files_with_one_name_cost_no_search() {
        let t = Tmp::new("links-one");
        fs::create_dir_all(t.0.join("ws/secrets")).unwrap();
        fs::write(t.0.join("ws/secrets/a"), "a").unwrap();
        fs::write(t.0.join("ws/key"), "k").unwrap();
        let p = plan(
            &t.0.join("ws"),
            &[t.0.join("ws/key"), t.0.join("ws/secrets")],
            &[],
        );
        let l = find(&p, &[], 1000).unwrap();
        assert_eq!(l.files, 2);
        assert!(l.roots.is_empty() && l.linked.is_empty(), "{l:?}");
        // The denied directory's one entry is all that was read.
        assert_eq!(l.entries, 1);
    }

    #[test]
    fn another_name_beside_the_file_or_in_the_workspace_is_denied_too() {
        let t = Tmp::new("links-found");
        let ws = t.0.join("ws");
        fs::create_dir_all(ws.join("sub")).unwrap();
        fs::create_dir_all(t.0.join("private")).unwrap();
        fs::write(t.0.join("private/key"), "k").unwrap();
        fs::hard_link(t.0.join("private/key"), t.0.join("private/alias")).unwrap();
        fs::hard_link(t.0.join("private/key"), ws.join("sub/copy")).unwrap();
        let p = plan(&ws, &[t.0.join("private/key")], &[]);
        let l = find(&p, &[], 1000).unwrap();
        assert_eq!(l.linked.len(), 1);
        assert_eq!(
            l.linked[0].names,
            vec![
                t.0.join("private/alias"),
                t.0.join("private/key"),
                ws.join("sub/copy")
            ]
        );
        let q = l.apply(&p);
        for n in &l.linked[0].names {
            assert!(!q.readable(n), "{}", n.display());
        }
    }

    #[test]
    fn a_file_inside_a_denied_directory_with_another_name_is_found() {
        let t = Tmp::new("links-indir");
        let ws = t.0.join("ws");
        fs::create_dir_all(&ws).unwrap();
        fs::create_dir_all(t.0.join("secrets/deep")).unwrap();
        fs::write(t.0.join("secrets/deep/k"), "k").unwrap();
        fs::hard_link(t.0.join("secrets/deep/k"), ws.join("k2")).unwrap();
        let p = plan(&ws, &[t.0.join("secrets")], &[]);
        let l = find(&p, &[], 1000).unwrap();
        assert_eq!(
            l.linked[0].names,
            vec![t.0.join("secrets/deep/k"), ws.join("k2")]
        );
    }

    #[test]
    fn a_name_outside_every_search_root_refuses_naming_the_file() {
        let t = Tmp::new("links-missing");
        let ws = t.0.join("ws");
        fs::create_dir_all(&ws).unwrap();
        fs::create_dir_all(t.0.join("a")).unwrap();
        fs::create_dir_all(t.0.join("elsewhere")).unwrap();
        fs::write(t.0.join("a/key"), "k").unwrap();
        fs::hard_link(t.0.join("a/key"), t.0.join("elsewhere/hidden")).unwrap();
        let p = plan(&ws, &[t.0.join("a/key")], &[]);
        let r = find(&p, &[], 100_000).unwrap_err();
        assert_eq!(r.exit_code(), 122);
        assert!(
            r.message.contains(&t.0.join("a/key").display().to_string()),
            "{}",
            r.message
        );
        assert!(
            r.message.contains("2 names") && r.message.contains("found 1"),
            "{}",
            r.message
        );
        // Named in deny_read, the other name is known.
        let p = plan(&ws, &[t.0.join("a/key"), t.0.join("elsewhere/hidden")], &[]);
        assert_eq!(find(&p, &[], 100_000).unwrap().linked[0].names.len(), 2);
    }

    #[test]
    fn a_name_inside_allow_read_refuses() {
        let t = Tmp::new("links-allowed");
        let ws = t.0.join("ws");
        fs::create_dir_all(ws.join("pub")).unwrap();
        fs::write(ws.join("key"), "k").unwrap();
        fs::hard_link(ws.join("key"), ws.join("pub/key")).unwrap();
        let p = plan(&ws, &[ws.join("key")], &[ws.join("pub")]);
        let r = find(&p, &[], 1000).unwrap_err();
        assert!(r.message.contains("allow_read"), "{}", r.message);
    }

    #[test]
    fn the_search_is_bounded() {
        let t = Tmp::new("links-bound");
        let ws = t.0.join("ws");
        fs::create_dir_all(&ws).unwrap();
        for i in 0..50 {
            fs::write(ws.join(format!("f{i}")), "x").unwrap();
        }
        fs::write(ws.join("key"), "k").unwrap();
        fs::hard_link(ws.join("key"), ws.join("alias")).unwrap();
        let p = plan(&ws, &[ws.join("key")], &[]);
        let r = find(&p, &[], 10).unwrap_err();
        assert!(r.message.contains(LIMIT_ENV), "{}", r.message);
    }
}
