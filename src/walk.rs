//! Glob expansion at launch: finds the existing files and directories that the
//! globs of `deny_read` / `deny_write` / `allow_read` match, so that backends
//! which only understand literal paths (bind mounts, landlock rules) can be
//! given them.
//!
//! The walk is bounded and fast: it reads directories with `getdents` only
//! (no `stat` per entry), starts an anchored glob at its literal prefix and
//! stops at the depth the glob can reach, walks the policy's roots only for
//! unanchored `**/…` globs, never descends into a symlink (so loops cost
//! nothing) nor into `/proc`, `/sys` or `/dev`, and does not descend into a
//! directory that already matched (a rule on a directory covers what is in
//! it). With no glob it touches nothing at all.
//!
//! What it must never do: return fewer paths than the globs match under the
//! walked roots without saying so. Hitting the entry bound, or a directory it
//! can enter but not list, is an `Err`; the caller refuses with 122.
//! Paths are returned as found (a matching symlink is returned as the link,
//! not its target): the caller resolves them before handing them to a
//! backend. A directory reached only through a symlink is not walked: files
//! created there, or later anywhere, are not covered by this expansion.

use crate::error::Refusal;
use crate::plan::{resolve_lenient, Glob, PathRule, Plan};
use globset::{GlobBuilder, GlobMatcher};
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// Default bound on directory entries examined per launch.
pub const DEFAULT_LIMIT: usize = 1_000_000;

/// Pseudo filesystems that are never entered: they are huge or infinite,
/// and walking them has side effects on some kernels.
const PSEUDO: &[&str] = &["/proc", "/sys", "/dev"];

/// Compiles a pattern with the options `plan` uses for policy globs
/// (`/` is not matched by `*`, backslash escapes), for tests and benches.
pub fn compile(pattern: &str) -> Result<Glob, String> {
    let matcher = GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| format!("bad glob `{pattern}`: {}", e.kind()))?
        .compile_matcher();
    Ok(Glob {
        pattern: pattern.to_string(),
        written: pattern.to_string(),
        matcher,
    })
}

/// The literal paths the globs of a plan's filesystem rules match now,
/// resolved (symlinks followed) as backends need them. Literal rules are not
/// repeated here.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Expanded {
    pub deny_read: Vec<PathBuf>,
    pub allow_read: Vec<PathBuf>,
    pub deny_write: Vec<PathBuf>,
}

/// Expands the glob rules of `plan` under the roots it grants (workspace,
/// worktree, writable roots). With no glob rule nothing is read. A walk that
/// cannot be completed is a `sandbox-unavailable` refusal (122): the rule
/// would otherwise cover less than it says.
pub fn expand_plan(plan: &Plan, limit: usize) -> Result<Expanded, Refusal> {
    let globs = |rules: &[PathRule]| -> Vec<Glob> {
        rules
            .iter()
            .filter_map(|r| match r {
                PathRule::Glob(g) => Some(g.clone()),
                PathRule::Literal(_) => None,
            })
            .collect()
    };
    let (dr, ar, dw) = (
        globs(&plan.fs.deny_read),
        globs(&plan.fs.allow_read),
        globs(&plan.fs.deny_write),
    );
    if dr.is_empty() && ar.is_empty() && dw.is_empty() {
        return Ok(Expanded::default());
    }
    let mut roots = vec![plan.workspace.clone()];
    roots.extend(plan.worktree.iter().cloned());
    roots.extend(plan.fs.writable.iter().cloned());
    let run = |gs: &[Glob]| -> Result<Vec<PathBuf>, Refusal> {
        let refs: Vec<&Glob> = gs.iter().collect();
        let mut out: Vec<PathBuf> = expand(&refs, &roots, limit)
            .map_err(Refusal::unavailable)?
            .iter()
            .map(|p| resolve_lenient(p))
            .collect();
        out.sort();
        out.dedup();
        Ok(out)
    };
    Ok(Expanded {
        deny_read: run(&dr)?,
        allow_read: run(&ar)?,
        deny_write: run(&dw)?,
    })
}

/// One walk: a start directory, how deep the globs can reach below it
/// (`None`: any depth), and the globs tested there.
struct Job<'a> {
    start: PathBuf,
    depth: Option<usize>,
    globs: Vec<&'a GlobMatcher>,
}

/// Expands `globs` into the existing paths they match. Anchored globs (an
/// absolute pattern) are walked from their literal prefix; unanchored ones
/// (`**/x`) under each of `roots`. At most `limit` directory entries are
/// examined in total; reaching the bound is an error.
pub fn expand(globs: &[&Glob], roots: &[PathBuf], limit: usize) -> Result<Vec<PathBuf>, String> {
    if globs.is_empty() {
        return Ok(Vec::new());
    }
    let mut jobs: Vec<Job> = Vec::new();
    let mut unanchored: Vec<&GlobMatcher> = Vec::new();
    for g in globs {
        match literal_prefix(&g.pattern) {
            Some((start, depth)) => {
                if let Some(p) = PSEUDO.iter().find(|p| start.starts_with(p)) {
                    return Err(format!(
                        "glob `{}` would need a walk of {p}, which dcjail does not walk; name the paths literally",
                        g.written
                    ));
                }
                match jobs
                    .iter_mut()
                    .find(|j| j.start == start && j.depth == depth)
                {
                    Some(j) => j.globs.push(&g.matcher),
                    None => jobs.push(Job {
                        start,
                        depth,
                        globs: vec![&g.matcher],
                    }),
                }
            }
            None => unanchored.push(&g.matcher),
        }
    }
    if !unanchored.is_empty() {
        for root in outermost(roots) {
            jobs.push(Job {
                start: root,
                depth: None,
                globs: unanchored.clone(),
            });
        }
    }

    let mut found = BTreeSet::new();
    let mut budget = Budget { left: limit, limit };
    for job in &jobs {
        walk(job, &mut budget, &mut found)?;
    }
    Ok(found.into_iter().collect())
}

struct Budget {
    left: usize,
    limit: usize,
}

fn walk(job: &Job, budget: &mut Budget, found: &mut BTreeSet<PathBuf>) -> Result<(), String> {
    let matches = |p: &Path| job.globs.iter().any(|g| g.is_match(p));
    // The start is reached the way the command would reach it: through
    // symlinks in the prefix. Only entries met during the walk are not followed.
    let Ok(meta) = std::fs::metadata(&job.start) else {
        return Ok(());
    };
    if matches(&job.start) {
        found.insert(job.start.clone());
        return Ok(());
    }
    if !meta.is_dir() || job.depth == Some(0) {
        return Ok(());
    }
    let mut stack: Vec<(PathBuf, usize)> = vec![(job.start.clone(), 0)];
    while let Some((dir, depth)) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) => match unlistable(&dir, &e) {
                None => continue,
                Some(why) => return Err(why),
            },
        };
        for entry in entries {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => match unlistable(&dir, &e) {
                    None => break,
                    Some(why) => return Err(why),
                },
            };
            if budget.left == 0 {
                return Err(format!(
                    "glob expansion stopped after {} directory entries (under {}); narrow the glob or the writable roots",
                    budget.limit,
                    job.start.display()
                ));
            }
            budget.left -= 1;
            let path = entry.path();
            if matches(&path) {
                found.insert(path);
                continue;
            }
            let child_depth = depth + 1;
            if job.depth.is_some_and(|max| child_depth >= max) {
                continue;
            }
            // `file_type` comes from getdents: a symlink is never a dir here.
            let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
            if is_dir && !PSEUDO.iter().any(|p| path == Path::new(p)) {
                stack.push((path, child_depth));
            }
        }
    }
    Ok(())
}

/// Why a directory that could not be listed makes the expansion incomplete,
/// or `None` when nothing in it is reachable anyway (it vanished, or it
/// cannot be entered by this user, hence not by the sandboxed command).
fn unlistable(dir: &Path, e: &std::io::Error) -> Option<String> {
    match e.kind() {
        ErrorKind::NotFound | ErrorKind::NotADirectory => None,
        ErrorKind::PermissionDenied if !can_enter(dir) => None,
        _ => Some(format!(
            "glob expansion cannot list {}: {}",
            dir.display(),
            crate::policy::io_words(e)
        )),
    }
}

fn can_enter(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return true;
    };
    // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
    unsafe { libc::access(c.as_ptr(), libc::X_OK) == 0 }
}

/// The roots with every root that lies inside another one dropped.
fn outermost(roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for r in roots {
        if roots.iter().any(|o| o != r && r.starts_with(o)) || out.contains(r) {
            continue;
        }
        out.push(r.clone());
    }
    out
}

/// For an anchored (absolute) pattern: the longest literal directory prefix
/// and how many components below it the pattern can reach (`None` with a
/// `**`). `None` for an unanchored pattern.
fn literal_prefix(pattern: &str) -> Option<(PathBuf, Option<usize>)> {
    if !pattern.starts_with('/') {
        return None;
    }
    let comps: Vec<&str> = pattern.split('/').filter(|c| !c.is_empty()).collect();
    let mut start = PathBuf::from("/");
    let mut i = 0;
    while i < comps.len() {
        match unescape_literal(comps[i]) {
            Some(lit) if lit != "." && lit != ".." => start.push(OsStr::new(&lit)),
            _ => break,
        }
        i += 1;
    }
    let rest = &comps[i..];
    let depth = if rest.iter().any(|c| c.contains("**")) {
        None
    } else {
        Some(rest.len())
    };
    Some((start, depth))
}

/// The literal text of one pattern component, or `None` when it holds a
/// wildcard. Understands the two escapes a policy pattern can contain:
/// `\c` and the `[c]` that `globset::escape` writes.
fn unescape_literal(comp: &str) -> Option<String> {
    let mut out = String::with_capacity(comp.len());
    let chars: Vec<char> = comp.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                out.push(*chars.get(i + 1)?);
                i += 2;
            }
            '[' => {
                let c = *chars.get(i + 1)?;
                if chars.get(i + 2) == Some(&']') && "*?[]{}".contains(c) {
                    out.push(c);
                    i += 3;
                } else {
                    return None;
                }
            }
            '*' | '?' | '{' | '}' | ']' => return None,
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    struct Tmp(PathBuf);
    impl Tmp {
        fn new(tag: &str) -> Tmp {
            let p = std::env::temp_dir().join(format!(
                "dcjail-walk-{tag}-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            let _ = fs::remove_dir_all(&p);
            fs::create_dir_all(&p).unwrap();
            Tmp(fs::canonicalize(&p).unwrap())
        }
    }
    impl Drop for Tmp {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn touch(p: &Path) {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, b"x").unwrap();
    }

    #[test]
    fn no_glob_touches_nothing() {
        // A root that does not exist would be an error if it were read.
        let r = expand(&[], &[PathBuf::from("/nonexistent/dcjail")], 0).unwrap();
        assert!(r.is_empty());
    }

    #[test]
    fn unanchored_dotenv_found_at_depth_three_in_every_root() {
        let t = Tmp::new("depth3");
        let a = t.0.join("a");
        let b = t.0.join("b");
        touch(&a.join("x/y/z/.env"));
        touch(&a.join(".env"));
        touch(&a.join("x/y/z/not.env"));
        touch(&a.join("x/.envrc"));
        touch(&b.join("q/.env"));
        let g = compile("**/.env").unwrap();
        let got = expand(&[&g], &[a.clone(), b.clone()], 1000).unwrap();
        assert_eq!(
            got,
            vec![a.join(".env"), a.join("x/y/z/.env"), b.join("q/.env")]
        );
    }

    #[test]
    fn anchored_glob_walks_only_its_prefix_and_depth() {
        let t = Tmp::new("anchored");
        touch(&t.0.join("proj/.env"));
        touch(&t.0.join("proj/sub/.env"));
        touch(&t.0.join("other/.env"));
        // A big sibling tree that must not be walked: with a tiny limit,
        // walking it would be an error.
        for i in 0..50 {
            touch(&t.0.join(format!("other/f{i}")));
        }
        let pat = format!("{}/proj/*.env", globset::escape(&t.0.to_string_lossy()));
        let g = compile(&pat).unwrap();
        let got = expand(&[&g], &[], 5).unwrap();
        assert_eq!(got, vec![t.0.join("proj/.env")]);
    }

    #[test]
    fn nested_roots_are_walked_once() {
        let t = Tmp::new("nested");
        touch(&t.0.join("in/.env"));
        let g = compile("**/.env").unwrap();
        // 2 entries in total (`in`, `in/.env`): a second walk of `in` would
        // exceed a limit of 2.
        let got = expand(&[&g], &[t.0.join("in"), t.0.clone()], 2).unwrap();
        assert_eq!(got, vec![t.0.join("in/.env")]);
    }

    #[test]
    fn hitting_the_bound_is_an_error_not_a_short_list() {
        let t = Tmp::new("bound");
        for i in 0..100 {
            touch(&t.0.join(format!("d{}/f{i}", i % 10)));
        }
        touch(&t.0.join("d9/.env"));
        let g = compile("**/.env").unwrap();
        let err = expand(&[&g], std::slice::from_ref(&t.0), 50).unwrap_err();
        assert!(err.contains("stopped after 50"), "{err}");
        // With room enough the same walk succeeds.
        let ok = expand(&[&g], std::slice::from_ref(&t.0), 1000).unwrap();
        assert_eq!(ok, vec![t.0.join("d9/.env")]);
    }

    #[test]
    fn symlink_loop_is_not_followed() {
        let t = Tmp::new("loop");
        fs::create_dir_all(t.0.join("a/b")).unwrap();
        std::os::unix::fs::symlink(t.0.join("a"), t.0.join("a/b/loop")).unwrap();
        std::os::unix::fs::symlink("self", t.0.join("a/self")).unwrap();
        touch(&t.0.join("a/b/.env"));
        let g = compile("**/.env").unwrap();
        let got = expand(&[&g], std::slice::from_ref(&t.0), 100).unwrap();
        assert_eq!(got, vec![t.0.join("a/b/.env")]);
    }

    #[test]
    fn matching_symlink_is_reported_as_the_link() {
        let t = Tmp::new("link");
        touch(&t.0.join("secret"));
        std::os::unix::fs::symlink(t.0.join("secret"), t.0.join(".env")).unwrap();
        let g = compile("**/.env").unwrap();
        let got = expand(&[&g], std::slice::from_ref(&t.0), 100).unwrap();
        assert_eq!(got, vec![t.0.join(".env")]);
    }

    #[test]
    fn matched_directory_is_not_descended() {
        let t = Tmp::new("dirmatch");
        for i in 0..30 {
            touch(&t.0.join(format!("secrets/f{i}")));
        }
        let g = compile("**/secrets").unwrap();
        let got = expand(&[&g], std::slice::from_ref(&t.0), 3).unwrap();
        assert_eq!(got, vec![t.0.join("secrets")]);
    }

    #[test]
    fn globs_inside_pseudo_filesystems_are_refused() {
        let g = compile("/proc/*/environ").unwrap();
        let err = expand(&[&g], &[], 1000).unwrap_err();
        assert!(err.contains("/proc"), "{err}");
    }

    /// As root every directory is listable; the unlistable cases only happen
    /// to an unprivileged user, so the walk runs as `nobody` in a child.
    #[test]
    fn unlistable_directory_fails_closed_for_an_unprivileged_user() {
        use std::os::unix::fs::PermissionsExt;
        if !nix::unistd::geteuid().is_root() {
            eprintln!("note: not root, cannot switch to nobody; skipped");
            return;
        }
        let t = Tmp::new("perm");
        touch(&t.0.join("xonly/.env"));
        touch(&t.0.join("closed/.env"));
        fs::create_dir_all(t.0.join("open")).unwrap();
        // Others may enter `xonly` (and open `xonly/.env` by name) but not list it.
        fs::set_permissions(t.0.join("xonly"), fs::Permissions::from_mode(0o711)).unwrap();
        fs::set_permissions(t.0.join("closed"), fs::Permissions::from_mode(0o700)).unwrap();
        let g = compile("**/.env").unwrap();
        let all = vec![t.0.clone()];
        let reachable = vec![t.0.join("closed"), t.0.join("open")];
        // SAFETY: the child only runs the walk and `_exit`s.
        match unsafe { nix::unistd::fork() }.unwrap() {
            nix::unistd::ForkResult::Child => {
                let code = (|| {
                    let nobody = nix::unistd::Uid::from_raw(65534);
                    let nogroup = nix::unistd::Gid::from_raw(65534);
                    nix::unistd::setgroups(&[]).ok()?;
                    nix::unistd::setgid(nogroup).ok()?;
                    nix::unistd::setuid(nobody).ok()?;
                    match expand(&[&g], &all, 1000) {
                        Err(e) if e.contains("xonly") => {}
                        _ => return Some(2),
                    }
                    // A directory nobody can enter hides nothing from it.
                    match expand(&[&g], &reachable, 1000) {
                        Ok(v) if v.is_empty() => Some(0),
                        _ => Some(3),
                    }
                })()
                .unwrap_or(4);
                unsafe { libc::_exit(code) };
            }
            nix::unistd::ForkResult::Parent { child } => {
                let st = nix::sys::wait::waitpid(child, None).unwrap();
                assert_eq!(st, nix::sys::wait::WaitStatus::Exited(child, 0));
            }
        }
    }

    fn plan_with(ws: &Path, deny_read: &[&str]) -> crate::plan::Plan {
        let mut policy = crate::policy::Policy::default();
        policy.sandbox.filesystem.deny_read = deny_read.iter().map(PathBuf::from).collect();
        let facts = crate::plan::Facts {
            cwd: ws.to_path_buf(),
            home: None,
            tmpdir: None,
            exe: None,
        };
        crate::plan::build(&policy, vec!["true".into()], &facts).unwrap()
    }

    #[test]
    fn plan_globs_expand_to_resolved_paths_in_the_workspace() {
        let t = Tmp::new("plan");
        touch(&t.0.join("a/b/c/.env"));
        touch(&t.0.join("real-secret"));
        std::os::unix::fs::symlink(t.0.join("real-secret"), t.0.join("a/.env")).unwrap();
        touch(&t.0.join("literal"));
        let plan = plan_with(&t.0, &["**/.env", "literal"]);
        let e = expand_plan(&plan, 1000).unwrap();
        // The symlink is resolved to what it reaches.
        assert_eq!(
            e.deny_read,
            vec![t.0.join("a/b/c/.env"), t.0.join("real-secret")]
        );
        assert!(e.allow_read.is_empty() && e.deny_write.is_empty());
    }

    #[test]
    fn plan_walk_over_the_bound_refuses_122() {
        let t = Tmp::new("plan-bound");
        for i in 0..20 {
            touch(&t.0.join(format!("f{i}")));
        }
        let plan = plan_with(&t.0, &["**/.env"]);
        let r = expand_plan(&plan, 10).unwrap_err();
        assert_eq!(r.reason, crate::error::Reason::SandboxUnavailable);
        assert_eq!(r.exit_code(), 122);
        // Without globs there is nothing to walk, whatever the bound.
        let plan = plan_with(&t.0, &["literal/.env"]);
        assert_eq!(expand_plan(&plan, 0).unwrap(), Expanded::default());
    }

    #[test]
    fn literal_prefix_understands_escapes() {
        assert_eq!(literal_prefix("**/.env"), None);
        assert_eq!(
            literal_prefix("/a/b/*.env"),
            Some((PathBuf::from("/a/b"), Some(1)))
        );
        assert_eq!(
            literal_prefix("/a/[*]b/**/x"),
            Some((PathBuf::from("/a/*b"), None))
        );
        assert_eq!(
            literal_prefix("/a/\\?q/x?"),
            Some((PathBuf::from("/a/?q"), Some(1)))
        );
        assert_eq!(
            literal_prefix("/a/{b,c}/x"),
            Some((PathBuf::from("/a"), Some(2)))
        );
    }
}
