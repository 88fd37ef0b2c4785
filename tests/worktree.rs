//! `dcjail worktree enter|exit`, driven through the real binary on throwaway
//! repositories: what is created, what is committed, what is removed, and
//! that a refusal or a failing commit loses nothing.

#[path = "support/scratch.rs"]
mod scratch;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use scratch::exe as dcjail_bin;

/// A scratch dir holding one repository `repo` (and, beside it, the
/// `repo.worktrees` dir dcjail creates); removed on drop.
struct Repo {
    scratch: PathBuf,
    dir: PathBuf,
}

impl Repo {
    fn new(tag: &str) -> Repo {
        // Under the checkout's target/, not the system's /tmp.
        let scratch = scratch::fresh(&format!("wt-test-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(scratch.join("home")).unwrap();
        let dir = scratch.join("repo");
        std::fs::create_dir_all(&dir).unwrap();
        let r = Repo { scratch, dir };
        r.git(&["init", "-q", "-b", "main"]);
        r.git(&["config", "user.name", "Test"]);
        r.git(&["config", "user.email", "test@example.com"]);
        std::fs::write(r.dir.join("tracked.txt"), "one\n").unwrap();
        std::fs::write(r.dir.join("gone.txt"), "bye\n").unwrap();
        r.git(&["add", "."]);
        r.git(&["commit", "-qm", "init"]);
        r
    }

    /// Environment shared by git and dcjail: no user or system config.
    fn isolate(&self, c: &mut Command) {
        c.env("HOME", self.scratch.join("home"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("DCJAIL_POLICY");
    }

    fn git_in(&self, dir: &Path, args: &[&str]) -> String {
        let mut c = Command::new("git");
        c.arg("-C").arg(dir).args(args);
        self.isolate(&mut c);
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?} in {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn git(&self, args: &[&str]) -> String {
        self.git_in(&self.dir, args)
    }

    fn dcjail_in<S: AsRef<OsStr>>(&self, dir: &Path, args: &[S]) -> Output {
        let mut c = Command::new(dcjail_bin());
        c.current_dir(dir).args(args);
        self.isolate(&mut c);
        c.output().unwrap()
    }

    fn dcjail<S: AsRef<OsStr>>(&self, args: &[S]) -> Output {
        self.dcjail_in(&self.dir, args)
    }

    fn worktrees(&self) -> usize {
        self.git(&["worktree", "list", "--porcelain"])
            .lines()
            .filter(|l| l.starts_with("worktree "))
            .count()
    }

    fn branches(&self) -> Vec<String> {
        self.git(&["branch", "--format=%(refname:short)"])
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn home(&self) -> PathBuf {
        self.scratch.join("repo.worktrees")
    }

    /// `enter --json`, checked, as (path, branch).
    fn enter(&self, extra: &[&str]) -> (PathBuf, String) {
        let mut args = vec!["worktree", "enter", "--json"];
        args.extend_from_slice(extra);
        let out = self.dcjail(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (
            PathBuf::from(v["path"].as_str().unwrap()),
            v["branch"].as_str().unwrap().to_string(),
        )
    }
}

impl Drop for Repo {
    fn drop(&mut self) {
        scratch::remove(&self.scratch);
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)))
}

#[test]
fn enter_creates_a_worktree_on_a_new_branch_beside_the_checkout() {
    let r = Repo::new("enter");
    let head = r.git(&["rev-parse", "HEAD"]).trim().to_string();
    let out = r.dcjail(&["worktree", "enter", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    let path = PathBuf::from(v["path"].as_str().unwrap());
    let branch = v["branch"].as_str().unwrap();
    assert_eq!(v["base"], "HEAD");
    assert_eq!(v["base_commit"], head.as_str());

    let name = path.file_name().unwrap().to_str().unwrap();
    assert_eq!(name, branch);
    let id = name.strip_prefix("dc-wt-").unwrap();
    assert!(
        id.len() == 8 && id.chars().all(|c| c.is_ascii_hexdigit()),
        "{id}"
    );
    assert_eq!(path.parent().unwrap(), r.home());
    assert_eq!(
        std::fs::read_to_string(path.join("tracked.txt")).unwrap(),
        "one\n"
    );
    assert_eq!(r.worktrees(), 2);
    assert_eq!(r.git(&["rev-parse", branch]).trim(), head);
    // Checked out on its own branch, and nothing shows up in the main checkout.
    assert_eq!(
        r.git_in(&path, &["symbolic-ref", "--short", "HEAD"]).trim(),
        branch
    );
    assert_eq!(r.git(&["status", "--porcelain"]), "");

    // Plain output is the path alone, for `cd "$(dcjail worktree enter)"`.
    let out = r.dcjail(&["worktree", "enter"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let second = PathBuf::from(text.trim_end_matches('\n'));
    assert_eq!(text.lines().count(), 1);
    assert!(second.join(".git").is_file());
    assert_ne!(second, path);
    assert_eq!(r.worktrees(), 3);
}

#[test]
fn enter_starts_from_the_base_branch() {
    let r = Repo::new("base");
    r.git(&["checkout", "-q", "-b", "feature"]);
    std::fs::write(r.dir.join("feature.txt"), "f\n").unwrap();
    r.git(&["add", "feature.txt"]);
    r.git(&["commit", "-qm", "feature"]);
    r.git(&["checkout", "-q", "main"]);

    let (path, _) = r.enter(&["--base", "feature"]);
    assert_eq!(
        std::fs::read_to_string(path.join("feature.txt")).unwrap(),
        "f\n"
    );
    let (path, _) = r.enter(&[]);
    assert!(!path.join("feature.txt").exists());
}

#[test]
fn enter_with_an_unknown_base_creates_nothing() {
    let r = Repo::new("badbase");
    let out = r.dcjail(&["worktree", "enter", "--base", "no-such-branch"]);
    assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("dcjail: usage-error: "),
        "{}",
        stderr(&out)
    );
    assert_eq!(r.worktrees(), 1);
    assert_eq!(r.branches(), vec!["main"]);
}

#[test]
fn exit_with_changes_commits_them_on_the_branch_and_removes_the_directory() {
    let r = Repo::new("exitchg");
    let (path, branch) = r.enter(&[]);
    std::fs::write(path.join("tracked.txt"), "two\n").unwrap();
    std::fs::remove_file(path.join("gone.txt")).unwrap();
    std::fs::create_dir_all(path.join("a/b")).unwrap();
    std::fs::write(path.join("a/b/new.txt"), "new\n").unwrap();

    let out = r.dcjail(&[
        OsStr::new("worktree"),
        OsStr::new("exit"),
        OsStr::new("--json"),
        path.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["branch"], branch.as_str());
    assert_eq!(v["path"], path.to_str().unwrap());
    assert_eq!(v["committed"], true);
    assert_eq!(v["branch_kept"], true);
    let mut files: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    files.sort();
    assert_eq!(files, vec!["a/b/new.txt", "gone.txt", "tracked.txt"]);

    // The directory is gone, the work is on the branch in the main repo.
    assert!(!path.exists());
    assert_eq!(r.worktrees(), 1);
    assert_eq!(
        r.git(&["rev-parse", &branch]).trim(),
        v["commit"].as_str().unwrap()
    );
    assert_eq!(r.git(&["show", &format!("{branch}:a/b/new.txt")]), "new\n");
    assert_eq!(r.git(&["show", &format!("{branch}:tracked.txt")]), "two\n");
    let tree = r.git(&["ls-tree", "-r", "--name-only", &branch]);
    assert!(!tree.lines().any(|l| l == "gone.txt"), "{tree}");
    // The main checkout is untouched.
    assert_eq!(
        std::fs::read_to_string(r.dir.join("tracked.txt")).unwrap(),
        "one\n"
    );
    assert_eq!(r.git(&["status", "--porcelain"]), "");
}

#[test]
fn exit_with_changes_prints_branch_path_and_files() {
    let r = Repo::new("exittext");
    let (path, branch) = r.enter(&[]);
    std::fs::write(path.join("untracked.txt"), "u\n").unwrap();
    let out = r.dcjail(&[OsStr::new("worktree"), OsStr::new("exit"), path.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(&format!("branch: {branch}")), "{text}");
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains("  untracked.txt"), "{text}");
    assert_eq!(r.git(&["show", &format!("{branch}:untracked.txt")]), "u\n");
}

#[test]
fn exit_without_changes_removes_the_worktree_and_its_branch() {
    let r = Repo::new("exitclean");
    let (path, branch) = r.enter(&[]);
    assert!(r.branches().contains(&branch));
    let out = r.dcjail(&[
        OsStr::new("worktree"),
        OsStr::new("exit"),
        OsStr::new("--json"),
        path.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["committed"], false);
    assert_eq!(v["removed"], true);
    assert_eq!(v["branch_kept"], false);
    assert!(!path.exists());
    assert_eq!(r.worktrees(), 1);
    assert_eq!(r.branches(), vec!["main"]);
    // The last worktree takes the `repo.worktrees` dir with it.
    assert!(!r.home().exists());
}

#[test]
fn exit_keeps_a_branch_that_holds_commits_made_inside() {
    let r = Repo::new("exitown");
    let (path, branch) = r.enter(&[]);
    std::fs::write(path.join("c.txt"), "c\n").unwrap();
    r.git_in(&path, &["add", "c.txt"]);
    r.git_in(&path, &["commit", "-qm", "made inside"]);
    let tip = r.git_in(&path, &["rev-parse", "HEAD"]);
    let out = r.dcjail(&[
        OsStr::new("worktree"),
        OsStr::new("exit"),
        OsStr::new("--json"),
        path.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json(&out)["branch_kept"], true);
    assert!(!path.exists());
    assert_eq!(r.git(&["rev-parse", &branch]), tip);
}

#[test]
fn failing_commit_hook_is_an_error_and_loses_nothing() {
    let r = Repo::new("hook");
    let hook = r.dir.join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\necho 'pre-commit says no' >&2\nexit 1\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (path, branch) = r.enter(&[]);
    let base = r.git(&["rev-parse", &branch]);
    std::fs::write(path.join("tracked.txt"), "edited\n").unwrap();
    std::fs::write(path.join("fresh.txt"), "fresh\n").unwrap();

    let out = r.dcjail(&[OsStr::new("worktree"), OsStr::new("exit"), path.as_os_str()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("pre-commit says no"), "{err}");
    let last = err.lines().last().unwrap();
    assert!(last.starts_with("dcjail: worktree: "), "{err}");
    assert!(last.contains("nothing was removed"), "{err}");
    assert!(out.stdout.is_empty());

    // Nothing lost: the worktree, its changes and its branch are all there.
    assert_eq!(
        std::fs::read_to_string(path.join("tracked.txt")).unwrap(),
        "edited\n"
    );
    assert_eq!(
        std::fs::read_to_string(path.join("fresh.txt")).unwrap(),
        "fresh\n"
    );
    assert_eq!(r.worktrees(), 2);
    assert_eq!(r.git(&["rev-parse", &branch]), base);
    assert!(r.branches().contains(&branch));

    // Once the hook agrees, the same exit goes through.
    std::fs::remove_file(&hook).unwrap();
    let out = r.dcjail(&[OsStr::new("worktree"), OsStr::new("exit"), path.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(r.git(&["show", &format!("{branch}:fresh.txt")]), "fresh\n");
}

#[test]
fn plan_mode_refuses_enter_and_creates_nothing() {
    let r = Repo::new("plan");
    let out = r.dcjail(&["worktree", "enter", "--mode", "plan"]);
    assert_eq!(out.status.code(), Some(120));
    assert_eq!(
        stderr(&out),
        "dcjail: plan-blocked: cannot enter worktree in plan mode\n"
    );
    assert!(out.stdout.is_empty());
    assert_eq!(r.worktrees(), 1);
    assert_eq!(r.branches(), vec!["main"]);
    assert!(!r.home().exists());
}

#[test]
fn plan_mode_from_the_policy_file_refuses_enter_and_fills_the_plan_card() {
    let r = Repo::new("planfile");
    let policy = r.scratch.join("policy.toml");
    let card = r.scratch.join("card.jsonl");
    std::fs::write(
        &policy,
        format!("mode = \"plan\"\n[plan]\ncard = \"{}\"\n", card.display()),
    )
    .unwrap();
    let mut c = Command::new(dcjail_bin());
    c.current_dir(&r.dir).args(["worktree", "enter", "--json"]);
    r.isolate(&mut c);
    c.env("DCJAIL_POLICY", &policy);
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(120), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot enter worktree in plan mode"));
    assert_eq!(r.worktrees(), 1);
    let line: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&card).unwrap().trim()).unwrap();
    assert_eq!(line["mode"], "plan");
    assert_eq!(line["argv"][1], "worktree");
    assert_eq!(line["argv"][2], "enter");

    // The command line beats the file.
    let out = r.dcjail(&[
        OsStr::new("worktree"),
        OsStr::new("enter"),
        OsStr::new("--policy"),
        policy.as_os_str(),
        OsStr::new("--mode"),
        OsStr::new("default"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(r.worktrees(), 2);
}

#[test]
fn enter_inside_a_dcjail_worktree_is_refused() {
    let r = Repo::new("nest");
    let (path, _) = r.enter(&[]);
    let sub = path.join("deep/er");
    std::fs::create_dir_all(&sub).unwrap();
    for dir in [&path, &sub] {
        let out = r.dcjail_in(dir, &["worktree", "enter"]);
        assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.starts_with("dcjail: usage-error: already inside worktree"),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(out.stdout.is_empty());
    }
    assert_eq!(r.worktrees(), 2);
}

#[test]
fn exit_refuses_what_is_not_a_dcjail_worktree() {
    let r = Repo::new("notours");
    let other = r.scratch.join("plain-wt");
    r.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "plain",
        other.to_str().unwrap(),
    ]);
    std::fs::write(other.join("keep.txt"), "k\n").unwrap();
    std::fs::write(r.dir.join("main-change.txt"), "m\n").unwrap();
    for target in [&r.dir, &other] {
        let out = r.dcjail(&[
            OsStr::new("worktree"),
            OsStr::new("exit"),
            target.as_os_str(),
        ]);
        assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
        assert!(
            stderr(&out).starts_with("dcjail: usage-error: "),
            "{}",
            stderr(&out)
        );
    }
    assert!(other.join("keep.txt").exists());
    assert!(r.dir.join("main-change.txt").exists());
    assert_eq!(r.worktrees(), 2);
    assert_eq!(r.git(&["log", "--oneline"]).lines().count(), 1);
}

#[test]
fn exit_refuses_a_worktree_switched_to_another_branch() {
    let r = Repo::new("switched");
    let (path, branch) = r.enter(&[]);
    r.git_in(&path, &["checkout", "-q", "-b", "elsewhere"]);
    std::fs::write(path.join("w.txt"), "w\n").unwrap();
    let out = r.dcjail(&[OsStr::new("worktree"), OsStr::new("exit"), path.as_os_str()]);
    assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
    assert!(stderr(&out).contains(&branch), "{}", stderr(&out));
    assert!(path.join("w.txt").exists());
    assert_eq!(r.git(&["log", "--oneline", "elsewhere"]).lines().count(), 1);
}

#[test]
fn git_planted_in_the_repository_is_never_run() {
    let r = Repo::new("planted");
    let bin = r.dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let marker = r.scratch.join("planted-git-ran");
    std::fs::write(
        bin.join("git"),
        format!("#!/bin/sh\ntouch '{}'\nexit 0\n", marker.display()),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(bin.join("git"), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path_var = format!("{}:bin:{}", bin.display(), std::env::var("PATH").unwrap());
    let mut c = Command::new(dcjail_bin());
    c.current_dir(&r.dir).args(["worktree", "enter"]);
    r.isolate(&mut c);
    c.env("PATH", &path_var);
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let wt = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim_end());
    assert!(wt.join(".git").is_file());

    let mut c = Command::new(dcjail_bin());
    c.current_dir(&wt)
        .args([OsStr::new("worktree"), OsStr::new("exit"), wt.as_os_str()]);
    r.isolate(&mut c);
    c.env("PATH", &path_var);
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!marker.exists(), "the planted git ran");
}

#[test]
fn git_dir_in_the_environment_does_not_redirect_enter() {
    let r = Repo::new("gitdir");
    let decoy = Repo::new("gitdir-decoy");
    let mut c = Command::new(dcjail_bin());
    c.current_dir(&r.dir).args(["worktree", "enter"]);
    r.isolate(&mut c);
    c.env("GIT_DIR", decoy.dir.join(".git"))
        .env("GIT_WORK_TREE", &decoy.dir)
        .env("GIT_INDEX_FILE", decoy.dir.join(".git/index"));
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(r.worktrees(), 2);
    assert_eq!(decoy.worktrees(), 1);
}
