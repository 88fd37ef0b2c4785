//! `dcjail hook claude-code|codex`, round-tripped: a PreToolUse input in the
//! shape the agent documents (tests/fixtures/hooks/) → the decision JSON →
//! the wrapped command run by a shell as the agent runs it → the original's
//! effect inside the sandbox, and refused outside it. Every attack first
//! runs without dcjail, where it must succeed, so the test can fail.

#[path = "support/scratch.rs"]
mod scratch;

use serde_json::Value;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn bin() -> &'static str {
    scratch::exe()
}

fn fixture(name: &str) -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hooks")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// A fixture with its placeholders filled: the call runs `command` in `cwd`.
fn payload(name: &str, cwd: &Path, command: &str) -> Value {
    let mut v = fixture(name);
    v["cwd"] = cwd.to_str().unwrap().into();
    if v["tool_input"]["command"] == "@COMMAND@" {
        v["tool_input"]["command"] = command.into();
    }
    v
}

fn as_nobody(c: &mut Command) {
    let prog = c.get_program().to_os_string();
    let args: Vec<_> = c.get_args().map(|a| a.to_os_string()).collect();
    let mut n = Command::new("setpriv");
    n.args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
        .arg(prog)
        .args(args);
    if let Some(d) = c.get_current_dir() {
        n.current_dir(d);
    }
    *c = n;
}

/// `dcjail hook AGENT ARGS` with `input` on stdin, started in `dir`.
fn hook_in(dir: &Path, agent: &str, args: &[&str], input: &[u8], nobody: bool) -> Output {
    let mut c = Command::new(bin());
    c.arg("hook").arg(agent).args(args).current_dir(dir);
    if nobody {
        as_nobody(&mut c);
    }
    let mut child = c
        .env_remove("DCJAIL_POLICY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A hook that refuses its flags exits before it reads.
    let _ = child.stdin.take().unwrap().write_all(input);
    child.wait_with_output().unwrap()
}

fn hook(dir: &Path, agent: &str, args: &[&str], input: &Value) -> Output {
    hook_in(dir, agent, args, input.to_string().as_bytes(), false)
}

/// The decision JSON a hook printed (and nothing on stderr, exit 0).
fn decision(o: &Output) -> Value {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "hook failed: {err}");
    assert!(o.stderr.is_empty(), "hook wrote to stderr: {err}");
    let text = String::from_utf8(o.stdout.clone()).unwrap();
    assert_eq!(text.lines().count(), 1, "one JSON line, got {text:?}");
    serde_json::from_str(&text).unwrap()
}

fn wrapped(d: &Value) -> String {
    let h = &d["hookSpecificOutput"];
    assert_eq!(h["hookEventName"], "PreToolUse", "{d}");
    h["updatedInput"]["command"]
        .as_str()
        .unwrap_or_else(|| panic!("no updatedInput.command in {d}"))
        .to_string()
}

/// Runs `cmd` the way the agent runs its Bash tool's command.
fn shell(dir: &Path, argv: &[&str], cmd: &str, nobody: bool) -> Output {
    let mut c = Command::new(argv[0]);
    c.args(&argv[1..]).arg(cmd).current_dir(dir);
    if nobody {
        as_nobody(&mut c);
    }
    c.env_remove("DCJAIL_POLICY")
        .env_remove("DCJAIL")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn bash(dir: &Path, cmd: &str) -> Output {
    shell(dir, &["bash", "-c"], cmd, false)
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

struct Tree {
    root: PathBuf,
    ws: PathBuf,
    outside: PathBuf,
}

impl Tree {
    /// A workspace and an "outside" directory, both open to uid 65534.
    fn new(name: &str) -> Tree {
        let root = scratch::fresh(name);
        let ws = root.join("ws");
        let outside = root.join("outside");
        for d in [&root, &ws, &outside] {
            std::fs::create_dir_all(d).unwrap();
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        Tree { root, ws, outside }
    }

    fn policy(&self, name: &str, text: &str) -> PathBuf {
        let p = self.root.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        p
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        scratch::remove(&self.root);
    }
}

const WORKSPACE_WRITE: &str = "[sandbox]\nmode = \"workspace-write\"\n";

#[test]
fn claude_code_bash_call_comes_back_wrapped_with_every_other_field_kept() {
    let t = Tree::new("hook-fields");
    let p = t.policy("p.toml", WORKSPACE_WRITE);
    let input = payload("claude-code-bash.json", &t.ws, "echo hi");
    let d = decision(&hook(
        &t.root,
        "claude-code",
        &["--policy", p.to_str().unwrap()],
        &input,
    ));
    let h = &d["hookSpecificOutput"];
    assert_eq!(h["permissionDecision"], "allow", "{d}");
    assert!(
        h["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .starts_with("dcjail: runs sandboxed ("),
        "{d}"
    );
    let updated = h["updatedInput"].as_object().unwrap();
    let original = input["tool_input"].as_object().unwrap();
    assert_eq!(
        updated.keys().collect::<Vec<_>>(),
        original.keys().collect::<Vec<_>>(),
        "every tool_input field is kept"
    );
    for (k, v) in original {
        if k != "command" {
            assert_eq!(&updated[k], v, "field {k} changed");
        }
    }
    let cmd = wrapped(&d);
    assert!(
        cmd.starts_with(&format!("'{}' --mode default ", bin())),
        "{cmd}"
    );
    assert!(
        cmd.contains(&format!("--workspace '{}'", t.ws.display())),
        "{cmd}"
    );
    assert!(
        cmd.contains(&format!("--policy '{}'", p.display())),
        "{cmd}"
    );
    assert!(cmd.ends_with(" -- bash -c 'echo hi'"), "{cmd}");
}

/// The round trip for each agent and each user: the original runs (its
/// marker is printed, its write inside the workspace lands) and its write
/// outside the workspace is refused; without dcjail the same write lands.
#[test]
fn the_wrapped_command_runs_the_original_in_the_sandbox_and_a_write_outside_is_refused() {
    for (agent, fixture) in [
        ("claude-code", "claude-code-bash.json"),
        ("codex", "codex-bash.json"),
    ] {
        for nobody in [false, true] {
            let t = Tree::new(&format!("hook-effect-{agent}-{nobody}"));
            let p = t.policy("p.toml", WORKSPACE_WRITE);
            let inside = t.ws.join("inside.txt");
            let escaped = t.outside.join("escaped.txt");
            let original = format!(
                "echo MARK-RAN; echo in > '{}'; echo out > '{}'; true",
                inside.display(),
                escaped.display()
            );
            let input = payload(fixture, &t.ws, &original);
            let o = hook_in(
                &t.root,
                agent,
                &["--policy", p.to_str().unwrap()],
                input.to_string().as_bytes(),
                nobody,
            );
            let cmd = wrapped(&decision(&o));
            let ran = shell(&t.ws, &["bash", "-c"], &cmd, nobody);
            assert_eq!(out(&ran), "MARK-RAN\n", "{agent} nobody={nobody}: {ran:?}");
            assert_eq!(std::fs::read_to_string(&inside).unwrap(), "in\n");
            assert!(
                !escaped.exists(),
                "{agent} nobody={nobody}: the write outside landed"
            );
            // Control: the original, as the agent would run it without the hook.
            std::fs::remove_file(&inside).unwrap();
            let ran = shell(&t.ws, &["bash", "-c"], &original, nobody);
            assert_eq!(out(&ran), "MARK-RAN\n");
            assert!(
                escaped.exists(),
                "control: the write outside must land without dcjail"
            );
        }
    }
}

/// Commands full of shell syntax reach bash byte for byte: the wrapped
/// command prints exactly what the original prints, run by bash, by sh, by
/// zsh, and through `eval` as Claude Code's shell runs it.
#[test]
fn adversarial_commands_reach_bash_unchanged_through_every_shell() {
    let t = Tree::new("hook-bytes");
    let big = format!("printf '%s' '{}'; echo", "A".repeat(60_000));
    let cases: Vec<String> = vec![
        r#"printf '%s\n' "it's" 'a "quoted" word' ''"#.into(),
        "echo $(echo sub) `echo tick` $((6 * 7))".into(),
        "cat <<'EOF'\nline one\n  $HOME and $(id) stay literal\nEOF".into(),
        "printf '%s|' a\\ b 'c  d' \"e\tf\"; echo".into(),
        r#"echo "backslash \ and \\n and \$HOME""#.into(),
        r#"x='single '\''inner'\'' quote'; echo "$x""#.into(),
        "echo \"héllo ✓ 日本 \u{1f600}\"".into(),
        "echo '!!' \"!$\" ; echo '#not a comment' # a comment".into(),
        "for i in 1 2 3; do printf '%s' \"$i\"; done; echo".into(),
        "printf %s $'a\\tb\\x27c'; echo".into(),
        "echo a\r\necho b\n\n".into(),
        "echo '''''' \"\"\"\" '\\'".into(),
        "set -- one 'two three'; printf '<%s>' \"$@\"; echo \" $#\"".into(),
        "false || echo or; true && echo and; (exit 3); echo status=$?".into(),
        "echo unbalanced '".into(),
        big,
    ];
    for agent_fixture in ["claude-code-bash.json", "codex-bash.json"] {
        let agent = agent_fixture.trim_end_matches("-bash.json");
        for original in &cases {
            let input = payload(agent_fixture, &t.ws, original);
            let cmd = wrapped(&decision(&hook(&t.root, agent, &[], &input)));
            let want = bash(&t.ws, original);
            for sh in [
                &["bash", "-c"][..],
                &["sh", "-c"],
                &["zsh", "-f", "-c"],
                &["bash", "-c", "eval \"$1\"", "bash"],
            ] {
                if sh[0] == "zsh" && Command::new("zsh").arg("-fc").arg("true").status().is_err() {
                    continue;
                }
                let mut argv = sh.to_vec();
                let got = if sh.len() == 4 {
                    // `bash -c 'eval "$1"' bash CMD`: the command is the last argument.
                    let last = argv.pop().unwrap();
                    let mut c = Command::new(argv[0]);
                    c.args(&argv[1..]).arg(last).arg(&cmd).current_dir(&t.ws);
                    c.stdin(Stdio::null()).output().unwrap()
                } else {
                    shell(&t.ws, &argv, &cmd, false)
                };
                assert_eq!(
                    got.status.code(),
                    want.status.code(),
                    "{agent} {sh:?}: {original:?}: {}",
                    String::from_utf8_lossy(&got.stderr)
                );
                assert_eq!(got.stdout, want.stdout, "{agent} {sh:?}: {original:?}");
            }
        }
    }
}

/// A JavaScript agent writes a string that is not valid Unicode with lone
/// surrogate escapes; Node runs it with U+FFFD in their place, and so does
/// the wrapped command. A NUL byte, which no shell can run, is denied.
#[test]
fn lone_surrogates_run_as_the_agent_would_and_a_nul_is_denied() {
    let t = Tree::new("hook-surrogate");
    let input = payload("claude-code-bash.json", &t.ws, "@X@")
        .to_string()
        .replace("@X@", r#"echo \"x\ud800y\udc00z\ud83d\ude00\""#);
    let o = hook_in(&t.root, "claude-code", &[], input.as_bytes(), false);
    let cmd = wrapped(&decision(&o));
    assert_eq!(out(&bash(&t.ws, &cmd)), "x\u{fffd}y\u{fffd}z\u{1f600}\n");

    let input = payload("claude-code-bash.json", &t.ws, "echo a\u{0}b");
    let d = decision(&hook(&t.root, "claude-code", &[], &input));
    let h = &d["hookSpecificOutput"];
    assert_eq!(h["permissionDecision"], "deny", "{d}");
    assert!(h["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .contains("NUL"));
}

#[test]
fn plan_mode_is_the_agents_deny_with_dcjails_reason_and_nothing_runs() {
    let t = Tree::new("hook-plan");
    let marker = t.ws.join("ran");
    let original = format!("touch '{}'", marker.display());
    for fixture in ["claude-code-bash.json", "codex-bash.json"] {
        let agent = fixture.trim_end_matches("-bash.json");
        let mut input = payload(fixture, &t.ws, &original);
        input["permission_mode"] = "plan".into();
        let d = decision(&hook(&t.root, agent, &[], &input));
        let h = &d["hookSpecificOutput"];
        assert_eq!(h["permissionDecision"], "deny", "{d}");
        assert_eq!(
            h["permissionDecisionReason"],
            "dcjail: plan-blocked: plan mode does not run `bash` calls"
        );
        assert!(h.get("updatedInput").is_none(), "{d}");
        assert!(!marker.exists(), "the hook must not run the call");
    }
    // Control: outside plan mode the same call is wrapped, and runs.
    let input = payload("claude-code-bash.json", &t.ws, &original);
    let cmd = wrapped(&decision(&hook(
        &t.root,
        "claude-code",
        &[
            "--policy",
            t.policy("p.toml", WORKSPACE_WRITE).to_str().unwrap(),
        ],
        &input,
    )));
    assert!(bash(&t.ws, &cmd).status.success());
    assert!(marker.exists());
}

#[test]
fn a_permission_deny_or_an_unenforceable_sandbox_in_the_policy_is_denied() {
    let t = Tree::new("hook-deny");
    let deny = t.policy(
        "deny.toml",
        "[permission]\noutcome = \"deny\"\nrule = \"Bash(rm:*)\"\n",
    );
    let input = payload("claude-code-bash.json", &t.ws, "rm -rf x");
    let d = decision(&hook(
        &t.root,
        "claude-code",
        &["--policy", deny.to_str().unwrap()],
        &input,
    ));
    let reason = d["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert_eq!(d["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(
        reason.starts_with("dcjail: permission-denied: "),
        "{reason}"
    );
    assert!(reason.contains("Bash(rm:*)"), "{reason}");

    // Seatbelt exists only on macOS: this machine cannot enforce it.
    if !cfg!(target_os = "macos") {
        let sb = t.policy("sb.toml", "[sandbox]\nbackend = \"seatbelt\"\n");
        let d = decision(&hook(
            &t.root,
            "codex",
            &["--policy", sb.to_str().unwrap()],
            &input,
        ));
        let reason = d["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap();
        assert!(
            reason.starts_with("dcjail: sandbox-unavailable: "),
            "{reason}"
        );
    }

    // A policy that does not parse is refused the same way.
    let bad = t.policy("bad.toml", "[sandbox]\nmode = \"rw\"\n");
    let d = decision(&hook(
        &t.root,
        "claude-code",
        &["--policy", bad.to_str().unwrap()],
        &input,
    ));
    let reason = d["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(reason.starts_with("dcjail: policy-error: "), "{reason}");
    assert!(reason.contains("`rw` is not one of"), "{reason}");
}

#[test]
fn other_tools_and_other_events_get_no_opinion() {
    let t = Tree::new("hook-neutral");
    for (agent, fixture) in [
        ("claude-code", "claude-code-read.json"),
        ("claude-code", "claude-code-mcp.json"),
        ("claude-code", "claude-code-posttooluse.json"),
        ("codex", "codex-apply-patch.json"),
    ] {
        let o = hook(&t.root, agent, &[], &payload(fixture, &t.ws, "echo x"));
        assert_eq!(o.status.code(), Some(0), "{fixture}");
        assert!(o.stdout.is_empty(), "{fixture}: {}", out(&o));
        assert!(o.stderr.is_empty(), "{fixture}");
    }
}

#[test]
fn the_agents_permission_mode_is_the_wrapped_calls_mode() {
    let t = Tree::new("hook-modes");
    for mode in [
        "default",
        "acceptEdits",
        "auto",
        "dontAsk",
        "bypassPermissions",
    ] {
        let mut input = payload("claude-code-bash.json", &t.ws, "echo ran");
        input["permission_mode"] = mode.into();
        let cmd = wrapped(&decision(&hook(&t.root, "claude-code", &[], &input)));
        assert!(cmd.contains(&format!(" --mode {mode} ")), "{mode}: {cmd}");
        let ran = bash(&t.ws, &cmd);
        assert_eq!(out(&ran), "ran\n", "{mode}: {ran:?}");
        // The wrapped call is decided in that mode: plan mode refuses it.
        let planned = cmd.replace(&format!(" --mode {mode} "), " --mode plan ");
        let o = bash(&t.ws, &planned);
        assert_eq!(o.status.code(), Some(120), "{mode}");
        assert!(o.stdout.is_empty());
    }
    let mut input = payload("claude-code-bash.json", &t.ws, "echo ran");
    input["permission_mode"] = "yolo".into();
    let d = decision(&hook(&t.root, "claude-code", &[], &input));
    let reason = d["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert_eq!(d["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(
        reason.contains(
            "`yolo` is not one of: default, acceptEdits, plan, auto, dontAsk, bypassPermissions"
        ),
        "{reason}"
    );
}

#[test]
fn claude_code_asks_when_told_to_or_when_the_sandbox_is_off_and_codex_always_allows() {
    let t = Tree::new("hook-ask");
    let input = payload("claude-code-bash.json", &t.ws, "echo ran");
    let d = decision(&hook(&t.root, "claude-code", &["--ask"], &input));
    assert_eq!(d["hookSpecificOutput"]["permissionDecision"], "ask");
    assert_eq!(out(&bash(&t.ws, &wrapped(&d))), "ran\n");

    let settings = t.policy(
        "settings.json",
        r#"{"sandbox": {"enabled": true, "autoAllowBashIfSandboxed": false}}"#,
    );
    let args = [
        "--policy-format",
        "claude-code",
        "--policy",
        settings.to_str().unwrap(),
    ];
    let d = decision(&hook(&t.root, "claude-code", &args, &input));
    assert_eq!(d["hookSpecificOutput"]["permissionDecision"], "ask", "{d}");
    assert!(wrapped(&d).contains(" --policy-format claude-code "));

    // A policy with the sandbox off is never approved on the user's behalf.
    let off = t.policy("off.toml", "[sandbox]\nenabled = false\n");
    let d = decision(&hook(
        &t.root,
        "claude-code",
        &["--policy", off.to_str().unwrap()],
        &input,
    ));
    let h = &d["hookSpecificOutput"];
    assert_eq!(h["permissionDecision"], "ask", "{d}");
    assert!(h["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .contains("sandbox off"));

    let cx = payload("codex-bash.json", &t.ws, "echo ran");
    let d = decision(&hook(&t.root, "codex", &[], &cx));
    assert_eq!(d["hookSpecificOutput"]["permissionDecision"], "allow");
    assert_eq!(
        d["hookSpecificOutput"]["updatedInput"]
            .as_object()
            .unwrap()
            .len(),
        1,
        "Codex's Bash input has only `command`: {d}"
    );
    // Codex rejects "ask" with a rewrite, so --ask is a usage error there.
    let o = hook(&t.root, "codex", &["--ask"], &cx);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&o.stderr).lines().count(), 1);
    assert!(o.stdout.is_empty());
}

/// Claude Code's own settings.json as the hook's policy: its sandbox
/// `denyRead` holds inside the wrapped call; without dcjail the read works.
#[test]
fn claude_code_settings_as_the_hook_policy_are_enforced_on_the_wrapped_call() {
    let t = Tree::new("hook-settings");
    let secret = t.ws.join("secret.txt");
    std::fs::write(&secret, "SECRET-CONTENT\n").unwrap();
    let settings = t.policy(
        "settings.json",
        r#"{
  "permissions": {"deny": ["Read(./secret.txt)"]},
  "sandbox": {"enabled": true, "network": {"allowedDomains": []}}
}"#,
    );
    let original = "cat secret.txt; echo MARK-RAN";
    let input = payload("claude-code-bash.json", &t.ws, original);
    let args = [
        "--policy-format",
        "claude-code",
        "--policy",
        settings.to_str().unwrap(),
    ];
    let cmd = wrapped(&decision(&hook(&t.root, "claude-code", &args, &input)));
    let o = bash(&t.ws, &cmd);
    assert_eq!(out(&o), "MARK-RAN\n", "{o:?}");
    assert_eq!(out(&bash(&t.ws, original)), "SECRET-CONTENT\nMARK-RAN\n");
}

#[test]
fn a_relative_hook_policy_is_made_absolute_for_the_wrapped_call() {
    let t = Tree::new("hook-relative");
    t.policy("p.toml", WORKSPACE_WRITE);
    let input = payload("codex-bash.json", &t.ws, "echo x > made.txt");
    let cmd = wrapped(&decision(&hook(
        &t.root,
        "codex",
        &["--policy", "p.toml"],
        &input,
    )));
    assert!(cmd.contains(&format!("--policy '{}'", t.root.join("p.toml").display())));
    assert!(bash(&t.ws, &cmd).status.success());
    assert!(t.ws.join("made.txt").exists());
}

#[test]
fn dangerously_disable_sandbox_is_kept_as_a_field_and_the_call_is_still_sandboxed() {
    let t = Tree::new("hook-dangerous");
    let escaped = t.outside.join("x");
    let original = format!("touch '{}'; echo MARK-RAN", escaped.display());
    let mut input = payload("claude-code-bash.json", &t.ws, &original);
    input["tool_input"]["dangerouslyDisableSandbox"] = true.into();
    let p = t.policy("p.toml", WORKSPACE_WRITE);
    let d = decision(&hook(
        &t.root,
        "claude-code",
        &["--policy", p.to_str().unwrap()],
        &input,
    ));
    assert_eq!(
        d["hookSpecificOutput"]["updatedInput"]["dangerouslyDisableSandbox"],
        true
    );
    assert_eq!(out(&bash(&t.ws, &wrapped(&d))), "MARK-RAN\n");
    assert!(!escaped.exists());
    bash(&t.ws, &original);
    assert!(escaped.exists(), "control");
}

/// The visible check for agent builds that ignore `updatedInput`: the
/// documented one-liner says which way the call ran.
#[test]
fn the_dcjail_marker_shows_whether_the_agent_applied_the_rewrite() {
    let t = Tree::new("hook-marker");
    let line = r#"test "$DCJAIL" = 1 && echo sandboxed by dcjail || echo NOT SANDBOXED"#;
    let input = payload("claude-code-bash.json", &t.ws, line);
    let cmd = wrapped(&decision(&hook(&t.root, "claude-code", &[], &input)));
    assert_eq!(out(&bash(&t.ws, &cmd)), "sandboxed by dcjail\n");
    assert_eq!(out(&bash(&t.ws, line)), "NOT SANDBOXED\n");

    let o = Command::new(bin())
        .args(["hook", "claude-code", "--check"])
        .current_dir(&t.ws)
        .env_remove("DCJAIL_POLICY")
        .output()
        .unwrap();
    let text = out(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("it printed: DCJAIL=1 DCJAIL_BACKEND="),
        "{text}"
    );
    assert!(text.contains(": ok."), "{text}");
    // A check whose sample call is refused says so and fails.
    let o = Command::new(bin())
        .args([
            "hook",
            "codex",
            "--check",
            "--policy",
            "/nonexistent/p.toml",
        ])
        .current_dir(&t.ws)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(out(&o).contains("FAILED"));
}

#[test]
fn a_broken_hook_blocks_the_call_with_exit_2_and_one_stderr_line() {
    let t = Tree::new("hook-broken");
    let cases: Vec<(Vec<&str>, Vec<u8>)> = vec![
        (vec![], b"not json".to_vec()),
        (vec![], b"[1, 2]".to_vec()),
        (
            vec![],
            b"{\"tool_name\": \"Bash\", \"cwd\": \"\xff\"}".to_vec(),
        ),
        (vec![], Vec::new()),
        (vec!["--no-such-flag"], b"{}".to_vec()),
        (vec!["--policy-format", "yaml"], b"{}".to_vec()),
    ];
    for (args, input) in cases {
        let o = hook_in(&t.root, "claude-code", &args, &input, false);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?} {input:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err:?}");
        assert!(err.starts_with("dcjail: usage-error: "), "{err}");
        assert!(o.stdout.is_empty());
    }
    let o = hook_in(&t.root, "gemini", &[], b"{}", false);
    assert_eq!(o.status.code(), Some(2));
    // A Bash call without a command string is the agent's deny.
    let input = serde_json::json!({"tool_name": "Bash", "tool_input": {"command": 7}, "cwd": t.ws});
    let d = decision(&hook(&t.root, "claude-code", &[], &input));
    assert_eq!(d["hookSpecificOutput"]["permissionDecision"], "deny");
    // --help is help, not a block.
    let o = Command::new(bin())
        .args(["hook", "--help"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(out(&o).contains("PreToolUse"));
}
