//! The command line as a user sees it: refusals, policy errors, explain, the
//! plan card, and exec with the sandbox off. Every refusal test checks that
//! the command's side effect did not happen.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "support/scratch.rs"]
mod scratch;

use scratch::exe as bin;
/// Scratch space under the checkout's target/ (never the system's /tmp,
/// a writable root of its own in workspace-write).
use scratch::Dir as Tmp;

use scratch::dcjail;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A refusal: the status, exactly one stderr line starting with the reason.
fn assert_refused(o: &Output, status: i32, reason: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(status), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "want one line, got: {err:?}");
    assert!(
        err.starts_with(&format!("dcjail: {reason}: ")),
        "want reason {reason}, got: {err}"
    );
    assert!(o.stdout.is_empty(), "refusal printed on stdout");
}

fn touch_cmd(marker: &Path) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!("touch '{}'", marker.display()),
    ]
}

fn run_touch(dir: &Path, flags: &[&str], marker: &Path) -> Output {
    let mut args: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
    args.push("--".into());
    args.extend(touch_cmd(marker));
    let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    dcjail(dir, &a)
}

#[test]
fn refusals_print_one_line_exit_with_their_status_and_start_nothing() {
    let t = Tmp::new("refuse");
    let cases: &[(&[&str], i32, &str)] = &[
        (&["--mode", "plan"], 120, "plan-blocked"),
        (
            &["--permission", "deny", "--rule", "Bash(touch:*)"],
            120,
            "permission-denied",
        ),
        (
            &["--mode", "auto", "--classifier", "hard_deny"],
            120,
            "auto-hard-deny",
        ),
        (
            &["--approval", "rejected", "--permission", "ask"],
            120,
            "user-rejected",
        ),
        (
            &["--mode", "auto", "--approval", "rejected"],
            120,
            "auto-soft-deny-user-rejected",
        ),
        (&["--approval", "none"], 121, "approval-required"),
        (
            &["--mode", "dontAsk", "--permission", "ask"],
            120,
            "mode-denied",
        ),
        (&["--mode", "nonsense"], 125, "usage-error"),
    ];
    for (i, (flags, status, reason)) in cases.iter().enumerate() {
        let marker = t.join(format!("marker-{i}"));
        let mut f = vec!["--no-sandbox"];
        f.extend_from_slice(flags);
        let o = run_touch(&t.0, &f, &marker);
        assert_refused(&o, *status, reason);
        assert!(!marker.exists(), "{reason}: the refused command ran");
    }
    // The control: the same command with nothing refusing does run.
    let marker = t.join("marker-ok");
    let o = run_touch(&t.0, &["--no-sandbox"], &marker);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(marker.exists());
}

#[test]
fn permission_denied_message_quotes_the_rule() {
    let t = Tmp::new("rule");
    let o = run_touch(
        &t.0,
        &[
            "--no-sandbox",
            "--permission",
            "deny",
            "--rule",
            "Bash(touch:*)",
        ],
        &t.join("m"),
    );
    assert!(stderr(&o).contains("Bash(touch:*)"), "{}", stderr(&o));
}

#[test]
fn unenforceable_sandbox_is_refused_with_122_before_anything_runs() {
    let t = Tmp::new("unavail");
    let marker = t.join("marker");
    // Seatbelt can never run on Linux: a sandbox asked for and not enforceable.
    let o = run_touch(&t.0, &["--backend", "seatbelt"], &marker);
    assert_refused(&o, 122, "sandbox-unavailable");
    assert!(stderr(&o).contains("macOS"), "{}", stderr(&o));
    assert!(!marker.exists());
}

#[test]
fn bypass_permissions_still_passes_through_the_sandbox_gate() {
    let t = Tmp::new("bypass");
    let marker = t.join("marker");
    let o = run_touch(
        &t.0,
        &["--mode", "bypassPermissions", "--backend", "seatbelt"],
        &marker,
    );
    assert_refused(&o, 122, "sandbox-unavailable");
    assert!(!marker.exists());
}

#[test]
fn bypass_with_sandbox_off_and_no_worktree_warns_once_and_runs() {
    let t = Tmp::new("bypasswarn");
    let marker = t.join("marker");
    let o = run_touch(
        &t.0,
        &["--mode", "bypassPermissions", "--no-sandbox"],
        &marker,
    );
    assert_eq!(o.status.code(), Some(0));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("warning") && err.contains("bypassPermissions"),
        "{err}"
    );
    assert!(marker.exists());
}

#[test]
fn sandbox_precheck_denies_declared_paths_quoting_them_as_written() {
    let t = Tmp::new("precheck");
    std::fs::create_dir_all(t.join("home/.ssh")).unwrap();
    std::fs::write(t.join("home/.ssh/id_rsa"), "KEY").unwrap();
    let marker = t.join("marker");
    let mut c = Command::new(bin());
    c.current_dir(&t.0)
        .env("HOME", t.join("home"))
        .args([
            "--tool",
            "read",
            "--deny-read",
            "~/.ssh",
            "--path",
            "~/.ssh/id_rsa",
            "--",
        ])
        .args(touch_cmd(&marker));
    let o = c.output().unwrap();
    assert_refused(&o, 120, "sandbox-denied");
    assert!(stderr(&o).contains("`~/.ssh/id_rsa`"), "{}", stderr(&o));
    assert!(!marker.exists());

    // An edit outside the writable roots, with a glob deny inside them.
    for (flags, what) in [
        (
            vec![
                "--tool",
                "edit",
                "--sandbox-mode",
                "read-only",
                "--path",
                "a.txt",
            ],
            "a.txt",
        ),
        (
            vec![
                "--tool",
                "write",
                "--sandbox-mode",
                "workspace-write",
                "--deny-write",
                "**/*.lock",
                "--path",
                "sub/x.lock",
            ],
            "sub/x.lock",
        ),
        (
            vec![
                "--tool",
                "edit",
                "--sandbox-mode",
                "workspace-write",
                "--path",
                ".git/hooks/pre-commit",
            ],
            ".git/hooks/pre-commit",
        ),
        (
            vec![
                "--tool",
                "edit",
                "--sandbox-mode",
                "workspace-write",
                "--path",
                "/etc/passwd",
            ],
            "/etc/passwd",
        ),
    ] {
        let mut f = vec!["--mode", "acceptEdits"];
        f.extend(flags);
        let o = run_touch(&t.0, &f, &marker);
        assert_refused(&o, 120, "sandbox-denied");
        assert!(stderr(&o).contains(&format!("`{what}`")), "{}", stderr(&o));
        assert!(!marker.exists());
    }
}

#[test]
fn refusal_priority_follows_the_gate_order() {
    let t = Tmp::new("prio");
    // plan-blocked beats permission-denied beats sandbox-denied.
    let o = run_touch(
        &t.0,
        &[
            "--mode",
            "plan",
            "--permission",
            "deny",
            "--tool",
            "edit",
            "--path",
            "/etc/x",
        ],
        &t.join("m"),
    );
    assert_refused(&o, 120, "plan-blocked");
    let o = run_touch(
        &t.0,
        &["--permission", "deny", "--tool", "edit", "--path", "/etc/x"],
        &t.join("m"),
    );
    assert_refused(&o, 120, "permission-denied");
    let o = run_touch(
        &t.0,
        &["--approval", "none", "--tool", "edit", "--path", "/etc/x"],
        &t.join("m"),
    );
    assert_refused(&o, 121, "approval-required");
}

fn write_policy(t: &Tmp, name: &str, text: &[u8]) -> PathBuf {
    let p = t.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn bad_policies_exit_125_naming_file_line_key_and_accepted_words() {
    let t = Tmp::new("badpol");
    let cases: &[(&str, &[u8], &[&str])] = &[
        (
            "unknown.toml",
            b"mode = \"default\"\n[sandbox]\nbogus = 1\n",
            &["unknown.toml:3", "bogus", "enabled"],
        ),
        (
            "type.toml",
            b"[sandbox]\nenabled = \"yes\"\n",
            &["type.toml:2", "sandbox.enabled", "boolean"],
        ),
        (
            "vocab.toml",
            b"tool = \"shell\"\n",
            &["vocab.toml:1", "`tool`", "read, edit, write, bash, net"],
        ),
        (
            "net.toml",
            b"[sandbox.network]\nmode = \"some\"\n",
            &[
                "net.toml:2",
                "sandbox.network.mode",
                "none, allowlist, full",
            ],
        ),
        (
            "version.toml",
            b"version = 2\n",
            &["version.toml", "version", "1"],
        ),
        ("syntax.toml", b"mode = \n", &["syntax.toml:1"]),
        (
            "utf8.toml",
            b"mode = \"default\"\nrule = \"\xff\"\n",
            &["utf8.toml:2", "UTF-8"],
        ),
        (
            "domain.toml",
            b"[sandbox.network]\nallow_domains = [\"exa mple.com\"]\n",
            &["domain.toml", "allow_domains"],
        ),
        (
            "verdict.toml",
            b"[classifier]\nverdict = \"maybe\"\n",
            &["verdict.toml:2", "soft_deny"],
        ),
    ];
    for (name, text, needles) in cases {
        let p = write_policy(&t, name, text);
        let marker = t.join("marker");
        let o = run_touch(
            &t.0,
            &["--no-sandbox", "--policy", p.to_str().unwrap()],
            &marker,
        );
        assert_refused(&o, 125, "policy-error");
        for n in *needles {
            assert!(
                stderr(&o).contains(n),
                "{name}: `{n}` not in: {}",
                stderr(&o)
            );
        }
        assert!(!marker.exists());
    }
}

#[test]
fn policy_that_is_missing_a_directory_or_a_fifo_is_refused_without_hanging() {
    let t = Tmp::new("special");
    let fifo = t.join("fifo.toml");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    for (p, needle) in [
        (t.join("missing.toml"), "No such file"),
        (t.0.clone(), "directory"),
        (fifo, "FIFO"),
    ] {
        let marker = t.join("marker");
        let o = run_touch(&t.0, &["--policy", p.to_str().unwrap()], &marker);
        assert_refused(&o, 125, "policy-error");
        assert!(stderr(&o).contains(needle), "{}", stderr(&o));
        assert!(!marker.exists());
    }
}

#[test]
fn dcjail_policy_env_names_the_policy_and_flags_override_it() {
    let t = Tmp::new("env");
    let p = write_policy(
        &t,
        "p.toml",
        b"mode = \"plan\"\n[sandbox]\nenabled = false\n",
    );
    let marker = t.join("marker");
    let mut c = Command::new(bin());
    c.current_dir(&t.0)
        .env("DCJAIL_POLICY", &p)
        .arg("--")
        .args(touch_cmd(&marker));
    assert_refused(&c.output().unwrap(), 120, "plan-blocked");
    assert!(!marker.exists());
    // Flags beat the file: --mode default with approval granted runs.
    let mut c = Command::new(bin());
    c.current_dir(&t.0)
        .env("DCJAIL_POLICY", &p)
        .args(["--mode", "default", "--approval", "granted", "--"])
        .args(touch_cmd(&marker));
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(marker.exists());
}

#[test]
fn a_policy_file_without_approval_needs_approval_for_bash() {
    // Schema defaults apply to a given file: approval = "none".
    let t = Tmp::new("schema");
    let p = write_policy(&t, "p.toml", b"[sandbox]\nenabled = false\n");
    let marker = t.join("marker");
    let o = run_touch(&t.0, &["--policy", p.to_str().unwrap()], &marker);
    assert_refused(&o, 121, "approval-required");
    assert!(!marker.exists());
}

#[test]
fn huge_policy_is_refused_not_parsed() {
    let t = Tmp::new("huge");
    let mut text = b"paths = [".to_vec();
    while text.len() < 9 * 1024 * 1024 {
        text.extend_from_slice(b"\"/tmp/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",");
    }
    text.extend_from_slice(b"]\n");
    let p = write_policy(&t, "huge.toml", &text);
    let o = run_touch(&t.0, &["--policy", p.to_str().unwrap()], &t.join("m"));
    assert_refused(&o, 125, "policy-error");
    assert!(stderr(&o).contains("limit"), "{}", stderr(&o));
}

#[test]
fn explain_prints_the_decision_as_json_with_the_run_status() {
    let t = Tmp::new("explain");
    let o = dcjail(&t.0, &["explain", "--no-sandbox", "--", "ls", "-l"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["decision"], "run");
    assert!(v["reason"].is_null() && v["gate"].is_null());
    assert_eq!(v["plan"]["argv"], serde_json::json!(["ls", "-l"]));
    assert!(v.get("message").is_some() && v.get("backend").is_some());

    for (flags, decision, reason, gate, status) in [
        (vec!["--mode", "plan"], "deny", "plan-blocked", "mode", 120),
        (
            vec!["--approval", "none"],
            "ask",
            "approval-required",
            "approval",
            121,
        ),
        (
            vec!["--backend", "seatbelt"],
            "unavailable",
            "sandbox-unavailable",
            "sandbox",
            122,
        ),
        (vec!["--timeout", "x"], "error", "usage-error", "", 125),
    ] {
        let marker = t.join("m");
        let mut args = vec!["explain"];
        args.extend(flags.iter());
        args.extend(["--", "touch", marker.to_str().unwrap()]);
        let o = dcjail(&t.0, &args);
        assert_eq!(o.status.code(), Some(status), "{}", stderr(&o));
        assert!(!marker.exists(), "explain ran the command");
        if reason == "usage-error" {
            assert_refused(&o, 125, "usage-error");
            continue;
        }
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["decision"], decision);
        assert_eq!(v["reason"], reason);
        assert_eq!(v["gate"], gate);
    }
}

#[test]
fn explain_policy_errors_are_json_too() {
    let t = Tmp::new("explainerr");
    let p = write_policy(&t, "p.toml", b"nope = 1\n");
    let o = dcjail(
        &t.0,
        &["explain", "--policy", p.to_str().unwrap(), "--", "true"],
    );
    assert_eq!(o.status.code(), Some(125));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["decision"], "error");
    assert_eq!(v["reason"], "policy-error");
}

#[test]
fn plan_blocked_calls_are_appended_to_the_plan_card_0600() {
    use std::os::unix::fs::PermissionsExt;
    let t = Tmp::new("card");
    let card = t.join("card.jsonl");
    for i in 0..2 {
        let marker = t.join(format!("m{i}"));
        let o = run_touch(
            &t.0,
            &[
                "--mode",
                "plan",
                "--tool",
                "edit",
                "--path",
                "src/x.rs",
                "--plan-card",
                card.to_str().unwrap(),
            ],
            &marker,
        );
        assert_refused(&o, 120, "plan-blocked");
        assert!(!marker.exists());
    }
    let text = std::fs::read_to_string(&card).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    for l in lines {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["mode"], "plan");
        assert_eq!(v["tool"], "edit");
        assert_eq!(v["argv"][0], "sh");
        assert_eq!(v["paths"], serde_json::json!(["src/x.rs"]));
        assert_eq!(v["cwd"], t.0.to_str().unwrap());
        let time = v["time"].as_str().unwrap();
        assert!(
            time.len() == 20 && time.ends_with('Z') && time.as_bytes()[10] == b'T',
            "{time}"
        );
    }
    let mode = std::fs::metadata(&card).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn argv_reaches_the_command_byte_exact() {
    let t = Tmp::new("argv");
    let weird: Vec<&OsStr> = vec![
        OsStr::from_bytes(b"with space"),
        OsStr::from_bytes(b"it's \"quoted\""),
        OsStr::from_bytes(b"$(touch pwned)"),
        OsStr::from_bytes(b"\xff\xfe non-utf8"),
        OsStr::from_bytes(b""),
        OsStr::from_bytes(b"-l"),
        OsStr::from_bytes(b"line\nbreak"),
    ];
    let o = Command::new(bin())
        .current_dir(&t.0)
        .args(["--no-sandbox", "--", "printf", "%s\\0"])
        .args(&weird)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut want = Vec::new();
    for w in &weird {
        want.extend_from_slice(w.as_bytes());
        want.push(0);
    }
    assert_eq!(o.stdout, want);
    assert!(!t.join("pwned").exists());
    // Without `--`, the first word that is not an option starts the command.
    let o = Command::new(bin())
        .current_dir(&t.0)
        .args(["--no-sandbox", "printf", "%s|", "--mode", "-x"])
        .output()
        .unwrap();
    assert_eq!(o.stdout, b"--mode|-x|");
}

#[test]
fn missing_and_unexecutable_commands_exit_127_and_126() {
    let t = Tmp::new("notfound");
    let o = dcjail(&t.0, &["--no-sandbox", "--", "dcjail-no-such-command"]);
    assert_eq!(o.status.code(), Some(127));
    assert!(stderr(&o).contains("not found"));
    let f = t.join("noexec.sh");
    std::fs::write(&f, "#!/bin/sh\ntouch pwned\n").unwrap();
    let o = dcjail(&t.0, &["--no-sandbox", "--", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(126));
    let o = dcjail(&t.0, &["--no-sandbox", "--", t.0.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(126));
    assert!(!t.join("pwned").exists());
}

#[test]
fn exit_status_passes_through_and_signal_death_is_128_plus_n() {
    let t = Tmp::new("status");
    let o = dcjail(&t.0, &["--no-sandbox", "--", "sh", "-c", "exit 42"]);
    assert_eq!(o.status.code(), Some(42));
    // Unsupervised, dcjail *is* the command: the shell reports 128+N.
    let script = format!("'{}' --no-sandbox -- sh -c 'kill -TERM $$'; echo $?", bin());
    let o = Command::new("sh").arg("-c").arg(script).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "143");
    // Supervised (a timeout needs a parent), dcjail itself exits 128+N.
    let o = dcjail(
        &t.0,
        &[
            "--no-sandbox",
            "--timeout",
            "60",
            "--",
            "sh",
            "-c",
            "kill -KILL $$",
        ],
    );
    assert_eq!(o.status.code(), Some(137));
}

#[test]
fn timeout_kills_the_whole_tree_and_exits_124() {
    let t = Tmp::new("timeout");
    let marker = t.join("late");
    let start = std::time::Instant::now();
    let script = format!("(sleep 3; touch '{}') & sleep 30", marker.display());
    let o = dcjail(
        &t.0,
        &["--no-sandbox", "--timeout", "1", "--", "sh", "-c", &script],
    );
    assert_eq!(o.status.code(), Some(124), "{}", stderr(&o));
    assert!(start.elapsed() < std::time::Duration::from_secs(10));
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert!(!marker.exists(), "a background job outlived the timeout");
}

#[test]
fn stdin_stdout_stderr_are_inherited_in_a_pipeline() {
    let script = format!(
        "printf 'a\\nb\\nab\\n' | '{}' --no-sandbox -- grep b | wc -l; '{}' --no-sandbox -- sh -c 'echo err >&2' 2>&1 >/dev/null",
        bin(),
        bin()
    );
    let o = Command::new("sh").arg("-c").arg(script).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "2\nerr\n");
}

#[test]
fn the_command_sees_dcjail_environment_variables() {
    let t = Tmp::new("env");
    let o = Command::new(bin())
        .current_dir(&t.0)
        .env("KEEP_ME", "yes")
        .env("DCJAIL_BACKEND", "forged")
        .args(["--no-sandbox", "--", "env"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    for want in [
        "DCJAIL=1",
        "DCJAIL_BACKEND=none",
        "DCJAIL_NETWORK=full",
        "KEEP_ME=yes",
    ] {
        assert!(out.lines().any(|l| l == want), "{want} missing in:\n{out}");
    }
    assert!(!out.contains("forged"));
}

#[test]
fn worktree_gate_requires_a_git_worktree_and_makes_it_the_cwd() {
    let t = Tmp::new("wt");
    let plain = t.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let marker = t.join("marker");
    let o = run_touch(
        &t.0,
        &["--no-sandbox", "--worktree", plain.to_str().unwrap()],
        &marker,
    );
    assert_refused(&o, 125, "policy-error");
    assert!(stderr(&o).contains("git worktree"));
    assert!(!marker.exists());
    let repo = t.join("repo");
    assert!(Command::new("git")
        .args(["init", "-q"])
        .arg(&repo)
        .status()
        .unwrap()
        .success());
    let o = dcjail(
        &t.0,
        &[
            "--no-sandbox",
            "--worktree",
            repo.to_str().unwrap(),
            "--",
            "pwd",
        ],
    );
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        repo.to_str().unwrap()
    );
}

#[test]
fn usage_errors_are_one_line() {
    let t = Tmp::new("usage");
    for args in [
        vec![],
        vec!["--mode"],
        vec!["--no-such-flag", "--", "true"],
        vec!["--timeout", "-1", "--", "true"],
    ] {
        let o = dcjail(&t.0, &args);
        assert_refused(&o, 125, "usage-error");
    }
    let o = dcjail(&t.0, &["--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("--policy"));
}

/// The options (long and short) listed in the Options section of a help text.
fn help_options(args: &[&str]) -> Vec<String> {
    let o = Command::new(bin()).args(args).output().unwrap();
    assert!(o.status.success(), "dcjail {args:?} --help failed");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        // Option lines are indented and start with a dash; the usage line
        // and the descriptions are not.
        if !t.starts_with('-') || line.len() == t.len() {
            continue;
        }
        for word in t.split(|c: char| c.is_whitespace() || c == ',') {
            let name = word.trim_start_matches('-');
            if word.starts_with('-')
                && !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            {
                out.push(word.to_string());
            }
        }
    }
    assert!(
        out.iter().any(|o| o == "--help"),
        "no options parsed from dcjail {args:?}"
    );
    out
}

/// The words of the man page's option entries: the line after each `.TP`
/// in the OPTIONS section, with the roff dashes made plain.
fn man_option_entries(man: &str) -> Vec<String> {
    let sec = man
        .split("\n.SH ")
        .find(|s| s.starts_with("OPTIONS"))
        .expect("man page has an OPTIONS section");
    let lines: Vec<&str> = sec.lines().collect();
    let mut out = Vec::new();
    for w in lines.windows(2) {
        if w[0].trim() == ".TP" && w[1].starts_with(".B") {
            out.extend(
                w[1].replace("\\-", "-")
                    .split(|c: char| c.is_whitespace() || c == '"' || c == ',')
                    .filter(|x| x.starts_with('-'))
                    .map(str::to_string),
            );
        }
    }
    out
}

/// The SYNOPSIS form that starts with `.B <head>`, up to the next `.br`.
fn man_synopsis(man: &str, head: &str) -> String {
    let sec = man
        .split("\n.SH ")
        .find(|s| s.starts_with("SYNOPSIS"))
        .expect("man page has a SYNOPSIS section");
    let mut out = String::new();
    let mut inside = false;
    for line in sec.lines() {
        if line.starts_with(".B ") {
            inside = line.trim_end() == format!(".B {head}");
        } else if line.starts_with(".br") {
            inside = false;
        } else if inside {
            out.push_str(
                &line
                    .replace("\\-", "-")
                    .replace("\\fB", " ")
                    .replace("\\fR", " "),
            );
            out.push(' ');
        }
    }
    assert!(!out.is_empty(), "no SYNOPSIS form for `{head}`");
    out
}

#[test]
fn the_man_page_prints_the_flag_definitions() {
    // The OPTIONS entries are written from the clap definitions (`cargo run
    // --example man_tables`): the page holds exactly what that writes,
    // between its marks, and the marks are in OPTIONS.
    let man =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/man/dcjail.1")).unwrap();
    let section = man
        .find(".SH OPTIONS\n")
        .expect("man page has an OPTIONS section");
    let b = man
        .find(dcjail::manpage::OPTIONS_BEGIN)
        .expect("the entries' first mark");
    let e = man
        .find(dcjail::manpage::OPTIONS_END)
        .expect("the entries' last mark");
    let next = man[section + 1..]
        .find("\n.SH ")
        .map_or(man.len(), |i| i + section + 1);
    assert!(section < b && b < e && e < next, "the marks are in OPTIONS");
    assert!(
        man[b + dcjail::manpage::OPTIONS_BEGIN.len()..e] == dcjail::manpage::options(),
        "man/dcjail.1 does not hold the options the flag definitions print: run `cargo run --example man_tables`"
    );
}

#[test]
fn help_prints_only_the_first_paragraph_of_an_option() {
    // The paragraphs after an option's first are the man page's: `--help`
    // stays a screenful.
    for args in [&["--help"][..], &["explain", "--help"], &["hook", "--help"]] {
        let o = Command::new(bin()).args(args).output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains("--policy"), "{text}");
        assert!(!text.contains("is read to its end"), "{text}");
        assert!(!text.contains("Other settings are kept"), "{text}");
    }
}

#[test]
fn every_help_option_is_in_the_man_page() {
    let man =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/man/dcjail.1")).unwrap();
    let entries = man_option_entries(&man);
    let mut missing = Vec::new();
    // Every option of every parser has its own entry under OPTIONS.
    for args in [
        &["--help"][..],
        &["explain", "--help"],
        &["doctor", "--help"],
        &["worktree", "--help"],
        &["worktree", "enter", "--help"],
        &["worktree", "exit", "--help"],
        &["setup", "--help"],
        &["setup", "apparmor", "--help"],
        &["hook", "--help"],
        &["import", "--help"],
        &["help", "--help"],
    ] {
        for opt in help_options(args) {
            if !entries.contains(&opt) {
                missing.push(format!("{args:?}: {opt} has no OPTIONS entry"));
            }
        }
    }
    // The subcommands that take only a few options list them all in their
    // SYNOPSIS form (run and explain say [OPTIONS]).
    for (head, args) in [
        ("dcjail doctor", &["doctor", "--help"][..]),
        ("dcjail worktree enter", &["worktree", "enter", "--help"]),
        ("dcjail worktree exit", &["worktree", "exit", "--help"]),
        ("dcjail setup apparmor", &["setup", "apparmor", "--help"]),
        ("dcjail hook", &["hook", "--help"]),
        ("dcjail import", &["import", "--help"]),
        ("dcjail help", &["help", "--help"]),
    ] {
        let syn = man_synopsis(&man, head);
        for opt in help_options(args) {
            if opt.starts_with("--")
                && opt != "--help"
                && !syn
                    .split(|c: char| c.is_whitespace() || c == '[' || c == ']')
                    .any(|w| w == opt)
            {
                missing.push(format!("{head}: {opt} not in its SYNOPSIS"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "man/dcjail.1 is out of sync with --help: {missing:#?}"
    );
    let man = man.replace("\\-", "-");
    for reason in dcjail::error::Reason::ALL {
        assert!(
            man.contains(reason.word()),
            "reason {} not in man page",
            reason.word()
        );
    }
}

#[test]
fn the_command_gets_default_sigpipe_like_any_program() {
    // `yes` must die quietly of SIGPIPE when `head` exits, as it would
    // without dcjail, on every launch path.
    for flags in [
        vec!["--no-sandbox"],
        vec!["--no-sandbox", "--timeout", "30"],
        vec!["--backend", "landlock"],
        vec!["--backend", "bwrap"],
    ] {
        let mut args = flags.clone();
        args.extend(["--", "sh", "-c", "yes | head -1"]);
        let o = Command::new(bin()).args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{flags:?}: {}", stderr(&o));
        assert_eq!(String::from_utf8_lossy(&o.stdout), "y\n", "{flags:?}");
        assert!(o.stderr.is_empty(), "{flags:?}: {}", stderr(&o));
    }
}

#[test]
fn an_absurd_timeout_is_refused_naming_it_not_a_crash() {
    let t = Tmp::new("bigtimeout");
    let marker = t.join("m");
    let o = run_touch(
        &t.0,
        &["--no-sandbox", "--timeout", "18446744073709551615"],
        &marker,
    );
    assert_refused(&o, 125, "usage-error");
    assert!(
        stderr(&o).contains("'18446744073709551615' for '--timeout"),
        "{}",
        stderr(&o)
    );
    assert!(!marker.exists());
    let p = write_policy(
        &t,
        "big.toml",
        b"[permission]\napproval = \"granted\"\n[sandbox]\nenabled = false\ntimeout = 18446744073709551615\n",
    );
    let o = run_touch(&t.0, &["--policy", p.to_str().unwrap()], &marker);
    assert_refused(&o, 125, "policy-error");
    assert!(stderr(&o).contains("sandbox.timeout"), "{}", stderr(&o));
    assert!(!marker.exists());
}

#[test]
fn report_is_written_for_a_run_with_the_sandbox_off_too() {
    let t = Tmp::new("report");
    let report = t.join("r.json");
    let o = dcjail(
        &t.0,
        &[
            "--no-sandbox",
            "--report",
            report.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "exit 7",
        ],
    );
    assert_eq!(o.status.code(), Some(7));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(v["decision"], "run");
    assert_eq!(v["exit_status"], 7);
    // A refusal writes its report too.
    let o = dcjail(
        &t.0,
        &[
            "--mode",
            "plan",
            "--report",
            report.to_str().unwrap(),
            "--",
            "true",
        ],
    );
    assert_eq!(o.status.code(), Some(120));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(v["reason"], "plan-blocked");
}
