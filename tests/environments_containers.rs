//! Containers, made for real on this machine by a seccomp filter installed
//! in front of dcjail (tests/support/filters.rs), each run as root and as
//! uid 65534:
//!
//! - user namespaces refused: `unshare`/`clone` with CLONE_NEWUSER answer
//!   EPERM (what a profile refusing them, or a runtime without user
//!   namespaces, looks like to a program);
//! - mounts refused: every mount system call answers EPERM;
//! - Docker's default seccomp profile as it is now (Docker 20.10.18 and
//!   later): namespaces, mounts, keyctl and bpf refused, landlock and
//!   seccomp user notification allowed;
//! - the same profile before 2022 (Docker 20.10.17 and earlier), which
//!   also refuses landlock's system calls.
//!
//! For each: what `auto` runs and what `explain` says it passed over, what
//! `--backend bwrap` says, `doctor`'s words, and every feature that ran
//! attacked with its control (the same command with `--no-sandbox`, in the
//! same environment, as the same user, does the thing). `TABLE` is what
//! these tests find; docs/containers.md shows it and
//! `the_docs_table_is_what_these_tests_find` keeps the two equal.
#![cfg(target_os = "linux")]

#[path = "support/filters.rs"]
mod filters;
#[path = "support/scratch.rs"]
mod scratch;

use filters::{
    docker_default, no_mount, no_pivot_root, no_userns, with_filter, Dir, DockerProfile,
    HostListeners,
};
use scratch::exe as bin;
use scratch::text;
use std::path::Path;
use std::process::{Command, Output, Stdio};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sim {
    NoUserns,
    NoMount,
    Docker,
    DockerBefore2022,
}

const SIMS: [Sim; 4] = [
    Sim::NoUserns,
    Sim::NoMount,
    Sim::Docker,
    Sim::DockerBefore2022,
];

impl Sim {
    fn filter(self) -> Vec<libc::sock_filter> {
        match self {
            Sim::NoUserns => no_userns(),
            Sim::NoMount => no_mount(),
            Sim::Docker => docker_default(DockerProfile::Current),
            Sim::DockerBefore2022 => docker_default(DockerProfile::Before2022),
        }
    }
    /// The row's name in docs/containers.md.
    fn row(self) -> &'static str {
        match self {
            Sim::NoUserns => "user namespaces refused",
            Sim::NoMount => "mounts refused",
            Sim::Docker => "Docker's default profile (20.10.18 and later)",
            Sim::DockerBefore2022 => "Docker's default profile (20.10.17 and earlier)",
        }
    }
}

/// The features, in the table's column order.
const FEATURES: [&str; 9] = [
    "backend `auto` runs",
    "`--backend bwrap`",
    "writes outside the workspace",
    "`deny_read` outside the writable roots",
    "`deny_read` inside a writable root",
    "protected paths",
    "network none (host loopback, host unix socket)",
    "network allowlist",
    "nothing outlives dcjail",
];

/// What the tests below find: one row per `SIMS`, one cell per `FEATURES`.
const TABLE: [[&str; 9]; 4] = [
    [
        "landlock", "refused", "held", "held", "refused", "refused", "held", "refused", "held",
    ],
    [
        "landlock", "refused", "held", "held", "refused", "refused", "held", "refused", "held",
    ],
    [
        "landlock", "refused", "held", "held", "refused", "refused", "held", "refused", "held",
    ],
    [
        "refused", "refused", "refused", "refused", "refused", "refused", "refused", "refused",
        "refused",
    ],
];

fn cell(sim: Sim, feature: &str) -> &'static str {
    let r = SIMS.iter().position(|s| *s == sim).unwrap();
    let c = FEATURES.iter().position(|f| *f == feature).unwrap();
    TABLE[r][c]
}

/// Whether landlock runs there (and so every feature it holds is attacked).
fn landlock_runs(sim: Sim) -> bool {
    cell(sim, FEATURES[0]) == "landlock"
}

/// dcjail with `args` in the workspace, inside `sim`, as root or 65534.
fn jailed(sim: Sim, nobody: bool, d: &Dir, args: &[&str]) -> Output {
    let mut c = scratch::user_command(nobody, bin());
    with_filter(&mut c, sim.filter());
    c.args(args)
        .current_dir(&d.ws)
        .env_remove("DCJAIL_POLICY")
        .env("HOME", &d.root)
        .stdin(Stdio::null());
    scratch::output_within(c, 60)
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(o)))
}

fn who(sim: Sim, nobody: bool) -> String {
    format!("{sim:?} as {}", if nobody { "65534" } else { "root" })
}

/// `f` in each simulation, as each user, in a fresh `Dir` tagged `tag`.
fn each(tag: &str, mut f: impl FnMut(Sim, bool, &Dir)) {
    if !scratch::bwrap_works() {
        return;
    }
    for sim in SIMS {
        for &nobody in scratch::users() {
            let d = Dir::new(
                &format!("containers-{tag}-{sim:?}-{nobody}-{}", std::process::id()),
                nobody,
            );
            f(sim, nobody, &d);
        }
    }
}

/// The one refusal line of a 122, and that nothing started.
fn refused_122(o: &Output, d: &Dir, what: &str) -> String {
    assert_eq!(o.status.code(), Some(122), "{what}: {}", text(o));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "{what}: {err}");
    assert!(err.starts_with("dcjail: sandbox-unavailable: "), "{err}");
    assert!(o.stdout.is_empty(), "{what}: {}", text(o));
    assert!(!d.marker().exists(), "{what}: the refused run started");
    err
}

/// Writes the marker outside the workspace, then says `ran-<backend>`.
const ESCAPE: &str = "echo ran-$DCJAIL_BACKEND; echo escaped > ../outside/marker";

/// The attack's command, unsandboxed in the same environment as the same
/// user: it does write the marker.
fn control_writes_outside(sim: Sim, nobody: bool, d: &Dir) {
    let o = jailed(sim, nobody, d, &["--no-sandbox", "--", "sh", "-c", ESCAPE]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(d.marker()).unwrap(), "escaped\n");
    std::fs::remove_file(d.marker()).unwrap();
}

/// How the simulations' obstacles are said.
const USERNS_EPERM: &str = "a seccomp filter refuses namespace creation: unshare with CLONE_NEWUSER failed with EPERM, before the kernel saw it";
const USERNS_FIX: &str = "fix: start the container with a seccomp profile that allows unshare and clone with namespace flags (Docker, Podman: --security-opt seccomp=PROFILE), or use --backend landlock, which needs no namespace";
const MOUNT_EPERM: &str = "a seccomp filter refuses mounts: mount failed with EPERM, before the kernel saw it, so bubblewrap cannot build the sandbox's mounts";
const MOUNT_FIX: &str = "fix: start the container with a seccomp profile that allows mount, umount2 and pivot_root (Docker, Podman: --security-opt seccomp=PROFILE), or use --backend landlock, which makes no mount";
const LANDLOCK_EPERM: &str =
    "landlock: a seccomp filter refuses landlock's system calls (landlock_create_ruleset failed with EPERM)";
const LANDLOCK_FIX: &str = "fix: start the container with a seccomp profile that allows landlock_create_ruleset, landlock_add_rule and landlock_restrict_self";

/// What stops bwrap in `sim`, as `explain`, the report and `doctor` say
/// it (naming the container the test itself runs in, as dcjail finds it),
/// and its fix.
fn bwrap_obstacle(sim: Sim) -> (String, &'static str) {
    let (words, fix) = match sim {
        Sim::NoMount => (MOUNT_EPERM, MOUNT_FIX),
        _ => (USERNS_EPERM, USERNS_FIX),
    };
    let cgroup = std::fs::read_to_string("/proc/1/cgroup").unwrap_or_default();
    let ctr = std::env::var("container")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| Path::new("/.dockerenv").exists().then(|| "docker".into()))
        .or_else(|| {
            Path::new("/run/.containerenv")
                .exists()
                .then(|| "podman".into())
        })
        .or_else(|| {
            ["docker", "kubepods", "lxc", "containerd"]
                .into_iter()
                .find(|k| cgroup.contains(k))
                .map(String::from)
        });
    match ctr {
        Some(c) => (format!("{words} (this runs inside a {c} container)"), fix),
        None => (words.to_string(), fix),
    }
}

#[test]
fn auto_runs_landlock_where_bwrap_cannot_and_says_why() {
    each("auto-runs", |sim, nobody, d| {
        let w = who(sim, nobody);
        control_writes_outside(sim, nobody, d);
        let v = jailed(sim, nobody, d, &["explain", "--", "true"]);
        let report = d.outside.join("report.json");
        let rs = report.to_str().unwrap();
        let run = jailed(sim, nobody, d, &["--report", rs, "--", "sh", "-c", ESCAPE]);
        if sim == Sim::DockerBefore2022 {
            // explain says the refusal in its JSON, and exits 122.
            assert_eq!(v.status.code(), Some(122), "{w}: {}", text(&v));
            let v = json(&v);
            assert!(v["backend"].is_null(), "{w}: {v}");
            let said = v.to_string();
            for words in [USERNS_EPERM, LANDLOCK_EPERM, LANDLOCK_FIX] {
                assert!(said.contains(words), "{w}: {words}: {v}");
            }
            let err = refused_122(&run, d, &w);
            assert!(err.contains(LANDLOCK_EPERM), "{w}: {err}");
            assert_eq!(cell(sim, FEATURES[0]), "refused");
            return;
        }
        // explain, the run's report and doctor name the same obstacle in
        // the same words; the run changes backend at launch nowhere (no
        // warning on stderr: explain foresaw it all).
        let (words, fix) = bwrap_obstacle(sim);
        let v = json(&v);
        assert_eq!(v["backend"], "landlock", "{w}: {v}");
        assert_eq!(v["passed_over"][0]["backend"], "bwrap", "{w}: {v}");
        let why = v["passed_over"][0]["why"].as_str().unwrap();
        assert_eq!(why, format!("{words}; {fix}"), "{w}");
        assert_eq!(out(&run), "ran-landlock\n", "{w}: {}", text(&run));
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(!err.contains("dcjail"), "{w}: {err}");
        assert!(!d.marker().exists(), "{w}: wrote outside the workspace");
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        assert_eq!(r["backend"], "landlock", "{w}: {r}");
        assert_eq!(r["passed_over"], v["passed_over"], "{w}: {r}");
        let t = out(&jailed(sim, nobody, d, &["doctor"]));
        let check = if sim == Sim::NoMount {
            "mounts"
        } else {
            "user-namespaces"
        };
        assert!(
            t.contains(&format!("  {check} (fail): {words}\n    {fix}\n")),
            "{w}: {t}"
        );
        assert_eq!(cell(sim, FEATURES[0]), "landlock");
    });
}

/// Where nothing foresees that bwrap fails (only `pivot_root` refused),
/// `explain` names bwrap, and the run that then falls back to landlock
/// says so: a warning on stderr naming both backends and bwrap's words,
/// and a report whose backend, `passed_over` and `layers` are landlock's.
#[test]
fn a_change_of_backend_at_launch_is_said() {
    if !scratch::bwrap_works() {
        return;
    }
    for &nobody in scratch::users() {
        let d = Dir::new(
            &format!("containers-change-{nobody}-{}", std::process::id()),
            nobody,
        );
        let w = format!(
            "pivot_root refused as {}",
            if nobody { "65534" } else { "root" }
        );
        let run = |args: &[&str]| {
            let mut c = scratch::user_command(nobody, bin());
            with_filter(&mut c, no_pivot_root());
            c.args(args)
                .current_dir(&d.ws)
                .env_remove("DCJAIL_POLICY")
                .env("HOME", &d.root)
                .stdin(Stdio::null());
            scratch::output_within(c, 60)
        };
        let o = run(&["--no-sandbox", "--", "sh", "-c", ESCAPE]);
        assert!(d.marker().exists(), "{w}: control: {}", text(&o));
        std::fs::remove_file(d.marker()).unwrap();
        let v = json(&run(&["explain", "--", "true"]));
        assert_eq!(v["backend"], "bwrap", "{w}: {v}");
        let report = d.outside.join("report.json");
        let o = run(&[
            "--report",
            report.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            ESCAPE,
        ]);
        assert_eq!(out(&o), "ran-landlock\n", "{w}: {}", text(&o));
        assert!(!d.marker().exists(), "{w}: wrote outside the workspace");
        let err = String::from_utf8_lossy(&o.stderr);
        let err = err.lines().next().unwrap_or_default();
        assert!(
            err.starts_with(
                "dcjail: warning: the backend could not start the sandbox here (bwrap: \
                 bubblewrap could not build the sandbox: "
            ) && err.ends_with(
                "); the command runs under the landlock backend instead, which holds this whole \
                 policy (`dcjail doctor` says what to change)"
            ),
            "{w}: {err}"
        );
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        assert_eq!(r["backend"], "landlock", "{w}: {r}");
        assert_eq!(r["message"], "runs under the landlock backend", "{w}: {r}");
        assert_eq!(r["passed_over"][0]["backend"], "bwrap", "{w}: {r}");
        let why = r["passed_over"][0]["why"].as_str().unwrap();
        assert!(
            why.starts_with("bubblewrap could not build the sandbox: ") && err.contains(why),
            "{w}: {why}"
        );
        assert_eq!(r["launch"]["kind"], "landlock", "{w}: {r}");
        assert_eq!(r["exit_status"], 2, "{w}: {r}");
    }
}

#[test]
fn backend_bwrap_is_refused_naming_what_blocks_it() {
    each("backend-bwrap", |sim, nobody, d| {
        let w = who(sim, nobody);
        let o = jailed(
            sim,
            nobody,
            d,
            &["--backend", "bwrap", "--", "sh", "-c", ESCAPE],
        );
        let err = refused_122(&o, d, &w);
        let (words, fix) = bwrap_obstacle(sim);
        assert!(
            err.contains(&format!(
                "cannot enforce this policy here; bwrap: {words}; {fix}"
            )),
            "{w}: {err}"
        );
        assert_eq!(cell(sim, FEATURES[1]), "refused");
    });
}

#[test]
fn doctor_says_what_runs_and_what_blocks_bwrap() {
    each("doctor", |sim, nobody, d| {
        let w = who(sim, nobody);
        let o = jailed(sim, nobody, d, &["doctor"]);
        let t = out(&o);
        let (code, status) = if landlock_runs(sim) {
            (0, "status: degraded")
        } else {
            (122, "status: unavailable")
        };
        assert_eq!(o.status.code(), Some(code), "{w}: {}", text(&o));
        assert!(t.contains(status), "{w}: {t}");
        assert!(t.contains("bwrap: does not work"), "{w}: {t}");
        let landlock = if landlock_runs(sim) {
            "landlock: works"
        } else {
            "landlock: does not work"
        };
        assert!(t.contains(landlock), "{w}: {t}");
        let (words, fix) = bwrap_obstacle(sim);
        assert!(t.contains(&format!(" (fail): {words}\n")), "{w}: {t}");
        assert!(t.contains(fix), "{w}: {t}");
        assert!(!t.contains("unknown obstacle"), "{w}: {t}");
        if sim == Sim::NoMount {
            assert!(
                t.contains("bwrap-sandbox (fail): bwrap could not create the sandbox (bwrap: Failed to make / slave: Operation not permitted), as the mounts check foresaw"),
                "{w}: {t}"
            );
        }
        if sim == Sim::DockerBefore2022 {
            assert!(
                t.contains("a seccomp filter refuses landlock's system calls (landlock_create_ruleset failed with EPERM)"),
                "{w}: {t}"
            );
        }
    });
}

/// `args` then the command: `None` when the run was refused (122, nothing
/// started), else its stdout after checking it ran under landlock.
/// The command's own failures (a write refused) are its exit status.
fn attack(sim: Sim, nobody: bool, d: &Dir, args: &[&str], cmd: &str) -> Option<String> {
    attack_with(sim, nobody, d, args, cmd, &[])
}

/// `attack` with `extra` after the shell's script (its `$0`, `$1`...).
fn attack_with(
    sim: Sim,
    nobody: bool,
    d: &Dir,
    args: &[&str],
    cmd: &str,
    extra: &[&str],
) -> Option<String> {
    let w = who(sim, nobody);
    let mut a = args.to_vec();
    a.extend_from_slice(&["--", "sh", "-c", cmd]);
    a.extend_from_slice(extra);
    let o = jailed(sim, nobody, d, &a);
    if o.status.code() == Some(122) {
        refused_122(&o, d, &w);
        return None;
    }
    let s = out(&o);
    assert!(
        s.starts_with("ran-landlock\n"),
        "{w}: {args:?}: {}",
        text(&o)
    );
    Some(s["ran-landlock\n".len()..].to_string())
}

fn held(v: bool) -> &'static str {
    if v {
        "held"
    } else {
        "broken"
    }
}

#[test]
fn writes_outside_the_workspace_are_refused_in_both_modes() {
    each("writes-outside", |sim, nobody, d| {
        let w = who(sim, nobody);
        control_writes_outside(sim, nobody, d);
        let mut found = Vec::new();
        for mode in ["read-only", "workspace-write"] {
            let a = ["--sandbox-mode", mode, "--no-protect-defaults"];
            let cmd =
                "echo ran-$DCJAIL_BACKEND; echo escaped > ../outside/marker; echo made > made.txt";
            found.push(match attack(sim, nobody, d, &a, cmd) {
                None => "refused",
                Some(_) => {
                    let made = std::fs::read_to_string(d.ws.join("made.txt")).ok();
                    assert_eq!(
                        made.as_deref(),
                        (mode == "workspace-write").then_some("made\n"),
                        "{w}: {mode}"
                    );
                    held(!d.marker().exists())
                }
            });
        }
        assert_eq!(found[0], found[1], "{w}");
        assert_eq!(found[0], cell(sim, FEATURES[2]), "{w}");
    });
}

#[test]
fn deny_read_holds_outside_the_writable_roots_and_is_refused_inside() {
    each("deny-read", |sim, nobody, d| {
        let w = who(sim, nobody);
        let file = d.outside.join("in.txt");
        let file = file.to_str().unwrap();
        let cat_out = format!("echo ran-$DCJAIL_BACKEND; cat {file}; echo done");
        let cat_in = "echo ran-$DCJAIL_BACKEND; cat secret.txt; echo done";
        for (f, cmd, secret) in [
            (file, cat_out.as_str(), "host file\n"),
            ("secret.txt", cat_in, "s3cret\n"),
        ] {
            let o = jailed(
                sim,
                nobody,
                d,
                &["--no-sandbox", "--deny-read", f, "--", "sh", "-c", cmd],
            );
            assert!(
                out(&o).ends_with(&format!("{secret}done\n")),
                "{w}: control: {}",
                text(&o)
            );
        }
        let a = [
            "--sandbox-mode",
            "workspace-write",
            "--no-protect-defaults",
            "--deny-read",
            file,
        ];
        let found = match attack(sim, nobody, d, &a, &cat_out) {
            None => "refused",
            Some(s) => held(s == "done\n"),
        };
        assert_eq!(found, cell(sim, FEATURES[3]), "{w}");
        let a = [
            "--sandbox-mode",
            "workspace-write",
            "--no-protect-defaults",
            "--deny-read",
            "secret.txt",
        ];
        let found = match attack(sim, nobody, d, &a, cat_in) {
            None => "refused",
            Some(s) => held(s == "done\n"),
        };
        assert_eq!(found, cell(sim, FEATURES[4]), "{w}");
    });
}

#[test]
fn protected_paths_are_refused_where_only_bwrap_holds_them() {
    each("protected", |sim, nobody, d| {
        let w = who(sim, nobody);
        std::fs::create_dir(d.ws.join(".git")).unwrap();
        std::fs::write(d.ws.join(".git/config"), "[core]\n").unwrap();
        if nobody {
            let ok = Command::new("chown")
                .args(["-R", "65534:65534"])
                .arg(d.ws.join(".git"))
                .status()
                .unwrap()
                .success();
            assert!(ok);
        }
        let cmd = "echo ran-$DCJAIL_BACKEND; echo x >> .git/config; cat .git/config";
        let o = jailed(sim, nobody, d, &["--no-sandbox", "--", "sh", "-c", cmd]);
        assert!(
            out(&o).ends_with("[core]\nx\n"),
            "{w}: control: {}",
            text(&o)
        );
        std::fs::write(d.ws.join(".git/config"), "[core]\n").unwrap();
        let found = match attack(sim, nobody, d, &["--sandbox-mode", "workspace-write"], cmd) {
            None => "refused",
            Some(s) => held(s == "[core]\n"),
        };
        assert_eq!(found, cell(sim, FEATURES[5]), "{w}");
    });
}

/// A python3 one-liner that prints `connected` when it reaches `addr`.
#[test]
fn the_host_loopback_and_host_sockets_stay_out_of_reach() {
    if !scratch::need("python3") {
        return;
    }
    each("network", |sim, nobody, d| {
        let w = who(sim, nobody);
        let host = HostListeners::new(&format!("ct-{}-{}", sim as u8, nobody as u8));
        let (tcp_py, unix_py) = (host.tcp_py.clone(), host.unix_py.clone());
        let mut none = Vec::new();
        let mut allowlist = Vec::new();
        for py in [&tcp_py, &unix_py] {
            let cmd = "echo ran-$DCJAIL_BACKEND; exec python3 -c \"$0\"";
            let o = jailed(sim, nobody, d, &["--no-sandbox", "--", "sh", "-c", cmd, py]);
            assert!(
                out(&o).ends_with("\nconnected\n"),
                "{w}: control: {}",
                text(&o)
            );
            let a = ["--sandbox-mode", "workspace-write", "--no-protect-defaults"];
            none.push(match attack_with(sim, nobody, d, &a, cmd, &[py]) {
                None => "refused",
                Some(s) => held(s.starts_with("refused ")),
            });
            let a = [
                "--sandbox-mode",
                "workspace-write",
                "--no-protect-defaults",
                "--allow-domain",
                "example.com",
            ];
            allowlist.push(match attack_with(sim, nobody, d, &a, cmd, &[py]) {
                None => "refused",
                Some(s) => held(s.starts_with("refused ")),
            });
        }
        drop(host);
        assert_eq!(none, [cell(sim, FEATURES[6]); 2], "{w}");
        assert_eq!(allowlist, [cell(sim, FEATURES[7]); 2], "{w}");
    });
}

/// The pids of processes whose command line is exactly `argv`.
fn pids_running(argv: &[&str]) -> Vec<i32> {
    let want = argv.join("\0") + "\0";
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c == want.as_bytes()))
        .collect()
}

/// Waits (bounded) for a process running `argv`, kills what it finds.
fn find_and_kill(argv: &[&str], wait: bool) -> usize {
    let mut left = Vec::new();
    for _ in 0..if wait { 100 } else { 1 } {
        left = pids_running(argv);
        if !left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for p in &left {
        // SAFETY: a process this test started.
        unsafe { libc::kill(*p, libc::SIGKILL) };
    }
    left.len()
}

#[test]
fn nothing_the_command_started_outlives_dcjail() {
    each("outlives", |sim, nobody, d| {
        let w = who(sim, nobody);
        // Numbers no other test sleeps for, so the search finds only ours.
        let nap = format!("{}", 87_000 + sim as u32 * 10 + nobody as u32);
        let other = format!("{nap}5");
        let daemon = |nap: &str| {
            format!("echo ran-$DCJAIL_BACKEND; setsid sleep {nap} >/dev/null 2>&1 & echo started")
        };
        let o = jailed(
            sim,
            nobody,
            d,
            &["--no-sandbox", "--", "sh", "-c", &daemon(&other)],
        );
        assert!(out(&o).ends_with("started\n"), "{w}: control: {}", text(&o));
        assert_eq!(
            find_and_kill(&["sleep", &other], true),
            1,
            "{w}: control: the daemon did not run"
        );
        let found = match attack(sim, nobody, d, &[], &daemon(&nap)) {
            None => "refused",
            Some(s) => {
                assert_eq!(s, "started\n", "{w}");
                held(find_and_kill(&["sleep", &nap], false) == 0)
            }
        };
        assert_eq!(found, cell(sim, FEATURES[8]), "{w}");
    });
}

/// docs/containers.md's table, as these tests find it.
fn rendered() -> String {
    let mut s = format!("| environment | {} |\n", FEATURES.join(" | "));
    s += &format!("|{}\n", "---|".repeat(FEATURES.len() + 1));
    for (sim, row) in SIMS.iter().zip(TABLE) {
        s += &format!("| {} | {} |\n", sim.row(), row.join(" | "));
    }
    s
}

#[test]
fn the_docs_table_is_what_these_tests_find() {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/containers.md"))
        .unwrap();
    let want = rendered();
    assert!(
        page.contains(&want),
        "docs/containers.md should hold this table:\n{want}"
    );
}

/// The filters refuse what they say, and only that: a raw `clone` asking
/// for a user namespace is refused where user namespaces are (the path
/// libc takes after `clone3`'s ENOSYS), a plain one is not.
#[test]
fn the_filters_refuse_namespaces_by_clone_as_said() {
    if !scratch::need("python3") {
        return;
    }
    let py = |flags: u32| {
        format!(
            "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n\
             r = libc.syscall({}, {flags} | 17, 0, 0, 0, 0)\n\
             if r == 0:\n    os._exit(0)\n\
             if r > 0:\n    os.waitpid(r, 0); print('made')\n\
             else:\n    print('refused', ctypes.get_errno())",
            libc::SYS_clone
        )
    };
    let newuser = 0x1000_0000;
    for sim in SIMS {
        let d = Dir::new(
            &format!("containers-filters-{sim:?}-false-{}", std::process::id()),
            false,
        );
        let run = |flags: u32| {
            let o = jailed(
                sim,
                false,
                &d,
                &["--no-sandbox", "--", "python3", "-c", &py(flags)],
            );
            out(&o)
        };
        assert_eq!(run(0), "made\n", "{sim:?}: a plain clone");
        let want = if sim == Sim::NoMount {
            "made\n".to_string()
        } else {
            format!("refused {}\n", libc::EPERM)
        };
        assert_eq!(run(newuser), want, "{sim:?}: clone with CLONE_NEWUSER");
    }
}
