//! Inside a linked worktree, whose git metadata lives in the main
//! repository, every git operation works under dcjail as it does without
//! it: commit, checkout -b, stash, deleting a branch and a tag that live
//! only in packed-refs, gc, fsck — with no "Unable to create" or
//! "Read-only" line, and the same resulting history (commits made with
//! fixed dates, so their ids must match). The main checkout's files and
//! git config stay untouched. Under bwrap as root and as uid 65534; under
//! landlock too when nothing must be subtracted (`protect_defaults =
//! false`), and with the protected table it refuses, naming the path and
//! the backend that can.

#[path = "support/scratch.rs"]
mod scratch;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The dcjail the tests run: `scratch::exe` keeps it runnable wherever the
/// checkout lives (landlock refuses a dcjail inside a writable root).
use scratch::exe as bin;

fn as_user(nobody: bool, program: &str, home: &Path) -> Command {
    let mut c = scratch::user_command(nobody, program);
    c.env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_CONFIG_GLOBAL")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("GIT_DIR")
        .env_remove("TMPDIR")
        .env_remove("DCJAIL_POLICY")
        .env("GIT_AUTHOR_NAME", "T")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "T")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .env("GIT_AUTHOR_DATE", "2020-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2020-01-01T00:00:00Z")
        .stdin(Stdio::null());
    c
}

fn git(dir: &Path, home: &Path, args: &[&str]) -> String {
    // The test's own look at repositories it may have handed to nobody.
    let o = as_user(false, "git", home)
        .args(["-c", "safe.directory=*", "-C"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A main repository with history, a branch and a tag that live only in
/// packed-refs, and a linked worktree beside it.
struct Setup {
    root: PathBuf,
    home: PathBuf,
    main: PathBuf,
    wt: PathBuf,
}

fn setup(tag: &str, nobody: bool) -> Setup {
    let root = scratch::fresh(&format!(
        "lwt-{tag}-{}-{}",
        u8::from(nobody),
        std::process::id()
    ));
    let home = root.join("home");
    let main = root.join("main");
    let wt = root.join("wt");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&main).unwrap();
    git(&main, &home, &["init", "-q", "-b", "main"]);
    std::fs::write(main.join("a.txt"), "a\n").unwrap();
    git(&main, &home, &["add", "a.txt"]);
    git(&main, &home, &["commit", "-q", "-m", "init"]);
    git(&main, &home, &["branch", "old"]);
    git(&main, &home, &["tag", "t1"]);
    git(&main, &home, &["pack-refs", "--all"]);
    assert!(!main.join(".git/refs/heads/old").exists());
    git(
        &main,
        &home,
        &["worktree", "add", "-q", "-b", "wtb", wt.to_str().unwrap()],
    );
    if nobody {
        let ok = Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(&root)
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }
    Setup {
        root,
        home,
        main,
        wt,
    }
}

const SCRIPT: &str = "set -e
echo one >> a.txt; git add a.txt; git commit -q -m one
git checkout -q -b feature
echo two > b.txt; git add b.txt; git commit -q -m two
echo wip >> a.txt; git stash -q; test \"$(cat a.txt)\" = \"$(printf 'a\\none')\"; git stash pop -q; git commit -q -am three
git branch -d old
git tag -d t1
git tag t2
git gc -q
git fsck --no-progress
echo LINKED-DONE
";

fn run(s: &Setup, nobody: bool, args: &[&str]) -> Output {
    as_user(nobody, bin(), &s.home)
        .args(args)
        .arg("--workspace")
        .arg(&s.wt)
        .args(["--", "sh", "-c", SCRIPT])
        .current_dir(&s.wt)
        .output()
        .unwrap()
}

/// What the history looks like, seen from the main repository.
fn history(s: &Setup) -> String {
    let mut out = git(
        &s.main,
        &s.home,
        &["for-each-ref", "--format=%(refname) %(objectname)"],
    );
    for rev in ["feature", "feature~1", "wtb"] {
        out.push_str(&git(
            &s.main,
            &s.home,
            &["show", "--name-status", "--format=%H %s", rev],
        ));
    }
    out.push_str(&git(&s.main, &s.home, &["stash", "list"]));
    out
}

fn check_same_as_without(args: &[&str], label: &str) {
    for &nobody in scratch::users() {
        let plain = setup(&format!("{label}-plain"), nobody);
        let jailed = setup(&format!("{label}-jailed"), nobody);
        let a = run(&plain, nobody, &["--no-sandbox"]);
        let b = run(&jailed, nobody, args);
        let (ea, eb) = (
            String::from_utf8_lossy(&a.stderr).into_owned(),
            String::from_utf8_lossy(&b.stderr).into_owned(),
        );
        assert!(
            String::from_utf8_lossy(&a.stdout).contains("LINKED-DONE"),
            "without dcjail: {ea}"
        );
        assert!(
            String::from_utf8_lossy(&b.stdout).contains("LINKED-DONE"),
            "{label}, nobody={nobody}: {eb}"
        );
        for bad in ["Unable to create", "Read-only", "Permission denied"] {
            assert!(
                !eb.contains(bad),
                "{label}, nobody={nobody}: `{bad}` in: {eb}"
            );
        }
        // `git branch -d` rewrites .git/config to drop the branch's section,
        // which a protected config refuses (the branch is deleted all the
        // same): the only complaint allowed, and only with the table on.
        for line in eb.lines().filter(|l| !l.trim().is_empty()) {
            let config_rewrite = line.starts_with("error: could not write config file ")
                || line == "warning: update of config-file failed";
            assert!(
                config_rewrite && !label.starts_with("landlock"),
                "{label}, nobody={nobody}: unexpected line `{line}` in: {eb}"
            );
        }
        assert_eq!(
            history(&plain),
            history(&jailed),
            "{label}, nobody={nobody}"
        );
        // What each commit holds.
        let show = git(
            &jailed.main,
            &jailed.home,
            &["show", "--name-status", "--format=%s", "feature"],
        );
        assert_eq!(show.trim(), "three\n\nM\ta.txt", "{label}");
        let show = git(
            &jailed.main,
            &jailed.home,
            &["show", "--name-status", "--format=%s", "feature~1"],
        );
        assert_eq!(show.trim(), "two\n\nA\tb.txt", "{label}");
        // The main checkout is as it was.
        assert_eq!(
            std::fs::read_to_string(jailed.main.join("a.txt")).unwrap(),
            "a\n"
        );
        assert_eq!(
            git(
                &jailed.main,
                &jailed.home,
                &["rev-parse", "--abbrev-ref", "HEAD"]
            )
            .trim(),
            "main"
        );
        assert!(git(&jailed.main, &jailed.home, &["status", "--porcelain"]).is_empty());
        scratch::remove(&plain.root);
        scratch::remove(&jailed.root);
    }
}

#[test]
fn every_git_operation_in_a_linked_worktree_works_as_without_dcjail_under_bwrap() {
    check_same_as_without(
        &["--backend", "bwrap", "--sandbox-mode", "workspace-write"],
        "bwrap",
    );
}

#[test]
fn the_main_checkout_and_the_repository_config_stay_out_of_reach_of_a_linked_worktree() {
    for &nobody in scratch::users() {
        let s = setup("reach", nobody);
        let m = s.main.display();
        let script = format!(
            "echo evil > '{m}/a.txt'; echo evil > '{m}/new.txt'; echo '[core]' >> '{m}/.git/config'; \
             echo x > '{m}/.git/hooks/pre-commit'; echo . > '{m}/.git/commondir'; \
             echo x > '{m}/.git/HEAD'; echo x > '{m}/.git/index'; mkdir '{m}/.git/rebase-merge'; \
             echo x > '{m}/.git/worktrees/wt/commondir'; echo x > '{m}/.git/worktrees/wt/gitdir'; \
             echo x > .git; echo RAN"
        );
        let config = std::fs::read(s.main.join(".git/config")).unwrap();
        let head = std::fs::read(s.main.join(".git/HEAD")).unwrap();
        let index = std::fs::read(s.main.join(".git/index")).unwrap();
        let o = as_user(nobody, bin(), &s.home)
            .args([
                "--backend",
                "bwrap",
                "--sandbox-mode",
                "workspace-write",
                "--workspace",
            ])
            .arg(&s.wt)
            .args(["--", "sh", "-c", &script])
            .current_dir(&s.wt)
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&o.stdout).contains("RAN"));
        assert_eq!(
            std::fs::read_to_string(s.main.join("a.txt")).unwrap(),
            "a\n"
        );
        assert!(!s.main.join("new.txt").exists());
        assert_eq!(std::fs::read(s.main.join(".git/config")).unwrap(), config);
        assert_eq!(std::fs::read(s.main.join(".git/HEAD")).unwrap(), head);
        assert_eq!(std::fs::read(s.main.join(".git/index")).unwrap(), index);
        assert!(!s.main.join(".git/hooks/pre-commit").exists());
        assert!(!s.main.join(".git/commondir").exists());
        assert!(!s.main.join(".git/rebase-merge").exists());
        assert!(
            std::fs::read_to_string(s.main.join(".git/worktrees/wt/commondir"))
                .unwrap()
                .starts_with("..")
        );
        assert!(std::fs::read_to_string(s.wt.join(".git"))
            .unwrap()
            .starts_with("gitdir: "));
        scratch::remove(&s.root);
    }
}

#[test]
fn landlock_runs_a_linked_worktree_when_nothing_must_be_subtracted() {
    let s = setup("ll-policy", false);
    let policy = s.root.join("policy.toml");
    std::fs::write(
        &policy,
        "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
         [sandbox]\nmode = \"workspace-write\"\n[sandbox.filesystem]\nprotect_defaults = false\n",
    )
    .unwrap();
    let p = policy.to_str().unwrap().to_string();
    check_same_as_without(&["--backend", "landlock", "--policy", &p], "landlock");
    scratch::remove(&s.root);
}

#[test]
fn landlock_with_the_protected_table_refuses_naming_the_path_and_bwrap() {
    let s = setup("ll-refuse", false);
    let o = run(
        &s,
        false,
        &["--backend", "landlock", "--sandbox-mode", "workspace-write"],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(122), "{err}");
    assert!(
        err.contains("landlock cannot keep the protected path `"),
        "{err}"
    );
    assert!(err.contains(&format!("`{}", s.root.display())), "{err}");
    assert!(err.contains("--backend bwrap can"), "{err}");
    assert!(!String::from_utf8_lossy(&o.stdout).contains("LINKED-DONE"));
    scratch::remove(&s.root);
}
