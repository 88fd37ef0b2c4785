//! The file tools held to the plan the sandbox enforces: an agent's Read,
//! Write, Edit… (and Codex's `apply_patch`) act from the agent's own
//! process, outside any sandbox, so the hook answers them from the same
//! plan a shell call gets. A path is resolved as the kernel will resolve it
//! when the agent opens it: symlinks in every existing component, the last
//! one too (a dangling link is followed to where it would create the
//! file), `..` after them. A hard link is the file it names: a write to
//! another name of a kept file is refused like a write to the kept file, a
//! read of another name of a `deny_read` file like a read of it. A tool
//! that writes must also be able to read the file (an edit shows the lines
//! around it, a patch can move a file's content to a new name).

use crate::error::{Gate, Reason, Refusal};
use crate::plan::Plan;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// How many symlinks are followed before a path is refused (the kernel's
/// own limit).
const MAX_LINKS: usize = 40;

/// Entries looked at below a kept directory when a written file has a
/// second name; past this the write is refused rather than guessed.
const MAX_HELD_ENTRIES: usize = 20_000;

/// What a file tool does with its path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Read a file, or search below a directory.
    Read,
    /// Create, replace, change or delete a file.
    Write,
}

/// `p` as the kernel resolves it for an open: every symlink followed, a
/// missing tail kept as written. `None` on a symlink loop.
pub fn resolve(p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::from("/");
    let mut todo: Vec<std::ffi::OsString> = components(p);
    let mut links = 0;
    let mut missing = false;
    while let Some(c) = todo.pop() {
        if c == ".." {
            out.pop();
            continue;
        }
        let next = out.join(&c);
        if missing {
            out = next;
            continue;
        }
        match std::fs::symlink_metadata(&next) {
            Ok(m) if m.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return None;
                }
                let target = std::fs::read_link(&next).ok()?;
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                todo.extend(components(&target));
            }
            Ok(_) => out = next,
            Err(_) => {
                missing = true;
                out = next;
            }
        }
    }
    Some(out)
}

/// The names of `p` in reverse order (a stack), `.` dropped.
fn components(p: &Path) -> Vec<std::ffi::OsString> {
    let mut v: Vec<_> = p
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect();
    v.reverse();
    v
}

/// The refusal for `written` (as the agent wrote it), or `Ok` when the plan
/// allows `access` there.
pub fn check(plan: &Plan, written: &Path, base: &Path, access: Access) -> Result<(), Refusal> {
    let abs = if written.is_absolute() {
        written.to_path_buf()
    } else {
        base.join(written)
    };
    let Some(real) = resolve(&abs) else {
        return Err(denied(written, "a symlink loop", access));
    };
    // A file tool that writes also reads what it changes (an edit shows
    // the lines around it; a patch moves a file's content to a new name).
    let readable = plan.readable(&real)
        && !hides_denied(plan, &real)
        && !second_name_of(&real, denied_reads(plan));
    let writable =
        access == Access::Read || (plan.writable(&real) && !second_name_of(&real, kept(plan)));
    if !readable {
        let why = format!("`{}` is not readable under the policy", real.display());
        return Err(denied(written, &why, access));
    }
    if !writable {
        let why = format!(
            "`{}` is not writable under the policy ({})",
            real.display(),
            plan.fs.access
        );
        return Err(denied(written, &why, access));
    }
    Ok(())
}

/// The files and directories a write may not change under another name.
fn kept(plan: &Plan) -> impl Iterator<Item = &Path> {
    plan.fs
        .protected
        .iter()
        .map(PathBuf::as_path)
        .chain(plan.fs.deny_write.iter().filter_map(|r| r.literal()))
}

/// The literal `deny_read` paths that are not re-allowed.
fn denied_reads(plan: &Plan) -> impl Iterator<Item = &Path> {
    plan.fs
        .deny_read
        .iter()
        .filter_map(|r| r.literal())
        .filter(|p| !plan.readable(p))
}

fn denied(written: &Path, why: &str, access: Access) -> Refusal {
    let verb = match access {
        Access::Read => "read",
        Access::Write => "write",
    };
    Refusal::new(
        Reason::SandboxDenied,
        Some(Gate::Sandbox),
        format!("{verb} of `{}` refused: {why}", written.display()),
    )
}

/// A directory searched (Grep, Glob) that holds a `deny_read` path below
/// it: the search would read that file's contents. Literal entries are
/// compared; for glob entries the directory is walked (bounded: past the
/// bound the search is refused, not guessed).
fn hides_denied(plan: &Plan, dir: &Path) -> bool {
    if !dir.is_dir() {
        return false;
    }
    let literal = plan.fs.deny_read.iter().any(|r| match r.literal() {
        Some(p) => p.starts_with(dir) && p != dir && !plan.readable(p),
        None => false,
    });
    if literal {
        return true;
    }
    if plan.fs.deny_read.iter().all(|r| r.literal().is_some()) {
        return false;
    }
    let mut budget = MAX_HELD_ENTRIES;
    any_below(dir, &mut budget, &|p| !plan.readable(p))
}

/// Whether `hit` holds for an entry below `dir` (symlinks not followed);
/// running out of budget counts as a hit.
fn any_below(dir: &Path, budget: &mut usize, hit: &dyn Fn(&Path) -> bool) -> bool {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return false;
    };
    for e in rd.flatten() {
        if *budget == 0 {
            return true;
        }
        *budget -= 1;
        let p = e.path();
        if hit(&p) {
            return true;
        }
        if e.file_type().is_ok_and(|t| t.is_dir()) && any_below(&p, budget, hit) {
            return true;
        }
    }
    false
}

/// Whether `file`, an existing file with more than one name, is the same
/// inode as a file in `held` or below one of its directories.
fn second_name_of<'a>(file: &Path, held: impl Iterator<Item = &'a Path>) -> bool {
    let Ok(m) = std::fs::symlink_metadata(file) else {
        return false;
    };
    if !m.is_file() || m.nlink() < 2 {
        return false;
    }
    let id = (m.dev(), m.ino());
    let mut budget = MAX_HELD_ENTRIES;
    for k in held {
        if holds(k, id, &mut budget) {
            return true;
        }
    }
    false
}

/// Whether `p`, or a file below it, is the inode `id`. Running out of
/// budget counts as holding it: the write is refused, not guessed.
fn holds(p: &Path, id: (u64, u64), budget: &mut usize) -> bool {
    if *budget == 0 {
        return true;
    }
    *budget -= 1;
    let Ok(m) = std::fs::symlink_metadata(p) else {
        return false;
    };
    if m.is_file() {
        return (m.dev(), m.ino()) == id;
    }
    if !m.is_dir() {
        return false;
    }
    let Ok(rd) = std::fs::read_dir(p) else {
        return false;
    };
    rd.flatten().any(|e| holds(&e.path(), id, budget))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn scratch(name: &str) -> PathBuf {
        let d = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("target/unit-scratch")
            .join(format!("files-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::canonicalize(d).unwrap()
    }

    #[test]
    fn a_dangling_symlink_is_followed_to_where_the_write_would_land() {
        let d = scratch("dangling");
        std::fs::create_dir(d.join("proj")).unwrap();
        symlink(d.join("outside/new.txt"), d.join("proj/link")).unwrap();
        symlink("../elsewhere", d.join("proj/dirlink")).unwrap();
        assert_eq!(
            resolve(&d.join("proj/link")).unwrap(),
            d.join("outside/new.txt")
        );
        assert_eq!(
            resolve(&d.join("proj/dirlink/x/../y")).unwrap(),
            d.join("elsewhere/y")
        );
        assert_eq!(resolve(&d.join("proj/./a/../b")).unwrap(), d.join("proj/b"));
    }

    #[test]
    fn a_symlink_loop_resolves_to_nothing() {
        let d = scratch("loop");
        symlink(d.join("b"), d.join("a")).unwrap();
        symlink(d.join("a"), d.join("b")).unwrap();
        assert_eq!(resolve(&d.join("a/x")), None);
    }

    #[test]
    fn a_hard_link_is_found_below_a_kept_directory_and_the_budget_refuses() {
        let d = scratch("held");
        std::fs::create_dir_all(d.join("kept/sub")).unwrap();
        std::fs::write(d.join("kept/sub/f"), "x").unwrap();
        std::fs::hard_link(d.join("kept/sub/f"), d.join("alias")).unwrap();
        let m = std::fs::metadata(d.join("alias")).unwrap();
        let id = (m.dev(), m.ino());
        let mut budget = 100;
        assert!(holds(&d.join("kept"), id, &mut budget));
        std::fs::write(d.join("other"), "y").unwrap();
        let o = std::fs::metadata(d.join("other")).unwrap();
        let mut budget = 100;
        assert!(!holds(&d.join("kept"), (o.dev(), o.ino()), &mut budget));
        let mut none = 0;
        assert!(holds(&d.join("kept"), (o.dev(), o.ino()), &mut none));
    }
}
