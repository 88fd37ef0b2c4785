//! dcjail inside the real Codex sandbox (`codex sandbox`, the pinned
//! @openai/codex from tests/agents, workspace-write, its network access off
//! unless a test turns it on), as root and as uid 65534.
//!
//! What Codex's sandbox leaves (measured with strace): its bwrap gives the
//! command user, pid, ipc and (network off) net namespaces of its own with
//! every capability dropped, then a seccomp filter that, network off,
//! refuses every socket but AF_UNIX and connect, bind, sendto and the like
//! on all of them. No landlock of its own; seccomp user notification is
//! free. So, inside it:
//!
//! - as uid 65534, dcjail's bwrap makes its namespaces but cannot set up a
//!   new network namespace's loopback (socket(AF_NETLINK) EPERM): `none`
//!   runs without one, held by the layer inside; the allowlist is refused;
//! - as root, every capability is gone, and a new user namespace may not
//!   map uid 0 without CAP_SETFCAP: bwrap is refused naming that, `auto`
//!   runs landlock, and what only bwrap holds (protected paths inside the
//!   workspace) is refused.
//!
//! Each attack runs first inside Codex's sandbox alone (the control: the
//! effect happens there), then with dcjail inside it, where the command
//! runs and the effect does not happen. Real work (git, a C build) is
//! compared with the same run without the inner dcjail.
#![cfg(target_os = "linux")]

#[path = "support/agents.rs"]
mod agents;
#[path = "support/filters.rs"]
mod filters;
#[path = "support/scratch.rs"]
mod scratch;

use agents::{agent_bin, Agent};
use filters::{no_netlink, with_filter, HostListeners};
use scratch::exe as bin;
use scratch::text;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A scratch root: `ws` (Codex's workspace, its writable root) holding
/// `sub` (dcjail's workspace, a git repository with a commit, an existing
/// `.bashrc`, a secret and a C file); HOME and CODEX_HOME inside the root;
/// owned by 65534 for the unprivileged runs.
struct Tree {
    _dir: scratch::Dir,
    root: PathBuf,
    ws: PathBuf,
    sub: PathBuf,
}

impl Tree {
    fn new(tag: &str, nobody: bool) -> Tree {
        let dir = scratch::Dir::new(&format!("agents-env-{tag}-{nobody}"));
        let root = dir.path().to_path_buf();
        let ws = root.join("ws");
        let sub = ws.join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(root.join("codex-home")).unwrap();
        std::fs::write(sub.join(".bashrc"), "orig\n").unwrap();
        std::fs::write(sub.join("secret.txt"), "s3cret\n").unwrap();
        std::fs::write(
            sub.join("hello.c"),
            "#include <stdio.h>\nint main(void) { puts(\"hello\"); return 0; }\n",
        )
        .unwrap();
        let git = |args: &[&str]| {
            let ok = Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@e"])
                .args(args)
                .current_dir(&sub)
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        git(&["add", "hello.c"]);
        git(&["commit", "-qm", "one"]);
        if nobody {
            let ok = Command::new("chown")
                .args(["-R", "65534:65534"])
                .arg(&root)
                .status()
                .unwrap()
                .success();
            assert!(ok);
        }
        Tree {
            _dir: dir,
            root,
            ws,
            sub,
        }
    }
}

/// Codex's network access: off (its default), or on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Net {
    Off,
    On,
}

/// `argv` inside `codex sandbox` (workspace-write: Codex's writable root
/// is its cwd, `ws`), run in `cwd` (`env -C`), as root or 65534.
fn in_codex(t: &Tree, net: Net, nobody: bool, cwd: &Path, argv: &[&str]) -> Output {
    let codex = agent_bin(Agent::Codex);
    let mut c = scratch::user_command(nobody, &codex);
    // /tmp is left out of Codex's writable roots: Codex makes an empty
    // `.git` in each writable root that has none, as a mount target, and
    // leaves it there; /tmp/.git would then outlive the test (and make
    // /tmp look like a repository to git-aware tools, dcjail among them).
    c.args([
        "sandbox",
        "-c",
        "sandbox_mode=workspace-write",
        "-c",
        "sandbox_workspace_write.exclude_slash_tmp=true",
    ]);
    if net == Net::On {
        c.args(["-c", "sandbox_workspace_write.network_access=true"]);
    }
    c.args(["--", "env", "-C"])
        .arg(cwd)
        .args(argv)
        .current_dir(&t.ws)
        .env_remove("DCJAIL_POLICY")
        .env("HOME", &t.root)
        .env("CODEX_HOME", t.root.join("codex-home"))
        .env("PATH", agents::SYS_PATH)
        .stdin(std::process::Stdio::null());
    scratch::output_within(c, 120)
}

/// dcjail with `args`, then `sh -c script`, inside Codex's sandbox in `sub`.
fn jailed(t: &Tree, net: Net, nobody: bool, args: &[&str], script: &str) -> Output {
    let mut argv = vec![bin()];
    argv.extend_from_slice(args);
    argv.extend_from_slice(&["--", "sh", "-c", script]);
    in_codex(t, net, nobody, &t.sub, &argv)
}

/// `sh -c script` inside Codex's sandbox alone, in `sub`: the control.
fn bare(t: &Tree, net: Net, nobody: bool, script: &str) -> Output {
    in_codex(t, net, nobody, &t.sub, &["sh", "-c", script])
}

fn ready() -> bool {
    let _ = agent_bin(Agent::Codex);
    scratch::bwrap_works() && scratch::need("git") && scratch::need("setpriv")
}

fn who(nobody: bool) -> &'static str {
    if nobody {
        "65534"
    } else {
        "root"
    }
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The one refusal line of a 122, and that nothing of the command ran.
fn refused(o: &Output, what: &str) -> String {
    assert_eq!(o.status.code(), Some(122), "{what}: {}", text(o));
    assert!(o.stdout.is_empty(), "{what}: {}", text(o));
    let e = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(e.lines().count(), 1, "{what}: {e}");
    e
}

const ROOT_BWRAP: &str = "bwrap: uid 0 without CAP_SETFCAP cannot map itself into a new user \
    namespace (Linux 5.12 and later ask for that capability), so bubblewrap cannot set up its uid \
    map (dcjail runs inside Codex's sandbox with its network access off \
    (CODEX_SANDBOX_NETWORK_DISABLED=1)); fix: run dcjail as a user other than root (start Codex \
    as that user), or use --backend landlock, which needs no namespace";
const NO_NETNS: &str = "a seccomp filter refuses NETLINK_ROUTE sockets (socket(AF_NETLINK) \
    failed with EPERM), over which bubblewrap sets up a new network namespace's loopback; dcjail \
    runs inside Codex's sandbox with its network access off (CODEX_SANDBOX_NETWORK_DISABLED=1)";

const NPD: &[&str] = &["--sandbox-mode", "workspace-write", "--no-protect-defaults"];
const WW: &[&str] = &["--sandbox-mode", "workspace-write"];

#[test]
fn inside_codex_each_mode_runs_with_the_backend_it_can_or_is_refused_naming_why() {
    if !ready() {
        return;
    }
    let say = "echo ran-$DCJAIL_BACKEND";
    for &nobody in scratch::users() {
        let w = who(nobody);
        let t = Tree::new("modes", nobody);
        // bwrap as 65534; landlock as root, whose bwrap cannot map uid 0.
        let auto = if nobody {
            "ran-bwrap\n"
        } else {
            "ran-landlock\n"
        };
        for args in [&[][..], NPD, &["--backend", "landlock"], &["--net", "full"]] {
            let o = jailed(&t, Net::Off, nobody, args, say);
            let want = if args.contains(&"landlock") {
                "ran-landlock\n"
            } else {
                auto
            };
            assert_eq!(out(&o), want, "{w} {args:?}: {}", text(&o));
        }
        let ww = jailed(&t, Net::Off, nobody, WW, say);
        let bw = jailed(&t, Net::Off, nobody, &["--backend", "bwrap"], say);
        let allow = jailed(
            &t,
            Net::Off,
            nobody,
            &["--allow-domain", "example.com"],
            say,
        );
        if nobody {
            assert_eq!(out(&ww), "ran-bwrap\n", "{w}: {}", text(&ww));
            assert_eq!(out(&bw), "ran-bwrap\n", "{w}: {}", text(&bw));
            assert_eq!(
                refused(&allow, "allowlist"),
                format!(
                    "dcjail: sandbox-unavailable: cannot enforce this policy here; bwrap: the \
                     network allowlist (the command reaches its proxy inside a network namespace \
                     of its own) needs a network namespace of its own, which is missing here \
                     ({NO_NETNS}): turn Codex's network access on \
                     (sandbox_workspace_write.network_access = true in its config.toml, or \
                     `codex sandbox -c sandbox_workspace_write.network_access=true`), or use \
                     --net none; landlock: landlock filters TCP connect by port, not by address, \
                     so a direct connection to another host on the proxy's port would not fail; \
                     the network allowlist needs the bwrap backend\n"
                )
            );
            // What ran says which layer it ran without, and what holds.
            let o = in_codex(
                &t,
                Net::Off,
                nobody,
                &t.sub,
                &[
                    bin(),
                    "explain",
                    "--sandbox-mode",
                    "workspace-write",
                    "--",
                    "true",
                ],
            );
            let v: serde_json::Value =
                serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
            assert_eq!(v["backend"], "bwrap", "{v}");
            assert_eq!(
                v["layers"]["in_force"],
                serde_json::json!([
                    "namespaces",
                    "mounts",
                    "landlock",
                    "seccomp",
                    "seccomp-notify"
                ]),
                "{v}"
            );
            assert_eq!(
                v["layers"]["missing"],
                serde_json::json!([{ "layer": "network-namespace", "why": NO_NETNS }]),
                "{v}"
            );
            assert!(
                !v["launch"]["argv"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|a| a == "--unshare-net"),
                "{v}"
            );
            let o = in_codex(&t, Net::Off, nobody, &t.sub, &[bin(), "doctor"]);
            let d = out(&o);
            assert!(
                d.contains(&format!(
                    "network-namespace (fail): {NO_NETNS}: under bwrap"
                )),
                "{}",
                text(&o)
            );
            assert!(d.contains("bwrap: works"), "{d}");
        } else {
            let d = t.sub.display();
            assert_eq!(
                refused(&ww, "workspace-write"),
                format!(
                    "dcjail: sandbox-unavailable: cannot enforce this policy here; {ROOT_BWRAP}; \
                     landlock: landlock cannot keep the protected path `{d}/.bashrc` (`.bashrc` \
                     of the protected table, run by bash, every interactive shell) read-only and \
                     uncreatable inside the writable root `{d}`: it cannot subtract rights inside \
                     a granted tree; --no-protect-defaults (sandbox.filesystem.protect_defaults = \
                     false); bwrap, which would hold it, cannot run here: uid 0 without \
                     CAP_SETFCAP inside Codex's sandbox\n"
                )
            );
            assert_eq!(
                refused(&bw, "--backend bwrap"),
                format!(
                    "dcjail: sandbox-unavailable: cannot enforce this policy here; {ROOT_BWRAP}\n"
                )
            );
            let e = refused(&allow, "allowlist");
            assert!(
                e.contains(ROOT_BWRAP)
                    && e.contains("the network allowlist needs the bwrap backend"),
                "{e}"
            );
        }
    }
}

/// Writes `../escape.txt` (in Codex's workspace, outside dcjail's), then
/// says it ran.
const ESCAPE: &str = "echo x > ../escape.txt; echo ran";

#[test]
fn inside_codex_a_write_outside_the_inner_workspace_but_inside_codexs_fails() {
    if !ready() {
        return;
    }
    for &nobody in scratch::users() {
        let w = who(nobody);
        let t = Tree::new("escape", nobody);
        let escape = t.ws.join("escape.txt");
        let o = bare(&t, Net::Off, nobody, ESCAPE);
        assert!(escape.exists(), "{w}: control: {}", text(&o));
        std::fs::remove_file(&escape).unwrap();
        let mut runs: Vec<&[&str]> = vec![
            NPD,
            &[
                "--backend",
                "landlock",
                "--sandbox-mode",
                "workspace-write",
                "--no-protect-defaults",
            ],
            &[],
        ];
        if nobody {
            runs.push(WW);
        }
        for args in runs {
            let o = jailed(&t, Net::Off, nobody, args, ESCAPE);
            assert_eq!(out(&o), "ran\n", "{w} {args:?}: {}", text(&o));
            assert!(!escape.exists(), "{w} {args:?}: wrote outside");
        }
    }
}

/// An attack on a protected path in dcjail's workspace, and whether it
/// happened.
struct Attack {
    name: &'static str,
    script: &'static str,
    happened: fn(&Path) -> bool,
}

const PROTECTED: &[Attack] = &[
    Attack {
        name: "an existing protected file (.bashrc)",
        script: "echo evil >> .bashrc",
        happened: |d| std::fs::read_to_string(d.join(".bashrc")).unwrap() != "orig\n",
    },
    Attack {
        name: "a repository's config (.git/config)",
        script: "echo evil >> .git/config",
        happened: |d| {
            std::fs::read_to_string(d.join(".git/config"))
                .unwrap()
                .contains("evil")
        },
    },
    Attack {
        name: "a missing protected name (.envrc)",
        script: "echo evil > .envrc",
        happened: |d| d.join(".envrc").exists(),
    },
    Attack {
        name: "a new repository inside the worktree (deep/.git)",
        script: "mkdir -p deep/.git",
        happened: |d| d.join("deep/.git").exists(),
    },
];

#[test]
fn inside_codex_the_protected_paths_hold_where_dcjail_runs_them() {
    if !ready() {
        return;
    }
    // As root the run that protects them is refused (checked above); as
    // 65534 bwrap holds them inside Codex's sandbox.
    if !scratch::root("run the command as uid 65534") {
        return;
    }
    for a in PROTECTED {
        let t = Tree::new("protected-control", true);
        let o = bare(&t, Net::Off, true, &format!("{}; echo ran", a.script));
        assert_eq!(out(&o), "ran\n", "control {}: {}", a.name, text(&o));
        assert!((a.happened)(&t.sub), "control {}", a.name);
        let t = Tree::new("protected", true);
        let o = jailed(&t, Net::Off, true, WW, &format!("{}; echo ran", a.script));
        assert_eq!(out(&o), "ran\n", "{}: {}", a.name, text(&o));
        assert!(!(a.happened)(&t.sub), "{}: {}", a.name, text(&o));
    }
}

#[test]
fn inside_codex_a_denied_file_stays_unreadable() {
    if !ready() {
        return;
    }
    let cat = "cat secret.txt; echo done";
    for &nobody in scratch::users() {
        let w = who(nobody);
        let t = Tree::new("deny-read", nobody);
        let o = bare(&t, Net::Off, nobody, cat);
        assert_eq!(out(&o), "s3cret\ndone\n", "{w}: control: {}", text(&o));
        // Under landlock a denied file inside a writable root is refused:
        // read-only there; bwrap masks it in both modes.
        let mut runs: Vec<&[&str]> = vec![&["--deny-read", "secret.txt"]];
        if nobody {
            runs.push(&[
                "--sandbox-mode",
                "workspace-write",
                "--deny-read",
                "secret.txt",
            ]);
        }
        for args in runs {
            let o = jailed(&t, Net::Off, nobody, args, cat);
            assert_eq!(out(&o), "done\n", "{w} {args:?}: {}", text(&o));
        }
    }
}

#[test]
fn inside_codex_with_network_the_inner_none_keeps_the_host_out_of_reach() {
    if !ready() || !scratch::need("python3") {
        return;
    }
    for &nobody in scratch::users() {
        let w = who(nobody);
        let t = Tree::new("net", nobody);
        let host = HostListeners::new(&format!("agents-{}", nobody as u8));
        for py in [&host.tcp_py, &host.unix_py] {
            let script = "python3 -c \"$P\"";
            let run = |args: Option<&[&str]>| {
                let codex = agent_bin(Agent::Codex);
                let mut c = scratch::user_command(nobody, &codex);
                c.args([
                    "sandbox",
                    "-c",
                    "sandbox_mode=workspace-write",
                    "-c",
                    "sandbox_workspace_write.network_access=true",
                    "--",
                    "env",
                    "-C",
                    t.sub.to_str().unwrap(),
                ]);
                if let Some(a) = args {
                    c.arg(bin()).args(a).arg("--");
                }
                c.args(["sh", "-c", script])
                    .current_dir(&t.ws)
                    .env_remove("DCJAIL_POLICY")
                    .env("P", py)
                    .env("HOME", &t.root)
                    .env("CODEX_HOME", t.root.join("codex-home"))
                    .env("PATH", agents::SYS_PATH)
                    .stdin(std::process::Stdio::null());
                scratch::output_within(c, 120)
            };
            let o = run(None);
            assert_eq!(out(&o), "connected\n", "{w}: control: {}", text(&o));
            let o = in_codex(
                &t,
                Net::On,
                nobody,
                &t.sub,
                &[bin(), "--", "sh", "-c", "echo $DCJAIL_BACKEND"],
            );
            let want = if nobody { "bwrap\n" } else { "landlock\n" };
            assert_eq!(out(&o), want, "{w}: {}", text(&o));
            if !nobody {
                let o = in_codex(
                    &t,
                    Net::On,
                    nobody,
                    &t.sub,
                    &[bin(), "--backend", "bwrap", "--", "true"],
                );
                assert!(
                    refused(&o, "--backend bwrap").contains(
                        "bwrap: uid 0 without CAP_SETFCAP cannot map itself into a new user namespace"
                    ),
                    "{}",
                    text(&o)
                );
            }
            for args in [&[][..], NPD] {
                let o = run(Some(args));
                assert!(
                    out(&o).starts_with("refused "),
                    "{w} {args:?}: {py}: {}",
                    text(&o)
                );
            }
        }
        drop(host);
    }
}

#[test]
fn inside_codex_real_work_gives_what_it_gives_without_the_inner_dcjail() {
    if !ready() || !scratch::need("gcc") {
        return;
    }
    let work = "git status --porcelain=v1 -b && git log --format=%s && \
                gcc -o hello hello.c && ./hello && rm hello";
    for &nobody in scratch::users() {
        let w = who(nobody);
        let t = Tree::new("work", nobody);
        let o = bare(&t, Net::Off, nobody, work);
        assert!(o.status.success(), "{w}: control: {}", text(&o));
        let want = out(&o);
        assert!(want.ends_with("one\nhello\n"), "{w}: {want}");
        let mut runs: Vec<&[&str]> = vec![NPD];
        if nobody {
            runs.push(WW);
        }
        for args in runs {
            let o = jailed(&t, Net::Off, nobody, args, work);
            assert!(o.status.success(), "{w} {args:?}: {}", text(&o));
            assert_eq!(out(&o), want, "{w} {args:?}");
        }
    }
}

// srt, Anthropic's sandbox runtime (@anthropic-ai/sandbox-runtime, the
// version scripts/test.sh installs in target/srt), with its default
// settings and dcjail's workspace's parent as its one writable path. It
// runs the command under its own bwrap with user.max_user_namespaces = 0
// and a seccomp filter that refuses new unix sockets, and sets
// SANDBOX_RUNTIME=1: dcjail's bwrap cannot run, `auto` runs landlock.

/// The srt that scripts/test.sh installs, when present.
fn srt_bin() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/srt/node_modules/.bin/srt");
    let ok = scratch::require(
        p.exists(),
        "srt (@anthropic-ai/sandbox-runtime) is not installed in target/srt",
        "scripts/test.sh installs it (npm install in target/srt)",
    );
    (ok && scratch::need("rg") && scratch::need("socat")).then_some(p)
}

/// `sh -c script` inside srt, in `sub`, as root or 65534; with dcjail and
/// `args` in front when given. srt may write only in `ws`.
fn in_srt(srt: &Path, t: &Tree, nobody: bool, dcjail: Option<&[&str]>, script: &str) -> Output {
    let settings = t.root.join("srt-settings.json");
    let s = serde_json::json!({
        "network": { "allowedDomains": [], "deniedDomains": [] },
        "filesystem": { "denyRead": [], "allowWrite": [t.ws], "denyWrite": [] },
    });
    std::fs::write(&settings, s.to_string()).unwrap();
    let mut line = String::new();
    if let Some(args) = dcjail {
        line.push_str(&format!("'{}' {} -- ", bin(), args.join(" ")));
    }
    line.push_str("sh -c \"$S\"");
    let mut c = scratch::user_command(nobody, srt);
    c.arg("-s")
        .arg(&settings)
        .arg("-c")
        .arg(&line)
        .current_dir(&t.sub)
        .env_remove("DCJAIL_POLICY")
        .env("S", script)
        .env("HOME", &t.root)
        .env("PATH", agents::SYS_PATH)
        // srt on Debian 12's node 18 warns that importing JSON modules is
        // experimental, on the stderr the refusals are read from.
        .env("NODE_NO_WARNINGS", "1")
        .stdin(std::process::Stdio::null());
    scratch::output_within(c, 120)
}

const SRT_USERNS: &str = "bwrap: user namespaces are disabled (user.max_user_namespaces = 0) \
    inside srt, Anthropic's sandbox runtime (SANDBOX_RUNTIME=1), which sets it to 0 for the \
    commands it runs; fix: set \"allowNestedUserNamespaces\": true in srt's settings (srt warns \
    that a hostile command can then undo its write denies), or use --backend landlock, which \
    needs no namespace";

#[test]
fn inside_srt_landlock_runs_and_bwrap_is_refused_naming_srts_setting() {
    let Some(srt) = srt_bin() else { return };
    for &nobody in scratch::users() {
        let w = who(nobody);
        let t = Tree::new("srt-modes", nobody);
        let say = "echo ran-$DCJAIL_BACKEND";
        for args in [&[][..], NPD] {
            let o = in_srt(&srt, &t, nobody, Some(args), say);
            assert_eq!(out(&o), "ran-landlock\n", "{w} {args:?}: {}", text(&o));
        }
        let o = in_srt(&srt, &t, nobody, Some(&["--backend", "bwrap"]), say);
        assert_eq!(
            refused(&o, "--backend bwrap"),
            format!("dcjail: sandbox-unavailable: cannot enforce this policy here; {SRT_USERNS}\n")
        );
        let o = in_srt(&srt, &t, nobody, Some(WW), say);
        let d = t.sub.display();
        assert_eq!(
            refused(&o, "workspace-write"),
            format!(
                "dcjail: sandbox-unavailable: cannot enforce this policy here; {SRT_USERNS}; \
                 landlock: landlock cannot keep the protected path `{d}/.bashrc` (`.bashrc` of \
                 the protected table, run by bash, every interactive shell) read-only and \
                 uncreatable inside the writable root `{d}`: it cannot subtract rights inside a \
                 granted tree; --no-protect-defaults (sandbox.filesystem.protect_defaults = \
                 false); bwrap, which would hold it, cannot run here: srt sets \
                 user.max_user_namespaces = 0\n"
            )
        );
    }
}

#[test]
fn inside_srt_a_write_outside_the_inner_workspace_and_a_denied_read_fail() {
    let Some(srt) = srt_bin() else { return };
    for &nobody in scratch::users() {
        let w = who(nobody);
        let t = Tree::new("srt-attacks", nobody);
        let escape = t.ws.join("escape.txt");
        let o = in_srt(&srt, &t, nobody, None, ESCAPE);
        assert!(escape.exists(), "{w}: control: {}", text(&o));
        std::fs::remove_file(&escape).unwrap();
        let o = in_srt(&srt, &t, nobody, Some(NPD), ESCAPE);
        assert_eq!(out(&o), "ran\n", "{w}: {}", text(&o));
        assert!(!escape.exists(), "{w}: wrote outside");
        let cat = "cat secret.txt; echo done";
        let o = in_srt(&srt, &t, nobody, None, cat);
        assert_eq!(out(&o), "s3cret\ndone\n", "{w}: control: {}", text(&o));
        let o = in_srt(&srt, &t, nobody, Some(&["--deny-read", "secret.txt"]), cat);
        assert_eq!(out(&o), "done\n", "{w}: {}", text(&o));
    }
}

/// docs/backends.md's table of agents' sandboxes, as these tests find it.
const TABLE: &str = "\
| environment | backend `auto` runs | `--backend bwrap` | writes outside dcjail's workspace, inside the outer one's | protected paths (`.bashrc`, `.git/config`, a missing `.envrc`, a new `.git`) | `deny_read` | network none (host loopback, host unix socket) | network allowlist |
|---|---|---|---|---|---|---|---|
| Codex, network off, not root | bwrap | runs | held | held | held | held without a network namespace of its own (attacked under a filter that refuses only netlink sockets: Codex refuses the network already) | refused: turn Codex's network access on |
| Codex, network off, root | landlock | refused: uid 0 without CAP_SETFCAP | held | refused: run Codex as another user, or `--no-protect-defaults` | held (`read-only`) | runs (not attackable: Codex refuses the network already) | refused |
| Codex, network on, not root | bwrap | not tested | not tested | not tested | not tested | held | not tested |
| Codex, network on, root | landlock | refused: uid 0 without CAP_SETFCAP | not tested | not tested | not tested | held | not tested |
| srt, default settings | landlock | refused: `allowNestedUserNamespaces` | held | refused: `--no-protect-defaults` | held (`read-only`) | not tested | not tested |
";

#[test]
fn the_docs_table_is_what_these_tests_find() {
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/backends.md")).unwrap();
    assert!(
        page.contains(TABLE),
        "docs/backends.md should hold this table:\n{TABLE}"
    );
}

/// What Codex's network-off filter takes from bwrap, made alone here: a
/// filter that refuses only NETLINK_ROUTE's family, in front of dcjail, so
/// the internet stays reachable and the attack on `none` without a network
/// namespace of its own can succeed without dcjail (the control).
#[test]
fn without_netlink_network_none_runs_without_its_own_namespace_and_holds() {
    if !scratch::bwrap_works() || !scratch::need("python3") {
        return;
    }
    for &nobody in scratch::users() {
        let w = who(nobody);
        let t = Tree::new("no-netlink", nobody);
        let host = HostListeners::new(&format!("nl-{}", nobody as u8));
        let run = |args: &[&str]| {
            let mut c = scratch::user_command(nobody, bin());
            with_filter(&mut c, no_netlink());
            c.args(args)
                .current_dir(&t.sub)
                .env_remove("DCJAIL_POLICY")
                .env("HOME", &t.root)
                .stdin(std::process::Stdio::null());
            scratch::output_within(c, 60)
        };
        for py in [&host.tcp_py, &host.unix_py] {
            let o = run(&["--no-sandbox", "--", "python3", "-c", py]);
            assert_eq!(out(&o), "connected\n", "{w}: control: {}", text(&o));
            let o = run(&[
                "--sandbox-mode",
                "workspace-write",
                "--",
                "python3",
                "-c",
                py,
            ]);
            assert_eq!(o.status.code(), Some(0), "{w}: {}", text(&o));
            assert!(out(&o).starts_with("refused "), "{w}: {py}: {}", text(&o));
        }
        let o = run(&["explain", "--", "true"]);
        let v: serde_json::Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
        assert_eq!(v["backend"], "bwrap", "{w}: {v}");
        assert_eq!(
            v["layers"]["missing"][0]["layer"], "network-namespace",
            "{w}: {v}"
        );
        assert!(
            !v["launch"]["argv"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a == "--unshare-net"),
            "{w}: {v}"
        );
        let o = run(&[
            "--backend",
            "bwrap",
            "--allow-domain",
            "example.com",
            "--",
            "true",
        ]);
        assert_eq!(
            refused(&o, "allowlist"),
            "dcjail: sandbox-unavailable: cannot enforce this policy here; bwrap: the network \
             allowlist (the command reaches its proxy inside a network namespace of its own) \
             needs a network namespace of its own, which is missing here (a seccomp filter \
             refuses NETLINK_ROUTE sockets (socket(AF_NETLINK) failed with EPERM), over which \
             bubblewrap sets up a new network namespace's loopback): run dcjail where its \
             seccomp filter allows NETLINK_ROUTE sockets, or use --net none\n"
        );
        drop(host);
    }
}
