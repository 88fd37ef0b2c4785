//! Hostile environments made for real on this machine, each run as root
//! and as an unprivileged user (uid 65534):
//!
//! - no user namespaces: a nested user namespace whose
//!   `user.max_user_namespaces` is set to 0 inside it (a small python3
//!   helper creates it and maps root and 65534 into it);
//! - a container's seccomp profile: a filter of this test's own, shaped like
//!   Docker's default, refusing `unshare` and `clone` with namespace flags
//!   (EPERM) and `clone3` (ENOSYS).
//!
//! For each: what `auto` chooses (explain), that a run it can enforce runs
//! and says where, that a run it cannot enforce is refused with 122 naming
//! the obstacle and starts nothing (a marker the same command writes
//! unsandboxed never appears), `--backend bwrap` likewise, and `doctor`'s
//! words, status and exit status. The same environments, and the ones this
//! machine cannot make (AppArmor, WSL), are simulated through the probe
//! interface in tests/host_probe.rs. Landlock's system calls refused,
//! seccomp user notification refused, and both, are in
//! tests/environments_degraded.rs.
#![cfg(target_os = "linux")]

#[path = "support/filters.rs"]
mod filters;
#[path = "support/scratch.rs"]
mod scratch;

use filters::{docker_like, with_filter};

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The dcjail the tests run: `scratch::exe` keeps it runnable wherever the
/// checkout lives (landlock refuses a dcjail inside a writable root).
use scratch::exe as bin;
const PY: &str = "/usr/bin/python3";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sim {
    UsernsLimitZero,
    DockerSeccomp,
}

// ------------------------------------------------------------ userns

/// Runs argv[1:] in a new user namespace whose max_user_namespaces is 0,
/// as its root or (argv[0] == "nobody", needs host root) as 65534.
const USERNS_LIMIT_ZERO: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER = 0x10000000
who, argv = sys.argv[1], sys.argv[2:]
r1, w1 = os.pipe(); r2, w2 = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r1); os.close(w2)
    if libc.unshare(CLONE_NEWUSER) != 0:
        os._exit(90)
    os.write(w1, b"u"); os.close(w1)
    if os.read(r2, 1) != b"m":
        os._exit(91)
    with open("/proc/sys/user/max_user_namespaces", "w") as f:
        f.write("0")
    if who == "nobody":
        os.setgroups([]); os.setresgid(65534, 65534, 65534); os.setresuid(65534, 65534, 65534)
    os.execv(argv[0], argv)
os.close(w1); os.close(r2)
if os.read(r1, 1) != b"u":
    sys.exit(92)
uid, gid = os.geteuid(), os.getegid()
if who == "nobody":
    umap, gmap = "0 0 1\n65534 65534 1\n", "0 0 1\n65534 65534 1\n"
else:
    with open(f"/proc/{pid}/setgroups", "w") as f:
        f.write("deny")
    umap, gmap = f"0 {uid} 1\n", f"0 {gid} 1\n"
with open(f"/proc/{pid}/uid_map", "w") as f:
    f.write(umap)
with open(f"/proc/{pid}/gid_map", "w") as f:
    f.write(gmap)
os.write(w2, b"m")
_, st = os.waitpid(pid, 0)
sys.exit(os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st))
"#;

// ------------------------------------------------------------ running

/// dcjail with `args`, in `dir`, inside the simulated environment.
fn dcjail(sim: Sim, nobody: bool, dir: &Path, args: &[&str]) -> Output {
    let mut c = match sim {
        Sim::UsernsLimitZero => {
            let mut c = Command::new(PY);
            c.arg("-c")
                .arg(USERNS_LIMIT_ZERO)
                .arg(if nobody { "nobody" } else { "root" })
                .arg(bin());
            c
        }
        Sim::DockerSeccomp => {
            let mut c = if nobody {
                let mut c = Command::new("setpriv");
                c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                    .arg(bin());
                c
            } else {
                Command::new(bin())
            };
            with_filter(&mut c, docker_like());
            c
        }
    };
    c.args(args)
        .current_dir(dir)
        .env_remove("DCJAIL_POLICY")
        .env("HOME", dir)
        .stdin(Stdio::null());
    c.output().unwrap()
}

/// A scratch root holding the workspace `ws` (the cwd) and, outside it, a
/// policy without the protected paths (what landlock can enforce in
/// workspace-write).
struct Dir {
    root: PathBuf,
    ws: PathBuf,
    unprotected: String,
}

const UNPROTECTED: &str = r#"
[permission]
outcome = "allow"
approval = "granted"

[sandbox]
mode = "workspace-write"

[sandbox.filesystem]
protect_defaults = false
"#;

impl Dir {
    fn new(tag: &str, nobody: bool) -> Dir {
        let root = scratch::fresh(&format!("env-{tag}-{nobody}-{}", std::process::id()));
        let ws = root.join("ws");
        std::fs::create_dir(&ws).unwrap();
        let policy = root.join("unprotected.toml");
        std::fs::write(&policy, UNPROTECTED).unwrap();
        if nobody {
            let ok = Command::new("chown")
                .args(["65534:65534"])
                .arg(&ws)
                .status()
                .unwrap()
                .success();
            assert!(ok);
        }
        Dir {
            root,
            ws,
            unprotected: policy.to_string_lossy().into_owned(),
        }
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        scratch::remove(&self.root);
    }
}

use scratch::text;

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(o)))
}

/// The one refusal line of a 122.
fn refused_122(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(122), "{}", text(o));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("dcjail: sandbox-unavailable: "), "{err}");
    assert!(o.stdout.is_empty(), "{}", text(o));
    err
}

const WRITE_MARKER: &[&str] = &["--", "sh", "-c", "echo escaped > marker"];

/// The command of a refused run, run unsandboxed in the same environment:
/// it does write the marker, so the refused run's missing marker means it
/// never started.
fn control_writes_the_marker(sim: Sim, nobody: bool, dir: &Path) {
    let mut args = vec!["--no-sandbox"];
    args.extend_from_slice(WRITE_MARKER);
    let o = dcjail(sim, nobody, dir, &args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let m = dir.join("marker");
    assert_eq!(std::fs::read_to_string(&m).unwrap(), "escaped\n");
    std::fs::remove_file(&m).unwrap();
}

fn assert_no_marker(dir: &Path, what: &str) {
    assert!(
        !dir.join("marker").exists(),
        "{what}: the refused run started its command"
    );
}

/// Where bwrap is stopped but landlock works: `auto` picks landlock and
/// says why in explain; what landlock enforces runs there; what only bwrap
/// enforces, and `--backend bwrap`, are refused naming the obstacle;
/// doctor says degraded, exit 0, with the obstacle's check and fix.
fn bwrap_stopped_landlock_runs(sim: Sim, words: &str, fix_words: &str) {
    for &nobody in scratch::users() {
        let who = if nobody { "nobody" } else { "root" };
        let d = Dir::new(&format!("{sim:?}"), nobody);
        let dir = d.ws.as_path();

        let o = dcjail(sim, nobody, dir, &["explain", "--", "true"]);
        assert_eq!(o.status.code(), Some(0), "{who}: {}", text(&o));
        let v = json(&o);
        assert_eq!(v["backend"], "landlock", "{who}: {v}");
        assert_eq!(v["passed_over"][0]["backend"], "bwrap", "{who}: {v}");
        let why = v["passed_over"][0]["why"].as_str().unwrap();
        assert!(why.contains(words), "{who}: {why}");
        assert!(
            why.contains("fix: ") && why.contains(fix_words),
            "{who}: {why}"
        );

        let o = dcjail(
            sim,
            nobody,
            dir,
            &["--", "sh", "-c", "echo ran-$DCJAIL_BACKEND"],
        );
        assert_eq!(o.status.code(), Some(0), "{who}: {}", text(&o));
        assert_eq!(String::from_utf8_lossy(&o.stdout), "ran-landlock\n");

        let o = dcjail(
            sim,
            nobody,
            dir,
            &[
                "--policy",
                &d.unprotected,
                "--",
                "sh",
                "-c",
                "echo $DCJAIL_BACKEND > written",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{who}: {}", text(&o));
        assert_eq!(
            std::fs::read_to_string(dir.join("written")).unwrap(),
            "landlock\n"
        );

        control_writes_the_marker(sim, nobody, dir);
        let mut args = vec!["--sandbox-mode", "workspace-write"];
        args.extend_from_slice(WRITE_MARKER);
        let err = refused_122(&dcjail(sim, nobody, dir, &args));
        assert!(err.contains(&format!("bwrap: {words}")), "{who}: {err}");
        assert!(err.contains("landlock: "), "{who}: {err}");
        assert_no_marker(dir, "workspace-write with protected paths");

        let mut args = vec!["--backend", "bwrap"];
        args.extend_from_slice(WRITE_MARKER);
        let err = refused_122(&dcjail(sim, nobody, dir, &args));
        assert!(
            err.contains(words) && err.contains(fix_words),
            "{who}: {err}"
        );
        assert_no_marker(dir, "--backend bwrap");

        let o = dcjail(sim, nobody, dir, &["doctor", "--json"]);
        assert_eq!(o.status.code(), Some(0), "{who}: {}", text(&o));
        let v = json(&o);
        assert_eq!(v["schema"], 1);
        assert_eq!(v["status"], "degraded", "{who}: {v}");
        assert_eq!(v["auto"], "landlock", "{who}: {v}");
        let c = v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "user-namespaces")
            .unwrap();
        assert_eq!(c["status"], "fail", "{who}: {c}");
        assert!(c["message"].as_str().unwrap().contains(words), "{who}: {c}");
        assert!(c["fix"].as_str().unwrap().contains(fix_words), "{who}: {c}");

        let o = dcjail(sim, nobody, dir, &["doctor"]);
        assert_eq!(o.status.code(), Some(0), "{who}: {}", text(&o));
        let t = String::from_utf8_lossy(&o.stdout);
        assert!(t.contains("bwrap: does not work"), "{who}: {t}");
        assert!(t.contains("landlock: works"), "{who}: {t}");
        assert!(
            t.contains(&format!("user-namespaces (fail): {words}")),
            "{who}: {t}"
        );
        assert!(t.contains("status: degraded"), "{who}: {t}");
    }
}

#[test]
fn without_user_namespaces_auto_uses_landlock_and_refuses_what_needs_bwrap() {
    bwrap_stopped_landlock_runs(
        Sim::UsernsLimitZero,
        "user namespaces are disabled (user.max_user_namespaces = 0)",
        "user.max_user_namespaces",
    );
}

#[test]
fn under_a_docker_like_seccomp_profile_auto_uses_landlock_and_refuses_what_needs_bwrap() {
    bwrap_stopped_landlock_runs(
        Sim::DockerSeccomp,
        "a seccomp filter refuses namespace creation: unshare with CLONE_NEWUSER failed with EPERM",
        "--security-opt seccomp=",
    );
}

/// The same commands outside any simulation: bwrap is chosen, so the
/// differences above come from the environments, not from the commands.
#[test]
fn outside_the_simulations_auto_uses_bwrap() {
    let doctor = dcjail_plain(&["doctor", "--json"]);
    if !scratch::require(
        doctor.status.code() == Some(0),
        &format!(
            "bubblewrap works here (`dcjail doctor`): {}",
            String::from_utf8_lossy(&doctor.stdout)
        ),
        "install it with: apt-get install -y bubblewrap (Ubuntu 24.04: dcjail setup apparmor --install)",
    ) {
        return;
    }
    let v = json(&dcjail_plain(&["explain", "--", "true"]));
    assert_eq!(v["backend"], "bwrap", "{v}");
    let v = json(&dcjail_plain(&["doctor", "--json"]));
    assert_eq!(v["status"], "ok", "{v}");
}

fn dcjail_plain(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .env_remove("DCJAIL_POLICY")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A user namespace that maps only its creator (rootless containers,
/// `unshare --map-root-user` by a user): root's files show as the overflow
/// uid, so the installed bwrap is not trusted. Said as that, not as "not
/// installed", and `auto` uses landlock.
#[test]
fn in_a_user_namespace_without_root_bwrap_is_named_untrusted_not_missing() {
    if !scratch::root("switch to uid 65534") || !scratch::need("bwrap") {
        return;
    }
    let d = Dir::new("unmapped-root", true);
    let run = |args: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .args(["unshare", "--user", "--map-root-user", "--"])
            .arg(bin())
            .args(args)
            .current_dir(&d.ws)
            .env_remove("DCJAIL_POLICY")
            .env("HOME", &d.ws)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let mut args = vec!["--backend", "bwrap"];
    args.extend_from_slice(WRITE_MARKER);
    let err = refused_122(&run(&args));
    assert!(
        err.contains("bubblewrap is installed but not trusted")
            && err.contains("not mapped into this user namespace"),
        "{err}"
    );
    assert_no_marker(&d.ws, "--backend bwrap with root unmapped");
    let v = json(&run(&["explain", "--", "true"]));
    assert_eq!(v["backend"], "landlock", "{v}");
    let o = run(&["doctor", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = json(&o);
    let c = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "bubblewrap")
        .unwrap();
    assert_eq!(c["status"], "fail");
    assert!(
        c["fix"]
            .as_str()
            .unwrap()
            .contains("user namespace that leaves root unmapped"),
        "{c}"
    );
}
