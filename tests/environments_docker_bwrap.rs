//! The bwrap recipe of docs/containers.md, and root without CAP_SETFCAP,
//! made for real on this machine (tests/support/filters.rs), as measured
//! by hand in a real Docker 20.10.24 container:
//!
//! - Docker 20.10's default profile with the recipe's changes (namespace
//!   creation and mounts allowed) still refuses process_vm_readv, which
//!   the broker used to read the command's paths: every call the broker
//!   answers (a file created in the workspace among them) failed with
//!   EFAULT. The broker now reads /proc/PID/mem when that call is refused.
//!   Each run here proves the filter refuses process_vm_readv, then does
//!   real work through the broker compared with the same work without the
//!   sandbox, then attacks the protected paths and the workspace's edge,
//!   each attack once with `--no-sandbox` in the same environment (it
//!   lands) and once under dcjail (the command ran, nothing happened).
//! - Root in a container started with `--cap-drop ALL` has no CAP_SETFCAP,
//!   which Linux 5.12 and later ask for to map uid 0 into a new user
//!   namespace: bwrap cannot write its uid map. Made with setpriv's
//!   bounding set; dcjail names it in doctor, explain and the refusal.
#![cfg(target_os = "linux")]

#[path = "support/filters.rs"]
mod filters;
#[path = "support/scratch.rs"]
mod scratch;

use filters::{docker_recipe_for_bwrap, with_filter, Dir};
use scratch::exe as bin;
use scratch::text;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `program args` in `cwd`, under the recipe's filter, as root or 65534.
fn under_recipe(nobody: bool, cwd: &Path, home: &Path, program: &str, args: &[&str]) -> Output {
    let mut c = scratch::user_command(nobody, program);
    with_filter(&mut c, docker_recipe_for_bwrap());
    c.args(args)
        .current_dir(cwd)
        .env_remove("DCJAIL_POLICY")
        .env("HOME", home)
        .stdin(Stdio::null());
    scratch::output_within(c, 60)
}

/// Debian's python, which uid 65534 can run (root's pyenv is in a
/// mode-0700 home); scripts/test.sh installs it.
const PYTHON: &str = "/usr/bin/python3";

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// process_vm_readv with no iovec: `0 0` where it is allowed, `-1 1`
/// (EPERM) under the recipe's filter.
const VM_READV_PY: &str = "import ctypes, os\n\
libc = ctypes.CDLL(None, use_errno=True)\n\
L = ctypes.c_long\n\
r = libc.syscall(L(310 if os.uname().machine == 'x86_64' else 270), L(os.getpid()), L(0), L(0), L(0), L(0), L(0))\n\
print(r, ctypes.get_errno())";

/// Real work whose every creation goes through the broker (a workspace
/// with protected names missing from it).
const WORK: &str = "echo hi > new.txt && mkdir d && echo x > d/f && mv d/f d/g && \
ln -s new.txt link && cat new.txt d/g link && ls -1";

#[test]
fn the_bwrap_recipe_under_docker_20_10s_profile_runs_with_its_broker_and_holds() {
    if !scratch::bwrap_works() || !scratch::need("python3") || !scratch::need("git") {
        return;
    }
    for nobody in [false, true] {
        if nobody && !scratch::root("switch to uid 65534") {
            continue;
        }
        let who = if nobody { "65534" } else { "root" };
        let d = Dir::new(&format!("dockbw-{who}"), nobody);
        let twin = Dir::new(&format!("dockbw-twin-{who}"), nobody);

        // The environment is what it claims: process_vm_readv refused
        // under the filter, allowed without it.
        let o = under_recipe(nobody, &d.ws, &d.root, PYTHON, &["-c", VM_READV_PY]);
        assert_eq!(out(&o).trim(), "-1 1", "{who}: {}", text(&o));
        let mut c = scratch::user_command(nobody, PYTHON);
        c.args(["-c", VM_READV_PY]);
        let o = scratch::output_within(c, 30);
        assert_eq!(out(&o).trim(), "0 0", "{who}: {}", text(&o));

        // auto chooses bwrap there, with its broker.
        let o = under_recipe(
            nobody,
            &d.ws,
            &d.root,
            bin(),
            &["explain", "--sandbox-mode", "workspace-write", "--", "true"],
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{who}: {e}: {}", text(&o)));
        assert_eq!(v["backend"], "bwrap", "{who}: {v}");

        // Real work through the broker, compared with the same work
        // without the sandbox in the same environment.
        let run = |dir: &Dir, sandboxed: bool| {
            let mut args = vec!["--sandbox-mode", "workspace-write"];
            if !sandboxed {
                args.push("--no-sandbox");
            }
            args.extend(["--", "sh", "-c", WORK]);
            under_recipe(nobody, &dir.ws, &dir.root, bin(), &args)
        };
        let jailed = run(&d, true);
        let bare = run(&twin, false);
        assert!(jailed.status.success(), "{who}: {}", text(&jailed));
        assert_eq!(jailed.status.code(), bare.status.code(), "{who}");
        assert_eq!(out(&jailed), out(&bare), "{who}: {}", text(&jailed));
        assert_eq!(out(&jailed), "hi\nx\nhi\nd\nlink\nnew.txt\nsecret.txt\n");
        for f in ["new.txt", "d/g", "link"] {
            assert_eq!(
                std::fs::read(d.ws.join(f)).unwrap(),
                std::fs::read(twin.ws.join(f)).unwrap(),
                "{who}: {f}"
            );
        }

        // Attacks: a missing protected name (created only through the
        // broker's check), an existing one, and the workspace's edge.
        for dir in [&d, &twin] {
            let mut g = scratch::user_command(nobody, "git");
            g.args(["init", "-q"]).current_dir(&dir.ws);
            assert!(scratch::output_within(g, 30).status.success());
        }
        let marker = d.marker();
        let attack = format!(
            "echo pwned > .envrc; echo '[core]' >> .git/config; echo x > {}; echo ran",
            marker.display()
        );
        let twin_attack = format!(
            "echo pwned > .envrc; echo '[core]' >> .git/config; echo x > {}; echo ran",
            twin.marker().display()
        );
        let config_before = std::fs::read(d.ws.join(".git/config")).unwrap();
        let o = under_recipe(
            nobody,
            &twin.ws,
            &twin.root,
            bin(),
            &["--no-sandbox", "--", "sh", "-c", &twin_attack],
        );
        assert!(out(&o).contains("ran"), "{who}: {}", text(&o));
        assert!(twin.ws.join(".envrc").exists(), "{who}: control");
        assert!(twin.marker().exists(), "{who}: control");
        assert_ne!(
            std::fs::read(twin.ws.join(".git/config")).unwrap(),
            config_before,
            "{who}: control"
        );
        let o = under_recipe(
            nobody,
            &d.ws,
            &d.root,
            bin(),
            &[
                "--sandbox-mode",
                "workspace-write",
                "--",
                "sh",
                "-c",
                &attack,
            ],
        );
        assert!(out(&o).contains("ran"), "{who}: {}", text(&o));
        assert!(!d.ws.join(".envrc").exists(), "{who}: {}", text(&o));
        assert!(!marker.exists(), "{who}: {}", text(&o));
        assert_eq!(
            std::fs::read(d.ws.join(".git/config")).unwrap(),
            config_before,
            "{who}"
        );
    }
}

/// Runs `args` as root with CAP_SETFCAP out of the bounding set (so out of
/// every set dcjail and bwrap get).
fn without_setfcap(cwd: &Path, program: &str, args: &[&str]) -> Output {
    let mut c = Command::new("setpriv");
    c.args(["--bounding-set", "-setfcap", "--", program])
        .args(args)
        .current_dir(cwd)
        .env_remove("DCJAIL_POLICY")
        .stdin(Stdio::null());
    scratch::output_within(c, 60)
}

#[test]
fn root_without_cap_setfcap_is_named_and_auto_runs_landlock() {
    if !scratch::bwrap_works() || !scratch::root("drop CAP_SETFCAP from root") {
        return;
    }
    let d = Dir::new("nosetfcap", false);
    let words = "uid 0 without CAP_SETFCAP cannot map itself into a new user namespace \
                 (Linux 5.12 and later ask for that capability), so bubblewrap cannot set up \
                 its uid map";
    let fix = "run dcjail as a user other than root (Docker: --user UID:GID; Kubernetes: \
               runAsUser), or keep CAP_SETFCAP (Docker gives it to root unless --cap-drop \
               removes it; --cap-add SETFCAP), or use --backend landlock, which needs no \
               namespace";

    // The environment is real: bwrap itself fails there, and works without it.
    let o = without_setfcap(
        &d.ws,
        "bwrap",
        &["--unshare-user", "--ro-bind", "/", "/", "true"],
    );
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("setting up uid map: Operation not permitted"),
        "{}",
        text(&o)
    );

    let o = without_setfcap(&d.ws, bin(), &["doctor"]);
    let t = out(&o);
    assert!(
        t.contains(&format!("user-namespaces (fail): {words}")),
        "{t}"
    );
    assert!(t.contains(&format!("fix: {fix}")), "{t}");
    assert!(t.contains("status: degraded"), "{t}");

    let o = without_setfcap(
        &d.ws,
        bin(),
        &["--backend", "bwrap", "--", "sh", "-c", "echo ran"],
    );
    assert_eq!(o.status.code(), Some(122), "{}", text(&o));
    assert!(!out(&o).contains("ran"));
    assert!(
        text(&o).contains(&format!("bwrap: {words}")),
        "{}",
        text(&o)
    );

    let o = without_setfcap(&d.ws, bin(), &["explain", "--", "true"]);
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert_eq!(v["backend"], "landlock", "{v}");
    let why = v["passed_over"][0]["why"].as_str().unwrap_or_default();
    assert!(why.starts_with(words), "{v}");

    // What auto runs there holds: a write outside the workspace, which the
    // same command without the sandbox makes.
    let attack = format!("echo x > {}; echo ran", d.marker().display());
    let o = without_setfcap(&d.ws, bin(), &["--no-sandbox", "--", "sh", "-c", &attack]);
    assert!(
        out(&o).contains("ran") && d.marker().exists(),
        "{}",
        text(&o)
    );
    std::fs::remove_file(d.marker()).unwrap();
    let o = without_setfcap(
        &d.ws,
        bin(),
        &[
            "--sandbox-mode",
            "workspace-write",
            "--no-protect-defaults",
            "--",
            "sh",
            "-c",
            &attack,
        ],
    );
    assert!(out(&o).contains("ran"), "{}", text(&o));
    assert!(!d.marker().exists(), "{}", text(&o));
}

/// `argv` (as root or 65534) in a mount namespace of its own where
/// /proc/timer_list is covered by /dev/null, as a runtime masks /proc.
fn with_masked_proc(nobody: bool, cwd: &Path, argv: &[&str]) -> Output {
    let mut c = Command::new("unshare");
    c.args(["--mount", "--propagation", "private", "--", "sh", "-c"])
        .arg(
            "mount --bind /dev/null /proc/timer_list || exit 99; \
             if [ \"$1\" = nobody ]; then shift; \
             exec setpriv --reuid=65534 --regid=65534 --clear-groups -- \"$@\"; fi; \
             shift; exec \"$@\"",
        )
        .arg("sh")
        .arg(if nobody { "nobody" } else { "root" })
        .args(argv)
        .current_dir(cwd)
        .env_remove("DCJAIL_POLICY")
        .stdin(Stdio::null());
    scratch::output_within(c, 60)
}

#[test]
fn a_masked_proc_is_named_with_the_settings_that_unmask_it() {
    if !scratch::bwrap_works() || !scratch::root("make a mount namespace") {
        return;
    }
    for nobody in [false, true] {
        let who = if nobody { "65534" } else { "root" };
        let d = Dir::new(&format!("maskedproc-{who}"), nobody);
        // The environment is real: bwrap's own /proc fails there.
        let o = with_masked_proc(
            nobody,
            &d.ws,
            &[
                "bwrap",
                "--unshare-user",
                "--unshare-pid",
                "--ro-bind",
                "/",
                "/",
                "--proc",
                "/proc",
                "true",
            ],
        );
        assert_ne!(o.status.code(), Some(99), "{who}: {}", text(&o));
        assert!(
            text(&o).contains("Can't mount proc on /newroot/proc"),
            "{who}: {}",
            text(&o)
        );
        let words = "the kernel refuses a new /proc inside a user namespace while paths of \
                     the /proc above are covered by other mounts";
        let o = with_masked_proc(nobody, &d.ws, &[bin(), "doctor"]);
        let t = out(&o);
        assert!(
            t.contains(&format!(
                "{words} (/proc/timer_list), as container runtimes mask them"
            )),
            "{who}: {t}"
        );
        assert!(t.contains("systempaths=unconfined"), "{who}: {t}");
        let o = with_masked_proc(
            nobody,
            &d.ws,
            &[bin(), "--backend", "bwrap", "--", "sh", "-c", "echo ran"],
        );
        assert_eq!(o.status.code(), Some(122), "{who}: {}", text(&o));
        assert!(!out(&o).contains("ran"), "{who}");
        assert!(text(&o).contains(words), "{who}: {}", text(&o));
    }
}
