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
fn bin() -> &'static str {
    scratch::exe()
}

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
        }
    }

    fn chown(&mut self) {
        self.handed = true;
        if self.nobody {
            let ok = Command::new("chown")
                .args(["-R", "65534:65534"])
                .arg(&self.dir)
                .status()
                .unwrap()
                .success();
            assert!(ok);
        }
    }

    fn as_user(&self, program: &str) -> Command {
        let mut c = if self.nobody && self.handed {
            let mut c = Command::new("setpriv");
            c.args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--",
                program,
            ]);
            c
        } else {
            Command::new(program)
        };
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
        let mut c = self.as_user(bin());
        if sandboxed {
            c.args(["--backend", "bwrap", "--sandbox-mode", "workspace-write"]);
        } else {
            c.arg("--no-sandbox");
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

fn users() -> Vec<bool> {
    // SAFETY: geteuid never fails.
    if unsafe { libc::geteuid() } == 0 {
        vec![false, true]
    } else {
        vec![false]
    }
}

const GIT_WORKS: &str =
    "git status >/dev/null && echo more >> file.txt && git add -A && git commit -q -m inside && echo GIT-WORKS";

#[test]
fn git_attacks_reach_the_host_without_the_sandbox_and_not_with_it() {
    let mut failures = Vec::new();
    for nobody in users() {
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
    for nobody in users() {
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
