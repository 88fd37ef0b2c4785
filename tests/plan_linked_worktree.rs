//! The plan grants a linked worktree exactly what git writes in the main
//! repository's git dir, and nothing else of the main checkout.

use dcjail::plan::{self, Facts};
use dcjail::policy::{Policy, SandboxMode};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A scratch dir outside /tmp: /tmp is a writable root of every
/// workspace-write plan, which would make "not writable" checks vacuous.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        let p = base.join(format!("plan-wt-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Scratch(std::fs::canonicalize(&p).unwrap())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A main repository with one commit and a linked worktree `wt` beside it.
fn repo_with_linked_worktree(s: &Scratch) -> (PathBuf, PathBuf) {
    let main = s.0.join("main");
    std::fs::create_dir_all(&main).unwrap();
    git(&main, &["init", "-q"]);
    git(&main, &["config", "user.name", "t"]);
    git(&main, &["config", "user.email", "t@example.com"]);
    std::fs::write(main.join("a"), "a\n").unwrap();
    git(&main, &["add", "a"]);
    git(&main, &["commit", "-qm", "init"]);
    let wt = s.0.join("wt");
    git(
        &main,
        &["worktree", "add", "-q", "-b", "feat", wt.to_str().unwrap()],
    );
    (main, wt)
}

fn plan_for(wt: &Path) -> plan::Plan {
    let mut policy = Policy::default();
    policy.sandbox.mode = SandboxMode::WorkspaceWrite;
    policy.worktree.root = Some(wt.to_path_buf());
    let facts = Facts {
        cwd: wt.to_path_buf(),
        home: None,
        tmpdir: None,
        exe: None,
    };
    plan::build(&policy, vec!["true".into()], &facts).unwrap()
}

#[test]
fn linked_worktree_gets_exactly_its_git_metadata() {
    let s = Scratch::new("exact");
    let (main, wt) = repo_with_linked_worktree(&s);
    let common = main.join(".git");
    let admin = common.join("worktrees/wt");
    let plan = plan_for(&wt);

    for root in [
        wt.clone(),
        admin.clone(),
        common.join("objects"),
        common.join("refs"),
        common.join("logs"),
    ] {
        assert!(
            plan.fs.writable.contains(&root),
            "{} not granted: {:?}",
            root.display(),
            plan.fs.writable
        );
    }
    // What git writes.
    for p in [
        admin.join("index"),
        admin.join("HEAD"),
        admin.join("logs/HEAD"),
        common.join("objects/ab/cdef"),
        common.join("refs/heads/feat"),
        common.join("refs/stash"),
        common.join("logs/refs/heads/feat"),
        wt.join("a"),
    ] {
        assert!(plan.writable(&p), "{} should be writable", p.display());
    }
    // Nothing else of the main repository or its checkout.
    for p in [
        main.join("a"),
        main.join("new-file"),
        common.clone(),
        common.join("HEAD"),
        common.join("index"),
        common.join("config"),
        common.join("hooks/pre-commit"),
        common.join("packed-refs"),
        common.join("commondir"),
        common.join("info/attributes"),
        admin.join("commondir"),
        admin.join("gitdir"),
        admin.join("config.worktree"),
        wt.join(".git"),
    ] {
        assert!(!plan.writable(&p), "{} must not be writable", p.display());
    }
    assert!(!plan.fs.writable.iter().any(|r| r == &main || r == &common));
}

#[test]
fn planted_git_file_without_back_pointer_grants_nothing() {
    let s = Scratch::new("planted");
    let (main, _wt) = repo_with_linked_worktree(&s);
    // A directory that claims to be the `wt` worktree, which the main repo
    // does not know as such.
    let fake = s.0.join("fake");
    std::fs::create_dir_all(&fake).unwrap();
    let admin = main.join(".git/worktrees/wt");
    std::fs::write(fake.join(".git"), format!("gitdir: {}\n", admin.display())).unwrap();
    let plan = plan_for(&fake);
    assert!(!plan.writable(&main.join(".git/objects/ab/cdef")));
    assert!(!plan.writable(&admin.join("index")));
    assert_eq!(
        plan.fs
            .writable
            .iter()
            .filter(|r| r.starts_with(&main))
            .count(),
        0,
        "{:?}",
        plan.fs.writable
    );
}

#[test]
fn read_only_plan_grants_no_git_metadata() {
    let s = Scratch::new("ro");
    let (main, wt) = repo_with_linked_worktree(&s);
    let mut policy = Policy::default();
    policy.worktree.root = Some(wt.clone());
    let facts = Facts {
        cwd: wt.clone(),
        home: None,
        tmpdir: None,
        exe: None,
    };
    let plan = plan::build(&policy, vec!["true".into()], &facts).unwrap();
    assert!(plan.fs.writable.is_empty());
    assert!(!plan.writable(&main.join(".git/objects/ab/cdef")));
}
