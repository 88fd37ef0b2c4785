//! git's files, attacked end to end. Each attack plants, from inside the
//! command, something that makes the host's *next* git command run a
//! program of the attacker's (an fsmonitor or a hook that writes a marker
//! outside the workspace). The control runs it with `--no-sandbox` and
//! then the host's git, which must write the marker (so the case can fail);
//! under bwrap the planted file must be unchanged or absent, the host's git
//! must not write the marker, and git inside the sandbox must keep working
//! (status, add, commit). As root and as uid 65534.

#[path = "support/scratch.rs"]
mod scratch;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The dcjail the tests run: `scratch::exe` keeps it runnable wherever the
/// checkout lives (landlock refuses a dcjail inside a writable root).
use scratch::exe as bin;

struct World {
    dir: PathBuf,
    home: PathBuf,
    marker: PathBuf,
    payload: PathBuf,
    nobody: bool,
    /// A global config file dcjail and the host's git are given.
    global: Option<PathBuf>,
    /// Set up (as the test's user) and handed to `nobody`: from then on
    /// every command runs as that user.
    handed: bool,
    /// A tree under `/tmp` the case uses besides `dir` (handed and removed
    /// with it).
    tmp: Option<PathBuf>,
    /// Every git and dcjail run gets fixed commit dates.
    fixed_dates: bool,
}

impl World {
    fn new(tag: &str, nobody: bool) -> World {
        let dir = scratch::fresh(&format!(
            "gitprot-{tag}-{}-{}",
            u8::from(nobody),
            std::process::id()
        ));
        let home = dir.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let marker = dir.join("marker");
        let payload = dir.join("payload.sh");
        std::fs::write(
            &payload,
            format!(
                "#!/bin/sh\necho RAN-ON-THE-HOST >> '{}'\nexit 0\n",
                marker.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&payload, std::fs::Permissions::from_mode(0o755)).unwrap();
        World {
            dir,
            home,
            marker,
            payload,
            nobody,
            global: None,
            handed: false,
            tmp: None,
            fixed_dates: false,
        }
    }

    fn chown(&mut self) {
        self.handed = true;
        if self.nobody {
            let ok = Command::new("chown")
                .args(["-R", "65534:65534"])
                .arg(&self.dir)
                .args(&self.tmp)
                .status()
                .unwrap()
                .success();
            assert!(ok);
        }
    }

    /// A fresh directory under `/tmp` for this world, of the user that runs
    /// the command.
    fn in_tmp(&mut self, tag: &str) -> PathBuf {
        // SAFETY: geteuid never fails.
        let uid = if self.nobody {
            65534
        } else {
            // SAFETY: geteuid never fails.
            unsafe { libc::geteuid() }
        };
        let d = scratch::fresh_in_tmp(&format!("gitreach-{tag}-{}", std::process::id()), uid);
        self.tmp = Some(d.clone());
        d
    }

    fn remove(&self) {
        scratch::remove(&self.dir);
        if let Some(t) = &self.tmp {
            scratch::remove(t);
        }
    }

    fn as_user(&self, program: &str) -> Command {
        let mut c = scratch::user_command(self.nobody && self.handed, program);
        c.env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("TMPDIR")
            .env_remove("DCJAIL_POLICY")
            .env("GIT_AUTHOR_NAME", "T")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "T")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
            .env("PAYLOAD", &self.payload)
            .stdin(Stdio::null());
        if self.fixed_dates {
            c.env("GIT_AUTHOR_DATE", "2020-01-01T00:00:00Z")
                .env("GIT_COMMITTER_DATE", "2020-01-01T00:00:00Z");
        }
        match &self.global {
            Some(g) => c.env("GIT_CONFIG_GLOBAL", g),
            None => c.env_remove("GIT_CONFIG_GLOBAL"),
        };
        c
    }

    /// The host's git, as the same user.
    fn git(&self, dir: &Path, args: &[&str]) -> Output {
        self.as_user("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .unwrap()
    }

    fn git_ok(&self, dir: &Path, args: &[&str]) -> String {
        let o = self.git(dir, args);
        assert!(
            o.status.success(),
            "git {args:?} in {}: {}",
            dir.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn dcjail(&self, ws: &Path, sandboxed: bool, script: &str) -> Output {
        self.run(ws, sandboxed.then_some("bwrap"), &[], script)
    }

    /// dcjail in workspace-write on `backend` (`None`: `--no-sandbox`, the
    /// control), with `allow_write` roots besides the workspace.
    fn run(
        &self,
        ws: &Path,
        backend: Option<&str>,
        allow_write: &[PathBuf],
        script: &str,
    ) -> Output {
        let mut c = self.as_user(bin());
        match backend {
            Some(b) => c.args(["--backend", b, "--sandbox-mode", "workspace-write"]),
            None => c.arg("--no-sandbox"),
        };
        for w in allow_write {
            c.arg("--allow-write").arg(w);
        }
        c.arg("--workspace")
            .arg(ws)
            .args(["--", "sh", "-c", script])
            .current_dir(ws)
            .output()
            .unwrap()
    }

    fn repo(&self, name: &str) -> PathBuf {
        let r = self.dir.join(name);
        std::fs::create_dir_all(&r).unwrap();
        self.git_ok(&r, &["init", "-q", "-b", "main"]);
        std::fs::write(r.join("file.txt"), "ORIGINAL\n").unwrap();
        self.git_ok(&r, &["add", "file.txt"]);
        self.git_ok(&r, &["commit", "-q", "-m", "init"]);
        r
    }

    fn ran_on_host(&self) -> bool {
        self.marker.exists()
    }
}

/// The host's git command that runs the attacker's program: where, and
/// its arguments.
type Trigger = (PathBuf, Vec<&'static str>);

/// One attack: the host's set-up, the workspace, the file it goes for, the
/// command's script, and the trigger.
struct Attack {
    name: &'static str,
    /// Returns (workspace, attacked file, trigger).
    setup: fn(&mut World) -> (PathBuf, PathBuf, Trigger),
    script: &'static str,
}

/// A directory the command controls that looks like a git dir to git,
/// whose config runs the payload as fsmonitor: `$1` is where.
const EVIL_GITDIR: &str = r#"evil() { mkdir -p "$1/objects" "$1/refs/heads"; echo 'ref: refs/heads/main' > "$1/HEAD"; printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = %s\n' "$PAYLOAD" > "$1/config"; }"#;

const FSMONITOR_LINE: &str = r#"printf '[core]\n\tfsmonitor = %s\n' "$PAYLOAD""#;

fn attacks() -> Vec<Attack> {
    vec![
        Attack {
            name: "commondir of a main repository points at the command's config",
            setup: |w| {
                let r = w.repo("ws");
                (r.clone(), r.join(".git/commondir"), (r, vec!["status"]))
            },
            script: "evil \"$PWD/.evil\"; echo \"$PWD/.evil\" > .git/commondir",
        },
        Attack {
            name: "config.worktree with extensions.worktreeConfig on (sparse-checkout)",
            setup: |w| {
                let r = w.repo("ws");
                w.git_ok(&r, &["sparse-checkout", "init"]);
                assert!(r.join(".git/config.worktree").exists());
                (r.clone(), r.join(".git/config.worktree"), (r, vec!["status"]))
            },
            script: "FS >> .git/config.worktree",
        },
        Attack {
            name: "config.worktree created while extensions.worktreeConfig is on",
            setup: |w| {
                let r = w.repo("ws");
                w.git_ok(&r, &["config", "extensions.worktreeConfig", "true"]);
                (r.clone(), r.join(".git/config.worktree"), (r, vec!["status"]))
            },
            script: "FS > .git/config.worktree",
        },
        Attack {
            name: "a submodule's config (git status recurses into it)",
            setup: |w| {
                let lib = w.repo("lib");
                let r = w.repo("ws");
                w.git_ok(
                    &r,
                    &["-c", "protocol.file.allow=always", "submodule", "add", "-q", lib.to_str().unwrap(), "sub"],
                );
                w.git_ok(&r, &["commit", "-q", "-m", "sub"]);
                (r.clone(), r.join(".git/modules/sub/config"), (r, vec!["status"]))
            },
            script: "FS >> .git/modules/sub/config",
        },
        Attack {
            name: "a submodule's hooks",
            setup: |w| {
                let lib = w.repo("lib");
                let r = w.repo("ws");
                w.git_ok(
                    &r,
                    &["-c", "protocol.file.allow=always", "submodule", "add", "-q", lib.to_str().unwrap(), "sub"],
                );
                w.git_ok(&r, &["commit", "-q", "-m", "sub"]);
                let sub = r.join("sub");
                (
                    r.clone(),
                    r.join(".git/modules/sub/hooks/pre-commit"),
                    (sub, vec!["commit", "-q", "--allow-empty", "-m", "t"]),
                )
            },
            script: "printf '#!/bin/sh\\n\"%s\"\\n' \"$PAYLOAD\" > .git/modules/sub/hooks/pre-commit; chmod +x .git/modules/sub/hooks/pre-commit",
        },
        Attack {
            name: "a submodule checkout's .git file points at the command's git dir",
            setup: |w| {
                let lib = w.repo("lib");
                let r = w.repo("ws");
                w.git_ok(
                    &r,
                    &["-c", "protocol.file.allow=always", "submodule", "add", "-q", lib.to_str().unwrap(), "sub"],
                );
                w.git_ok(&r, &["commit", "-q", "-m", "sub"]);
                (r.clone(), r.join("sub/.git"), (r, vec!["status"]))
            },
            script: "evil \"$PWD/.evil\"; echo \"gitdir: $PWD/.evil\" > sub/.git",
        },
        Attack {
            name: "a linked worktree's commondir, from the main checkout",
            setup: |w| {
                let r = w.repo("ws");
                let wt = w.dir.join("linked");
                w.git_ok(&r, &["worktree", "add", "-q", "-b", "lb", wt.to_str().unwrap()]);
                (r.clone(), r.join(".git/worktrees/linked/commondir"), (wt, vec!["status"]))
            },
            script: "evil \"$PWD/.evil\"; echo \"$PWD/.evil\" > .git/worktrees/linked/commondir",
        },
        Attack {
            name: "a linked worktree's gitdir, from the main checkout (prune then drops it)",
            setup: |w| {
                let r = w.repo("ws");
                let wt = w.dir.join("linked");
                w.git_ok(&r, &["worktree", "add", "-q", "-b", "lb", wt.to_str().unwrap()]);
                // The trigger: prune, then git in the linked worktree; the
                // payload runs from the fsmonitor the pruned worktree falls
                // back to (the enclosing scratch repository has none), so
                // this case checks the file and that the worktree survives.
                (r.clone(), r.join(".git/worktrees/linked/gitdir"), (r, vec!["worktree", "prune"]))
            },
            script: "echo /nonexistent/.git > .git/worktrees/linked/gitdir",
        },
        Attack {
            name: "the .git file of a linked worktree, from inside it",
            setup: |w| {
                let r = w.repo("main");
                let wt = w.dir.join("ws");
                w.git_ok(&r, &["worktree", "add", "-q", "-b", "lb", wt.to_str().unwrap()]);
                (wt.clone(), wt.join(".git"), (wt, vec!["status"]))
            },
            script: "evil \"$PWD/.evil\"; echo \"gitdir: $PWD/.evil\" > .git",
        },
        Attack {
            name: "core.hooksPath = .husky: a hook in the workspace",
            setup: |w| {
                let r = w.repo("ws");
                w.git_ok(&r, &["config", "core.hooksPath", ".husky"]);
                (r.clone(), r.join(".husky"), (r, vec!["commit", "-q", "--allow-empty", "-m", "t"]))
            },
            script: "mkdir -p .husky; printf '#!/bin/sh\\n\"%s\"\\n' \"$PAYLOAD\" > .husky/pre-commit; chmod +x .husky/pre-commit",
        },
        Attack {
            name: "core.hooksPath = .husky/_ (husky 9): the user hook it runs",
            setup: |w| {
                let r = w.repo("ws");
                std::fs::create_dir_all(r.join(".husky/_")).unwrap();
                std::fs::write(
                    r.join(".husky/_/pre-commit"),
                    "#!/bin/sh\n[ -f .husky/pre-commit ] && sh .husky/pre-commit\nexit 0\n",
                )
                .unwrap();
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(
                    r.join(".husky/_/pre-commit"),
                    std::fs::Permissions::from_mode(0o755),
                )
                .unwrap();
                w.git_ok(&r, &["config", "core.hooksPath", ".husky/_"]);
                (
                    r.clone(),
                    r.join(".husky/pre-commit"),
                    (r, vec!["commit", "-q", "--allow-empty", "-m", "t"]),
                )
            },
            script: "printf '\"%s\"\\n' \"$PAYLOAD\" > .husky/pre-commit",
        },
        Attack {
            name: "an include.path target inside the workspace",
            setup: |w| {
                let r = w.repo("ws");
                w.git_ok(&r, &["config", "include.path", "../shared.gitconfig"]);
                (r.clone(), r.join("shared.gitconfig"), (r, vec!["status"]))
            },
            script: "FS > shared.gitconfig",
        },
        Attack {
            name: "a program a setting names inside the workspace (core.fsmonitor = tools/fsmon)",
            setup: |w| {
                let r = w.repo("ws");
                std::fs::create_dir_all(r.join("tools")).unwrap();
                std::fs::write(r.join("tools/fsmon"), "#!/bin/sh\nexit 0\n").unwrap();
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(r.join("tools/fsmon"), std::fs::Permissions::from_mode(0o755))
                    .unwrap();
                w.git_ok(&r, &["add", "tools/fsmon"]);
                w.git_ok(&r, &["commit", "-q", "-m", "tools"]);
                w.git_ok(&r, &["config", "core.fsmonitor", "tools/fsmon"]);
                (r.clone(), r.join("tools/fsmon"), (r, vec!["status"]))
            },
            script: "printf '#!/bin/sh\\n\"%s\"\\n' \"$PAYLOAD\" > tools/fsmon",
        },
        Attack {
            name: "the global config includes a file inside the workspace",
            setup: |w| {
                let r = w.repo("ws");
                let g = w.dir.join("global.gitconfig");
                std::fs::write(&g, format!("[include]\n\tpath = {}/team.gitconfig\n", r.display())).unwrap();
                w.global = Some(g);
                (r.clone(), r.join("team.gitconfig"), (r, vec!["status"]))
            },
            script: "FS > team.gitconfig",
        },
    ]
}

fn snapshot(p: &Path) -> Option<(Vec<u8>, bool, Vec<String>)> {
    let m = std::fs::symlink_metadata(p).ok()?;
    if m.is_dir() {
        let mut names: Vec<String> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        return Some((Vec::new(), true, names));
    }
    Some((std::fs::read(p).unwrap_or_default(), false, Vec::new()))
}

const GIT_WORKS: &str =
    "git status >/dev/null && echo more >> file.txt && git add -A && git commit -q -m inside && echo GIT-WORKS";

#[test]
fn git_attacks_reach_the_host_without_the_sandbox_and_not_with_it() {
    let mut failures = Vec::new();
    for &nobody in scratch::users() {
        for (i, a) in attacks().iter().enumerate() {
            for sandboxed in [false, true] {
                let mut w = World::new(&format!("a{i}-{sandboxed}"), nobody);
                let (ws, target, (tdir, targs)) = (a.setup)(&mut w);
                w.chown();
                let before = snapshot(&target);
                let script = format!(
                    "{EVIL_GITDIR}\n{} 2>/dev/null\necho ATTACK-RAN\n{GIT_WORKS}\n",
                    a.script.replace("FS", FSMONITOR_LINE)
                );
                let o = w.dcjail(&ws, sandboxed, &script);
                let out = String::from_utf8_lossy(&o.stdout).into_owned();
                let err = String::from_utf8_lossy(&o.stderr).into_owned();
                let who = if nobody { "uid 65534" } else { "caller" };
                let case = format!("{who}, {}, sandboxed={sandboxed}", a.name);
                if !out.contains("ATTACK-RAN") {
                    failures.push(format!("{case}: the command did not run: {err}"));
                    scratch::remove(&w.dir);
                    continue;
                }
                // The host's next git command.
                let _ = w.git(&tdir, &targs);
                let after = snapshot(&target);
                let changed = before != after;
                // The gitdir case's effect: prune drops the worktree's admin dir.
                let pruned =
                    a.name.contains("gitdir") && !ws.join(".git/worktrees/linked").exists();
                let escaped = w.ran_on_host() || pruned;
                if sandboxed {
                    if changed {
                        failures.push(format!(
                            "{case}: {} was changed or created",
                            target.display()
                        ));
                    }
                    if escaped {
                        failures.push(format!("{case}: the host's git ran the attacker's program or lost the worktree"));
                    }
                    if !out.contains("GIT-WORKS") {
                        failures.push(format!("{case}: git stopped working inside: {err}"));
                    }
                } else if !changed || !escaped {
                    failures.push(format!(
                        "{case}: the attack did not work even without the sandbox (changed={changed}, escaped={escaped}): the case cannot fail; {err}"
                    ));
                }
                scratch::remove(&w.dir);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `git init` in the workspace root: a repository the command creates
/// would carry its configuration, so `.git` cannot be created there.
#[test]
fn a_workspace_without_git_cannot_get_a_repository_of_the_commands() {
    for &nobody in scratch::users() {
        for sandboxed in [false, true] {
            let mut w = World::new(&format!("init-{sandboxed}"), nobody);
            let ws = w.dir.join("ws");
            std::fs::create_dir_all(&ws).unwrap();
            w.chown();
            let o = w.dcjail(
                &ws,
                sandboxed,
                "git init -q 2>/dev/null; git config core.fsmonitor \"$PAYLOAD\" 2>/dev/null; echo RAN",
            );
            assert!(String::from_utf8_lossy(&o.stdout).contains("RAN"));
            let _ = w.git(&ws, &["status"]);
            if sandboxed {
                assert!(!ws.join(".git").exists(), "a .git was created");
                assert!(!w.ran_on_host());
            } else {
                assert!(w.ran_on_host(), "the control did not escape");
            }
            scratch::remove(&w.dir);
        }
    }
}

/// (workspace, allow_write roots, attacked file, trigger).
type Reached = (PathBuf, Vec<PathBuf>, PathBuf, Trigger);

/// A repository the run can reach but did not make: where it is, the
/// roots besides the workspace, the attacked file and the host's trigger.
struct Reach {
    name: &'static str,
    /// Returns (workspace, allow_write roots, attacked file, trigger).
    setup: fn(&mut World) -> Reached,
    script: &'static str,
}

const HOOK: &str = r#"hook() { printf '#!/bin/sh\n"%s"\n' "$PAYLOAD" > "$1"; chmod +x "$1"; }"#;

/// A repository of the user's at `at` (nested in another, or anywhere).
fn nested(w: &World, at: &Path) {
    std::fs::create_dir_all(at).unwrap();
    w.git_ok(at, &["init", "-q", "-b", "main"]);
    w.git_ok(at, &["commit", "-q", "--allow-empty", "-m", "nested"]);
}

fn reach_attacks() -> Vec<Reach> {
    vec![
        Reach {
            name: "a repository nested in the workspace: its config",
            setup: |w| {
                let r = w.repo("ws");
                let lib = r.join("vendor/lib");
                nested(w, &lib);
                (r, vec![], lib.join(".git/config"), (lib, vec!["status"]))
            },
            script: "git -C vendor/lib config core.fsmonitor \"$PAYLOAD\"",
        },
        Reach {
            name: "a repository nested deep in the workspace: its hooks",
            setup: |w| {
                let r = w.repo("ws");
                let lib = r.join("a/b/c/lib");
                nested(w, &lib);
                let t = (
                    lib.clone(),
                    vec!["commit", "-q", "--allow-empty", "-m", "t"],
                );
                (r, vec![], lib.join(".git/hooks/pre-commit"), t)
            },
            script: "hook a/b/c/lib/.git/hooks/pre-commit",
        },
        Reach {
            name: "$HOME as the workspace: a hook in ~/other/.git/hooks",
            setup: |w| {
                let home = w.home.clone();
                let other = home.join("other");
                nested(w, &other);
                let t = (
                    other.clone(),
                    vec!["commit", "-q", "--allow-empty", "-m", "t"],
                );
                // The home directory is held read-only by class: the
                // repository is named with --allow-write, where git keeps
                // working and its hooks stay protected.
                (
                    home,
                    vec![other.clone()],
                    other.join(".git/hooks/pre-commit"),
                    t,
                )
            },
            script: "hook other/.git/hooks/pre-commit; cd other",
        },
        Reach {
            name: "a bare repository given with --allow-write: post-receive on the next push",
            setup: |w| {
                let r = w.repo("ws");
                let bare = w.dir.join("bare.git");
                w.git_ok(&w.dir, &["init", "-q", "--bare", "-b", "main", "bare.git"]);
                w.git_ok(&r, &["remote", "add", "origin", bare.to_str().unwrap()]);
                let t = (r.clone(), vec!["push", "-q", "origin", "main:later"]);
                (r, vec![bare.clone()], bare.join("hooks/post-receive"), t)
            },
            script: "hook ../bare.git/hooks/post-receive && git push -q origin main",
        },
        Reach {
            name: "a repository under /tmp (a writable root of every workspace-write run)",
            setup: |w| {
                let r = w.repo("ws");
                let t = w.in_tmp("repo").join("scratch");
                nested(w, &t);
                std::fs::write(r.join("tmp-repo"), t.to_str().unwrap()).unwrap();
                (r, vec![], t.join(".git/config"), (t, vec!["status"]))
            },
            script: "git -C \"$(cat tmp-repo)\" config core.fsmonitor \"$PAYLOAD\"",
        },
    ]
}

/// Every repository the run can reach, nested at any depth, a bare one
/// given as a root, one under /tmp: the control shows the host's next git
/// running the planted program; bwrap and auto run the command and the
/// host's git runs nothing of it; landlock refuses (it cannot keep a path
/// inside a writable root read-only) and nothing runs or changes.
#[test]
fn every_repository_the_run_can_reach_is_protected_like_the_workspaces() {
    run_attacks("r", &reach_attacks());
}

/// Each attack of `list`: the control shows the host's next git running
/// the planted program; bwrap and auto run the command and the host's git
/// runs nothing of it, and git keeps working inside; landlock refuses.
fn run_attacks(tag: &str, list: &[Reach]) {
    let mut failures = Vec::new();
    for &nobody in scratch::users() {
        for (i, a) in list.iter().enumerate() {
            for backend in [None, Some("bwrap"), Some("auto"), Some("landlock")] {
                let mut w = World::new(&format!("{tag}{i}-{}", backend.unwrap_or("none")), nobody);
                let (ws, roots, target, (tdir, targs)) = (a.setup)(&mut w);
                w.chown();
                let before = snapshot(&target);
                let script = format!(
                    "{HOOK}\n{} 2>/dev/null\necho ATTACK-RAN\n{GIT_WORKS}\n",
                    a.script
                );
                let o = w.run(&ws, backend, &roots, &script);
                let out = String::from_utf8_lossy(&o.stdout).into_owned();
                let err = String::from_utf8_lossy(&o.stderr).into_owned();
                let who = if nobody { "uid 65534" } else { "caller" };
                let case = format!("{who}, {}, {}", a.name, backend.unwrap_or("no sandbox"));
                let refused = backend == Some("landlock");
                if refused {
                    if o.status.code() != Some(122)
                        || !err.contains("landlock")
                        || out.contains("ATTACK-RAN")
                    {
                        failures.push(format!(
                            "{case}: expected landlock's refusal (122): {}",
                            scratch::text(&o)
                        ));
                    }
                } else if !out.contains("ATTACK-RAN") {
                    failures.push(format!("{case}: the command did not run: {err}"));
                    w.remove();
                    continue;
                }
                let _ = w.git(&tdir, &targs);
                let changed = before != snapshot(&target);
                let escaped = w.ran_on_host();
                if backend.is_none() {
                    if !changed || !escaped {
                        failures.push(format!(
                            "{case}: the attack did not work without the sandbox (changed={changed}, escaped={escaped}): the case cannot fail; {err}"
                        ));
                    }
                } else {
                    if changed {
                        failures.push(format!(
                            "{case}: {} was changed or created",
                            target.display()
                        ));
                    }
                    if escaped {
                        failures.push(format!("{case}: the host's git ran the attacker's program"));
                    }
                    if !refused && !out.contains("GIT-WORKS") {
                        failures.push(format!("{case}: git stopped working inside: {err}"));
                    }
                }
                w.remove();
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A gitlink to a repository of the command's: the host's next `git
/// status` in the workspace recurses into it and runs its fsmonitor.
const GITLINK: &str =
    r#"link() { git update-index --add --cacheinfo "160000,$(git -C "$1" rev-parse HEAD),$1"; }"#;

/// A repository made during the run, inside the workspace's repository:
/// with a gitlink in the workspace's index (no `.gitmodules` needed), the
/// user's next `git status` there enters it.
fn made_attacks() -> Vec<Reach> {
    fn status(w: &mut World) -> Reached {
        let r = w.repo("ws");
        (r.clone(), vec![], r.join("sub/.git"), (r, vec!["status"]))
    }
    vec![
        Reach {
            name: "git init of a nested repository with a gitlink to it",
            setup: status,
            script: "git init -q sub && git -C sub commit -q --allow-empty -m x && git -C sub config core.fsmonitor \"$PAYLOAD\" && link sub",
        },
        Reach {
            name: "its git dir hidden in .git/modules, a .git file pointing there",
            setup: status,
            script: "git init -q --bare .git/modules/x && git -C .git/modules/x config core.fsmonitor \"$PAYLOAD\" && git -C .git/modules/x config core.bare false && mkdir sub && echo 'gitdir: ../.git/modules/x' > sub/.git && git -C sub commit -q --allow-empty -m x && link sub",
        },
        Reach {
            name: "made under /tmp, then moved into the workspace",
            setup: |w| {
                let t = w.in_tmp("made");
                let r = w.repo("ws");
                std::fs::write(r.join("tmp-dir"), t.to_str().unwrap()).unwrap();
                (r.clone(), vec![], r.join("sub/.git"), (r, vec!["status"]))
            },
            script: "T=$(cat tmp-dir)/r; git init -q \"$T\" && git -C \"$T\" commit -q --allow-empty -m x && git -C \"$T\" config core.fsmonitor \"$PAYLOAD\" && mv \"$T\" sub && link sub",
        },
        Reach {
            name: "inside a nested repository of the user's, a gitlink in its index",
            setup: |w| {
                let r = w.repo("ws");
                let lib = r.join("vendor/lib");
                nested(w, &lib);
                (r, vec![], lib.join("sub/.git"), (lib, vec!["status"]))
            },
            script: "cd vendor/lib && git init -q sub && git -C sub commit -q --allow-empty -m x && git -C sub config core.fsmonitor \"$PAYLOAD\" && link sub; cd ../..",
        },
    ]
}

/// A gitlink or a nested repository made during the run cannot get a later
/// `git` in the workspace to run anything: no `.git` can be made inside a
/// repository's worktree found at launch, nor moved in from outside.
#[test]
fn a_repository_made_during_the_run_cannot_run_anything_through_a_gitlink() {
    let with_link: Vec<Reach> = made_attacks()
        .into_iter()
        .map(|mut a| {
            a.script = Box::leak(format!("{GITLINK}\n{}", a.script).into_boxed_str());
            a
        })
        .collect();
    run_attacks("m", &with_link);
}

/// What the user's own nested repositories look like after a run: every
/// repository's history (subjects), tree, status and the gitlinks.
/// Commit dates are fixed, so the same work gives the same object names
/// with and without dcjail.
fn repos_summary(w: &World, ws: &Path, tmpw: &Path, bare: &Path) -> String {
    let mut s = String::new();
    for (name, d) in [
        ("ws", ws.to_path_buf()),
        ("cloned", tmpw.join("cloned")),
        ("vendor/dep", ws.join("vendor/dep")),
        ("fresh", tmpw.join("fresh")),
        ("sub", ws.join("sub")),
        ("bare", bare.to_path_buf()),
    ] {
        s += &format!("== {name}\n");
        s += &w.git_ok(&d, &["log", "--format=%H %s", "main"]);
        s += &w.git_ok(&d, &["rev-parse", "main^{tree}"]);
        if name != "bare" {
            s += &w.git_ok(&d, &["status", "--porcelain"]);
            s += &w.git_ok(&d, &["ls-files", "-s"]);
        }
    }
    s
}

const REAL_WORK: &str = r#"set -e
git clone -q -b main "$SRC" "$TMPW/cloned"
echo c > "$TMPW/cloned/c.txt" && git -C "$TMPW/cloned" add c.txt && git -C "$TMPW/cloned" commit -q -m in-clone
echo x > vendor/dep/new.txt && git -C vendor/dep add new.txt && git -C vendor/dep commit -q -m in-nested
git init -q -b main "$TMPW/fresh" && echo f > "$TMPW/fresh/f" && git -C "$TMPW/fresh" add f && git -C "$TMPW/fresh" commit -q -m in-fresh
git -C sub pull -q --ff-only "$SRC" main
echo s > sub/s.txt && git -C sub add s.txt && git -C sub commit -q -m in-sub
git add sub && git commit -q -m bump-sub
git push -q "$BARE" main
echo REALWORK-DONE
"#;

/// The user's own nested repositories keep working: a clone and a `git
/// init` under /tmp (inside a repository's worktree no `.git` can be made:
/// see above), commits in an existing nested repository, a pull and a
/// commit inside a submodule, and a push into a bare
/// repository given as a root — each leaving exactly what the same work
/// leaves without dcjail. (`git submodule add`, `init` and an `update`
/// that checks out write the workspace's `.git/config` or the module's
/// config, both protected before the walk: docs/filesystem.md lists them.)
#[test]
fn nested_repositories_and_submodules_work_exactly_as_without_dcjail() {
    let mut failures = Vec::new();
    for &nobody in scratch::users() {
        let mut control = None;
        for backend in [None, Some("bwrap"), Some("auto")] {
            // One path for every run (each world is removed before the
            // next): `.gitmodules` records the source's absolute path.
            let mut w = World::new("rw", nobody);
            // Fixed dates: the same work gives the same object names.
            w.fixed_dates = true;
            let src = w.repo("src");
            let ws = w.repo("ws");
            w.git_ok(
                &ws,
                &[
                    "-c",
                    "protocol.file.allow=always",
                    "submodule",
                    "add",
                    "-q",
                    "-b",
                    "main",
                    src.to_str().unwrap(),
                    "sub",
                ],
            );
            w.git_ok(&ws, &["commit", "-q", "-m", "sub"]);
            std::fs::write(src.join("file.txt"), "NEWER\n").unwrap();
            w.git_ok(&src, &["commit", "-q", "-am", "newer"]);
            nested(&w, &ws.join("vendor/dep"));
            w.git_ok(&w.dir, &["init", "-q", "--bare", "-b", "main", "bare.git"]);
            let bare = w.dir.join("bare.git");
            let tmpw = w.in_tmp("rw");
            w.chown();
            let script = format!(
                "SRC='{}' BARE='{}' TMPW='{}'\n{REAL_WORK}",
                src.display(),
                bare.display(),
                tmpw.display()
            );
            let o = w.run(&ws, backend, std::slice::from_ref(&bare), &script);
            let who = if nobody { "uid 65534" } else { "caller" };
            let case = format!("{who}, {}", backend.unwrap_or("no sandbox"));
            if !String::from_utf8_lossy(&o.stdout).contains("REALWORK-DONE") {
                failures.push(format!("{case}: the work failed: {}", scratch::text(&o)));
                w.remove();
                continue;
            }
            let summary = repos_summary(&w, &ws, &tmpw, &bare);
            match &control {
                None => control = Some(summary),
                Some(c) if *c != summary => failures.push(format!(
                    "{case}: differs from the run without dcjail:\n--- without\n{c}\n--- with\n{summary}"
                )),
                Some(_) => {}
            }
            w.remove();
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A clone inside the workspace's repository is refused, cleanly (nothing
/// left), and the run's report says why and what to do instead.
#[test]
fn a_clone_inside_the_repository_is_refused_and_the_report_says_why() {
    for &nobody in scratch::users() {
        let mut w = World::new("clone-in", nobody);
        let src = w.repo("src");
        let ws = w.repo("ws");
        let report = w.dir.join("report.json");
        w.chown();
        let mut c = w.as_user(bin());
        c.args([
            "--backend",
            "bwrap",
            "--sandbox-mode",
            "workspace-write",
            "--report",
        ])
        .arg(&report)
        .arg("--workspace")
        .arg(&ws)
        .args(["--", "git", "clone", "-q"])
        .arg(&src)
        .arg("vendor/src")
        .current_dir(&ws);
        let o = scratch::output_within(c, 120);
        assert_ne!(o.status.code(), Some(0), "{}", scratch::text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("vendor/src/.git"),
            "{}",
            scratch::text(&o)
        );
        assert!(
            !ws.join("vendor/src").exists(),
            "the failed clone left files"
        );
        let r: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        let d = &r["denials"][0];
        assert_eq!(d["rule"], "protected", "{r}");
        assert!(
            d["why_not"]
                .as_str()
                .unwrap_or("")
                .contains("no `.git` can be made inside the worktree"),
            "{r}"
        );
        w.remove();
    }
}

/// Repositories under /tmp are found and held at launch, and other
/// processes make and remove theirs there all the time: one removed
/// between bwrap's look and its mount must not make the launch fail. Under
/// a bounded churn of repositories, every launch runs its command (before
/// the retry, about one in ten failed here).
#[test]
fn launches_hold_while_another_process_makes_and_removes_repositories_under_tmp() {
    let w = World::new("churn", false);
    let ws = w.repo("ws");
    // SAFETY: geteuid never fails.
    let churn_dir = scratch::fresh_in_tmp(&format!("churn-{}", std::process::id()), unsafe {
        libc::geteuid()
    });
    let script = format!(
        "for i in $(seq 1 4000); do git init -q '{d}/r'$((i%5)) 2>/dev/null; rm -rf '{d}/r'$(((i+2)%5)); done",
        d = churn_dir.display()
    );
    // Its own process group: the kill below reaches the git it runs too.
    let mut churn = {
        use std::os::unix::process::CommandExt;
        Command::new("sh")
            .args(["-c", &script])
            .process_group(0)
            .spawn()
            .unwrap()
    };
    let mut failed = Vec::new();
    for _ in 0..40 {
        let o = w.run(&ws, Some("bwrap"), &[], "echo RAN");
        if !String::from_utf8_lossy(&o.stdout).contains("RAN") {
            failed.push(scratch::text(&o));
        }
    }
    let pgid = i32::try_from(churn.id()).unwrap();
    // SAFETY: a signal to the process group this test made.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let _ = churn.wait();
    scratch::remove(&churn_dir);
    w.remove();
    assert!(
        failed.is_empty(),
        "{} of 40 launches failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}
