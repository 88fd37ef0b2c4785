//! The plan grants a linked worktree the main repository's git dir, where
//! git writes its objects, refs and lock files, but none of the files
//! through which git finds config, hooks or another git dir, and nothing
//! of the main checkout.

#[path = "support/scratch.rs"]
mod scratch;

use dcjail::plan::{self, Facts};
use dcjail::policy::{Policy, SandboxMode};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A scratch dir outside /tmp: /tmp is a writable root of every
/// workspace-write plan, which would make "not writable" checks vacuous.
use scratch::Dir as Scratch;

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
        ..Default::default()
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

    for root in [wt.clone(), admin.clone(), common.clone()] {
        assert!(
            plan.fs.writable.contains(&root),
            "{} not granted: {:?}",
            root.display(),
            plan.fs.writable
        );
    }
    // What git writes, lock files in the common dir included.
    for p in [
        admin.join("index"),
        admin.join("HEAD"),
        admin.join("logs/HEAD"),
        common.join("objects/ab/cdef"),
        common.join("refs/heads/feat"),
        common.join("refs/stash"),
        common.join("logs/refs/heads/feat"),
        common.join("packed-refs"),
        common.join("packed-refs.lock"),
        common.join("gc.pid"),
        common.join("worktrees/wt2/HEAD"),
        wt.join("a"),
    ] {
        assert!(plan.writable(&p), "{} should be writable", p.display());
    }
    // Not the main checkout, its own state, nor any file through which git
    // finds config, hooks or another git dir.
    for p in [
        main.join("a"),
        main.join("new-file"),
        common.join("HEAD"),
        common.join("index"),
        common.join("rebase-merge/git-rebase-todo"),
        common.join("sequencer/todo"),
        common.join("config"),
        common.join("config.worktree"),
        common.join("hooks/pre-commit"),
        common.join("commondir"),
        common.join("objects/info/alternates"),
        common.join("objects/info/http-alternates"),
        admin.join("commondir"),
        admin.join("gitdir"),
        admin.join("config.worktree"),
        wt.join(".git"),
    ] {
        assert!(!plan.writable(&p), "{} must not be writable", p.display());
    }
    assert!(!plan.fs.writable.iter().any(|r| r == &main));
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
        ..Default::default()
    };
    let plan = plan::build(&policy, vec!["true".into()], &facts).unwrap();
    assert!(plan.fs.writable.is_empty());
    assert!(!plan.writable(&main.join(".git/objects/ab/cdef")));
}

/// By trial: the plan's roots, rendered as plain bind mounts, are enough for
/// `git add`, `commit`, `checkout -b` and `stash` inside the linked worktree,
/// and a write to the main checkout or its git config still fails.
#[test]
fn git_works_in_a_linked_worktree_with_only_the_planned_roots() {
    if !scratch::need("bwrap") {
        return;
    }
    let bwrap = "bwrap";
    let s = Scratch::new("trial");
    let (main, wt) = repo_with_linked_worktree(&s);
    let plan = plan_for(&wt);
    let mut cmd = Command::new(bwrap);
    cmd.args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]);
    for r in &plan.fs.writable {
        cmd.arg("--bind").arg(r).arg(r);
    }
    for p in plan.fs.protected.iter().filter(|p| p.exists()) {
        cmd.arg("--ro-bind").arg(p).arg(p);
    }
    let script = format!(
        "set -e\n\
         echo more >> a\n\
         echo new > b\n\
         git add -A\n\
         git commit -qm inside\n\
         git checkout -q -b feat2\n\
         echo stash >> a\n\
         git stash -q\n\
         git stash pop -q\n\
         git commit -qam again\n\
         echo hacked > '{main}/a' 2>/dev/null && exit 10\n\
         echo '[core]' >> '{main}/.git/config' 2>/dev/null && exit 11\n\
         echo x > '{main}/.git/HEAD' 2>/dev/null && exit 12\n\
         echo x > '{main}/.git/worktrees/wt/commondir' 2>/dev/null && exit 13\n\
         exit 0\n",
        main = main.display()
    );
    let out = cmd
        .arg("--chdir")
        .arg(&wt)
        .args(["sh", "-c", &script])
        .env("HOME", &s.0)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_DIR")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The commits are on their branches in the main repository.
    let show = |rev: &str| {
        let o = Command::new("git")
            .arg("-C")
            .arg(&main)
            .args(["show", rev])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert_eq!(show("feat:b"), "new\n");
    assert_eq!(show("feat2:a"), "a\nmore\nstash\n");
    assert_eq!(std::fs::read_to_string(main.join("a")).unwrap(), "a\n");
}
