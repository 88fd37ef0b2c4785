//! The other names, inside the writable roots, of the files bwrap keeps
//! read-only there. A protected or `deny_write` file inside a writable root
//! is held by a read-only mount over its *name*; a hard link to it elsewhere
//! in a writable root is the same file under a writable name, so writing
//! the link writes the protected file (`ln .bashrc alias` before the run,
//! `echo x >> alias` inside it). Every such name found here is added to
//! `deny_write`, so it is mounted read-only too. Once every writable name
//! is a read-only mount the command cannot make another one: `link()`
//! across two mounts is EXDEV, and a mount point cannot be renamed.
//!
//! Only names inside the writable roots matter: a name anywhere else is
//! read-only already. So, unlike `links` (a denied file must be denied by
//! every name), the count of names (`st_nlink`) is a way to stop early, not
//! a condition: the search ends as soon as every name of every held file is
//! found, and otherwise covers every writable root (but `/`) whole.
//!
//! Cost: one `lstat` per held file, and one per regular file inside a
//! held directory (`.git/hooks`, `.vscode`: a handful). Only when one of
//! them has more than one name is anything walked, and then `getdents`
//! only, an `lstat` just for an entry whose inode number is a held file's.
//! The walk starts beside the file and widens one directory up at a time
//! (cargo's second name of a binary it built is in `deps/` next to it), so
//! the usual case reads two directories.
//!
//! A directory inside a writable root that cannot be listed but can be
//! entered could hold a name the command can open by guessing it: when the
//! search has not found every name, such a directory refuses the run (122),
//! naming it. One that cannot be entered is skipped: the command cannot
//! reach a name in it either.

use super::links::{linked_files, record, Budget, Linked, Links, Target};
use super::{outermost, PSEUDO};
use crate::error::Refusal;
use crate::plan::{PathRule, Plan};
use std::collections::{HashMap, HashSet, VecDeque};
use std::os::unix::fs::{DirEntryExt, MetadataExt};
use std::path::{Path, PathBuf};

/// `plan` with every name and path `held_links` found that is not
/// read-only yet added to `deny_write`; `None` when there is none.
pub fn keep_read_only(found: &Links, plan: &Plan) -> Option<Plan> {
    if !found.paths().any(|n| !held_already(plan, n)) {
        return None;
    }
    let mut p = plan.clone();
    for n in found.paths() {
        if !held_already(&p, n) {
            p.fs.deny_write.push(PathRule::Literal(n.clone()));
        }
    }
    Some(p)
}

/// Whether `p` is read-only already: protected, or under a literal
/// `deny_write` entry.
fn held_already(plan: &Plan, p: &Path) -> bool {
    plan.fs.protected.iter().any(|h| p.starts_with(h))
        || plan
            .fs
            .deny_write
            .iter()
            .any(|r| r.literal().is_some_and(|d| p.starts_with(d)))
}

/// Finds the names inside the writable roots of every file the plan keeps
/// read-only: protected paths and the files below protected directories,
/// and literal `deny_write` files. Refuses (122) at the entry bound, or when
/// a directory that cannot be listed could hold a name not found.
pub fn held_links(
    plan: &Plan,
    limit: usize,
    mounts: &mut super::LazyMounts,
) -> Result<Links, Refusal> {
    let roots: Vec<PathBuf> = outermost(
        &plan
            .fs
            .writable
            .iter()
            .filter(|r| r.as_path() != Path::new("/"))
            .cloned()
            .collect::<Vec<_>>(),
    );
    let mut budget = Budget::new(limit);
    let mut out = Links::default();
    if roots.is_empty() {
        return Ok(out);
    }
    let mut existing: Vec<PathBuf> = Vec::new();
    let mut targets = held_targets(plan, &mut budget, &mut out, &mut existing)?;
    out.entries = limit - budget.left();
    if existing.is_empty() {
        return Ok(out);
    }
    let in_roots = |p: &Path| roots.iter().any(|r| p.starts_with(r));
    let mounts = mounts.get()?;
    let second_paths = |from: &[PathBuf], out: &mut Links| {
        for (p, a) in mounts.alias_pairs(from.iter()) {
            if in_roots(&a) && !out.aliases.iter().any(|(_, b)| *b == a) {
                out.aliases.push((p, a));
            }
        }
    };
    second_paths(&existing, &mut out);
    if targets.is_empty() {
        return Ok(out);
    }
    let (done, walked_from, unlistable) = search(&mut targets, &roots, &mut budget)?;
    out.entries = limit - budget.left();
    out.roots = outermost(&walked_from);
    if !done {
        if let Some(d) = unlistable {
            return Err(Refusal::unavailable(format!(
                "a file kept read-only inside a writable root has another name (a hard link) dcjail did not find, \
                 and `{}` inside the writable roots can be entered but not listed: a name there would write the file \
                 past the read-only mount; make it listable, or remove the other names (`find -samefile`)",
                d.display()
            )));
        }
    }
    let mut linked: Vec<Linked> = targets
        .into_values()
        .map(|t| {
            let mut names: Vec<PathBuf> = t
                .names
                .into_values()
                .filter(|n| roots.iter().any(|r| n.starts_with(r)))
                .collect();
            names.sort();
            Linked {
                path: t.path,
                nlink: t.nlink,
                names,
            }
        })
        .collect();
    linked.sort_by(|a, b| a.path.cmp(&b.path));
    let names: Vec<PathBuf> = linked.iter().flat_map(|l| l.names.clone()).collect();
    second_paths(&names, &mut out);
    out.linked = linked;
    Ok(out)
}

/// Searches for the targets' names: beside each file first, one directory
/// up at a time, then every root. Returns whether every name was found,
/// where the search started, and the first directory that could be entered
/// but not listed.
fn search(
    targets: &mut HashMap<(u64, u64), Target>,
    roots: &[PathBuf],
    budget: &mut Budget,
) -> Result<(bool, Vec<PathBuf>, Option<PathBuf>), Refusal> {
    let paths: Vec<PathBuf> = targets.values().map(|t| t.path.clone()).collect();
    for t in targets.values_mut() {
        let p = t.path.clone();
        record(t, &p);
    }
    let mut regions: Vec<PathBuf> = Vec::new();
    for p in &paths {
        let Some(root) = roots.iter().find(|r| p.starts_with(r)) else {
            continue;
        };
        for a in p.ancestors().skip(1) {
            if !a.starts_with(root) {
                break;
            }
            regions.push(a.to_path_buf());
        }
    }
    regions.extend(roots.iter().cloned());
    let inos: HashSet<u64> = targets.keys().map(|k| k.1).collect();
    let mut s = Search {
        inos: &inos,
        targets,
        budget,
        walked: HashSet::new(),
        unlistable: None,
    };
    let mut done = s.complete();
    let mut walked_from: Vec<PathBuf> = Vec::new();
    for r in &regions {
        if done {
            break;
        }
        walked_from.push(r.clone());
        done = s.walk(r)?;
    }
    Ok((done, walked_from, s.unlistable.take()))
}

/// The held files with more than one name, by (dev, ino); `existing`
/// gets every held path that exists.
fn held_targets(
    plan: &Plan,
    budget: &mut Budget,
    out: &mut Links,
    existing: &mut Vec<PathBuf>,
) -> Result<HashMap<(u64, u64), Target>, Refusal> {
    // A masked file is unreadable, and its other names are masked too
    // (`links`). One outside the writable roots is held by the read-only
    // root, but a name of it inside one would still write it.
    let hidden = |p: &Path| {
        plan.fs.deny_read.iter().any(|r| r.covers(p))
            && !plan.fs.allow_read.iter().any(|r| r.covers(p))
    };
    // A `deny_write` directory is kept by its names only: walking every
    // file below one on every launch costs more than the launch (`/tmp`,
    // which `dcjail import codex` makes one, holds everyone's files).
    // Its second paths through a bind mount are kept all the same.
    let mut files: Vec<&Path> = Vec::new();
    for p in plan.fs.deny_write.iter().filter_map(PathRule::literal) {
        match std::fs::symlink_metadata(p) {
            Ok(m) if m.is_file() => files.push(p),
            Ok(m) if m.is_dir() && !hidden(p) => existing.push(p.to_path_buf()),
            _ => {}
        }
    }
    let held = plan.fs.protected.iter().map(PathBuf::as_path).chain(files);
    linked_files(held, &hidden, budget, &mut out.files, existing)
}

struct Search<'a> {
    inos: &'a HashSet<u64>,
    targets: &'a mut HashMap<(u64, u64), Target>,
    budget: &'a mut Budget,
    /// Directories already listed, with everything below them.
    walked: HashSet<PathBuf>,
    /// The first directory found that can be entered but not listed.
    unlistable: Option<PathBuf>,
}

impl Search<'_> {
    fn complete(&self) -> bool {
        self.targets
            .values()
            .all(|t| t.names.len() as u64 >= t.nlink)
    }

    /// Walks `top` breadth first, but what was walked before; `true` once
    /// every name of every target is found.
    fn walk(&mut self, top: &Path) -> Result<bool, Refusal> {
        let mut queue = VecDeque::from([top.to_path_buf()]);
        while let Some(dir) = queue.pop_front() {
            if self.walked.contains(&dir) {
                continue;
            }
            let rd = match std::fs::read_dir(&dir) {
                Ok(rd) => rd,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(_) => {
                    if self.unlistable.is_none() && enterable(&dir) {
                        self.unlistable = Some(dir.clone());
                    }
                    continue;
                }
            };
            let mut found = false;
            for e in rd.flatten() {
                self.budget.take(&dir)?;
                let Ok(t) = e.file_type() else { continue };
                if t.is_dir() {
                    let p = e.path();
                    if !PSEUDO.iter().any(|x| p == Path::new(x)) {
                        queue.push_back(p);
                    }
                } else if t.is_file() && self.inos.contains(&e.ino()) {
                    if let Ok(m) = e.metadata() {
                        if let Some(t) = self.targets.get_mut(&(m.dev(), m.ino())) {
                            record(t, &e.path());
                            found = true;
                        }
                    }
                }
            }
            self.walked.insert(dir);
            if found && self.complete() {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// Whether this user can enter `dir` (search permission).
fn enterable(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a valid C string; access() only reads it.
    unsafe { libc::access(c.as_ptr(), libc::X_OK) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    use crate::walk::tests::Tmp;

    /// A plan writing `ws` only, holding `held` (as protected).
    fn plan(ws: &Path, held: &[PathBuf]) -> Plan {
        let mut policy = crate::policy::Policy::default();
        policy.sandbox.mode = crate::policy::SandboxMode::WorkspaceWrite;
        policy.sandbox.filesystem.protect_defaults = false;
        let facts = crate::plan::Facts {
            cwd: ws.to_path_buf(),
            home: None,
            tmpdir: None,
            exe: None,
            ..Default::default()
        };
        let mut p = crate::plan::build(&policy, vec!["true".into()], &facts).unwrap();
        p.fs.writable = vec![ws.to_path_buf()];
        p.fs.protected = held.to_vec();
        p
    }

    #[test]
    fn held_files_with_one_name_cost_no_search() {
        let t = Tmp::new("held-one");
        let ws = t.0.join("ws");
        fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        fs::write(ws.join(".bashrc"), "x").unwrap();
        fs::write(ws.join(".git/hooks/pre-commit"), "x").unwrap();
        let p = plan(&ws, &[ws.join(".bashrc"), ws.join(".git/hooks")]);
        let h = held_links(&p, 1000, &mut Default::default()).unwrap();
        assert_eq!(h.files, 2);
        assert!(h.roots.is_empty() && h.linked.is_empty(), "{h:?}");
        assert_eq!(h.entries, 1, "only the held directory was read");
        assert!(keep_read_only(&h, &p).is_none());
    }

    #[test]
    fn every_writable_name_of_a_held_file_or_a_file_below_a_held_directory_is_held() {
        let t = Tmp::new("held-found");
        let ws = t.0.join("ws");
        fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        fs::create_dir_all(ws.join("a/b/c")).unwrap();
        fs::write(ws.join(".bashrc"), "x").unwrap();
        fs::write(ws.join(".git/hooks/pre-commit"), "x").unwrap();
        fs::hard_link(ws.join(".bashrc"), ws.join("a/b/c/alias")).unwrap();
        fs::hard_link(ws.join(".bashrc"), ws.join("alias2")).unwrap();
        fs::hard_link(ws.join(".git/hooks/pre-commit"), ws.join("a/hook")).unwrap();
        let p = plan(&ws, &[ws.join(".bashrc"), ws.join(".git/hooks")]);
        let h = held_links(&p, 1000, &mut Default::default()).unwrap();
        assert_eq!(h.linked.len(), 2, "{h:?}");
        let names: Vec<&PathBuf> = h.linked.iter().flat_map(|l| &l.names).collect();
        for n in [
            ws.join(".bashrc"),
            ws.join("a/b/c/alias"),
            ws.join("alias2"),
            ws.join("a/hook"),
            ws.join(".git/hooks/pre-commit"),
        ] {
            assert!(names.contains(&&n), "{} not in {names:?}", n.display());
        }
        let q = keep_read_only(&h, &p).unwrap();
        for n in [ws.join("a/b/c/alias"), ws.join("alias2"), ws.join("a/hook")] {
            assert!(
                q.fs.deny_write.iter().any(|r| r.covers(&n)),
                "{}",
                n.display()
            );
        }
        // The held names themselves are not added twice.
        assert_eq!(q.fs.deny_write.len(), p.fs.deny_write.len() + 3);
    }

    #[test]
    fn the_search_stops_once_every_name_is_found() {
        // cargo's layout: the binary and its second name in deps/ beside it.
        let t = Tmp::new("held-early");
        let ws = t.0.join("ws");
        let rel = ws.join("target/release");
        fs::create_dir_all(rel.join("deps")).unwrap();
        fs::create_dir_all(ws.join("src/big")).unwrap();
        for i in 0..200 {
            fs::write(ws.join(format!("src/big/f{i}")), "x").unwrap();
        }
        fs::write(rel.join("tool"), "x").unwrap();
        fs::hard_link(rel.join("tool"), rel.join("deps/tool-1234")).unwrap();
        let p = plan(&ws, &[rel.join("tool")]);
        let h = held_links(&p, 100_000, &mut Default::default()).unwrap();
        assert_eq!(h.linked[0].names.len(), 2, "{h:?}");
        assert!(h.entries < 10, "read {} entries", h.entries);
    }

    #[test]
    fn a_name_outside_the_writable_roots_is_not_needed() {
        let t = Tmp::new("held-outside");
        let ws = t.0.join("ws");
        fs::create_dir_all(&ws).unwrap();
        fs::create_dir_all(t.0.join("elsewhere")).unwrap();
        fs::write(ws.join(".bashrc"), "x").unwrap();
        fs::hard_link(ws.join(".bashrc"), t.0.join("elsewhere/b")).unwrap();
        let p = plan(&ws, &[ws.join(".bashrc")]);
        let h = held_links(&p, 1000, &mut Default::default()).unwrap();
        assert_eq!(h.linked[0].names, vec![ws.join(".bashrc")]);
        assert!(keep_read_only(&h, &p).is_none());
    }

    #[test]
    fn the_walk_of_a_held_directory_is_bounded_and_finds_deep_links() {
        let t = Tmp::new("held-dirbound");
        let ws = t.0.join("ws");
        let ext = ws.join(".vscode/extensions");
        for d in 0..20 {
            fs::create_dir_all(ext.join(format!("e{d}"))).unwrap();
            for f in 0..5 {
                fs::write(ext.join(format!("e{d}/f{f}")), "x").unwrap();
            }
        }
        fs::hard_link(ext.join("e17/f3"), ws.join("linked")).unwrap();
        let p = plan(&ws, &[ws.join(".vscode")]);
        let r = held_links(&p, 10, &mut Default::default()).unwrap_err();
        assert!(r.message.contains(super::super::LIMIT_ENV), "{}", r.message);
        let h = held_links(&p, 100_000, &mut Default::default()).unwrap();
        assert_eq!(h.files, 100);
        assert_eq!(
            h.linked[0].names,
            vec![ext.join("e17/f3"), ws.join("linked")]
        );
    }

    #[test]
    fn the_search_is_bounded() {
        let t = Tmp::new("held-bound");
        let ws = t.0.join("ws");
        fs::create_dir_all(&ws).unwrap();
        for i in 0..50 {
            fs::write(ws.join(format!("f{i}")), "x").unwrap();
        }
        fs::create_dir_all(t.0.join("elsewhere")).unwrap();
        fs::write(ws.join(".bashrc"), "x").unwrap();
        fs::hard_link(ws.join(".bashrc"), t.0.join("elsewhere/b")).unwrap();
        let p = plan(&ws, &[ws.join(".bashrc")]);
        let r = held_links(&p, 10, &mut Default::default()).unwrap_err();
        assert_eq!(r.exit_code(), 122);
        assert!(r.message.contains(super::super::LIMIT_ENV), "{}", r.message);
    }

    #[test]
    fn a_name_in_the_workspace_of_a_deny_write_file_outside_it_is_held() {
        let t = Tmp::new("held-denyw");
        let ws = t.0.join("ws");
        fs::create_dir_all(&ws).unwrap();
        fs::create_dir_all(t.0.join("out")).unwrap();
        fs::write(t.0.join("out/f"), "x").unwrap();
        fs::hard_link(t.0.join("out/f"), ws.join("g")).unwrap();
        let mut p = plan(&ws, &[]);
        p.fs.deny_write = vec![PathRule::Literal(t.0.join("out/f"))];
        let h = held_links(&p, 1000, &mut Default::default()).unwrap();
        assert_eq!(h.linked[0].names, vec![ws.join("g")]);
        assert!(keep_read_only(&h, &p)
            .unwrap()
            .fs
            .deny_write
            .iter()
            .any(|r| r.covers(&ws.join("g"))));
    }
}
