//! git runs under dcjail exactly as it runs without it (SPEC §5: whatever
//! dcjail does to enforce the policy is invisible to `git status`, `git add
//! -A`, `git stash -u`, `git clean -n` and package tools; objects, refs,
//! packed-refs, the index and git's lock files stay writable, in a linked
//! worktree too). Every workload runs once without dcjail and once per
//! backend, as the invoking user and as uid 65534, in a repository rebuilt
//! at the same path with fixed dates, so even commit hashes must agree.

#[path = "support/realwork.rs"]
mod realwork;
#[path = "support/scratch.rs"]
mod scratch;

use realwork::*;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where a workload runs: the clone itself, or a linked worktree of it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Loc {
    Clone,
    Linked,
}

impl Loc {
    fn label(self) -> &'static str {
        match self {
            Loc::Clone => "clone",
            Loc::Linked => "linked-worktree",
        }
    }
}

struct Repo {
    clone: PathBuf,
    linked: PathBuf,
}

impl Repo {
    fn at(&self, loc: Loc) -> &Path {
        match loc {
            Loc::Clone => &self.clone,
            Loc::Linked => &self.linked,
        }
    }
}

/// An origin with history (a crate, docs, a branch, tags), a clone of it
/// whose refs are all packed, and a linked worktree of the clone. With
/// `dirty`, the checkout where the workload runs also has a modified file,
/// an untracked directory and an ignored file.
fn build(t: &Tree, user: User, env: &Env, dirty: Option<Loc>) -> Repo {
    let w = &t.work;
    let origin = w.join("origin");
    std::fs::create_dir_all(origin.join("src")).unwrap();
    std::fs::write(
        t.home.join(".gitconfig"),
        "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n",
    )
    .unwrap();
    git(&origin, env, &["init", "-q", "-b", "main"]);
    std::fs::write(
        origin.join("Cargo.toml"),
        "[package]\nname = \"realwork-demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
         description = \"a crate for the real-work suite\"\nlicense = \"MIT\"\n\n[dependencies]\n",
    )
    .unwrap();
    std::fs::write(
        origin.join("src/lib.rs"),
        "pub fn one() -> u32 {\n    1\n}\n",
    )
    .unwrap();
    std::fs::write(origin.join(".gitignore"), "/target\n*.log\n").unwrap();
    std::fs::write(origin.join("README.md"), "# demo\n").unwrap();
    git(&origin, env, &["add", "-A"]);
    git(&origin, env, &["commit", "-qm", "first"]);
    std::fs::create_dir_all(origin.join("docs")).unwrap();
    std::fs::write(origin.join("docs/guide.md"), "guide\n").unwrap();
    git(&origin, env, &["add", "-A"]);
    git(&origin, env, &["commit", "-qm", "docs"]);
    git(&origin, env, &["branch", "side"]);
    git(&origin, env, &["tag", "t1"]);
    std::fs::write(origin.join("README.md"), "# demo\n\nmore\n").unwrap();
    git(&origin, env, &["commit", "-qam", "readme"]);
    git(&origin, env, &["tag", "-a", "-m", "release one", "v1"]);

    let clone = w.join("clone");
    git(
        w,
        env,
        &[
            "clone",
            "-q",
            origin.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    // No upstream: deleting it then writes no config (which stays protected).
    git(
        &clone,
        env,
        &["branch", "-q", "--no-track", "side", "origin/side"],
    );
    git(&clone, env, &["pack-refs", "--all"]);
    let linked = w.join("linked");
    git(
        &clone,
        env,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "wt",
            linked.to_str().unwrap(),
        ],
    );
    let repo = Repo { clone, linked };
    if let Some(loc) = dirty {
        let d = repo.at(loc);
        std::fs::write(d.join("README.md"), "# demo\n\nmore\nchanged\n").unwrap();
        std::fs::create_dir_all(d.join("notes")).unwrap();
        std::fs::write(d.join("notes/todo.txt"), "todo\n").unwrap();
        std::fs::write(d.join("build.log"), "ignored\n").unwrap();
    }
    give(user, &t.root);
    repo
}

/// status, clean, stash -u, add -A: what the user's tools see of the
/// checkout; ends with everything committed, so `git status` is clean.
fn inspect_script() -> String {
    let cargo = "step cargo package --list --allow-dirty --offline\n";
    format!(
        "{STEP}\
         step git status --porcelain\n\
         step git status --porcelain --untracked-files=all --ignored\n\
         step git clean -nd\n\
         step git clean -ndx\n\
         step git diff --stat\n\
         {cargo}\
         step git stash -u\n\
         step git status --porcelain --untracked-files=all\n\
         step git ls-tree -r --name-only 'stash@{{0}}^3'\n\
         step git stash pop\n\
         step git status --porcelain\n\
         step git add -A\n\
         step git diff --cached --name-status\n\
         step git commit -qm everything\n\
         step git show --name-status --format=%s HEAD\n\
         step git ls-tree -r --name-only HEAD\n\
         step git status --porcelain\n"
    )
}

/// History work in the clone: commits, `rebase -i` scripted through
/// GIT_SEQUENCE_EDITOR, stash, checkout -b, a merge, an annotated tag, gc
/// and fsck.
const HISTORY: &str = "\
step git checkout -q -b feature
for i in 1 2 3; do echo \"change $i\" >> history.txt; git add history.txt; git commit -qm \"feature $i\"; echo \"commit rc=$?\"; done
step env GIT_SEQUENCE_EDITOR=\"sed -i -e 2s/^pick/squash/ -e 3s/^pick/fixup/\" GIT_EDITOR=true git rebase -q -i HEAD~3
step git log --format='%H %s' -3
step git show --name-status --format=%s HEAD
step git diff HEAD~1 --stat
echo wip >> README.md
step git stash
step git stash list
step git stash pop
step git commit -qam wip
step git checkout -q main
step git merge -q --no-ff -m merge feature
step git tag -a -m 'release two' v2
step git gc -q
step git fsck --no-progress
step git log --graph --oneline --all
step git status --porcelain
";

/// What works in a linked worktree without dcjail: commit, checkout -b,
/// stash -u, deleting a packed branch and a packed tag, gc and fsck.
const LINKED: &str = "\
echo new > wt-new.txt
step git add wt-new.txt
step git commit -qm 'in the worktree'
step git checkout -q -b wt-feature
echo more >> README.md
echo u > wt-untracked.txt
step git stash -u
step git stash list
step git stash pop
step git commit -qam more
step git add -A
step git commit -qm untracked
echo '== git branch -d side'
# git rewrites .git/config on every branch deletion; .git/config stays
# read-only, so inside the sandbox it says so (docs/filesystem.md: what git
# cannot persist) and deletes the branch all the same.
out=$(git branch -d side 2>&1); rc=$?
printf '%s\n' \"$out\" | grep -v -e '^error: could not write config file .*/\\.git/config: ' -e '^warning: update of config-file failed$'
echo rc=$rc
step git tag -d t1
step git gc -q
step git fsck --no-progress
step git for-each-ref --format='%(refname)'
step git status --porcelain
";

/// The message landlock refused with today names dcjail's own files, which
/// were never inside the roots: a refusal must give its true reason.
fn landlock_refusal_is_truthful(r: &Ran) -> Result<(), String> {
    if r.stderr.contains("policy file and plan card") {
        return Err(format!(
            "landlock refused with a reason that names nothing in the roots: {}",
            r.stderr.trim()
        ));
    }
    if !r.stderr.starts_with("dcjail: sandbox-unavailable: ") {
        return Err(format!("refusal is not one line: {}", r.stderr.trim()));
    }
    Ok(())
}

/// Runs `script` at `loc` without dcjail and under every backend, as `user`;
/// returns the differences found.
fn compare(
    workload: &str,
    user: User,
    loc: Loc,
    dirty: bool,
    script: &dyn Fn(User) -> String,
) -> Vec<String> {
    let mut failures = Vec::new();
    let t = Tree::new(&format!("git-{workload}-{}", loc.label()), user);
    let env = t.env();
    let tc = toolchain_for(user);
    let mut want: Option<(String, String)> = None;
    for mode in modes() {
        t.reset(user);
        let repo = build(&t, user, &env, dirty.then_some(loc));
        let dir = repo.at(loc).to_path_buf();
        let mut env = env.clone();
        env.set("PATH", format!("{}:{SYS_PATH}", tc.bin_dir.display()))
            .set("CARGO_HOME", tc.cargo_home.display().to_string());
        let r = sh(mode, user, &dir, &dir, &[], &env, &script(user));
        let what = what(
            &format!("{workload} in a {}", loc.label()),
            user,
            mode,
            want.is_none(),
        );
        if mode == Mode::Jail(Backend::Landlock) && r.code == Some(122) {
            eprintln!("NOTE: {what}: landlock refused: {}", r.stderr.trim());
            if loc == Loc::Linked {
                if let Err(e) = landlock_refusal_is_truthful(&r) {
                    failures.push(format!("{what}: {e}"));
                }
            } else {
                failures.push(format!(
                    "{what}: landlock refused a plain clone with protect_defaults = false: {}",
                    r.stderr.trim()
                ));
            }
            continue;
        }
        record(
            &format!("git-{workload}-{}", loc.label()),
            user,
            mode,
            r.secs,
        );
        let printed = format!("{}{}exit={:?}\n", r.stdout, r.stderr, r.code);
        let state = format!(
            "# clone\n{}# linked worktree\n{}",
            repo_state(&repo.clone, &env),
            repo_state(&repo.linked, &env)
        );
        match &want {
            None => {
                if r.code != Some(0)
                    || r.stdout
                        .lines()
                        .any(|l| l.starts_with("rc=") && l != "rc=0")
                {
                    failures.push(format!(
                        "{what}: a step failed without dcjail, the test is broken:\n{}",
                        r.stdout
                    ));
                }
                want = Some((printed, state))
            }
            Some((p, s)) => {
                if let Some(d) = diff(&format!("{what}: what it printed"), p, &printed) {
                    failures.push(d);
                }
                if let Some(d) = diff(&format!("{what}: the repositories afterwards"), s, &state) {
                    failures.push(d);
                }
            }
        }
        // The workloads end with everything committed: a later `git status`
        // on the host is clean.
        let st = git_any(&dir, &env, &["status", "--porcelain"]);
        if mode != Mode::Direct && st != "rc=0\n" {
            failures.push(format!(
                "{what}: `git status` after the run is not clean:\n{st}"
            ));
        }
    }
    failures
}

fn check(failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{} difference(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn status_clean_stash_add_and_cargo_package_see_exactly_the_users_files() {
    let mut failures = Vec::new();
    for user in users() {
        for loc in [Loc::Clone, Loc::Linked] {
            failures.extend(compare("inspect", user, loc, true, &|_| inspect_script()));
        }
    }
    print_timings("git-inspect");
    check(failures);
}

#[test]
fn history_work_in_a_clone_matches_a_run_without_dcjail() {
    let mut failures = Vec::new();
    for user in users() {
        failures.extend(compare("history", user, Loc::Clone, false, &|_| {
            format!("{STEP}{HISTORY}")
        }));
    }
    print_timings("git-history");
    check(failures);
}

#[test]
fn every_git_operation_of_a_linked_worktree_matches_a_run_without_dcjail() {
    let mut failures = Vec::new();
    for user in users() {
        failures.extend(compare("linked", user, Loc::Linked, false, &|_| {
            format!("{STEP}{LINKED}")
        }));
    }
    print_timings("git-linked");
    check(failures);
}

/// Nothing dcjail makes lands in /tmp or $TMPDIR, as the command sees them
/// or as the host sees them while the run lasts and after it; the
/// workspace's status seen from the host does not change either. $TMPDIR is
/// private to the test, so it is compared whole; /tmp is shared with the
/// machine, so only the names dcjail could make count, and only when they
/// come with the run every time.
#[test]
fn nothing_dcjail_makes_lands_in_tmp_or_tmpdir_or_the_checkout() {
    let mut failures = Vec::new();
    let names = dcjail_names();
    for user in users() {
        for loc in [Loc::Clone, Loc::Linked] {
            for b in backends() {
                let what = format!(
                    "a run in a {} as {} under {}",
                    loc.label(),
                    user.label(),
                    b.name()
                );
                let mut tmp_hits: Vec<Vec<String>> = Vec::new();
                let attempts = 3;
                for attempt in 0..attempts {
                    let t = Tree::new(&format!("git-tmp-{}-{}", loc.label(), b.name()), user);
                    let env = t.env();
                    let repo = build(&t, user, &env, Some(loc));
                    std::fs::write(t.tmpdir.join("mine.txt"), "user's own\n").unwrap();
                    give(user, &t.tmpdir);
                    let dir = repo.at(loc).to_path_buf();
                    let go = t.root.join("go");
                    let status = |d: &Path| {
                        git_any(
                            d,
                            &env,
                            &[
                                "status",
                                "--porcelain",
                                "--ignored",
                                "--untracked-files=all",
                            ],
                        )
                    };
                    let before = (
                        names_in(Path::new("/tmp")),
                        names_in(&t.tmpdir),
                        status(&dir),
                        listing(&dir, &[".git"]),
                    );
                    let script = format!(
                        "echo '## tmp'; ls -A /tmp; echo '## tmpdir'; ls -A \"$TMPDIR\"; echo READY; \
                         i=0; while [ ! -e '{go}' ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; echo DONE",
                        go = go.display()
                    );
                    let mut words = prefix(Mode::Jail(b), user, &dir, &[]);
                    words.extend(["sh".into(), "-c".into(), script.into()]);
                    let mut c = Command::new(&words[0]);
                    c.args(&words[1..])
                        .current_dir(&dir)
                        .stdin(Stdio::null())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped());
                    env.apply(&mut c);
                    let mut child = c.spawn().unwrap();
                    let mut out = BufReader::new(child.stdout.take().unwrap());
                    let mut inside = String::new();
                    loop {
                        let mut l = String::new();
                        if out.read_line(&mut l).unwrap_or(0) == 0 {
                            break;
                        }
                        if l.trim() == "READY" {
                            break;
                        }
                        inside.push_str(&l);
                    }
                    let during = (
                        names_in(Path::new("/tmp")),
                        names_in(&t.tmpdir),
                        status(&dir),
                        listing(&dir, &[".git"]),
                    );
                    std::fs::write(&go, "").unwrap();
                    let mut rest = String::new();
                    let _ = std::io::Read::read_to_string(&mut out, &mut rest);
                    let o = child.wait_with_output().unwrap();
                    let after = (
                        names_in(Path::new("/tmp")),
                        names_in(&t.tmpdir),
                        status(&dir),
                        listing(&dir, &[".git"]),
                    );
                    if b == Backend::Landlock && o.status.code() == Some(122) {
                        // The git tests report a landlock refusal; nothing ran here.
                        break;
                    }
                    if !rest.contains("DONE") {
                        failures.push(format!(
                            "{what}: the command did not run to its end: {}",
                            String::from_utf8_lossy(&o.stderr)
                        ));
                        break;
                    }
                    let (inside_tmp, inside_tmpdir) = inside
                        .split_once("## tmpdir\n")
                        .map(|(a, b)| {
                            (
                                a.trim_start_matches("## tmp\n")
                                    .lines()
                                    .map(String::from)
                                    .collect::<Vec<_>>(),
                                b.lines().map(String::from).collect::<Vec<_>>(),
                            )
                        })
                        .unwrap_or_default();
                    // $TMPDIR: exactly the user's file, inside, during and after.
                    let mine = vec!["mine.txt".to_string()];
                    for (when, got) in [
                        ("inside the sandbox", &inside_tmpdir),
                        ("on the host during the run", &during.1),
                        ("on the host after the run", &after.1),
                    ] {
                        if *got != mine {
                            failures.push(format!("{what}: $TMPDIR {when} holds {got:?}, not only the user's {mine:?}"));
                        }
                    }
                    // The checkout, seen from the host.
                    if during.2 != before.2 || during.3 != before.3 {
                        failures.push(format!(
                            "{what}: the host sees the checkout change while the run lasts:\n{}{}",
                            diff("git status", &before.2, &during.2).unwrap_or_default(),
                            diff("files", &before.3, &during.3).unwrap_or_default()
                        ));
                    }
                    if after.2 != before.2 || after.3 != before.3 {
                        failures.push(format!(
                            "{what}: the checkout changed after the run:\n{}",
                            diff("files", &before.3, &after.3).unwrap_or_default()
                        ));
                    }
                    // /tmp: dcjail's names that came with the run.
                    let mut hits: Vec<String> = Vec::new();
                    for n in &names {
                        let was = before.0.contains(n);
                        if !was
                            && (inside_tmp.contains(n)
                                || during.0.contains(n)
                                || after.0.contains(n))
                        {
                            let seen: Vec<&str> = [
                                ("inside", inside_tmp.contains(n)),
                                ("host-during", during.0.contains(n)),
                                ("host-after", after.0.contains(n)),
                            ]
                            .iter()
                            .filter(|x| x.1)
                            .map(|x| x.0)
                            .collect();
                            hits.push(format!("/tmp/{n} ({})", seen.join(", ")));
                        }
                    }
                    tmp_hits.push(hits);
                    let _ = attempt;
                    if tmp_hits.last().map(|h| h.is_empty()).unwrap_or(true) {
                        break;
                    }
                }
                if tmp_hits.len() == attempts && tmp_hits.iter().all(|h| !h.is_empty()) {
                    failures.push(format!(
                        "{what}: /tmp gains {} with every run",
                        tmp_hits[0].join(" ")
                    ));
                }
            }
        }
    }
    check(failures);
}
