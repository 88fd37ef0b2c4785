//! What a newcomer and an agent author meet first, through the real binary:
//! usage errors that name what is missing, `help`, the options a single
//! call needs (`--allow-domain`, `--timeout`, `--no-protect-defaults`,
//! `--allow-unix-sockets`), `explain` read from the decision down, the
//! approval hint of a hand-written policy, closed standard descriptors on
//! every launch path, docs that cite only themselves, quiet installs, and
//! where a build lands. Each refusal is compared as the exact stderr line.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const RUN_USAGE: &str = "usage: dcjail [OPTIONS] [--] COMMAND [ARG]...";
const DURATION_WORDS: &str = "a duration is a number of seconds with an optional suffix s, m, h or d, as timeout(1) takes it (1.5, 90s, 5m, 1h, 2d; 0 = none)";

use scratch::exe as bin;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A scratch directory (`scratch::Dir`), removed on drop.
struct Dir(scratch::Dir);
impl Dir {
    fn new(name: &str) -> Dir {
        Dir(scratch::Dir::new(&format!("usage-{name}")))
    }
    fn join(&self, s: &str) -> PathBuf {
        self.0.join(s)
    }
    fn write(&self, name: &str, text: &str) -> String {
        let p = self.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    }
}

fn cmd(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.args(args)
        .current_dir(dir)
        .env_remove("DCJAIL_POLICY")
        .stdin(Stdio::null());
    c
}

fn dcjail(dir: &Path, args: &[&str]) -> Output {
    cmd(dir, args).output().unwrap()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Exactly `line` on stderr, nothing on stdout, exit `status`.
fn assert_line(o: &Output, status: i32, line: &str) {
    assert_eq!(err(o), format!("{line}\n"), "status {:?}", o.status.code());
    assert_eq!(o.status.code(), Some(status), "{line}");
    assert!(o.stdout.is_empty(), "stdout: {}", out(o));
}

fn explain(dir: &Path, args: &[&str]) -> serde_json::Value {
    let mut a = vec!["explain"];
    a.extend_from_slice(args);
    let o = dcjail(dir, &a);
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", out(&o), err(&o)))
}

// 3. Usage errors, help, version.

#[test]
fn usage_errors_name_what_is_missing_and_end_with_the_usage() {
    let d = Dir::new("missing");
    let explain_usage = "usage: dcjail explain [OPTIONS] [--] COMMAND [ARG]...";
    let cases: Vec<(Vec<&str>, String)> = vec![
        (vec![], format!("COMMAND is missing; {RUN_USAGE}")),
        (vec!["--"], format!("COMMAND is missing; {RUN_USAGE}")),
        (vec!["--no-sandbox"], format!("COMMAND is missing; {RUN_USAGE}")),
        (vec!["explain"], format!("COMMAND is missing; {explain_usage}")),
        (
            vec!["explain", "--"],
            format!("COMMAND is missing; {explain_usage}"),
        ),
        (
            vec!["import", "srt"],
            "FILE is missing; usage: dcjail import <TOOL> <FILE>".into(),
        ),
        (
            vec!["import"],
            "TOOL and FILE are missing; usage: dcjail import <TOOL> <FILE>".into(),
        ),
        (
            vec!["--polcy", "p.toml", "--", "true"],
            format!("unexpected argument '--polcy' found (did you mean `--policy`?); {RUN_USAGE}"),
        ),
        (
            vec!["--alow-domain", "example.com", "--", "true"],
            format!(
                "unexpected argument '--alow-domain' found (did you mean `--allow-domain`?); {RUN_USAGE}"
            ),
        ),
        (
            vec!["explain", "--sandbox-mod", "read-only", "--", "true"],
            format!(
                "unexpected argument '--sandbox-mod' found (did you mean `--sandbox-mode`?); {explain_usage}"
            ),
        ),
        (
            vec!["doctor", "--jsn"],
            "unexpected argument '--jsn' found (did you mean `--json`?); usage: dcjail doctor [OPTIONS]".into(),
        ),
        (
            vec!["--mode", "plann", "--", "true"],
            format!("invalid value 'plann' for '--mode <MODE>': `plann` is not one of: default, acceptEdits, plan, auto, dontAsk, bypassPermissions; {RUN_USAGE}"),
        ),
    ];
    for (args, want) in cases {
        let o = dcjail(&d.0, &args);
        assert_line(&o, 125, &format!("dcjail: usage-error: {want}"));
    }
}

#[test]
fn help_is_a_subcommand_that_prints_the_help_and_version_works() {
    let d = Dir::new("help");
    let same = |help: &[&str], flag: &[&str]| {
        let a = dcjail(&d.0, help);
        let b = dcjail(&d.0, flag);
        assert_eq!(a.status.code(), Some(0), "{help:?}: {}", err(&a));
        assert!(a.stderr.is_empty(), "{help:?}: {}", err(&a));
        assert_eq!(out(&a), out(&b), "{help:?} is not {flag:?}");
        assert!(out(&a).contains("Usage: dcjail"), "{help:?}: {}", out(&a));
    };
    same(&["help"], &["--help"]);
    same(&["help", "explain"], &["explain", "--help"]);
    same(&["help", "doctor"], &["doctor", "--help"]);
    same(&["help", "import"], &["import", "--help"]);
    same(
        &["help", "worktree", "enter"],
        &["worktree", "enter", "--help"],
    );
    same(
        &["help", "setup", "apparmor"],
        &["setup", "apparmor", "--help"],
    );
    assert!(out(&dcjail(&d.0, &["--help"])).contains("`dcjail -- help` runs a command named help"));
    assert_line(
        &dcjail(&d.0, &["help", "nosuch"]),
        125,
        "dcjail: usage-error: invalid value 'nosuch' for '[SUBCOMMAND]' [possible values: explain, doctor, worktree, hook, import, setup, help]; usage: dcjail help [SUBCOMMAND]",
    );
    assert_line(
        &dcjail(&d.0, &["help", "explain", "x"]),
        125,
        "dcjail: usage-error: `explain` has no subcommand `x`; usage: dcjail help [SUBCOMMAND]",
    );
    // A command named help runs with `--` before it.
    let bindir = d.join("bin");
    std::fs::create_dir(&bindir).unwrap();
    let script = bindir.join("help");
    std::fs::write(&script, "#!/bin/sh\necho HELP-RAN \"$@\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/bin:/bin", bindir.display());
    let o = cmd(&d.0, &["--no-sandbox", "--", "help", "me"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert_eq!(out(&o), "HELP-RAN me\n", "{}", err(&o));
    let o = cmd(&d.0, &["help"]).env("PATH", &path).output().unwrap();
    assert!(
        !out(&o).contains("HELP-RAN"),
        "`dcjail help` ran the command"
    );
    let o = dcjail(&d.0, &["--version"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(out(&o), format!("dcjail {}\n", env!("CARGO_PKG_VERSION")));
}

// 2. --allow-domain means the allowlist.

#[test]
fn allow_domain_alone_means_the_allowlist_and_beside_net_none_is_refused() {
    let d = Dir::new("allowdomain");
    let v = explain(&d.0, &["--allow-domain", "example.com", "--", "true"]);
    assert_eq!(v["plan"]["network"]["mode"], "allowlist", "{v}");
    assert_eq!(v["sources"]["sandbox.network.mode"], "--allow-domain");
    // The run gets it too, not only the plan.
    let o = dcjail(
        &d.0,
        &[
            "--backend",
            "bwrap",
            "--allow-domain",
            "example.com",
            "--",
            "sh",
            "-c",
            "echo \"$DCJAIL_NETWORK\"",
        ],
    );
    assert_eq!(out(&o), "allowlist\n", "{}", err(&o));
    assert_eq!(o.status.code(), Some(0));

    let marker = d.join("ran");
    let m = marker.display().to_string();
    let o = dcjail(
        &d.0,
        &[
            "--net",
            "none",
            "--allow-domain",
            "example.com",
            "--",
            "touch",
            &m,
        ],
    );
    assert_line(
        &o,
        125,
        "dcjail: usage-error: `--allow-domain example.com` with `--net none`: naming a domain to allow needs the allowlist; drop `--net none` (`--allow-domain` alone means `--net allowlist`) or the domain",
    );
    assert!(!marker.exists(), "the command ran");
}

#[test]
fn a_policy_file_that_allows_domains_is_an_allowlist_unless_it_says_none() {
    let d = Dir::new("filedomains");
    let contradiction = d.write(
        "none.toml",
        "[permission]\napproval = \"granted\"\n\n[sandbox.network]\nmode = \"none\"\nallow_domains = [\"a.example\"]\n",
    );
    let marker = d.join("ran");
    let m = marker.display().to_string();
    let o = dcjail(&d.0, &["--policy", &contradiction, "--", "touch", &m]);
    assert_line(
        &o,
        125,
        &format!("dcjail: policy-error: {contradiction}:4: key `sandbox.network`: `mode = \"none\"` with `allow_domains = [\"a.example\"]`: naming a domain to allow needs `mode = \"allowlist\"` (or no `mode`, which then means the allowlist); remove the domains for no network"),
    );
    assert!(!marker.exists());
    let json = d.write(
        "none.json",
        r#"{"sandbox": {"network": {"mode": "none", "allow_domains": ["a.example"]}}}"#,
    );
    let o = dcjail(&d.0, &["--policy", &json, "--", "true"]);
    assert_eq!(o.status.code(), Some(125), "{}", err(&o));
    assert!(
        err(&o).starts_with(&format!("dcjail: policy-error: {json}:1: ")),
        "{}",
        err(&o)
    );

    let implied = d.write(
        "implied.toml",
        "[permission]\napproval = \"granted\"\n\n[sandbox.network]\nallow_domains = [\"a.example\"]\n",
    );
    let v = explain(&d.0, &["--policy", &implied, "--", "true"]);
    assert_eq!(v["plan"]["network"]["mode"], "allowlist", "{v}");
    assert_eq!(
        v["sources"]["sandbox.network.mode"],
        format!("policy file {implied}")
    );
    // An option still overrides the file: no network for this call.
    let v = explain(&d.0, &["--policy", &implied, "--net", "none", "--", "true"]);
    assert_eq!(v["plan"]["network"]["mode"], "none", "{v}");
}

// 4. --timeout as timeout(1) takes it.

#[test]
fn timeout_takes_what_timeout_1_takes_and_a_bad_value_is_named() {
    let d = Dir::new("timeout");
    for (value, secs) in [
        ("1.5", serde_json::json!(1.5)),
        ("90s", serde_json::json!(90)),
        ("5m", serde_json::json!(300)),
        ("1h", serde_json::json!(3600)),
        ("2d", serde_json::json!(172800)),
        ("0.5m", serde_json::json!(30)),
        ("1e2", serde_json::json!(100)),
        ("0", serde_json::Value::Null),
    ] {
        let v = explain(&d.0, &["--timeout", value, "--", "true"]);
        assert_eq!(v["plan"]["timeout"], secs, "--timeout {value}: {v}");
    }
    for (value, why) in [
        ("-1", "a timeout cannot be negative (0 = none)".to_string()),
        ("abc", DURATION_WORDS.to_string()),
        ("5x", DURATION_WORDS.to_string()),
        ("1s2", DURATION_WORDS.to_string()),
        ("inf", DURATION_WORDS.to_string()),
        ("", DURATION_WORDS.to_string()),
        (
            "1e400",
            "longer than the largest timeout, 315360000 seconds (ten years)".to_string(),
        ),
        (
            "3651d",
            "longer than the largest timeout, 315360000 seconds (ten years)".to_string(),
        ),
    ] {
        let o = dcjail(&d.0, &["--timeout", value, "--", "true"]);
        assert_line(
            &o,
            125,
            &format!("dcjail: usage-error: invalid value '{value}' for '--timeout <DURATION>': {why}; {RUN_USAGE}"),
        );
    }
    // A fraction of a second is enforced as such.
    let start = Instant::now();
    let o = dcjail(
        &d.0,
        &["--no-sandbox", "--timeout", "0.3", "--", "sleep", "20"],
    );
    assert_eq!(o.status.code(), Some(124), "{}", err(&o));
    assert!(start.elapsed() < Duration::from_secs(10));

    // The policy file takes the same words, and whole seconds as before.
    for (text, secs) in [
        ("timeout = \"90s\"", serde_json::json!(90)),
        ("timeout = 1.5", serde_json::json!(1.5)),
        ("timeout = 600", serde_json::json!(600)),
        ("timeout = \"1h\"", serde_json::json!(3600)),
    ] {
        let p = d.write(
            "t.toml",
            &format!("[permission]\napproval = \"granted\"\n[sandbox]\n{text}\n"),
        );
        let v = explain(&d.0, &["--policy", &p, "--", "true"]);
        assert_eq!(v["plan"]["timeout"], secs, "{text}: {v}");
    }
    let p = d.write("bad.toml", "[sandbox]\ntimeout = \"5x\"\n");
    assert_line(
        &dcjail(&d.0, &["--policy", &p, "--", "true"]),
        125,
        &format!("dcjail: policy-error: {p}:2: key `sandbox.timeout`: `5x`: {DURATION_WORDS}"),
    );
    let p = d.write("neg.toml", "[sandbox]\ntimeout = -3\n");
    assert_line(
        &dcjail(&d.0, &["--policy", &p, "--", "true"]),
        125,
        &format!("dcjail: policy-error: {p}:2: key `sandbox.timeout`: `-3`: a timeout cannot be negative (0 = none)"),
    );
}

// 5. A flag for every key one call needs.

#[test]
fn no_protect_defaults_lets_the_command_write_a_protected_path() {
    let d = Dir::new("protect");
    let write = "mkdir -p .vscode && echo x > .vscode/settings.json && echo WROTE";
    let o = dcjail(
        &d.0,
        &[
            "--backend",
            "bwrap",
            "--sandbox-mode",
            "workspace-write",
            "--",
            "sh",
            "-c",
            write,
        ],
    );
    assert!(
        !out(&o).contains("WROTE"),
        "protected without the flag: {}",
        out(&o)
    );
    assert!(!d.join(".vscode/settings.json").exists());
    let o = dcjail(
        &d.0,
        &[
            "--backend",
            "bwrap",
            "--sandbox-mode",
            "workspace-write",
            "--no-protect-defaults",
            "--",
            "sh",
            "-c",
            write,
        ],
    );
    assert_eq!(out(&o), "WROTE\n", "{}", err(&o));
    assert!(d.join(".vscode/settings.json").exists());
    let v = explain(&d.0, &["--no-protect-defaults", "--", "true"]);
    assert_eq!(
        v["sources"]["sandbox.filesystem.protect_defaults"],
        "--no-protect-defaults"
    );
    // The landlock refusal names the option.
    let o = dcjail(
        &d.0,
        &[
            "--backend",
            "landlock",
            "--sandbox-mode",
            "workspace-write",
            "--",
            "true",
        ],
    );
    assert_eq!(o.status.code(), Some(122), "{}", err(&o));
    assert!(err(&o).contains("or --no-protect-defaults"), "{}", err(&o));
    let o = dcjail(
        &d.0,
        &[
            "--backend",
            "landlock",
            "--sandbox-mode",
            "workspace-write",
            "--no-protect-defaults",
            "--",
            "sh",
            "-c",
            "echo y > landlock-wrote",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(d.join("landlock-wrote").exists());
}

#[test]
fn allow_unix_socket_takes_a_path_and_the_old_switch_names_it() {
    let d = Dir::new("unixsock");
    // The old all-or-nothing switch is gone: a usage error naming the new
    // option, and nothing runs.
    let o = dcjail(&d.0, &["--allow-unix-sockets", "--", "touch", "ran"]);
    assert_eq!(o.status.code(), Some(125), "{}", err(&o));
    assert!(err(&o).contains("--allow-unix-socket`"), "{}", err(&o));
    assert!(!d.join("ran").exists());
    // The new one names a socket (repeatable): explain shows it, absolute.
    let o = dcjail(
        &d.0,
        &[
            "explain",
            "--allow-unix-socket",
            "a.sock",
            "--allow-unix-socket",
            "/run/b",
            "--",
            "true",
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let want = [d.join("a.sock").display().to_string(), "/run/b".to_string()];
    assert_eq!(
        v["plan"]["network"]["allow_unix_sockets"],
        serde_json::json!(want),
        "{}",
        err(&o)
    );
    // A unix stream socket is made without any option.
    let py = "import socket; socket.socket(socket.AF_UNIX); print('SOCKET')";
    for backend in ["bwrap", "landlock"] {
        let o = dcjail(
            &d.0,
            &["--backend", backend, "--", "/usr/bin/python3", "-c", py],
        );
        assert_eq!(out(&o), "SOCKET\n", "{backend}: {}", err(&o));
    }
}

// 6. explain reads from the decision down.

/// The top-level keys of a pretty-printed object, in the order printed.
fn top_keys(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("  \"") && !l.starts_with("   "))
        .map(|l| l[3..].split('"').next().unwrap_or("").to_string())
        .collect()
}

#[test]
fn explain_starts_with_the_decision_and_names_the_refusal_status() {
    let d = Dir::new("explainorder");
    let o = dcjail(&d.0, &["explain", "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let keys = top_keys(&out(&o));
    assert_eq!(
        &keys[..6],
        [
            "decision",
            "reason",
            "gate",
            "message",
            "backend",
            "refusal_status"
        ],
        "{keys:?}"
    );
    let at = |k: &str| {
        keys.iter()
            .position(|x| x == k)
            .unwrap_or_else(|| panic!("{k}: {keys:?}"))
    };
    assert!(
        at("refusal_status") < at("plan")
            && at("plan") < at("launch")
            && at("launch") < at("sources")
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["refusal_status"].is_null(), "{v}");
    assert!(v.get("exit_status").is_none(), "{v}");

    for (args, status) in [
        (vec!["--approval", "none"], 121),
        (vec!["--mode", "plan"], 120),
        (vec!["--backend", "seatbelt"], 122),
    ] {
        let mut a = vec!["explain"];
        a.extend(args.iter());
        a.extend(["--", "true"]);
        let o = dcjail(&d.0, &a);
        assert_eq!(o.status.code(), Some(status), "{args:?}");
        assert_eq!(
            &top_keys(&out(&o))[..6],
            [
                "decision",
                "reason",
                "gate",
                "message",
                "backend",
                "refusal_status"
            ]
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["refusal_status"], status, "{args:?}: {v}");
    }
    // A refused run's report says the same; a run's report adds the
    // command's own status.
    let report = d.join("r.json");
    let r = report.display().to_string();
    let o = dcjail(&d.0, &["--mode", "plan", "--report", &r, "--", "true"]);
    assert_eq!(o.status.code(), Some(120));
    let text = std::fs::read_to_string(&report).unwrap();
    assert_eq!(top_keys(&text)[..1], ["decision"]);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["refusal_status"], 120);
    let o = dcjail(
        &d.0,
        &["--no-sandbox", "--report", &r, "--", "sh", "-c", "exit 3"],
    );
    assert_eq!(o.status.code(), Some(3));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert!(
        v["refusal_status"].is_null() && v["exit_status"] == 3,
        "{v}"
    );
    // A reader that stops early is no crash.
    let mut c = cmd(&d.0, &["explain", "--", "true"]);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(o.stderr.is_empty(), "{}", err(&o));
}

// 7. Users read no citation of a contract they cannot see.

#[test]
fn nothing_users_read_cites_the_spec() {
    let d = Dir::new("nospec");
    let mut texts: Vec<(String, String)> = Vec::new();
    for f in [
        "README.md",
        "SECURITY.md",
        "CONTRIBUTING.md",
        "CHANGELOG.md",
        "man/dcjail.1",
    ] {
        texts.push((f.into(), std::fs::read_to_string(root().join(f)).unwrap()));
    }
    let mut pages = 0;
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "md") {
            texts.push((
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            ));
            pages += 1;
        }
    }
    assert!(pages >= 10, "docs/ holds {pages} pages");
    for args in [
        &["--help"][..],
        &["explain", "--help"],
        &["doctor", "--help"],
        &["worktree", "enter", "--help"],
        &["hook", "--help"],
        &["import", "--help"],
        &["setup", "apparmor", "--help"],
        &["doctor"],
        &["doctor", "--json"],
        &["explain", "--", "true"],
        &["explain", "--backend", "landlock", "--", "true"],
        &[
            "explain",
            "--backend",
            "bwrap",
            "--net",
            "allowlist",
            "--",
            "true",
        ],
        &[
            "explain",
            "--backend",
            "seatbelt",
            "--net",
            "allowlist",
            "--allow-unix-sockets",
            "--",
            "true",
        ],
        &[
            "explain",
            "--backend",
            "seatbelt",
            "--net",
            "full",
            "--",
            "true",
        ],
        &[
            "--backend",
            "landlock",
            "--sandbox-mode",
            "workspace-write",
            "--",
            "true",
        ],
        &["--approval", "none", "--", "true"],
        &[],
    ] {
        let o = dcjail(&d.0, args);
        texts.push((
            format!("dcjail {args:?}"),
            format!("{}{}", out(&o), err(&o)),
        ));
    }
    for entry in std::fs::read_dir(root().join("profiles/seatbelt")).unwrap() {
        let p = entry.unwrap().path();
        texts.push((
            p.display().to_string(),
            std::fs::read_to_string(&p).unwrap(),
        ));
    }
    let cited: Vec<&String> = texts
        .iter()
        .filter(|(_, t)| t.contains("SPEC"))
        .map(|(w, _)| w)
        .collect();
    assert!(cited.is_empty(), "cites the spec: {cited:?}");
}

// 8. The approval a hand-written policy lacks.

#[test]
fn a_hand_written_policy_is_told_what_to_add_for_the_approval() {
    let d = Dir::new("approval");
    let p = d.write("call.toml", "[sandbox]\nmode = \"read-only\"\n");
    let marker = d.join("ran");
    let m = marker.display().to_string();
    let o = dcjail(&d.0, &["--policy", &p, "--", "touch", &m]);
    assert_line(
        &o,
        121,
        &format!("dcjail: approval-required: this `bash` call in default mode needs the user's approval: pass --approval granted, or set permission.approval = \"granted\" in {p} (a policy file starts from approval = \"none\"; only the embedded default, used when no policy is named, counts the person who typed the command as approving it)"),
    );
    assert!(!marker.exists());
    // What the message says to add works, either way.
    let o = dcjail(
        &d.0,
        &[
            "--no-sandbox",
            "--policy",
            &p,
            "--approval",
            "granted",
            "--",
            "touch",
            &m,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(marker.exists());
    let granted = d.write(
        "granted.toml",
        "[permission]\napproval = \"granted\"\n[sandbox]\nenabled = false\n",
    );
    std::fs::remove_file(&marker).unwrap();
    let o = dcjail(&d.0, &["--policy", &granted, "--", "touch", &m]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(marker.exists());
    // Without a policy file only the option is there to add.
    let o = dcjail(&d.0, &["--approval", "none", "--", "true"]);
    assert_line(
        &o,
        121,
        "dcjail: approval-required: this `bash` call in default mode needs the user's approval: pass --approval granted",
    );
}

// 9. A closed standard descriptor stays closed for the command.

/// `argv` run with descriptor `fd` closed (after the test's own pipes are
/// in place), through dcjail with `opts` or, with `opts` None, bare; as
/// uid 65534 with `nobody`.
fn with_closed(dir: &Path, fd: i32, opts: Option<&[&str]>, argv: &[&str], nobody: bool) -> Output {
    let mut full: Vec<&str> = Vec::new();
    if nobody {
        full.extend([
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
        ]);
    }
    if let Some(o) = opts {
        full.push(bin());
        full.extend_from_slice(o);
        full.push("--");
    }
    full.extend_from_slice(argv);
    let mut c = Command::new(full[0]);
    c.args(&full[1..])
        .current_dir(dir)
        .env_remove("DCJAIL_POLICY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if nobody {
        c.env("HOME", dir);
    }
    // SAFETY: close(2) is async-signal-safe.
    unsafe {
        c.pre_exec(move || {
            libc::close(fd);
            Ok(())
        });
    }
    c.output().unwrap()
}

/// Each case: the closed fd, the command, and what its output says.
const CLOSED_CASES: &[(i32, &[&str])] = &[
    // stdout closed: echo's write fails with EBADF.
    (1, &["echo", "hi"]),
    // stdin closed: cat cannot read it.
    (0, &["cat"]),
    // stderr closed: the command finds no fd 2 (a /dev/null there would be found).
    (
        2,
        &[
            "sh",
            "-c",
            "test -e /proc/self/fd/2 && echo open || echo closed",
        ],
    ),
    // stdout closed, asked from inside: nothing dcjail opened took fd 1.
    (
        1,
        &[
            "sh",
            "-c",
            "test -e /proc/self/fd/1 && echo open >&2 || echo closed >&2",
        ],
    ),
];

fn assert_closed_like_bare(dir: &Path, opts: &[&str], nobody: bool) {
    for (fd, argv) in CLOSED_CASES {
        let bare = with_closed(dir, *fd, None, argv, nobody);
        let jailed = with_closed(dir, *fd, Some(opts), argv, nobody);
        let who = format!("{opts:?} (nobody: {nobody}) fd {fd} {argv:?}");
        assert_eq!(err(&jailed), err(&bare), "{who}: stderr");
        assert_eq!(out(&jailed), out(&bare), "{who}: stdout");
        assert_eq!(jailed.status.code(), bare.status.code(), "{who}: status");
    }
    // The bare runs are what the cases claim, so each can fail.
    let bare = with_closed(dir, 1, None, &["echo", "hi"], nobody);
    assert_eq!(err(&bare), "echo: write error: Bad file descriptor\n");
    assert_eq!(bare.status.code(), Some(1));
    let bare = with_closed(dir, 2, None, CLOSED_CASES[2].1, nobody);
    assert_eq!(out(&bare), "closed\n");
}

#[test]
fn a_closed_standard_descriptor_stays_closed_on_every_launch_path() {
    let d = Dir::new("closedfds");
    let report = d.join("report.json").display().to_string();
    let paths: Vec<Vec<&str>> = vec![
        vec!["--no-sandbox"],
        vec!["--no-sandbox", "--timeout", "60"],
        vec!["--no-sandbox", "--report", &report],
        vec!["--backend", "landlock"],
        vec![
            "--backend",
            "landlock",
            "--sandbox-mode",
            "workspace-write",
            "--no-protect-defaults",
        ],
        vec!["--backend", "bwrap"],
        // The second stage forks a broker here: the command is its child.
        vec!["--backend", "bwrap", "--sandbox-mode", "workspace-write"],
        vec!["--backend", "bwrap", "--report", &report],
        vec![
            "--backend",
            "bwrap",
            "--net",
            "allowlist",
            "--allow-domain",
            "example.com",
        ],
    ];
    for opts in &paths {
        assert_closed_like_bare(&d.0, opts, false);
    }
    // The report dcjail wrote with fd 1 closed is whole (it did not land
    // on the command's stdout).
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("report.json")).unwrap()).unwrap();
    assert_eq!(v["decision"], "run");
    // As an unprivileged user (user namespaces under bwrap).
    // SAFETY: geteuid never fails.
    if unsafe { libc::geteuid() } == 0 {
        for opts in [
            &["--backend", "bwrap"][..],
            &["--backend", "bwrap", "--sandbox-mode", "workspace-write"],
            &["--backend", "landlock"],
        ] {
            assert_closed_like_bare(&d.0, opts, true);
        }
    }
}

/// Where memfds cannot be executed dcjail itself is the second stage; the
/// closed set reaches it through its arguments. The sysctl is per pid
/// namespace, so it is set in one of the test's own.
#[test]
fn a_closed_descriptor_stays_closed_through_dcjail_as_its_own_second_stage() {
    if !scratch::root("make a pid namespace of its own") {
        return;
    }
    let d = Dir::new("closedreexec");
    let script = format!(
        "echo 2 > /proc/sys/vm/memfd_noexec || exit 3\n\
         cat /proc/sys/vm/memfd_noexec\n\
         env echo hi >&-; echo bare=$?\n\
         '{b}' --backend bwrap -- echo hi >&-; echo jailed=$?\n\
         '{b}' --backend bwrap -- sh -c 'test -e /proc/self/fd/0 && echo open || echo closed' <&-\n",
        b = bin()
    );
    let o = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "sh", "-c", &script])
        .current_dir(&d.0)
        .env_remove("DCJAIL_POLICY")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out(&o), "2\nbare=1\njailed=1\nclosed\n", "{}", err(&o));
    assert_eq!(
        err(&o),
        "echo: write error: Bad file descriptor\necho: write error: Bad file descriptor\n"
    );
}

// 10. Quiet installs.

#[test]
fn every_install_step_of_the_scripts_prints_one_line_and_logs_the_rest() {
    let mut loud = Vec::new();
    for f in ["scripts/test.sh", "scripts/fuzz-smoke.sh"] {
        let text = std::fs::read_to_string(root().join(f)).unwrap();
        let mut said = false;
        for (n, line) in text.lines().enumerate() {
            let l = line.trim();
            if l.starts_with('#') {
                continue;
            }
            if l.starts_with("echo ") && (l.contains("install") || l.contains("download")) {
                said = true;
            }
            let installs = [
                "apt-get install",
                "cargo install",
                "pip install",
                "pip download",
            ]
            .iter()
            .any(|w| l.contains(w))
                && !l.starts_with("echo ");
            if !installs {
                continue;
            }
            let logged = l.starts_with("quietly ") || l.contains("_log") || l.contains(" -q ");
            if !logged || !said {
                loud.push(format!("{f}:{}: {l}", n + 1));
            }
        }
    }
    assert!(
        loud.is_empty(),
        "install steps that print more than one line: {loud:#?}"
    );
}

// 1. Where the build lands, and the install line.

/// Whether an ELF file asks for a program interpreter (is dynamically linked).
fn has_interpreter(elf: &[u8]) -> bool {
    let u16_at = |o: usize| u16::from_le_bytes([elf[o], elf[o + 1]]) as usize;
    let u64_at = |o: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&elf[o..o + 8]);
        u64::from_le_bytes(b) as usize
    };
    assert_eq!(&elf[..5], b"\x7fELF\x02", "not a 64-bit ELF");
    let (phoff, phentsize, phnum) = (u64_at(0x20), u16_at(0x36), u16_at(0x38));
    (0..phnum).any(|i| {
        let o = phoff + i * phentsize;
        u32::from_le_bytes([elf[o], elf[o + 1], elf[o + 2], elf[o + 3]]) == 3
    })
}

#[test]
fn the_build_lands_where_the_readme_says_and_links_statically() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme
            .contains("\napt-get install -y build-essential && cargo install --locked --path .\n"),
        "install line"
    );
    assert!(readme.contains("target/<host-tuple>/release/dcjail"));
    assert!(readme.contains("dcjail -- ls -la"));
    let built = PathBuf::from(env!("CARGO_BIN_EXE_dcjail"));
    let profile_dir = built.parent().unwrap();
    let tuple_dir = profile_dir.parent().unwrap();
    let host = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    if option_env!("RUSTFLAGS").is_some()
        || option_env!("CARGO_BUILD_TARGET").is_some()
        || !cfg!(target_env = "gnu")
    {
        eprintln!("note: RUSTFLAGS or a build target set, or not glibc: the checkout's config is not what built this; skipped");
        return;
    }
    assert_eq!(
        tuple_dir.file_name().unwrap().to_string_lossy(),
        host,
        "{} is not under target/<host-tuple>/",
        built.display()
    );
    let elf = std::fs::read(&built).unwrap();
    assert!(
        !has_interpreter(&elf),
        "{} is dynamically linked",
        built.display()
    );
}
