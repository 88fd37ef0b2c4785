#![cfg(test)]
use super::*;
use std::fs;

/// A scratch directory of its own per test, removed when dropped (shared by
/// the walk's test modules).
pub(super) struct Tmp(pub(super) PathBuf);
impl Tmp {
    pub(super) fn new(tag: &str) -> Tmp {
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
        // A subdirectory, so each d* is read (a directory without one
        // is only looked up by name).
        fs::create_dir_all(t.0.join(format!("d{}/sub", i % 10))).unwrap();
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
fn a_directory_without_subdirectories_is_looked_up_by_name() {
    let t = Tmp::new("leaf");
    for i in 0..200 {
        touch(&t.0.join(format!("flat/f{i}")));
    }
    touch(&t.0.join("flat/.env"));
    let literal = compile("**/.env").unwrap();
    let tagged = [(&literal, List::DenyRead)];
    let w = run(&tagged, std::slice::from_ref(&t.0), 1000).unwrap();
    // `flat` (no subdirectory) costs one lookup, not its 201 names.
    assert_eq!(w.entries, 2);
    assert_eq!(w.found[0], BTreeSet::from([t.0.join("flat/.env")]));
    // A glob whose last component is no literal name reads it whole,
    // and finds the same.
    let class = compile("**/.e[n]v").unwrap();
    let tagged = [(&class, List::DenyRead)];
    let w = run(&tagged, std::slice::from_ref(&t.0), 1000).unwrap();
    assert_eq!(w.entries, 202);
    assert_eq!(w.found[0], BTreeSet::from([t.0.join("flat/.env")]));
    // With a subdirectory, the directory is read.
    fs::create_dir(t.0.join("flat/sub")).unwrap();
    let tagged = [(&literal, List::DenyRead)];
    let w = run(&tagged, std::slice::from_ref(&t.0), 1000).unwrap();
    assert_eq!(w.entries, 1 + 202 + 1);
}

#[test]
fn globs_inside_pseudo_filesystems_are_refused() {
    let g = compile("/proc/*/environ").unwrap();
    let err = expand(&[&g], &[], 1000).unwrap_err();
    assert!(err.contains("/proc"), "{err}");
}

/// Runs `f` as uid/gid 65534 in a forked child; its `Some(0)` passes
/// (through `setgroups`, which nix offers on Linux only).
#[cfg(target_os = "linux")]
fn as_nobody(f: impl FnOnce() -> Option<i32>) {
    // SAFETY: the child only runs `f` and `_exit`s.
    match unsafe { nix::unistd::fork() }.unwrap() {
        nix::unistd::ForkResult::Child => {
            let code = (|| {
                nix::unistd::setgroups(&[]).ok()?;
                nix::unistd::setgid(nix::unistd::Gid::from_raw(65534)).ok()?;
                nix::unistd::setuid(nix::unistd::Uid::from_raw(65534)).ok()?;
                f()
            })()
            .unwrap_or(99);
            // SAFETY: the forked child ends here without running destructors.
            unsafe { libc::_exit(code) };
        }
        nix::unistd::ForkResult::Parent { child } => {
            let st = nix::sys::wait::waitpid(child, None).unwrap();
            assert_eq!(st, nix::sys::wait::WaitStatus::Exited(child, 0));
        }
    }
}

/// As root every directory is listable; the unlistable cases only happen
/// to an unprivileged user, so the walk runs as `nobody` in a child.
#[cfg(target_os = "linux")]
#[test]
fn unlistable_directories_are_skipped_and_spelled_out_names_looked_up() {
    use std::os::unix::fs::PermissionsExt;
    if !nix::unistd::geteuid().is_root() {
        eprintln!("note: not root, cannot switch to nobody; skipped");
        return;
    }
    let t = Tmp::new("perm");
    touch(&t.0.join("xonly/.env"));
    touch(&t.0.join("xonly/deeper/.env"));
    touch(&t.0.join("closed/.env"));
    touch(&t.0.join("open/.env"));
    // Others may enter `xonly` (and open `xonly/.env` by name) but not list it.
    fs::set_permissions(t.0.join("xonly"), fs::Permissions::from_mode(0o711)).unwrap();
    fs::set_permissions(t.0.join("closed"), fs::Permissions::from_mode(0o700)).unwrap();
    let g = compile("**/.env").unwrap();
    let roots = vec![t.0.clone()];
    let (xonly, open) = (t.0.join("xonly"), t.0.join("open/.env"));
    as_nobody(|| {
        // No refusal: what this user cannot list, the command cannot
        // list either; the name the glob spells out is looked up.
        let got = expand(&[&g], &roots, 1000).ok()?;
        if got != vec![open.clone(), xonly.join(".env")] {
            return Some(2);
        }
        let tagged = [(&g, List::DenyRead)];
        let w = run(&tagged, &roots, 1000).ok()?;
        (w.skipped.unlisted == vec![xonly.clone()]).then_some(0)
    });
}

/// Another user's entries in a world-writable directory are not
/// this user's files: never matched, never walked, never a refusal.
#[cfg(target_os = "linux")]
#[test]
fn other_users_entries_in_a_world_writable_directory_are_not_matched() {
    use std::os::unix::fs::PermissionsExt;
    if !nix::unistd::geteuid().is_root() {
        eprintln!("note: not root, cannot switch to nobody; skipped");
        return;
    }
    let t = Tmp::new("sticky");
    let shared = t.0.join("shared");
    touch(&shared.join("roots/.env"));
    touch(&shared.join("roots/unlistable/.env"));
    touch(&shared.join("nobodys/.env"));
    touch(&shared.join(".env"));
    // World-writable without the sticky bit counts the same.
    touch(&t.0.join("open/roots.env/.env"));
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
    fs::set_permissions(t.0.join("open"), fs::Permissions::from_mode(0o777)).unwrap();
    fs::set_permissions(
        shared.join("roots/unlistable"),
        fs::Permissions::from_mode(0o311),
    )
    .unwrap();
    let nobody = Some(nix::unistd::Uid::from_raw(65534));
    for p in ["nobodys", "nobodys/.env"] {
        nix::unistd::chown(&shared.join(p), nobody, None).unwrap();
    }
    let g = compile("**/.env").unwrap();
    let roots = vec![t.0.clone()];
    // Root: its own entries are matched, nobody's are not.
    let got = expand(&[&g], &roots, 1000).unwrap();
    assert_eq!(
        got,
        vec![
            t.0.join("open/roots.env/.env"),
            shared.join(".env"),
            shared.join("roots/.env"),
            shared.join("roots/unlistable/.env")
        ]
    );
    let (mine, roots2) = (shared.join("nobodys/.env"), roots.clone());
    as_nobody(|| {
        // Root's entries (one of them unlistable to nobody) are skipped
        // whole: no refusal, no match.
        let tagged = [(&g, List::DenyRead)];
        let w = run(&tagged, &roots2, 1000).ok()?;
        let got: Vec<PathBuf> = w.found.into_iter().flatten().collect();
        (got == vec![mine.clone()] && w.skipped.foreign == 3 && w.skipped.unlisted.is_empty())
            .then_some(0)
    });
}

fn plan_with(ws: &Path, deny_read: &[&str]) -> crate::plan::Plan {
    let mut policy = crate::policy::Policy::default();
    policy.sandbox.filesystem.deny_read = deny_read.iter().map(PathBuf::from).collect();
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
fn plan_globs_expand_to_resolved_paths_in_the_workspace() {
    let t = Tmp::new("plan");
    touch(&t.0.join("a/b/c/.env"));
    touch(&t.0.join("real-secret"));
    std::os::unix::fs::symlink(t.0.join("real-secret"), t.0.join("a/.env")).unwrap();
    touch(&t.0.join("literal"));
    let plan = plan_with(&t.0, &["**/.env", "literal"]);
    let c = expand_plan(&plan, 1000).unwrap().unwrap();
    // The symlink is resolved to what it reaches.
    assert_eq!(
        c.paths(List::DenyRead),
        vec![t.0.join("a/b/c/.env"), t.0.join("real-secret")]
    );
    assert!(c.paths(List::AllowRead).is_empty() && c.paths(List::DenyWrite).is_empty());
    assert_eq!(c.globs.len(), 1);
    assert_eq!(c.globs[0].written, "**/.env");
    assert_eq!(c.roots, vec![t.0.clone()]);
    // The literal plan keeps the literal rule and gains the matches.
    let lit = c.literal_plan(&plan);
    let got: Vec<PathBuf> = lit
        .fs
        .deny_read
        .iter()
        .map(|r| r.literal().unwrap().to_path_buf())
        .collect();
    assert_eq!(
        got,
        vec![
            t.0.join("literal"),
            t.0.join("a/b/c/.env"),
            t.0.join("real-secret")
        ]
    );
}

#[test]
fn plan_walk_over_the_bound_refuses_122() {
    let t = Tmp::new("plan-bound");
    for i in 0..20 {
        touch(&t.0.join(format!("f{i}")));
    }
    // A subdirectory, so the workspace is read, not looked up by name.
    fs::create_dir(t.0.join("sub")).unwrap();
    let plan = plan_with(&t.0, &["**/.env"]);
    let r = expand_plan(&plan, 10).unwrap_err();
    assert_eq!(r.reason, crate::error::Reason::SandboxUnavailable);
    assert_eq!(r.exit_code(), 122);
    assert!(r.message.contains(LIMIT_ENV), "{}", r.message);
    // Without globs there is nothing to walk, whatever the bound.
    let plan = plan_with(&t.0, &["literal/.env"]);
    assert!(!has_globs(&plan));
    assert_eq!(expand_plan(&plan, 0).unwrap(), None);
}

#[test]
fn three_lists_are_expanded_in_one_walk() {
    let t = Tmp::new("onewalk");
    touch(&t.0.join("secrets/a"));
    touch(&t.0.join("secrets/pub.txt"));
    touch(&t.0.join("x.lock"));
    touch(&t.0.join("sub/y.lock"));
    let mut plan = plan_with(&t.0, &["**/secrets"]);
    let more = plan_with(&t.0, &["**/secrets/*.txt", "**/*.lock"]);
    plan.fs.allow_read = vec![more.fs.deny_read[0].clone()];
    plan.fs.deny_write = vec![more.fs.deny_read[1].clone()];
    let c = expand_plan(&plan, 1000).unwrap().unwrap();
    // secrets, x.lock, sub, secrets/a, secrets/pub.txt, sub/y.lock:
    // every entry read once, not once per list.
    assert_eq!(c.entries, 6);
    assert_eq!(c.paths(List::DenyRead), vec![t.0.join("secrets")]);
    assert_eq!(c.paths(List::AllowRead), vec![t.0.join("secrets/pub.txt")]);
    assert_eq!(
        c.paths(List::DenyWrite),
        vec![t.0.join("sub/y.lock"), t.0.join("x.lock")]
    );
}

#[test]
fn anchored_glob_inside_a_walked_root_is_not_walked_again() {
    let t = Tmp::new("fold");
    touch(&t.0.join("sub/deep/k.pem"));
    touch(&t.0.join("sub/.env"));
    touch(&t.0.join("other"));
    let pat = format!("{}/sub/**/*.pem", globset::escape(&t.0.to_string_lossy()));
    let plan = plan_with(&t.0, &["**/.env", &pat]);
    let c = expand_plan(&plan, 1000).unwrap().unwrap();
    // sub, other, sub/deep, sub/.env, sub/deep/k.pem
    assert_eq!(c.entries, 5);
    assert_eq!(
        c.paths(List::DenyRead),
        vec![t.0.join("sub/.env"), t.0.join("sub/deep/k.pem")]
    );
}

#[test]
fn a_symlink_matched_by_allow_read_reopens_nothing() {
    let t = Tmp::new("allowlink");
    touch(&t.0.join("secrets/pub.txt"));
    touch(&t.0.join("elsewhere/key"));
    std::os::unix::fs::symlink(t.0.join("elsewhere/key"), t.0.join("secrets/key.txt")).unwrap();
    let mut plan = plan_with(&t.0, &["**/secrets"]);
    let more = plan_with(&t.0, &["**/secrets/*.txt"]);
    plan.fs.allow_read = more.fs.deny_read.clone();
    let c = expand_plan(&plan, 1000).unwrap().unwrap();
    assert_eq!(c.paths(List::AllowRead), vec![t.0.join("secrets/pub.txt")]);
}

#[test]
fn roots_are_what_the_policy_grants_but_never_slash() {
    let t = Tmp::new("roots");
    let mut policy = crate::policy::Policy::default();
    let facts = crate::plan::Facts {
        cwd: t.0.clone(),
        home: None,
        tmpdir: None,
        exe: None,
        ..Default::default()
    };
    let ro = crate::plan::build(&policy, vec!["true".into()], &facts).unwrap();
    assert_eq!(walk_roots(&ro), vec![t.0.clone()]);
    policy.sandbox.mode = crate::policy::SandboxMode::DangerFullAccess;
    let dfa = crate::plan::build(&policy, vec!["true".into()], &facts).unwrap();
    assert_eq!(walk_roots(&dfa), vec![t.0.clone()]);
    policy.sandbox.mode = crate::policy::SandboxMode::WorkspaceWrite;
    let ww = crate::plan::build(&policy, vec!["true".into()], &facts).unwrap();
    let roots = walk_roots(&ww);
    assert_eq!(roots[0], t.0);
    assert!(
        roots.contains(&fs::canonicalize("/tmp").unwrap()),
        "{roots:?}"
    );
    assert!(!roots.contains(&PathBuf::from("/")));
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
