//! Environments with a layer missing, made for real on this machine by a
//! seccomp filter installed in front of dcjail (tests/support/filters.rs),
//! each run as root and as uid 65534:
//!
//! - without landlock: its three system calls answer ENOSYS (a kernel
//!   built without it, gVisor, some Firecracker and container kernels);
//! - without seccomp user notification: a filter with
//!   SECCOMP_FILTER_FLAG_NEW_LISTENER is refused with EINVAL (gVisor);
//! - without either;
//! - and, for the table's first column, none of that: this machine as it is.
//!
//! For each: what ran (the backend, `explain`'s `layers`), every feature
//! that ran attacked with its control (the same command unsandboxed does
//! the thing: writes outside the workspace, reads the denied file, reaches
//! the host's loopback and a host unix socket, makes a namespace), what
//! was refused with its exact words and nothing started (a marker the
//! same command writes unsandboxed never appears), and `doctor`.
//! `TABLE` is docs/backends.md's table of what holds where: each test
//! checks what it finds against its cells (`expect`), and
//! `the_docs_table_is_what_these_tests_find` keeps the page equal to it.
#![cfg(target_os = "linux")]

#[path = "support/filters.rs"]
mod filters;
#[path = "support/scratch.rs"]
mod scratch;

use filters::{refusing, with_filter, Dir, HostListeners, Refuse};
use scratch::exe as bin;
use scratch::text;
use std::path::Path;
use std::process::{Command, Output, Stdio};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Env {
    /// Every layer: no filter in front of dcjail.
    All,
    NoLandlock,
    NoListener,
    Neither,
}

/// In the table's column order.
const ENVS: [Env; 4] = [Env::All, Env::NoLandlock, Env::NoListener, Env::Neither];

impl Env {
    fn refuse(self) -> Refuse {
        Refuse {
            landlock: matches!(self, Env::NoLandlock | Env::Neither),
            listener: matches!(self, Env::NoListener | Env::Neither),
        }
    }
    /// The table's column header.
    fn column(self) -> &'static str {
        match self {
            Env::All => "all layers",
            Env::NoLandlock => "without landlock",
            Env::NoListener => "without seccomp user notification",
            Env::Neither => "without either",
        }
    }
    /// Installs the filter that makes this environment in `c` (none for
    /// `All`).
    fn apply(self, c: &mut Command) {
        if self != Env::All {
            with_filter(c, refusing(self.refuse()));
        }
    }
    /// The layers `explain` says are missing.
    fn missing(self) -> Vec<&'static str> {
        let r = self.refuse();
        let mut v = Vec::new();
        if r.landlock {
            v.push("landlock");
        }
        if r.listener {
            v.push("seccomp-notify");
        }
        v
    }
}

/// docs/backends.md's table of what holds where: per feature, one cell
/// per `ENVS`. Rows marked † are checked by unit tests only; every other
/// cell is what a test below finds (`expect`).
const TABLE: [(&str, [&str; 4]); 18] = [
    (
        r#"`read-only`: nothing written, outside or in the workspace"#,
        [
            r#"held"#,
            r#"held (read-only mounts)"#,
            r#"held"#,
            r#"held"#,
        ],
    ),
    (
        r#"`workspace-write`: writes only in the writable roots"#,
        [r#"held"#, r#"held (mounts)"#, r#"held"#, r#"held"#],
    ),
    (
        r#"protected paths that exist, `deny_write`"#,
        [
            r#"held"#,
            r#"held (read-only mounts)"#,
            r#"held"#,
            r#"held"#,
        ],
    ),
    (
        r#"missing protected names kept uncreatable (`protect_defaults`)"#,
        [
            r#"held"#,
            r#"held (broker)"#,
            r#"**refused**: create it, or `protect_defaults = false`"#,
            r#"**refused**"#,
        ],
    ),
    (
        r#"no new repository in a worktree (`protect_defaults`) †"#,
        [
            r#"held"#,
            r#"held (broker)"#,
            r#"**refused**: `protect_defaults = false`, or `read-only`"#,
            r#"**refused**"#,
        ],
    ),
    (
        r#"`deny_read`"#,
        [
            r#"held"#,
            r#"held (masks); a denied name absent at launch has no mask, said under `narrowed` (a file the host makes there during the run is readable)"#,
            r#"held"#,
            r#"held, as without landlock"#,
        ],
    ),
    (
        r#"network `none` and `allowlist`: the host's loopback out of reach"#,
        [
            r#"held"#,
            r#"held (own network namespace)"#,
            r#"held"#,
            r#"held"#,
        ],
    ),
    (
        r#"network `full`"#,
        [
            r#"held"#,
            r#"**refused**: the host's abstract unix sockets; use `none` or `allowlist`"#,
            r#"held"#,
            r#"**refused**"#,
        ],
    ),
    (
        r#"the host's unix sockets out of reach"#,
        [
            r#"held (broker)"#,
            r#"held (broker)"#,
            r#"held narrower: no unix socket at all but `socketpair`"#,
            r#"narrower"#,
        ],
    ),
    (
        r#"`allow_unix_sockets` naming sockets"#,
        [
            r#"held"#,
            r#"**refused**"#,
            r#"**refused**"#,
            r#"**refused**"#,
        ],
    ),
    (
        r#"new namespaces, ptrace, mount, bpf, io_uring… refused"#,
        [r#"held"#, r#"held (seccomp)"#, r#"held"#, r#"held"#],
    ),
    (
        r#"the sandbox's other processes (init, broker) out of reach through `/proc/PID/mem`"#,
        [
            r#"held (landlock domain)"#,
            r#"held (undumpable init, `--as-pid-1`)"#,
            r#"held"#,
            r#"held"#,
        ],
    ),
    (
        r#"nothing the command started outlives dcjail"#,
        [r#"held"#, r#"held (pid namespace)"#, r#"held"#, r#"held"#],
    ),
    (
        r#"stdin/stdout/stderr open for reading on a host file outside the writable roots"#,
        [
            r#"held"#,
            r#"**refused**: pass it through a pipe (`cat FILE \| dcjail …`)"#,
            r#"held"#,
            r#"**refused**"#,
        ],
    ),
    (
        r#"metadata changes (chmod, chown, times, xattrs) inside the writable roots"#,
        [
            r#"allowed"#,
            r#"allowed"#,
            r#"narrower: refused everywhere (EROFS), `touch` included"#,
            r#"narrower"#,
        ],
    ),
    (
        r#"a hard link between two writable roots †"#,
        [
            r#"works (broker)"#,
            r#"works"#,
            r#"narrower: EXDEV"#,
            r#"narrower"#,
        ],
    ),
    (
        r#"denials recorded (`--report`, `--events`, the summary line) †"#,
        [
            r#"yes"#,
            r#"yes"#,
            r#"narrower: none recorded"#,
            r#"narrower"#,
        ],
    ),
    (
        r#"`--backend landlock` (`workspace-write` without protected paths)"#,
        [
            r#"runs"#,
            r#"refused"#,
            r#"runs, narrower as above"#,
            r#"refused"#,
        ],
    ),
];

/// The rows the tests below check, by index into `TABLE`.
const READ_ONLY: usize = 0;
const WORKSPACE_WRITE: usize = 1;
const PROTECTED_EXISTING: usize = 2;
const PROTECTED_MISSING: usize = 3;
const DENY_READ: usize = 5;
const NET_NONE_ALLOWLIST: usize = 6;
const NET_FULL: usize = 7;
const HOST_UNIX_SOCKETS: usize = 8;
const NAMED_SOCKETS: usize = 9;
const NAMESPACES: usize = 10;
const PROC_MEM: usize = 11;
const OUTLIVES: usize = 12;
const STDIO_HOST_FILE: usize = 13;
const METADATA: usize = 14;
const LANDLOCK_BACKEND: usize = 17;

/// What a cell says, in one word: held, refused, narrower, allowed
/// (allowed, works, yes) or runs.
fn expect(row: usize, env: Env) -> &'static str {
    let col = ENVS.iter().position(|e| *e == env).unwrap();
    let c = TABLE[row].1[col];
    for (start, word) in [
        ("held narrower", "narrower"),
        ("held", "held"),
        ("**refused**", "refused"),
        ("narrower", "narrower"),
        ("allowed", "allowed"),
        ("works", "allowed"),
        ("yes", "allowed"),
        ("runs", "runs"),
        ("refused", "refused"),
    ] {
        if c.starts_with(start) {
            return word;
        }
    }
    panic!("a cell of an unknown kind: {c}")
}

/// docs/backends.md's table, as `TABLE` holds it.
fn rendered() -> String {
    let mut s = format!("| feature | {} |\n", ENVS.map(Env::column).join(" | "));
    s += &format!("|{}\n", "---|".repeat(ENVS.len() + 1));
    for (feature, cells) in TABLE {
        s += &format!("| {feature} | {} |\n", cells.join(" | "));
    }
    s
}

#[test]
fn the_docs_table_is_what_these_tests_find() {
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/backends.md")).unwrap();
    let want = rendered();
    assert!(
        page.contains(&want),
        "docs/backends.md should hold this table:\n{want}"
    );
}

/// How the missing layers are named in refusals.
const NO_LANDLOCK: &str =
    "needs landlock, which is missing here (landlock_create_ruleset failed with ENOSYS under a seccomp filter";
const NO_LISTENER: &str = "needs seccomp user notification, which is missing here (seccomp user notification is refused here: installing a filter with SECCOMP_FILTER_FLAG_NEW_LISTENER failed with EINVAL under the seccomp filter dcjail runs in";

/// dcjail with `args` in the workspace, inside `env`, as root or 65534;
/// stdin from `stdin` or closed.
fn jailed(env: Env, nobody: bool, d: &Dir, args: &[&str], stdin: Option<&Path>) -> Output {
    let mut c = scratch::user_command(nobody, bin());
    env.apply(&mut c);
    c.args(args)
        .current_dir(&d.ws)
        .env_remove("DCJAIL_POLICY")
        .env("HOME", &d.root)
        .stdin(match stdin {
            Some(p) => Stdio::from(std::fs::File::open(p).unwrap()),
            None => Stdio::null(),
        });
    scratch::output_within(c, 60)
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(o)))
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
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

/// The command of an attack, run unsandboxed in the same environment, as
/// the same user: it does write the marker.
fn control_writes_outside(env: Env, nobody: bool, d: &Dir) {
    let o = jailed(
        env,
        nobody,
        d,
        &["--no-sandbox", "--", "sh", "-c", ESCAPE],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(d.marker()).unwrap(),
        "escaped\n",
        "control"
    );
    std::fs::remove_file(d.marker()).unwrap();
}

fn who(env: Env, nobody: bool) -> String {
    format!("{env:?} as {}", if nobody { "65534" } else { "root" })
}

/// `f` in each environment, as each user, in a fresh `Dir` tagged `tag`.
fn each(tag: &str, mut f: impl FnMut(Env, bool, &Dir)) {
    if !scratch::bwrap_works() {
        return;
    }
    for env in ENVS {
        for &nobody in scratch::users() {
            let d = Dir::new(
                &format!("degraded-{tag}-{env:?}-{nobody}-{}", std::process::id()),
                nobody,
            );
            f(env, nobody, &d);
        }
    }
}

#[test]
fn each_environment_runs_bwrap_with_the_layers_it_has_and_says_which() {
    each("each-environment-runs-bwrap", |env, nobody, d| {
        let w = who(env, nobody);
        let a = [
            "explain",
            "--sandbox-mode",
            "workspace-write",
            "--no-protect-defaults",
            "--",
            "true",
        ];
        let o = jailed(env, nobody, d, &a, None);
        assert_eq!(o.status.code(), Some(0), "{w}: {}", text(&o));
        let v = json(&o);
        assert_eq!(v["backend"], "bwrap", "{w}: {v}");
        let l = &v["layers"];
        let missing: Vec<&str> = l["missing"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["layer"].as_str().unwrap())
            .collect();
        assert_eq!(missing, env.missing(), "{w}: {l}");
        let on: Vec<&str> = l["in_force"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap())
            .collect();
        assert!(
            on.starts_with(&["namespaces", "mounts"]) && on.contains(&"seccomp"),
            "{w}: {l}"
        );
        assert_eq!(on.contains(&"landlock"), !env.refuse().landlock, "{w}: {l}");
        assert_eq!(
            on.contains(&"seccomp-notify"),
            !env.refuse().listener,
            "{w}: {l}"
        );
        let narrowed = l["narrowed"].to_string();
        if env.refuse().listener {
            assert!(narrowed.contains("metadata changes"), "{w}: {l}");
            assert!(narrowed.contains("unix sockets: none"), "{w}: {l}");
        } else {
            assert_eq!(l["narrowed"], serde_json::json!([]), "{w}: {l}");
        }
        if env.refuse().landlock {
            let notes = v["launch"]["notes"].to_string();
            assert!(
                notes.contains("without landlock (see `layers`)")
                    && !notes.contains("landlock layer inside"),
                "{w}: {notes}"
            );
            assert!(
                v["launch"]["argv"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|a| a == "--as-pid-1"),
                "{w}"
            );
            let ll = &v["launch"]["stage2"]["layer"]["landlock_abi"];
            assert!(
                ll["not_applied"]
                    .as_str()
                    .unwrap()
                    .contains("landlock_create_ruleset failed with ENOSYS"),
                "{w}: {ll}"
            );
        }
        // The report of a run carries the same.
        let report = d.outside.join("report.json");
        let o = jailed(
            env,
            nobody,
            d,
            &[
                "--report",
                report.to_str().unwrap(),
                "--",
                "sh",
                "-c",
                "echo ran",
            ],
            None,
        );
        assert_eq!(o.status.code(), Some(0), "{w}: {}", text(&o));
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        assert_eq!(r["backend"], "bwrap", "{w}");
        let missing: Vec<&str> = r["layers"]["missing"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["layer"].as_str().unwrap())
            .collect();
        assert_eq!(missing, env.missing(), "{w}: {r}");
    });
}

#[test]
fn read_only_holds_without_the_missing_layers() {
    each("read-only-holds-without", |env, nobody, d| {
        let w = who(env, nobody);
        control_writes_outside(env, nobody, d);
        let o = jailed(env, nobody, d, &["--", "sh", "-c", ESCAPE], None);
        assert_eq!(out(&o), "ran-bwrap\n", "{w}: {}", text(&o));
        assert!(!d.marker().exists(), "{w}: wrote outside in read-only");
        // Not in the workspace either.
        let o = jailed(
            env,
            nobody,
            d,
            &["--", "sh", "-c", "echo ran; echo x > made"],
            None,
        );
        assert_eq!(out(&o), "ran\n", "{w}: {}", text(&o));
        assert!(!d.ws.join("made").exists(), "{w}: wrote in read-only");
        assert_eq!(expect(READ_ONLY, env), "held", "{w}");
    });
}

#[test]
fn workspace_write_holds_its_roots_without_the_missing_layers() {
    each("workspace-write-holds-its", |env, nobody, d| {
        let w = who(env, nobody);
        control_writes_outside(env, nobody, d);
        let cmd = format!("echo made > made.txt; {ESCAPE}");
        let o = jailed(
            env,
            nobody,
            d,
            &[
                "--sandbox-mode",
                "workspace-write",
                "--no-protect-defaults",
                "--",
                "sh",
                "-c",
                &cmd,
            ],
            None,
        );
        assert_eq!(out(&o), "ran-bwrap\n", "{w}: {}", text(&o));
        assert_eq!(
            std::fs::read_to_string(d.ws.join("made.txt")).unwrap(),
            "made\n",
            "{w}"
        );
        assert!(!d.marker().exists(), "{w}: wrote outside the workspace");
        assert_eq!(expect(WORKSPACE_WRITE, env), "held", "{w}");
        // A file the policy keeps read-only (deny_write), written to:
        // unsandboxed it changes, here it does not.
        let secret = d.ws.join("secret.txt");
        let append = ["--deny-write", "secret.txt", "--", "sh", "-c"];
        let mut a = vec!["--no-sandbox"];
        a.extend_from_slice(&append);
        a.push("echo x >> secret.txt");
        jailed(env, nobody, d, &a, None);
        assert_eq!(
            std::fs::read_to_string(&secret).unwrap(),
            "s3cret\nx\n",
            "{w}: control"
        );
        std::fs::write(&secret, "s3cret\n").unwrap();
        let mut a = vec!["--sandbox-mode", "workspace-write", "--no-protect-defaults"];
        a.extend_from_slice(&append);
        a.push("echo ran; echo x >> secret.txt");
        let o = jailed(env, nobody, d, &a, None);
        assert_eq!(out(&o), "ran\n", "{w}: {}", text(&o));
        let found = held(std::fs::read_to_string(&secret).unwrap() == "s3cret\n");
        assert_eq!(found, expect(PROTECTED_EXISTING, env), "{w}");
    });
}

/// A cell's word for an attack that failed (`true`) or worked.
fn held(v: bool) -> &'static str {
    if v {
        "held"
    } else {
        "broken"
    }
}

#[test]
fn deny_read_holds_without_the_missing_layers() {
    each("deny-read-holds-without", |env, nobody, d| {
        let w = who(env, nobody);
        let cat = ["--", "sh", "-c", "cat secret.txt; echo done"];
        let mut control = vec!["--no-sandbox", "--deny-read", "secret.txt"];
        control.extend_from_slice(&cat);
        let o = jailed(env, nobody, d, &control, None);
        assert_eq!(out(&o), "s3cret\ndone\n", "{w}: control: {}", text(&o));
        for mode in ["read-only", "workspace-write"] {
            let mut a = vec![
                "--sandbox-mode",
                mode,
                "--no-protect-defaults",
                "--deny-read",
                "secret.txt",
            ];
            a.extend_from_slice(&cat);
            let o = jailed(env, nobody, d, &a, None);
            assert_eq!(o.status.code(), Some(0), "{w}: {mode}: {}", text(&o));
            assert_eq!(out(&o), "done\n", "{w}: {mode}: {}", text(&o));
        }
        // A denied name absent at launch has no mount: said without landlock.
        let absent = d.outside.join("absent.txt");
        let a = [
            "explain",
            "--deny-read",
            absent.to_str().unwrap(),
            "--",
            "true",
        ];
        let v = json(&jailed(env, nobody, d, &a, None));
        let said = v["layers"]["narrowed"].to_string();
        assert_eq!(
            said.contains(&format!(
                "deny_read `{}` does not exist at launch",
                absent.display()
            )),
            env.refuse().landlock,
            "{w}: {v}"
        );
        assert_eq!(expect(DENY_READ, env), "held", "{w}");
    });
}

/// A python3 one-liner that prints `connected` when it reaches `addr`.
#[test]
fn the_network_and_host_sockets_stay_out_of_reach_without_the_missing_layers() {
    if !scratch::need("python3") {
        return;
    }
    each("the-network-and-host", |env, nobody, d| {
        let w = who(env, nobody);
        let host = HostListeners::new(&format!("dg-{}-{}", env as u8, nobody as u8));
        let (tcp_py, unix_py) = (host.tcp_py.clone(), host.unix_py.clone());
        for py in [&tcp_py, &unix_py] {
            let o = jailed(
                env,
                nobody,
                d,
                &["--no-sandbox", "--", "python3", "-c", py],
                None,
            );
            assert_eq!(out(&o), "connected\n", "{w}: control: {}", text(&o));
            // Network none, and the allowlist (only its proxy is reachable).
            for net in [&[][..], &["--allow-domain", "example.com"]] {
                let mut a = vec!["--sandbox-mode", "workspace-write", "--no-protect-defaults"];
                a.extend_from_slice(net);
                a.extend_from_slice(&["--", "python3", "-c", py]);
                let o = jailed(env, nobody, d, &a, None);
                assert_eq!(o.status.code(), Some(0), "{w}: {net:?}: {}", text(&o));
                assert!(
                    out(&o).starts_with("refused "),
                    "{w}: {net:?}: {py}: {}",
                    text(&o)
                );
            }
        }
        drop(host);
        assert_eq!(expect(NET_NONE_ALLOWLIST, env), "held", "{w}");
        let unix = expect(HOST_UNIX_SOCKETS, env);
        assert!(unix == "held" || unix == "narrower", "{w}: {unix}");
    });
}

#[test]
fn new_namespaces_stay_refused_without_the_missing_layers() {
    if !scratch::need("unshare") {
        return;
    }
    each("new-namespaces-stay-refused", |env, nobody, d| {
        let w = who(env, nobody);
        let cmd = ["--", "sh", "-c", "unshare --user true && echo made"];
        let mut control = vec!["--no-sandbox"];
        control.extend_from_slice(&cmd);
        let o = jailed(env, nobody, d, &control, None);
        assert_eq!(out(&o), "made\n", "{w}: control: {}", text(&o));
        let o = jailed(env, nobody, d, &cmd, None);
        assert_eq!(out(&o), "", "{w}: {}", text(&o));
        assert_ne!(o.status.code(), Some(0), "{w}: {}", text(&o));
        assert_eq!(expect(NAMESPACES, env), "held", "{w}");
    });
}

/// Where a broker takes the seccomp notifications, existing and missing
/// protected names hold; without one, the run is refused (its words are
/// checked in `without_a_broker_what_only_the_broker_holds_is_refused_by_name`).
#[test]
fn existing_and_missing_protected_paths_hold_under_the_broker() {
    each("existing-and-missing-protected", |env, nobody, d| {
        let w = who(env, nobody);
        let rc = d.ws.join(".bashrc");
        let cmd = "echo evil > .bashrc; echo evil > .envrc; echo ran";
        let control = |d: &Dir| {
            std::fs::write(&rc, "orig\n").unwrap();
            if nobody {
                assert!(Command::new("chown")
                    .args(["65534:65534"])
                    .arg(&rc)
                    .status()
                    .unwrap()
                    .success());
            }
            let o = jailed(
                env,
                nobody,
                d,
                &["--no-sandbox", "--", "sh", "-c", cmd],
                None,
            );
            assert_eq!(out(&o), "ran\n", "{w}: control");
            assert_eq!(std::fs::read_to_string(&rc).unwrap(), "evil\n");
            assert!(d.ws.join(".envrc").exists());
            std::fs::remove_file(d.ws.join(".envrc")).unwrap();
        };
        control(d);
        std::fs::write(&rc, "orig\n").unwrap();
        let o = jailed(
            env,
            nobody,
            d,
            &["--sandbox-mode", "workspace-write", "--", "sh", "-c", cmd],
            None,
        );
        if o.status.code() == Some(122) {
            refused_122(&o, d, &w);
            assert!(!d.ws.join(".envrc").exists(), "{w}: made a protected name");
            assert_eq!(expect(PROTECTED_MISSING, env), "refused", "{w}");
            return;
        }
        assert_eq!(out(&o), "ran\n", "{w}: {}", text(&o));
        assert_eq!(std::fs::read_to_string(&rc).unwrap(), "orig\n", "{w}");
        assert!(!d.ws.join(".envrc").exists(), "{w}: made a protected name");
        assert_eq!(expect(PROTECTED_MISSING, env), "held", "{w}");
        assert_eq!(expect(PROTECTED_EXISTING, env), "held", "{w}");
    });
}

/// A socket on stdin without landlock (Node.js starts its children with
/// socketpairs for piped stdio, so every Node-based agent hands dcjail
/// sockets): the run goes ahead with what the mounts hold — the attack on
/// a file outside still fails — and `layers.narrowed` says that a
/// descriptor the caller chose to send over it would reach a host file
/// past the mounts (only the process at the other end can send one).
#[test]
fn without_landlock_a_socket_on_stdin_runs_and_is_said() {
    each("without-landlock-socket-stdin", |env, nobody, d| {
        if !env.refuse().landlock {
            return;
        }
        let w = who(env, nobody);
        control_writes_outside(env, nobody, d);
        for explain in [false, true] {
            let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
            let mut a: Vec<&str> = if explain { vec!["explain"] } else { vec![] };
            a.extend([
                "--sandbox-mode",
                "workspace-write",
                "--no-protect-defaults",
                "--",
                "sh",
                "-c",
                ESCAPE,
            ]);
            let mut c = scratch::user_command(nobody, bin());
            env.apply(&mut c);
            c.args(&a)
                .current_dir(&d.ws)
                .env_remove("DCJAIL_POLICY")
                .env("HOME", &d.root)
                .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)));
            let o = scratch::output_within(c, 60);
            drop(ours);
            // The command runs (explain exits 0; the attack's shell exits
            // with its failed redirection's status).
            assert_eq!(o.status.code() == Some(0), explain, "{w}: {}", text(&o));
            assert!(!d.marker().exists(), "{w}: escaped with a socket on stdin");
            if explain {
                let l = json(&o)["layers"].clone();
                assert!(
                    l["narrowed"]
                        .to_string()
                        .contains("a standard descriptor is a socket"),
                    "{w}: {l}"
                );
            } else {
                assert_eq!(out(&o), "ran-bwrap\n", "{w}: {}", text(&o));
            }
        }
    });
}

#[test]
fn without_landlock_what_only_landlock_holds_is_refused_by_name() {
    each("without-landlock-what-only", |env, nobody, d| {
        if !env.refuse().landlock {
            return;
        }
        let w = who(env, nobody);
        control_writes_outside(env, nobody, d);
        let run = |extra: &[&str], stdin: Option<&Path>| {
            let mut a = vec!["--sandbox-mode", "workspace-write", "--no-protect-defaults"];
            a.extend_from_slice(extra);
            a.extend_from_slice(&["--", "sh", "-c", ESCAPE]);
            jailed(env, nobody, d, &a, stdin)
        };
        let err = refused_122(&run(&["--net", "full"], None), d, &w);
        assert!(
            err.contains(&format!("bwrap: network full {NO_LANDLOCK}")),
            "{w}: {err}"
        );
        assert!(
            err.contains("abstract unix sockets")
                && err.contains("use --net none or --net allowlist"),
            "{w}: {err}"
        );
        let input = d.outside.join("in.txt");
        let err = refused_122(&run(&[], Some(&input)), d, &w);
        assert!(
            err.contains(&format!(
                "bwrap: stdin open for reading on the host file `{}` outside the writable roots {NO_LANDLOCK}",
                input.display()
            )),
            "{w}: {err}"
        );
        assert!(err.contains("/proc/self/fd"), "{w}: {err}");
        // From inside the workspace it is no host file past the mounts.
        let o = run(&[], Some(&d.ws.join("secret.txt")));
        assert_eq!(out(&o), "ran-bwrap\n", "{w}: {}", text(&o));
        assert!(!d.marker().exists());
        let policy = d.root.join("sockets.toml");
        std::fs::write(
            &policy,
            format!(
                "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
                 [sandbox.network]\nallow_unix_sockets = [{:?}]\n",
                d.outside.join("s.sock").to_str().unwrap()
            ),
        )
        .unwrap();
        let o = jailed(
            env,
            nobody,
            d,
            &[
                "--policy",
                policy.to_str().unwrap(),
                "--",
                "sh",
                "-c",
                ESCAPE,
            ],
            None,
        );
        let err = refused_122(&o, d, &w);
        assert!(
            err.contains("the named unix socket `") && err.contains("(allow_unix_sockets) needs "),
            "{w}: {err}"
        );
        for row in [NET_FULL, STDIO_HOST_FILE, NAMED_SOCKETS] {
            assert_eq!(expect(row, env), "refused", "{w}: {}", TABLE[row].0);
        }
    });
}

#[test]
fn without_a_broker_what_only_the_broker_holds_is_refused_by_name() {
    each("without-a-broker-what", |env, nobody, d| {
        if !env.refuse().listener {
            return;
        }
        let w = who(env, nobody);
        control_writes_outside(env, nobody, d);
        let o = jailed(
            env,
            nobody,
            d,
            &[
                "--sandbox-mode",
                "workspace-write",
                "--",
                "sh",
                "-c",
                ESCAPE,
            ],
            None,
        );
        let err = refused_122(&o, d, &w);
        let ws = d.ws.display().to_string();
        assert!(
            err.contains(&format!("bwrap: the protected path `{ws}/")),
            "{w}: {err}"
        );
        assert!(
            err.contains(&format!(
                "missing protected names), and keeping it uncreatable {NO_LISTENER}"
            )),
            "{w}: {err}"
        );
        assert!(
            err.contains("): create it, or set protect_defaults = false (--no-protect-defaults)"),
            "{w}: {err}"
        );
        assert_eq!(expect(PROTECTED_MISSING, env), "refused", "{w}");
    });
}

#[test]
fn without_a_broker_metadata_is_refused_everywhere_and_said() {
    each("without-a-broker-metadata", |env, nobody, d| {
        let w = who(env, nobody);
        let cmd = "echo > f; chmod 700 f 2>/dev/null && echo changed; stat -c %a f";
        let o = jailed(
            env,
            nobody,
            d,
            &["--no-sandbox", "--", "sh", "-c", cmd],
            None,
        );
        assert_eq!(out(&o), "changed\n700\n", "{w}: control: {}", text(&o));
        std::fs::remove_file(d.ws.join("f")).unwrap();
        let o = jailed(
            env,
            nobody,
            d,
            &[
                "--sandbox-mode",
                "workspace-write",
                "--no-protect-defaults",
                "--",
                "sh",
                "-c",
                cmd,
            ],
            None,
        );
        assert_eq!(o.status.code(), Some(0), "{w}: {}", text(&o));
        let mode = out(&o);
        let found = if mode == "changed\n700\n" {
            "allowed"
        } else {
            assert!(!mode.contains("changed"), "{w}: {mode}");
            assert_ne!(mode, "700\n", "{w}");
            "narrower"
        };
        assert_eq!(found, expect(METADATA, env), "{w}");
    });
}

#[test]
fn the_landlock_backend_without_a_broker_holds_its_roots_and_says_what_is_narrower() {
    each("the-landlock-backend-without", |env, nobody, d| {
        let w = who(env, nobody);
        let cmd = format!("echo made > made.txt; chmod 700 made.txt && echo changed; {ESCAPE}");
        let args = [
            "--backend",
            "landlock",
            "--sandbox-mode",
            "workspace-write",
            "--no-protect-defaults",
        ];
        let mut explain = vec!["explain"];
        explain.extend_from_slice(&args);
        explain.extend_from_slice(&["--", "true"]);
        let o = jailed(env, nobody, d, &explain, None);
        let found = match o.status.code() {
            Some(0) => "runs",
            Some(122) => "refused",
            _ => panic!("{w}: {}", text(&o)),
        };
        assert_eq!(found, expect(LANDLOCK_BACKEND, env), "{w}");
        if env != Env::NoListener {
            return;
        }
        control_writes_outside(env, nobody, d);
        let v = json(&o);
        assert_eq!(v["backend"], "landlock", "{w}: {v}");
        assert_eq!(v["layers"]["missing"][0]["layer"], "seccomp-notify", "{w}");
        assert!(
            v["layers"]["narrowed"]
                .to_string()
                .contains("metadata changes"),
            "{w}: {v}"
        );
        let mut a = args.to_vec();
        a.extend_from_slice(&["--", "sh", "-c", &cmd]);
        let o = jailed(env, nobody, d, &a, None);
        assert_eq!(out(&o), "ran-landlock\n", "{w}: {}", text(&o));
        assert_eq!(
            std::fs::read_to_string(d.ws.join("made.txt")).unwrap(),
            "made\n"
        );
        assert!(!d.marker().exists(), "{w}: wrote outside the workspace");
    });
}

#[test]
fn doctor_says_which_layer_is_missing_and_what_still_holds() {
    each("doctor-says-which-layer", |env, nobody, d| {
        if env == Env::All {
            return;
        }
        let w = who(env, nobody);
        let o = jailed(env, nobody, d, &["doctor", "--json"], None);
        assert_eq!(o.status.code(), Some(0), "{w}: {}", text(&o));
        let v = json(&o);
        assert_eq!(v["status"], "degraded", "{w}: {v}");
        assert_eq!(v["auto"], "bwrap", "{w}: {v}");
        let check = |id: &str| {
            v["checks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["id"] == id)
                .unwrap()["status"]
                .as_str()
                .unwrap()
                .to_string()
        };
        let r = env.refuse();
        assert_eq!(
            check("landlock"),
            if r.landlock { "fail" } else { "ok" },
            "{w}"
        );
        assert_eq!(
            check("seccomp-notify"),
            if r.listener { "fail" } else { "ok" },
            "{w}"
        );
        let o = jailed(env, nobody, d, &["doctor"], None);
        let t = out(&o);
        assert!(t.contains("bwrap: works"), "{w}: {t}");
        assert_eq!(
            t.contains(
                "second stage: without landlock (landlock_create_ruleset failed with ENOSYS"
            ),
            r.landlock,
            "{w}: {t}"
        );
        assert_eq!(
            t.contains(
                "without seccomp user notification (seccomp user notification is refused here"
            ),
            r.listener,
            "{w}: {t}"
        );
        assert!(
            t.contains("dcjail runs here with bwrap, without "),
            "{w}: {t}"
        );
    });
}

/// Opens every other process's memory for writing, as `/proc/PID/mem`,
/// and says which it could: the way past a missing landlock domain to a
/// process of the sandbox without the command's seccomp filter.
const OTHERS_MEM: &str = "import os\n\
for p in sorted(int(x) for x in os.listdir('/proc') if x.isdigit()):\n    \
if p == os.getpid():\n        continue\n    \
try:\n        os.close(os.open('/proc/%d/mem' % p, os.O_RDWR)); print('opened', p)\n    \
except OSError:\n        pass\n\
print('done')";

#[test]
fn without_landlock_no_other_process_of_the_sandbox_is_reachable_through_proc() {
    if !scratch::need("python3") {
        return;
    }
    each("without-landlock-no-other", |env, nobody, d| {
        let w = who(env, nobody);
        // Control: in a plain bwrap sandbox its init is the command's, same
        // user, and dumpable: its memory opens for writing.
        let mut c = scratch::user_command(nobody, "bwrap");
        c.args([
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--unshare-user",
            "--unshare-pid",
            "--",
            "python3",
            "-c",
            OTHERS_MEM,
        ])
        .current_dir(&d.ws)
        .stdin(Stdio::null());
        let o = scratch::output_within(c, 60);
        assert!(
            out(&o).starts_with("opened 1\n"),
            "{w}: control: {}",
            text(&o)
        );
        for mode in [
            &["--sandbox-mode", "read-only"][..],
            &["--sandbox-mode", "workspace-write", "--no-protect-defaults"],
        ] {
            let mut a = mode.to_vec();
            a.extend_from_slice(&["--", "python3", "-c", OTHERS_MEM]);
            let o = jailed(env, nobody, d, &a, None);
            assert_eq!(out(&o), "done\n", "{w}: {mode:?}: {}", text(&o));
        }
        assert_eq!(expect(PROC_MEM, env), "held", "{w}");
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

#[test]
fn without_the_missing_layers_nothing_the_command_started_outlives_dcjail() {
    each("without-the-missing-layers-nothing", |env, nobody, d| {
        let w = who(env, nobody);
        // A number no other test sleeps for, so the search finds only ours.
        let nap = format!("{}", 86_000 + env as u32 * 10 + nobody as u32);
        let daemon = |nap: &str| format!("setsid sleep {nap} >/dev/null 2>&1 & echo started");
        // Control: started without dcjail, the daemon outlives its shell
        // (another number, so that its end cannot be confused with ours).
        let other = format!("{nap}5");
        let o = scratch::run_as(&d.ws, nobody, &["sh", "-c", &daemon(&other)]);
        assert_eq!(out(&o), "started\n", "{w}: control");
        let mut left = Vec::new();
        for _ in 0..100 {
            left = pids_running(&["sleep", &other]);
            if !left.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        for p in &left {
            // SAFETY: a process this test started.
            unsafe { libc::kill(*p, libc::SIGKILL) };
        }
        assert_eq!(left.len(), 1, "{w}: control: the daemon did not run");
        let o = jailed(env, nobody, d, &["--", "sh", "-c", &daemon(&nap)], None);
        assert_eq!(out(&o), "started\n", "{w}: {}", text(&o));
        let left = pids_running(&["sleep", &nap]);
        for p in &left {
            // SAFETY: a process this test started.
            unsafe { libc::kill(*p, libc::SIGKILL) };
        }
        assert!(left.is_empty(), "{w}: left running: {left:?}");
        assert_eq!(expect(OUTLIVES, env), "held", "{w}");
    });
}

#[test]
fn without_landlock_a_signal_to_dcjail_reaches_the_command() {
    use std::io::{BufRead, BufReader};
    each("without-landlock-a-signal", |env, nobody, d| {
        if !env.refuse().landlock {
            return;
        }
        let w = who(env, nobody);
        let mut c = scratch::user_command(nobody, bin());
        env.apply(&mut c);
        c.args([
            "--",
            "sh",
            "-c",
            "trap 'echo got-term; exit 3' TERM; echo ready; i=0; \
             while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; echo timed-out",
        ])
        .current_dir(&d.ws)
        .env_remove("DCJAIL_POLICY")
        .env("HOME", &d.root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        assert_eq!(lines.next().unwrap().unwrap(), "ready", "{w}");
        // SAFETY: a signal to the dcjail this test started.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        assert_eq!(lines.next().unwrap().unwrap(), "got-term", "{w}");
        let st = child.wait().unwrap();
        assert_eq!(st.code(), Some(3), "{w}");
    });
}

/// `dcjail hook codex` for a shell call `command` in the workspace, inside
/// `env`: the answer's reason. The hook reads the call on its stdin, a
/// file: that descriptor is the hook's, not the command's, and decides
/// nothing.
fn hook_reason(env: Env, nobody: bool, d: &Dir, command: &str) -> String {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hooks/codex-bash.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    v["cwd"] = d.ws.to_str().unwrap().into();
    v["tool_input"]["command"] = command.into();
    let input = d.outside.join("hook-input.json");
    std::fs::write(&input, v.to_string()).unwrap();
    let o = jailed(env, nobody, d, &["hook", "codex"], Some(&input));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = json(&o);
    v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap_or_else(|| panic!("{v}"))
        .to_string()
}

#[test]
fn the_hooks_answer_names_the_layers_in_force_and_the_refusal() {
    each("the-hooks-answer-names", |env, nobody, d| {
        let w = who(env, nobody);
        let why = hook_reason(env, nobody, d, "ls");
        if env == Env::All {
            assert!(
                why.starts_with("dcjail: runs sandboxed (bwrap backend")
                    && why.ends_with(
                        "; layers namespaces, mounts, landlock, seccomp, seccomp-notify)"
                    ),
                "{w}: {why}"
            );
        } else if env == Env::NoLandlock {
            assert!(
                why.starts_with("dcjail: runs sandboxed (bwrap backend"),
                "{w}: {why}"
            );
            assert!(
                why.ends_with(
                    "; layers namespaces, mounts, seccomp, seccomp-notify; without landlock)"
                ),
                "{w}: {why}"
            );
        } else {
            // Codex's calls are workspace-write with the protected paths:
            // without a broker, refused with the run's own reason.
            assert!(
                why.starts_with("dcjail: sandbox-unavailable: ") && why.contains(NO_LISTENER),
                "{w}: {why}"
            );
        }
    });
}

/// Where landlock is present (every layer, or only the broker missing),
/// what the table says only landlock holds is held, each attacked after its
/// control: under `--net full` an abstract unix socket of the host stays
/// out of reach (landlock's scope); a host file on stdin cannot be
/// written through /proc/self/fd/0; a policy naming a unix socket runs
/// with every layer and is refused without the broker.
#[test]
fn with_landlock_what_only_landlock_holds_is_held() {
    if !scratch::need("python3") {
        return;
    }
    each("with-landlock-what-only", |env, nobody, d| {
        if env.refuse().landlock {
            return;
        }
        let w = who(env, nobody);
        let name = format!("dcjail-degraded-{}-{}", std::process::id(), nobody as u8);
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let _host = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
        let py = filters::connect_py("AF_UNIX", &format!("'\\x00{name}'"));
        let o = jailed(
            env,
            nobody,
            d,
            &["--no-sandbox", "--", "python3", "-c", &py],
            None,
        );
        assert_eq!(out(&o), "connected\n", "{w}: control: {}", text(&o));
        let o = jailed(
            env,
            nobody,
            d,
            &["--net", "full", "--", "python3", "-c", &py],
            None,
        );
        assert_eq!(o.status.code(), Some(0), "{w}: {}", text(&o));
        let found = held(out(&o).starts_with("refused "));
        assert_eq!(found, expect(NET_FULL, env), "{w}: {}", text(&o));

        let input = d.outside.join("in.txt");
        let cmd = "echo ran; echo x >> /proc/self/fd/0";
        let o = jailed(
            env,
            nobody,
            d,
            &["--no-sandbox", "--", "sh", "-c", cmd],
            Some(&input),
        );
        assert_eq!(out(&o), "ran\n", "{w}: control: {}", text(&o));
        assert_eq!(
            std::fs::read_to_string(&input).unwrap(),
            "host file\nx\n",
            "{w}: control"
        );
        std::fs::write(&input, "host file\n").unwrap();
        let a = [
            "--sandbox-mode",
            "workspace-write",
            "--no-protect-defaults",
            "--",
            "sh",
            "-c",
            cmd,
        ];
        let o = jailed(env, nobody, d, &a, Some(&input));
        assert_eq!(out(&o), "ran\n", "{w}: {}", text(&o));
        let found = held(std::fs::read_to_string(&input).unwrap() == "host file\n");
        assert_eq!(found, expect(STDIO_HOST_FILE, env), "{w}");

        let policy = d.root.join("sockets.toml");
        std::fs::write(
            &policy,
            format!(
                "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
                 [sandbox.network]\nallow_unix_sockets = [{:?}]\n",
                d.outside.join("s.sock").to_str().unwrap()
            ),
        )
        .unwrap();
        let a = [
            "--policy",
            policy.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "echo ran",
        ];
        let o = jailed(env, nobody, d, &a, None);
        let found = if o.status.code() == Some(122) {
            let err = refused_122(&o, d, &w);
            assert!(err.contains("(allow_unix_sockets) needs "), "{w}: {err}");
            "refused"
        } else {
            assert_eq!(out(&o), "ran\n", "{w}: {}", text(&o));
            "held"
        };
        assert_eq!(found, expect(NAMED_SOCKETS, env), "{w}");
    });
}
