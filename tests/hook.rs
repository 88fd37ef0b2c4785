//! `dcjail hook codex`, round-tripped, and what both agents' hooks share: a
//! PreToolUse input in the shape the agent documents (tests/fixtures/hooks/)
//! → the decision JSON → the rewritten command run by a shell as Codex runs
//! it → the original's effect inside the session's project, and refused
//! outside it. Every attack first runs without dcjail, where it must
//! succeed, so the test can fail. Also `--install` and `--check` on scratch
//! settings files.
//!
//! Claude Code's shell prefix and Bash hook: tests/hook_prefix.rs. The file
//! tools and Codex's apply_patch: tests/hook_files.rs.

#[path = "support/hook.rs"]
mod common;
#[path = "support/scratch.rs"]
mod scratch;

use common::*;
use serde_json::{json, Value};
use std::path::Path;

const HOOK: &str = "#!/bin/sh\nexit 0\n";

/// The round trip of a Codex shell call, as root and as uid 65534. The
/// model's `workdir` (the input's cwd) is a subdirectory and Codex starts
/// the hook in the session's directory: the rewrite runs the original with
/// the session's directory as the workspace, so its write in the project
/// above the workdir lands, while its writes outside the project and into
/// `.git/hooks` are refused. Without dcjail all three land.
#[test]
fn a_codex_shell_call_runs_wrapped_with_the_hooks_own_directory_as_the_workspace() {
    for nobody in [false, true] {
        let t = Tree::new(&format!("hook-codex-effect-{nobody}"));
        let top = t.ws.join("top.txt");
        let escaped = t.outside.join("escaped.txt");
        let original = format!(
            "echo MARK-RAN \"$DCJAIL\"; echo in > ../top.txt; echo out > '{}'; echo evil > ../.git/hooks/pre-commit; true",
            escaped.display()
        );
        let input = payload("codex-bash.json", &t.sub, &original);
        let d = decision(&Hook::codex(&t.ws).nobody(nobody).call(&input));
        let h = &d["hookSpecificOutput"];
        let why = h["permissionDecisionReason"].as_str().unwrap();
        assert!(why.starts_with("dcjail: runs sandboxed ("), "{d}");
        // Which layers hold the call, so a weaker run shows (here: all).
        assert!(
            why.ends_with("; layers namespaces, mounts, landlock, seccomp, seccomp-notify)"),
            "{d}"
        );
        let updated = h["updatedInput"].as_object().unwrap();
        let keys = |m: &serde_json::Map<String, Value>| m.keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            keys(updated),
            keys(input["tool_input"].as_object().unwrap())
        );
        let cmd = wrapped(&d);
        let head = format!(
            "'{}' --mode default --tool bash --approval granted --workspace '{}' --sandbox-mode workspace-write -- bash -c ",
            bin(),
            t.ws.display()
        );
        assert!(cmd.starts_with(&head), "nobody={nobody}: {cmd}");
        let ran = shell(&t.sub, &["bash", "-c"], &cmd, nobody);
        assert_eq!(out(&ran), "MARK-RAN 1\n", "nobody={nobody}: {ran:?}");
        assert_eq!(std::fs::read_to_string(&top).unwrap(), "in\n");
        assert!(
            !escaped.exists(),
            "nobody={nobody}: the write outside landed"
        );
        assert_eq!(t.pre_commit(), HOOK, "nobody={nobody}: .git/hooks written");

        // Control: the original as Codex runs it without the hook.
        std::fs::remove_file(&top).unwrap();
        let ran = shell(&t.sub, &["bash", "-c"], &original, nobody);
        assert_eq!(out(&ran), "MARK-RAN \n");
        assert!(top.exists() && escaped.exists(), "control: {ran:?}");
        assert_eq!(t.pre_commit(), "evil\n", "control");
    }
}

/// The input's `cwd` is the model's `workdir`: one outside the session's
/// directory (plainly, through a symlink in the project, through `..`, or
/// the project's parent) is denied, and the call never runs. Without
/// dcjail the call runs there and writes.
#[test]
fn a_codex_workdir_outside_the_session_root_is_denied_and_nothing_runs() {
    let t = Tree::new("hook-codex-outside");
    std::os::unix::fs::symlink(&t.outside, t.ws.join("out-link")).unwrap();
    let original = "touch ran; echo MARK-RAN";
    for cwd in [
        t.outside.clone(),
        t.ws.join("out-link"),
        t.sub.join("../../outside"),
        t.root.clone(),
    ] {
        let input = payload("codex-bash.json", &cwd, original);
        let reason = denied(&Hook::codex(&t.ws).call(&input), &cwd.display().to_string());
        assert!(
            reason.starts_with("dcjail: sandbox-denied: the call's directory `"),
            "{reason}"
        );
        assert!(
            reason.ends_with(&format!(
                "` is outside the session's workspace `{}`",
                t.ws.display()
            )),
            "{reason}"
        );
        assert!(!t.outside.join("ran").exists() && !t.root.join("ran").exists());
    }
    assert_eq!(out(&bash(&t.outside, original)), "MARK-RAN\n");
    assert!(t.outside.join("ran").exists(), "control");
}

/// Commands full of shell syntax reach bash byte for byte: Codex's
/// rewritten command prints exactly what the original prints, run by bash,
/// by sh, by zsh, and through `eval`.
#[test]
fn adversarial_commands_reach_bash_unchanged_through_every_shell() {
    let t = Tree::new("hook-bytes");
    let zsh = zsh().is_some();
    for original in adversarial() {
        let input = payload("codex-bash.json", &t.ws, &original);
        let cmd = wrapped(&decision(&Hook::codex(&t.ws).call(&input)));
        let want = bash(&t.ws, &original);
        for sh in [
            &["bash", "-c"][..],
            &["sh", "-c"],
            &["zsh", "-f", "-c"],
            &["bash", "-c", "eval \"$1\"", "bash"],
        ] {
            if sh[0] == "zsh" && !zsh {
                continue;
            }
            let got = if sh.len() == 4 {
                // `bash -c 'eval "$1"' bash CMD`: the command is the last argument.
                let mut c = command(sh[0], &t.ws);
                c.args(&sh[1..]).arg(&cmd);
                run(c, false, b"")
            } else {
                shell(&t.ws, sh, &cmd, false)
            };
            assert_eq!(
                got.status.code(),
                want.status.code(),
                "{sh:?}: {original:?}: {}",
                err(&got)
            );
            assert_eq!(got.stdout, want.stdout, "{sh:?}: {original:?}");
        }
    }
}

/// A JavaScript agent writes a string that is not valid Unicode with lone
/// surrogate escapes; it runs it with U+FFFD in their place, and so does
/// the rewritten command. A NUL byte, which no shell can run and no path
/// holds, is denied by both agents' hooks.
#[test]
fn lone_surrogates_run_as_the_agent_would_and_a_nul_is_denied() {
    let t = Tree::new("hook-surrogate");
    let input = payload("codex-bash.json", &t.ws, "@X@")
        .to_string()
        .replace("@X@", r#"echo \"x\ud800y\udc00z\ud83d\ude00\""#);
    let cmd = wrapped(&decision(&Hook::codex(&t.ws).raw(input.as_bytes())));
    assert_eq!(out(&bash(&t.ws, &cmd)), "x\u{fffd}y\u{fffd}z\u{1f600}\n");

    for (agent, fixture) in [
        ("codex", "codex-bash.json"),
        ("claude-code", "claude-code-bash.json"),
        ("claude-code", "claude-code-write.json"),
    ] {
        let input = payload(fixture, &t.ws, "echo a\u{0}b");
        let h = if agent == "codex" {
            Hook::codex(&t.ws)
        } else {
            Hook::claude(&t.ws)
        };
        let reason = denied(&h.call(&input), fixture);
        assert!(reason.contains("NUL"), "{reason}");
    }
}

/// Codex's permission mode is the rewritten call's mode, except
/// `bypassPermissions`, which Codex sends whatever the user set up: it maps
/// to `default`. The rewritten call is decided in that mode (plan mode
/// refuses it); a mode word Codex does not have is denied.
#[test]
fn the_codex_permission_mode_is_the_rewritten_calls_mode() {
    let t = Tree::new("hook-modes");
    for (sent, mode) in [
        ("default", "default"),
        ("acceptEdits", "acceptEdits"),
        ("auto", "auto"),
        ("dontAsk", "dontAsk"),
        ("bypassPermissions", "default"),
    ] {
        let mut input = payload("codex-bash.json", &t.ws, "echo ran");
        input["permission_mode"] = sent.into();
        let cmd = wrapped(&decision(&Hook::codex(&t.ws).call(&input)));
        assert!(cmd.contains(&format!(" --mode {mode} ")), "{sent}: {cmd}");
        let ran = bash(&t.ws, &cmd);
        assert_eq!(out(&ran), "ran\n", "{sent}: {ran:?}");
        let planned = cmd.replace(&format!(" --mode {mode} "), " --mode plan ");
        let o = bash(&t.ws, &planned);
        assert_eq!(o.status.code(), Some(120), "{sent}");
        assert!(o.stdout.is_empty());
    }
    let mut input = payload("codex-bash.json", &t.ws, "echo ran");
    input["permission_mode"] = "yolo".into();
    let reason = denied(&Hook::codex(&t.ws).call(&input), "yolo");
    assert!(
        reason.contains(
            "`yolo` is not one of: default, acceptEdits, plan, auto, dontAsk, bypassPermissions"
        ),
        "{reason}"
    );
}

/// Plan mode and a policy's permission deny are Codex's deny with dcjail's
/// reason, and the call never runs, in `bypassPermissions` too (Codex
/// sends it for every setup). Without the deny the same call is rewritten
/// and runs.
#[test]
fn plan_mode_and_a_policy_deny_hold_for_codex_even_in_bypass_permissions() {
    let t = Tree::new("hook-codex-deny");
    let marker = t.ws.join("ran");
    let original = "touch ran; rm -f nothing";
    let mut input = payload("codex-bash.json", &t.ws, original);
    input["permission_mode"] = "plan".into();
    let reason = denied(&Hook::codex(&t.ws).call(&input), "plan");
    assert_eq!(
        reason,
        "dcjail: plan-blocked: plan mode does not run `bash` calls"
    );

    let deny = t.policy(
        "deny.toml",
        "[permission]\noutcome = \"deny\"\nrule = \"Bash(rm:*)\"\n\n[sandbox]\nmode = \"workspace-write\"\n",
    );
    for mode in ["bypassPermissions", "default", "acceptEdits"] {
        input["permission_mode"] = mode.into();
        let reason = denied(&Hook::codex(&t.ws).policy(&deny).call(&input), mode);
        assert!(
            reason.starts_with("dcjail: permission-denied: "),
            "{mode}: {reason}"
        );
        assert!(reason.contains("Bash(rm:*)"), "{reason}");
    }
    assert!(!marker.exists(), "the hook must not run the call");

    // Control: with a policy that allows it, the same call runs.
    let allow = t.policy("allow.toml", common::WORKSPACE_WRITE);
    input["permission_mode"] = "bypassPermissions".into();
    let cmd = wrapped(&decision(&Hook::codex(&t.ws).policy(&allow).call(&input)));
    assert!(bash(&t.ws, &cmd).status.success());
    assert!(marker.exists());
}

/// A patch typed through the shell would be applied by Codex itself,
/// unchecked path by path: denied, wherever it sits in the command line.
#[test]
fn a_patch_typed_through_the_codex_shell_is_denied() {
    let t = Tree::new("hook-shell-patch");
    let patch = "*** Begin Patch\n*** Add File: ../outside/x\n+x\n*** End Patch\nEOF";
    for command in [
        format!("apply_patch <<'EOF'\n{patch}"),
        format!("apply_patch<<'EOF'\n{patch}"),
        format!("cd sub && apply_patch <<'EOF'\n{patch}"),
        format!("true;applypatch <<EOF\n{patch}"),
    ] {
        let input = payload("codex-bash.json", &t.ws, &command);
        let reason = denied(&Hook::codex(&t.ws).call(&input), &command);
        assert!(
            reason.starts_with("dcjail: sandbox-denied: a patch typed through the shell"),
            "{reason}"
        );
        assert!(reason.contains("apply_patch tool"), "{reason}");
    }
    // A word that merely starts the same is an ordinary command.
    let input = payload("codex-bash.json", &t.ws, "echo apply_patches");
    let cmd = wrapped(&decision(&Hook::codex(&t.ws).call(&input)));
    assert_eq!(out(&bash(&t.ws, &cmd)), "apply_patches\n");
}

/// A sandbox this machine cannot enforce, and a policy that does not parse
/// or is missing, are each agent's deny with dcjail's reason.
#[test]
fn an_unenforceable_sandbox_or_a_broken_policy_is_denied_by_both_hooks() {
    let t = Tree::new("hook-unenforceable");
    let bad = t.policy("bad.toml", "[sandbox]\nmode = \"rw\"\n");
    let sb = t.policy("sb.toml", "[sandbox]\nbackend = \"seatbelt\"\n");
    let missing = t.root.join("missing.toml");
    for agent in ["codex", "claude-code"] {
        let h = || {
            if agent == "codex" {
                Hook::codex(&t.ws)
            } else {
                Hook::claude(&t.ws)
            }
        };
        let input = payload(&format!("{agent}-bash.json"), &t.ws, "echo x");
        let reason = denied(&h().policy(&bad).call(&input), agent);
        assert!(reason.starts_with("dcjail: policy-error: "), "{reason}");
        assert!(reason.contains("`rw` is not one of"), "{reason}");
        let reason = denied(&h().policy(&missing).call(&input), agent);
        assert!(reason.starts_with("dcjail: policy-error: "), "{reason}");
        assert!(reason.contains("missing.toml"), "{reason}");
        if cfg!(target_os = "macos") {
            eprintln!("note: seatbelt is enforceable on macOS; that half skipped");
            continue;
        }
        // Seatbelt exists only on macOS: this machine cannot enforce it.
        let reason = denied(&h().policy(&sb).call(&input), agent);
        assert!(
            reason.starts_with("dcjail: sandbox-unavailable: "),
            "{agent}: {reason}"
        );
    }
}

/// A relative `--policy` or `DCJAIL_POLICY` is the one beside where Codex
/// started the hook, named absolutely in the rewrite, so the rewritten call
/// reads it from any workdir: its `deny_read` holds there.
#[test]
fn a_relative_hook_policy_is_made_absolute_for_the_rewritten_call() {
    let t = Tree::new("hook-relative");
    std::fs::write(t.ws.join("secret.txt"), "SECRET-CONTENT\n").unwrap();
    let p = t.policy(
        "p.toml",
        "[sandbox]\nmode = \"workspace-write\"\n[sandbox.filesystem]\ndeny_read = [\"secret.txt\"]\n",
    );
    let original = "cat ../secret.txt; echo x > made.txt";
    let input = payload("codex-bash.json", &t.sub, original);
    for h in [
        Hook::codex(&t.ws).arg("--policy").arg("../p.toml"),
        Hook::codex(&t.ws).env("DCJAIL_POLICY", "../p.toml"),
    ] {
        let cmd = wrapped(&decision(&h.call(&input)));
        let named = cmd
            .split_once("--policy '")
            .and_then(|(_, r)| r.split_once('\''))
            .map(|(p, _)| p.to_string())
            .unwrap_or_else(|| panic!("no --policy in {cmd}"));
        assert!(Path::new(&named).is_absolute(), "{cmd}");
        assert_eq!(std::fs::canonicalize(&named).unwrap(), p);
        assert!(!cmd.contains("--sandbox-mode"), "{cmd}");
        let o = bash(&t.sub, &cmd);
        assert!(o.stdout.is_empty(), "deny_read did not hold: {o:?}");
        assert!(t.sub.join("made.txt").exists());
        std::fs::remove_file(t.sub.join("made.txt")).unwrap();
    }
    assert_eq!(out(&bash(&t.sub, original)), "SECRET-CONTENT\n", "control");
}

/// Tools a hook does not check and events other than PreToolUse get no
/// output at all: the agent decides as without dcjail.
#[test]
fn other_tools_and_other_events_get_no_opinion() {
    let t = Tree::new("hook-neutral");
    let renamed = |fixture: &str, tool: &str| {
        let mut v = payload(fixture, &t.ws, "echo x");
        v["tool_name"] = tool.into();
        v
    };
    let mut codex_post = payload("codex-bash.json", &t.ws, "echo x");
    codex_post["hook_event_name"] = "PostToolUse".into();
    for (agent, input) in [
        ("claude-code", payload("claude-code-read.json", &t.ws, "")),
        ("claude-code", payload("claude-code-mcp.json", &t.ws, "")),
        (
            "claude-code",
            payload("claude-code-posttooluse.json", &t.ws, "echo x"),
        ),
        ("claude-code", renamed("claude-code-bash.json", "WebFetch")),
        (
            "claude-code",
            renamed("codex-apply-patch.json", "apply_patch"),
        ),
        ("codex", payload("codex-apply-patch.json", &t.ws, "")),
        ("codex", renamed("claude-code-read.json", "Read")),
        ("codex", codex_post),
    ] {
        let h = if agent == "codex" {
            Hook::codex(&t.ws)
        } else {
            Hook::claude(&t.ws)
        };
        no_opinion(&h.call(&input), &format!("{agent} {}", input["tool_name"]));
    }
}

#[test]
fn a_broken_hook_blocks_the_call_with_exit_2_and_one_stderr_line() {
    let t = Tree::new("hook-broken");
    let cases: Vec<(&str, Vec<&str>, Vec<u8>)> = vec![
        ("claude-code", vec![], b"not json".to_vec()),
        ("claude-code", vec![], b"[1, 2]".to_vec()),
        (
            "claude-code",
            vec![],
            b"{\"tool_name\": \"Bash\", \"cwd\": \"\xff\"}".to_vec(),
        ),
        ("claude-code", vec![], Vec::new()),
        ("codex", vec![], b"{\"tool_name\": ".to_vec()),
        ("claude-code", vec!["--no-such-flag"], b"{}".to_vec()),
        (
            "claude-code",
            vec!["--policy-format", "yaml"],
            b"{}".to_vec(),
        ),
        // Codex applies a rewritten command only with "allow".
        ("codex", vec!["--ask"], b"{}".to_vec()),
        ("codex", vec!["--install", "--check"], b"{}".to_vec()),
    ];
    for (agent, args, input) in cases {
        let mut h = if agent == "codex" {
            Hook::codex(&t.ws)
        } else {
            Hook::claude(&t.ws)
        };
        for a in &args {
            h = h.arg(a);
        }
        let o = h.raw(&input);
        let e = err(&o);
        assert_eq!(o.status.code(), Some(2), "{agent} {args:?} {input:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e:?}");
        assert!(e.starts_with("dcjail: usage-error: "), "{e}");
        assert!(o.stdout.is_empty());
    }
    let o = Hook {
        agent: "gemini",
        ..Hook::codex(&t.ws)
    }
    .raw(b"{}");
    assert_eq!(o.status.code(), Some(2));
    // A shell call without a command string is the agent's deny.
    for agent in ["codex", "claude-code"] {
        let input = json!({"hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": 7}, "cwd": t.ws});
        let h = if agent == "codex" {
            Hook::codex(&t.ws)
        } else {
            Hook::claude(&t.ws)
        };
        let reason = denied(&h.call(&input), agent);
        assert!(reason.contains("`tool_input.command`"), "{reason}");
    }
    // --help is help, not a block.
    let mut c = command(bin(), &t.ws);
    c.args(["hook", "--help"]);
    let o = run(c, false, b"");
    assert_eq!(o.status.code(), Some(0));
    assert!(out(&o).contains("PreToolUse"));
}

/// `dcjail hook AGENT --install|--check --settings FILE ARGS`, run in `dir`.
fn setup(agent: &str, dir: &Path, what: &str, file: &Path, args: &[&str]) -> std::process::Output {
    let mut c = command(bin(), dir);
    c.args(["hook", agent, what, "--settings"])
        .arg(file)
        .args(args);
    run(c, false, b"")
}

fn exe() -> String {
    std::fs::canonicalize(bin()).unwrap().display().to_string()
}

/// Codex's trust hash of a command hook in a `Bash|apply_patch` group, as
/// Codex computes it: the SHA-256 of the key-sorted compact JSON of the
/// event, the matcher and the handler with its default timeout.
fn codex_trust(command: &str) -> String {
    use sha2::Digest;
    let ident = format!(
        r#"{{"event_name":"pre_tool_use","hooks":[{{"async":false,"command":{},"timeout":600,"type":"command"}}],"matcher":"Bash|apply_patch"}}"#,
        serde_json::to_string(command).unwrap()
    );
    let d = sha2::Sha256::digest(ident.as_bytes());
    format!(
        "sha256:{}",
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

/// `--install` adds dcjail's hook group and its trust entry to a Codex
/// config.toml that already has settings and comments, which stay as they
/// were; a second install replaces the group instead of adding one; a
/// relative `--settings` and `--policy` are named absolutely. `--check`
/// passes, then fails naming the cause once the trust hash or the command
/// is edited, or the trust entry is gone; a new install repairs it.
#[test]
fn codex_install_keeps_the_config_and_check_catches_an_edited_hook() {
    let t = Tree::new("hook-codex-install");
    std::fs::create_dir(t.root.join("codex")).unwrap();
    let cfg = t.root.join("codex/config.toml");
    let original = "# my settings\nmodel = \"gpt-5-codex\" # the model\napproval_policy = \"on-request\"\n\n# servers\n[mcp_servers.docs]\ncommand = \"docs-server\" # keep me\nargs = [\"--port\", \"3000\"]\n";
    std::fs::write(&cfg, original).unwrap();
    t.policy("p.toml", common::WORKSPACE_WRITE);

    let o = setup("codex", &t.ws, "--install", &cfg, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).starts_with("wrote "), "{}", out(&o));
    let first = std::fs::read_to_string(&cfg).unwrap();
    assert!(first.starts_with(original), "{first}");
    let command = format!("'{}' hook codex", exe());
    assert!(
        first.contains(&format!("command = {:?}", command)),
        "{first}"
    );

    // Again, relative paths, and a policy: still one group, one trust entry.
    let o = setup(
        "codex",
        &t.root,
        "--install",
        Path::new("codex/config.toml"),
        &["--policy", "p.toml"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = std::fs::read_to_string(&cfg).unwrap();
    assert!(text.starts_with(original), "{text}");
    assert_eq!(text.matches("[[hooks.PreToolUse]]").count(), 1, "{text}");
    assert_eq!(text.matches("trusted_hash").count(), 1, "{text}");
    let doc: toml::Table = toml::from_str(&text).unwrap();
    assert_eq!(doc["model"].as_str(), Some("gpt-5-codex"));
    assert_eq!(
        doc["mcp_servers"]["docs"]["command"].as_str(),
        Some("docs-server")
    );
    let group = &doc["hooks"]["PreToolUse"].as_array().unwrap()[0];
    assert_eq!(group["matcher"].as_str(), Some("Bash|apply_patch"));
    let handler = &group["hooks"].as_array().unwrap()[0];
    let command = format!("{command} --policy '{}'", t.root.join("p.toml").display());
    assert_eq!(handler["command"].as_str(), Some(command.as_str()));
    assert_eq!(handler["type"].as_str(), Some("command"));
    let key = format!("{}:pre_tool_use:0:0", cfg.display());
    let trusted = doc["hooks"]["state"][&key]["trusted_hash"]
        .as_str()
        .unwrap_or_else(|| panic!("no trust entry {key}: {text}"));
    assert_eq!(trusted, codex_trust(&command));

    let check = |file: &Path| setup("codex", &t.ws, "--check", file, &["--policy", "../p.toml"]);
    let o = check(&cfg);
    let said = out(&o);
    assert_eq!(o.status.code(), Some(0), "{said}");
    assert!(said.contains("is trusted"), "{said}");
    assert!(
        said.contains("it printed: DCJAIL=1 DCJAIL_BACKEND="),
        "{said}"
    );
    assert!(said.contains("dcjail hook codex: ok."), "{said}");

    let tampered = text.replace(trusted, &format!("sha256:{}", "0".repeat(64)));
    let edited = text.replace(
        " hook codex --policy",
        " hook codex --policy-format dcjail --policy",
    );
    let untrusted: String = text
        .lines()
        .filter(|l| !l.starts_with("trusted_hash") && !l.starts_with("[hooks.state"))
        .map(|l| format!("{l}\n"))
        .collect();
    for (what, broken, why) in [
        (
            "hash",
            &tampered,
            "its trust entry is for another command, matcher or place",
        ),
        (
            "command",
            &edited,
            "its trust entry is for another command, matcher or place",
        ),
        ("trust entry", &untrusted, "it is not trusted"),
    ] {
        assert_ne!(broken, &text, "{what}: the edit changed nothing");
        std::fs::write(&cfg, broken).unwrap();
        let o = check(&cfg);
        let said = out(&o);
        assert_eq!(o.status.code(), Some(1), "{what}: {said}");
        let line = said.lines().last().unwrap();
        assert!(
            line.starts_with("dcjail hook codex: FAILED: "),
            "{what}: {said}"
        );
        assert!(
            line.contains("Codex will skip the dcjail hook"),
            "{what}: {line}"
        );
        assert!(line.contains(why), "{what}: {line}");
        assert!(
            line.contains("run `dcjail hook codex --install` again"),
            "{line}"
        );
        assert!(
            !said.contains("it printed"),
            "{what}: the sample ran: {said}"
        );
    }
    // Install repairs the edited file in place.
    let o = setup(
        "codex",
        &t.ws,
        "--install",
        &cfg,
        &["--policy", "../p.toml"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let repaired = std::fs::read_to_string(&cfg).unwrap();
    assert!(repaired.starts_with(original), "{repaired}");
    assert_eq!(
        repaired.matches("[[hooks.PreToolUse]]").count(),
        1,
        "{repaired}"
    );
    assert_eq!(check(&cfg).status.code(), Some(0));

    // The installed hook's own flags are what the check runs: with its
    // policy gone every call would be denied, and the check says so even
    // when asked without a policy.
    std::fs::rename(t.root.join("p.toml"), t.root.join("p.moved")).unwrap();
    let o = setup("codex", &t.ws, "--check", &cfg, &[]);
    let said = out(&o);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(
        said.contains("FAILED: the installed hook refuses the sample call")
            && said.contains("p.toml"),
        "{said}"
    );
    std::fs::rename(t.root.join("p.moved"), t.root.join("p.toml")).unwrap();

    // A config without the hook at all.
    std::fs::write(&cfg, original).unwrap();
    let o = check(&cfg);
    assert_eq!(o.status.code(), Some(1));
    assert!(out(&o).contains("no [[hooks.PreToolUse]]"), "{}", out(&o));
}

/// `--install` into a Claude Code settings.json with an unrelated hook and
/// env var keeps both and adds the shell prefix and dcjail's exec-form hook
/// (once, however often it runs); `--check` passes and runs its sample
/// through the prefix, then fails once the prefix variable is removed or
/// names another program, or the hook is gone.
#[test]
fn claude_code_install_keeps_other_settings_and_check_catches_a_missing_prefix() {
    let t = Tree::new("hook-claude-install");
    std::fs::create_dir(t.root.join("claude")).unwrap();
    let file = t.root.join("claude/settings.json");
    let audit = json!({"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/audit-log"}]});
    let post = json!([{"matcher": "Write", "hooks": [{"type": "command", "command": "prettier --write"}]}]);
    let original = json!({
        "env": {"FOO": "bar"},
        "model": "opus",
        "permissions": {"deny": ["Read(./.env)"]},
        "hooks": {"PreToolUse": [audit.clone()], "PostToolUse": post.clone()},
    });
    std::fs::write(&file, serde_json::to_string_pretty(&original).unwrap()).unwrap();
    let p = t.policy("p.toml", common::WORKSPACE_WRITE);
    for _ in 0..2 {
        let o = setup(
            "claude-code",
            &t.ws,
            "--install",
            &file,
            &["--policy", "../p.toml"],
        );
        assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    }
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["env"]["FOO"], "bar", "{v}");
    assert_eq!(v["model"], "opus");
    assert_eq!(v["permissions"], original["permissions"]);
    assert_eq!(v["hooks"]["PostToolUse"], post);
    assert_eq!(v["env"]["CLAUDE_CODE_SHELL_PREFIX"], exe());
    let named = v["env"]["DCJAIL_POLICY"].as_str().unwrap();
    assert!(Path::new(named).is_absolute(), "{named}");
    assert_eq!(std::fs::canonicalize(named).unwrap(), p);
    let pre = v["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre.len(), 2, "{v}");
    assert_eq!(pre[0], audit);
    assert_eq!(
        pre[1]["hooks"],
        json!([{"type": "command", "command": exe(), "args": ["hook", "claude-code"]}])
    );
    let matcher: Vec<&str> = pre[1]["matcher"].as_str().unwrap().split('|').collect();
    for tool in [
        "Bash",
        "Read",
        "Write",
        "Edit",
        "MultiEdit",
        "NotebookEdit",
        "Grep",
        "Glob",
    ] {
        assert!(matcher.contains(&tool), "{tool} not in {matcher:?}");
    }

    let o = setup("claude-code", &t.ws, "--check", &file, &[]);
    let said = out(&o);
    assert_eq!(o.status.code(), Some(0), "{said}{}", err(&o));
    assert!(said.contains("shell prefix and hook are dcjail"), "{said}");
    assert!(
        said.contains("it printed: DCJAIL=1 DCJAIL_BACKEND="),
        "{said}"
    );
    assert!(said.contains("dcjail hook claude-code: ok."), "{said}");

    let mut unset = v.clone();
    unset["env"]
        .as_object_mut()
        .unwrap()
        .remove("CLAUDE_CODE_SHELL_PREFIX");
    let mut other = v.clone();
    other["env"]["CLAUDE_CODE_SHELL_PREFIX"] = "/bin/true".into();
    let mut unhooked = v.clone();
    unhooked["hooks"]["PreToolUse"] = json!([audit]);
    for (what, broken, why) in [
        (
            "unset",
            unset,
            "env.CLAUDE_CODE_SHELL_PREFIX is \"unset\", not dcjail",
        ),
        (
            "other",
            other,
            "env.CLAUDE_CODE_SHELL_PREFIX is \"/bin/true\", not dcjail",
        ),
        ("no hook", unhooked, "no PreToolUse hook runs"),
    ] {
        std::fs::write(&file, broken.to_string()).unwrap();
        let o = setup("claude-code", &t.ws, "--check", &file, &[]);
        let said = out(&o);
        assert_eq!(o.status.code(), Some(1), "{what}: {said}");
        assert_eq!(said.lines().count(), 1, "{what}: {said}");
        assert!(
            said.starts_with("dcjail hook claude-code: FAILED: "),
            "{said}"
        );
        assert!(said.contains(why), "{what}: {said}");
    }
}
