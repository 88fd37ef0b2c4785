//! dcjail inside dcjail (a subagent's dcjail inside its parent's), two and
//! three levels, the outer one bwrap or landlock, as root and as uid 65534.
//! The outer's seccomp filter refuses new namespaces, so the inner ones
//! run under landlock; where the outer sandbox already holds what the inner
//! policy protects, the inner relies on it (checked at launch, said under
//! `layers.relied_on_outer`), and where it does not, the inner refuses
//! naming the path.
//!
//! Each attack runs once without any sandbox (the control: the effect
//! happens), then nested, where the command runs and the effect does not
//! happen: a write outside the inner's roots but inside the outer's, a
//! write to a protected file, the creation of a missing protected name.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use scratch::exe as bin;
use scratch::text;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A scratch root with the workspace `ws` (a git repository) and `ws/sub`,
/// owned by 65534 for the unprivileged runs; HOME is the root.
struct Tree {
    _dir: scratch::Dir,
    root: PathBuf,
    ws: PathBuf,
}

impl Tree {
    fn new(tag: &str, nobody: bool) -> Tree {
        let dir = scratch::Dir::new(&format!("nested-{tag}-{nobody}"));
        let root = dir.path().to_path_buf();
        let ws = root.join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        let ok = Command::new("git")
            .args(["init", "-q"])
            .current_dir(&ws)
            .status()
            .unwrap()
            .success();
        assert!(ok);
        if nobody {
            let ok = Command::new("chown")
                .args(["-R", "65534:65534"])
                .arg(&ws)
                .status()
                .unwrap()
                .success();
            assert!(ok);
        }
        Tree {
            _dir: dir,
            root,
            ws,
        }
    }
}

/// The outer dcjail's options (its workspace is the cwd's repository).
const BWRAP: &[&str] = &["--backend", "bwrap", "--sandbox-mode", "workspace-write"];
const LANDLOCK: &[&str] = &[
    "--backend",
    "landlock",
    "--sandbox-mode",
    "workspace-write",
    "--no-protect-defaults",
];
const WW: &[&str] = &["--sandbox-mode", "workspace-write"];
const RO: &[&str] = &["--sandbox-mode", "read-only"];

/// `cmd` in `cwd` through one dcjail per entry of `levels` (outermost
/// first), as root or 65534, HOME the tree's root.
fn nest(t: &Tree, cwd: &Path, nobody: bool, levels: &[&[&str]], cmd: &[&str]) -> Output {
    let mut argv: Vec<&str> = Vec::new();
    for l in levels {
        argv.push(bin());
        argv.extend_from_slice(l);
        argv.push("--");
    }
    argv.extend_from_slice(cmd);
    if nobody {
        argv.splice(
            0..0,
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--",
            ],
        );
    }
    // A /tmp of its own (a writable root of every workspace-write run):
    // the shared one's repositories come and go while other tests run, so
    // the outer and the inner dcjail would protect different paths.
    let mut c = Command::new("unshare");
    c.args(["--mount", "--propagation", "private", "--", "sh", "-c"])
        .arg("mount -t tmpfs -o mode=1777 tmpfs /tmp && exec \"$@\"")
        .arg("sh")
        .args(&argv)
        .current_dir(cwd)
        .env_remove("DCJAIL_POLICY")
        .env("HOME", &t.root)
        .stdin(std::process::Stdio::null());
    scratch::output_within(c, 60)
}

fn sh(script: &str) -> [&str; 3] {
    ["sh", "-c", script]
}

fn ready() -> bool {
    scratch::root("give each run a private /tmp (a mount namespace)")
        && scratch::bwrap_works()
        && scratch::need("git")
        && scratch::need("setpriv")
        && scratch::need("unshare")
        && scratch::need("mount")
}

/// The one refusal line of a 122.
fn refused(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(122), "{}", text(o));
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn inside_bwrap_an_inner_bwrap_is_refused_naming_the_outer_dcjail_not_a_container() {
    if !ready() {
        return;
    }
    for &nobody in scratch::users() {
        let t = Tree::new("words", nobody);
        let o = nest(
            &t,
            &t.ws,
            nobody,
            &[BWRAP, &["--backend", "bwrap"]],
            &["true"],
        );
        assert_eq!(
            refused(&o),
            "dcjail: sandbox-unavailable: cannot enforce this policy here; bwrap: inside another \
             dcjail sandbox, whose seccomp filter refuses new namespaces (the outer backend: \
             bwrap): unshare with CLONE_NEWUSER failed with EPERM; fix: use --backend landlock, \
             which needs no namespace (auto chooses it here), or run this dcjail outside the \
             other one\n"
        );
        let o = nest(&t, &t.ws, nobody, &[BWRAP], &[bin(), "doctor"]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains(
                "nested (info): running inside another dcjail sandbox (backend bwrap): its \
                 seccomp filter refuses new namespaces and holds the seccomp listener"
            ),
            "{}",
            text(&o)
        );
        assert!(!out.contains("--security-opt"), "{out}");
    }
}

#[test]
fn inside_bwrap_workspace_write_runs_two_and_three_levels_relying_on_the_outer() {
    if !ready() {
        return;
    }
    for &nobody in scratch::users() {
        let t = Tree::new("ww", nobody);
        for levels in [&[BWRAP, WW][..], &[BWRAP, WW, WW][..]] {
            let _ = std::fs::remove_file(t.ws.join("made.txt"));
            let o = nest(&t, &t.ws, nobody, levels, &sh("echo made > made.txt"));
            assert!(o.status.success(), "{}", text(&o));
            assert_eq!(
                std::fs::read_to_string(t.ws.join("made.txt")).unwrap(),
                "made\n"
            );
        }
        let o = nest(
            &t,
            &t.ws,
            nobody,
            &[BWRAP],
            &[
                bin(),
                "explain",
                "--sandbox-mode",
                "workspace-write",
                "--",
                "true",
            ],
        );
        let j: serde_json::Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
        assert_eq!(j["decision"], "run", "{j}");
        assert_eq!(j["backend"], "landlock", "{j}");
        let relied: Vec<&str> = j["layers"]["relied_on_outer"]
            .as_array()
            .unwrap_or_else(|| panic!("{j}"))
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        assert!(
            relied[0].ends_with(
                " protected paths inside the writable roots are kept read-only and uncreatable \
                 by the outer dcjail sandbox (checked at launch: on a read-only mount, or not \
                 creatable), not by this one"
            ),
            "{relied:?}"
        );
        assert!(
            relied.contains(
                &format!(
                "no new `.git` in or below the worktree `{}`: kept by the outer dcjail sandbox \
                 (checked at launch), not by this one",
                t.ws.display()
            )
                .as_str()
            ),
            "{relied:?}"
        );
    }
}

/// An attack: the command, and whether its effect happened in `ws`.
struct Attack {
    name: &'static str,
    script: &'static str,
    happened: fn(&Path) -> bool,
}

const ATTACKS: &[Attack] = &[
    Attack {
        name: "a write to a missing protected name (.bashrc)",
        script: "echo evil > .bashrc",
        happened: |ws| ws.join(".bashrc").exists(),
    },
    Attack {
        name: "a write to an existing protected file (.git/config)",
        script: "echo evil >> .git/config",
        happened: |ws| {
            std::fs::read_to_string(ws.join(".git/config"))
                .unwrap()
                .contains("evil")
        },
    },
    Attack {
        name: "the creation of a missing protected name's directory (.claude/commands)",
        script: "mkdir -p .claude/commands",
        happened: |ws| ws.join(".claude").exists(),
    },
    Attack {
        name: "a new repository in the worktree (sub/.git)",
        script: "mkdir sub/.git",
        happened: |ws| ws.join("sub/.git").exists(),
    },
];

#[test]
fn inside_bwrap_the_protected_paths_the_inner_relies_on_hold() {
    if !ready() {
        return;
    }
    for &nobody in scratch::users() {
        for a in ATTACKS {
            let control = Tree::new("control", nobody);
            let o = nest(&control, &control.ws, nobody, &[], &sh(a.script));
            assert!(o.status.success(), "control {}: {}", a.name, text(&o));
            assert!((a.happened)(&control.ws), "control {}", a.name);
            for levels in [&[BWRAP, WW][..], &[BWRAP, WW, WW][..]] {
                let t = Tree::new("attack", nobody);
                let script = format!("{}; echo ran > ran.txt", a.script);
                let o = nest(&t, &t.ws, nobody, levels, &sh(&script));
                assert_eq!(
                    std::fs::read_to_string(t.ws.join("ran.txt"))
                        .ok()
                        .as_deref(),
                    Some("ran\n"),
                    "{} at {} levels: {}",
                    a.name,
                    levels.len(),
                    text(&o)
                );
                assert!(
                    !(a.happened)(&t.ws),
                    "{} at {} levels",
                    a.name,
                    levels.len()
                );
            }
        }
    }
}

#[test]
fn a_write_outside_the_inner_roots_but_inside_the_outer_ones_fails() {
    if !ready() {
        return;
    }
    for &nobody in scratch::users() {
        for outer in [BWRAP, LANDLOCK] {
            let t = Tree::new("outside", nobody);
            let sub = t.ws.join("sub");
            let escape = t.ws.join("escape.txt");
            let script = "echo x > ../escape.txt; echo ran > ran.txt";
            let ws_s = t.ws.to_str().unwrap();
            let outer: &[&str] = &[outer, &["--workspace", ws_s]].concat();
            // Control: the outer sandbox alone lets it write there.
            let o = nest(&t, &sub, nobody, &[outer], &sh(script));
            assert!(escape.exists(), "control: {}", text(&o));
            std::fs::remove_file(&escape).unwrap();
            let sub_s = sub.to_str().unwrap();
            let inner: &[&str] = &[
                "--sandbox-mode",
                "workspace-write",
                "--no-protect-defaults",
                "--workspace",
                sub_s,
            ];
            for levels in [&[outer, inner][..], &[outer, inner, inner][..]] {
                let _ = std::fs::remove_file(sub.join("ran.txt"));
                let o = nest(&t, &sub, nobody, levels, &sh(script));
                assert_eq!(
                    std::fs::read_to_string(sub.join("ran.txt")).ok().as_deref(),
                    Some("ran\n"),
                    "{}",
                    text(&o)
                );
                assert!(
                    !escape.exists(),
                    "{outer:?} {} levels: {}",
                    levels.len(),
                    text(&o)
                );
            }
        }
    }
}

#[test]
fn an_inner_policy_wider_than_the_outer_is_refused_naming_the_path() {
    if !ready() {
        return;
    }
    for &nobody in scratch::users() {
        // The outer protects the names of its workspace, not of `sub`.
        let t = Tree::new("wider", nobody);
        let sub = t.ws.join("sub");
        let sub_s = sub.to_str().unwrap();
        let o = nest(
            &t,
            &sub,
            nobody,
            &[
                &[BWRAP, &["--workspace", t.ws.to_str().unwrap()]].concat(),
                &["--sandbox-mode", "workspace-write", "--workspace", sub_s],
            ],
            &sh("echo ran > ran.txt"),
        );
        let e = refused(&o);
        let d = sub.display();
        assert!(
            e.contains(&format!(
                "landlock: landlock cannot keep the protected path `{d}/.bashrc` read-only and \
                 uncreatable inside the writable root `{d}` (it cannot subtract rights inside a \
                 granted tree), and the outer dcjail sandbox this one runs inside does not hold \
                 it either: `{d}/.bashrc` could be created here (this check made it and removed \
                 it again); use --no-protect-defaults (sandbox.filesystem.protect_defaults = \
                 false), or a writable root the outer sandbox protects the same way"
            )),
            "{e}"
        );
        assert!(!e.contains("--backend bwrap can"), "{e}");
        assert!(!sub.join("ran.txt").exists() && !sub.join(".bashrc").exists());
        // Under an outer landlock (no protected paths), the inner's
        // protected names are refused the same way, three levels too.
        for levels in [&[LANDLOCK, WW][..], &[LANDLOCK, WW, WW][..]] {
            let o = nest(&t, &t.ws, nobody, levels, &sh("echo ran > ran.txt"));
            let e = refused(&o);
            let w = t.ws.display();
            assert!(
                e.contains(&format!(
                    "and the outer dcjail sandbox this one runs inside does not hold it either: \
                     `{w}/.bashrc` could be created here (this check made it and removed it \
                     again)"
                )) && e.contains("(the outer backend: landlock)"),
                "{e}"
            );
            assert!(!t.ws.join("ran.txt").exists() && !t.ws.join(".bashrc").exists());
        }
    }
}

#[test]
fn inside_landlock_and_bwrap_read_only_and_unprotected_workspace_write_run() {
    if !ready() {
        return;
    }
    let npd: &[&str] = &["--sandbox-mode", "workspace-write", "--no-protect-defaults"];
    for &nobody in scratch::users() {
        for outer in [BWRAP, LANDLOCK] {
            let t = Tree::new("ro", nobody);
            // Control: the outer alone writes in the workspace.
            let o = nest(&t, &t.ws, nobody, &[outer], &sh("echo x > ro.txt"));
            assert!(
                o.status.success() && t.ws.join("ro.txt").exists(),
                "{}",
                text(&o)
            );
            std::fs::remove_file(t.ws.join("ro.txt")).unwrap();
            for levels in [&[outer, RO][..], &[outer, RO, RO][..]] {
                let o = nest(
                    &t,
                    &t.ws,
                    nobody,
                    levels,
                    &sh("cat .git/HEAD; echo x > ro.txt"),
                );
                assert_eq!(
                    String::from_utf8_lossy(&o.stdout),
                    std::fs::read_to_string(t.ws.join(".git/HEAD")).unwrap(),
                    "{}",
                    text(&o)
                );
                assert!(!t.ws.join("ro.txt").exists(), "{outer:?}: {}", text(&o));
            }
            for levels in [&[outer, npd][..], &[outer, npd, npd][..]] {
                let _ = std::fs::remove_file(t.ws.join("made.txt"));
                let o = nest(&t, &t.ws, nobody, levels, &sh("echo made > made.txt"));
                assert!(o.status.success(), "{}", text(&o));
                assert_eq!(
                    std::fs::read_to_string(t.ws.join("made.txt")).unwrap(),
                    "made\n"
                );
            }
        }
    }
}

/// The outer dcjail's report of a nested run (`--report` on the outer).
/// The inner dcjail checks at launch that the outer holds each missing
/// protected name by trying to create it (refused: EROFS); the outer's
/// broker sees those calls. They are listed under `launch_checks`, never
/// as the command's denials; what the inner command itself tries is a
/// denial; and a command making the launch check's own call is listed
/// under `launch_checks` (still in the report, and refused all the same).
#[test]
fn the_outer_report_tells_the_inner_launch_checks_from_the_commands_attempts() {
    if !ready() || !scratch::need("python3") {
        return;
    }
    let disguised = "import os\n\
        f = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOCTTY | os.O_NONBLOCK | os.O_NOFOLLOW\n\
        try:\n    os.open('.bashrc', f, 0); print('made')\n\
        except OSError as e:\n    print('refused', e.errno)";
    // The system's python, which uid 65534 can run (a PATH may name a
    // per-user shim first).
    let py = ["/usr/bin/python3", "python3"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("python3");
    for &nobody in scratch::users() {
        let t = Tree::new("report", nobody);
        let out = t.root.join("out");
        std::fs::create_dir(&out).unwrap();
        if nobody {
            assert!(Command::new("chown")
                .args(["65534:65534"])
                .arg(&out)
                .status()
                .unwrap()
                .success());
        }
        let report = out.join("outer.json");
        let outer: &[&str] = &[BWRAP, &["--report", report.to_str().unwrap()]].concat();
        let run = |cmd: &[&str]| -> (Output, serde_json::Value) {
            let _ = std::fs::remove_file(&report);
            let o = nest(&t, &t.ws, nobody, &[outer, WW], cmd);
            let r =
                std::fs::read_to_string(&report).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
            (o, serde_json::from_str(&r).unwrap())
        };
        let bashrc = t.ws.join(".bashrc");
        let is_bashrc = |d: &serde_json::Value| d["resolved"] == bashrc.to_str().unwrap();
        // Control: without any sandbox the disguised call makes the file.
        let o = nest(&t, &t.ws, nobody, &[], &[py, "-c", disguised]);
        assert_eq!(String::from_utf8_lossy(&o.stdout), "made\n", "{}", text(&o));
        std::fs::remove_file(&bashrc).unwrap();

        // A command that writes nothing: no denial, the checks apart.
        let (o, r) = run(&["true"]);
        assert!(o.status.success(), "{}", text(&o));
        assert_eq!(r["denials"], serde_json::json!([]), "{r}");
        assert_eq!(r["denials_total"], 0, "{r}");
        assert!(r["launch_checks_total"].as_u64().unwrap() > 0, "{r}");
        for c in r["launch_checks"].as_array().unwrap() {
            assert_eq!(c["launch_check"], true, "{c}");
            assert_eq!(c["op"], "openat", "{c}");
            assert!(c["errno"] == "EROFS" || c["errno"] == "EACCES", "{c}");
        }
        assert!(
            r["launch_checks"].as_array().unwrap().iter().any(is_bashrc),
            "{r}"
        );

        // The inner command writes .bashrc: the outer's report has it as a
        // denial (the inner runs without a broker of its own: the outer
        // holds the listener, so the inner's report could not).
        let (o, r) = run(&sh("echo evil > .bashrc; echo ran"));
        assert_eq!(String::from_utf8_lossy(&o.stdout), "ran\n", "{}", text(&o));
        assert!(!bashrc.exists());
        let d = r["denials"].as_array().unwrap();
        assert!(
            d.iter()
                .any(|d| is_bashrc(d) && d["rule"] == "protected" && d["launch_check"] == false),
            "{r}"
        );

        // The launch check's own call, made by the command: refused, and
        // listed under launch_checks with the command's program.
        let (o, r) = run(&[py, "-c", disguised]);
        assert!(
            String::from_utf8_lossy(&o.stdout).starts_with("refused "),
            "{}",
            text(&o)
        );
        assert!(!bashrc.exists());
        let by_python = |c: &&serde_json::Value| {
            is_bashrc(c) && c["program"].as_str().unwrap().contains("python3")
        };
        assert!(
            r["launch_checks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| by_python(&c)),
            "{r}"
        );
    }
}
