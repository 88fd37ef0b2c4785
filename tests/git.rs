//! git works as people need under `workspace-write` (SPEC §5): add, commit,
//! checkout -b and stash in the workspace, and a commit inside a *linked*
//! worktree lands on its branch in the main repository — while the main
//! checkout's own files and git config stay out of reach.

#[path = "support/scratch.rs"]
mod scratch;

use std::path::Path;
use std::process::{Command, Output};

use scratch::exe as bin;

/// A scratch directory outside /tmp (which is writable in workspace-write).
use scratch::Dir as Scratch;

fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn init_repo(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.name", "T"]);
    git(dir, &["config", "user.email", "t@example.invalid"]);
    std::fs::write(dir.join("file.txt"), "ORIGINAL\n").unwrap();
    git(dir, &["add", "file.txt"]);
    git(dir, &["commit", "-q", "-m", "init"]);
}

fn dcjail(backend: &str, workspace: &Path, script: &str) -> Output {
    Command::new(bin())
        .args([
            "--backend",
            backend,
            "--sandbox-mode",
            "workspace-write",
            "--workspace",
        ])
        .arg(workspace)
        .args(["--", "sh", "-c", script])
        .current_dir(workspace)
        .env_remove("DCJAIL_POLICY")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap()
}

fn ok(o: &Output) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn add_commit_checkout_and_stash_work_in_the_workspace_under_bwrap() {
    let s = Scratch::new("ws");
    let repo = s.0.join("repo");
    init_repo(&repo);
    let o = dcjail(
        "bwrap",
        &repo,
        "set -e; echo more >> file.txt; git add file.txt; git commit -q -m inside; \
         git checkout -q -b feature; echo wip > wip.txt; git add wip.txt; git stash -q; \
         test ! -e wip.txt; git stash pop -q; test -e wip.txt; echo DONE",
    );
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("DONE"));
    assert_eq!(
        git(&repo, &["log", "-1", "--format=%s", "main"]).trim(),
        "inside"
    );
    assert_eq!(
        git(&repo, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "feature"
    );
    // And the git config and hooks stayed out of reach all along.
    let o = dcjail(
        "bwrap",
        &repo,
        "git config core.fsmonitor evil; echo x > .git/hooks/pre-commit; echo DONE",
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("DONE"));
    assert!(!git(&repo, &["config", "--list", "--local"]).contains("fsmonitor"));
    assert!(!repo.join(".git/hooks/pre-commit").exists());
}

#[test]
fn commit_in_a_linked_worktree_lands_on_its_branch_while_the_main_checkout_stays_untouched() {
    let s = Scratch::new("linked");
    let main = s.0.join("main");
    init_repo(&main);
    let wt = s.0.join("wt");
    git(
        &main,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "wtbranch",
            wt.to_str().unwrap(),
        ],
    );
    let script = format!(
        "set -e; echo hi > new.txt; git add new.txt; git commit -q -m 'made inside'; \
         echo DONE; echo evil > '{m}/file.txt' || true; echo evil > '{m}/planted.txt' || true; \
         git -C '{m}' config core.fsmonitor evil || true; echo x > '{m}/.git/hooks/post-checkout' || true",
        m = main.display()
    );
    let o = dcjail("bwrap", &wt, &script);
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("DONE"));
    // The commit is on the branch, seen from the main repository.
    assert_eq!(
        git(&main, &["log", "-1", "--format=%s", "wtbranch"]).trim(),
        "made inside"
    );
    assert!(git(&main, &["show", "--name-only", "--format=", "wtbranch"]).contains("new.txt"));
    // Nothing of the main checkout was written.
    assert_eq!(
        std::fs::read_to_string(main.join("file.txt")).unwrap(),
        "ORIGINAL\n"
    );
    assert!(!main.join("planted.txt").exists());
    assert!(!git(&main, &["config", "--list", "--local"]).contains("fsmonitor"));
    assert!(!main.join(".git/hooks/post-checkout").exists());
    assert_eq!(
        git(&main, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "main"
    );
}
