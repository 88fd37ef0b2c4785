//! Claude Code's Bash calls under dcjail: `CLAUDE_CODE_SHELL_PREFIX` names
//! dcjail, so Claude Code runs each call as `dcjail '<line>'`, and dcjail
//! runs the line with the shell it was built for, sandboxed in the project
//! Claude Code was started in. The PreToolUse hook only says no (no prefix,
//! plan mode, a policy's deny, a call outside the project) or, when told,
//! asks or allows; otherwise it prints nothing. Round trip: hook input →
//! no opinion → the line through the prefix → its effect in the project,
//! and refused outside it and on protected paths. Every attack first runs
//! without dcjail, where it must succeed.

#[path = "support/hook.rs"]
mod common;
#[path = "support/scratch.rs"]
mod scratch;

use common::*;
use std::os::unix::fs::symlink;
use std::path::Path;

const HOOK: &str = "#!/bin/sh\nexit 0\n";

/// As root and as uid 65534, from a subdirectory of the project: the hook
/// has no opinion on the call (a `dangerouslyDisableSandbox` changes
/// nothing), and the line through the prefix runs under dcjail — `$DCJAIL`
/// is 1, its write in the project lands — while its writes to
/// `.git/hooks/pre-commit` and outside the project are refused. The same
/// line run by bash, as Claude Code runs it without the prefix, writes all
/// three.
#[test]
fn the_shell_prefix_runs_the_line_sandboxed_in_the_project() {
    for nobody in [false, true] {
        let t = Tree::new(&format!("prefix-effect-{nobody}"));
        let top = t.ws.join("top.txt");
        let escaped = t.outside.join("escaped.txt");
        let line = format!(
            "echo \"DCJAIL=$DCJAIL\"; echo in > ../top.txt; echo evil > ../.git/hooks/pre-commit; echo out > '{}'; echo done",
            escaped.display()
        );
        for disable in [false, true] {
            let mut input = payload("claude-code-bash.json", &t.sub, &line);
            input["tool_input"]["dangerouslyDisableSandbox"] = disable.into();
            no_opinion(
                &Hook::claude(&t.ws).nobody(nobody).call(&input),
                &format!("nobody={nobody} disable={disable}"),
            );
        }
        let o = prefix(&t.sub, &t.ws, &line, &[], nobody);
        assert_eq!(o.status.code(), Some(0), "nobody={nobody}: {o:?}");
        assert_eq!(out(&o), "DCJAIL=1\ndone\n", "nobody={nobody}: {o:?}");
        assert_eq!(std::fs::read_to_string(&top).unwrap(), "in\n");
        assert_eq!(t.pre_commit(), HOOK, "nobody={nobody}: .git/hooks written");
        assert!(
            !escaped.exists(),
            "nobody={nobody}: the write outside landed"
        );

        std::fs::remove_file(&top).unwrap();
        let o = shell(&t.sub, &["bash", "-c"], &line, nobody);
        assert_eq!(out(&o), "DCJAIL=\ndone\n", "control: {o:?}");
        assert!(top.exists() && escaped.exists(), "control");
        assert_eq!(t.pre_commit(), "evil\n", "control");
    }
}

/// A harmless line prints and exits through the prefix exactly as through
/// the shell: bash for `SHELL=bash`, zsh for `SHELL=zsh`, the shell of
/// `CLAUDE_CODE_SHELL` before `SHELL`, and bash for a shell Claude Code
/// does not build lines for.
#[test]
fn the_shell_prefix_prints_and_exits_as_the_shell_would() {
    let t = Tree::new("prefix-bytes");
    let zsh = zsh();
    for line in adversarial() {
        let o = prefix(&t.ws, &t.ws, &line, &[("SHELL", "/bin/bash")], false);
        let want = bash(&t.ws, &line);
        assert_eq!(o.status.code(), want.status.code(), "{line:?}: {}", err(&o));
        assert_eq!(o.stdout, want.stdout, "{line:?}");
        if let Some(zsh) = zsh.as_deref() {
            let o = prefix(&t.ws, &t.ws, &line, &[("SHELL", zsh)], false);
            let want = shell(&t.ws, &[zsh, "-c"], &line, false);
            assert_eq!(
                o.status.code(),
                want.status.code(),
                "zsh {line:?}: {}",
                err(&o)
            );
            assert_eq!(o.stdout, want.stdout, "zsh {line:?}");
        }
    }
    let which = r#"echo "${ZSH_VERSION:+zsh}${BASH_VERSION:+bash}""#;
    let mut cases = vec![
        (vec![("SHELL", "/bin/sh")], "bash\n"),
        (vec![("SHELL", "/usr/bin/fish")], "bash\n"),
        (vec![("SHELL", "")], "bash\n"),
    ];
    if let Some(zsh) = zsh.as_deref() {
        cases.push((
            vec![("SHELL", "/bin/bash"), ("CLAUDE_CODE_SHELL", "zsh")],
            "zsh\n",
        ));
        cases.push((vec![("SHELL", zsh)], "zsh\n"));
        cases.push((
            vec![("SHELL", zsh), ("CLAUDE_CODE_SHELL", "/bin/dash")],
            "zsh\n",
        ));
    }
    for (env, want) in cases {
        let o = prefix(&t.ws, &t.ws, which, &env, false);
        assert_eq!(out(&o), want, "{env:?}: {}", err(&o));
    }
}

/// A call whose directory lies outside the project (plainly, or through a
/// symlink in the project with `$PWD` saying the project) is refused with
/// 120 and one line, and nothing ran; so is a call of a session whose
/// project cannot be told (125). Run by bash, the line writes there.
#[test]
fn a_call_from_outside_the_project_is_refused_and_nothing_runs() {
    let t = Tree::new("prefix-outside");
    symlink(&t.outside, t.ws.join("out-link")).unwrap();
    let line = "touch ran; echo MARK-RAN";
    let via_link = t.ws.join("out-link");
    let pwd = via_link.to_str().unwrap();
    for (dir, env) in [
        (&t.outside, vec![]),
        (&via_link, vec![("PWD", pwd)]),
        (&t.root, vec![]),
    ] {
        let o = prefix(dir, &t.ws, line, &env, false);
        assert_eq!(o.status.code(), Some(120), "{dir:?}: {o:?}");
        assert!(o.stdout.is_empty(), "{o:?}");
        let e = err(&o);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(
            e.starts_with("dcjail: sandbox-denied: the call's directory `"),
            "{e}"
        );
        assert!(
            e.contains(&format!(
                "is outside the session's workspace `{}`",
                t.ws.display()
            )),
            "{e}"
        );
        assert!(!t.outside.join("ran").exists() && !t.root.join("ran").exists());
    }
    // No project at all: neither variable, or a relative one.
    for project in ["", "ws"] {
        let mut c = command(bin(), &t.ws);
        c.arg(line).env("CLAUDE_CODE_SHELL_PREFIX", bin());
        if !project.is_empty() {
            c.env("CLAUDE_PROJECT_DIR", project);
        }
        let o = run(c, false, b"");
        assert_eq!(o.status.code(), Some(125), "{project:?}: {o:?}");
        let e = err(&o);
        assert!(
            e.starts_with(
                "dcjail: policy-error: cannot tell which project the agent was started in"
            ),
            "{e}"
        );
        assert!(!t.ws.join("ran").exists());
    }
    assert_eq!(out(&bash(&t.outside, line)), "MARK-RAN\n");
    assert!(t.outside.join("ran").exists(), "control");
}

/// Claude Code's Bash calls carry `CLAUDE_CODE_EXECPATH`, and Claude Code
/// (here a copy of bash standing in for it) is their ancestor: its cwd is
/// the project, whatever `CLAUDE_PROJECT_DIR` says and wherever the call
/// `cd`'d to. An `CLAUDE_CODE_EXECPATH` that no ancestor runs refuses the
/// call, and nothing runs.
#[test]
fn the_project_is_the_cwd_of_the_claude_code_process_above_the_call() {
    let t = Tree::new("prefix-execpath");
    let agent = t.root.join("agent-bin/claude");
    std::fs::create_dir_all(agent.parent().unwrap()).unwrap();
    std::fs::copy(std::fs::canonicalize("/bin/bash").unwrap(), &agent).unwrap();
    open(&agent, 0o755);
    let top = t.ws.join("top.txt");
    let escaped = t.outside.join("escaped.txt");
    let line = format!(
        "pwd; echo \"DCJAIL=$DCJAIL\"; echo in > ../top.txt; echo out > '{}'; true",
        escaped.display()
    );
    // The agent, in the project, starts a shell that cd's to sub and runs
    // the prefix (neither as its last command, so each stays a process).
    let run_as_agent = |execpath: &Path| {
        let mut c = command(agent.to_str().unwrap(), &t.ws);
        c.arg("-c")
            .arg(r#"bash -c 'cd sub && "$0" "$1"; exit $?' "$0" "$1"; exit $?"#)
            .arg(bin())
            .arg(&line)
            .env("CLAUDE_CODE_SHELL_PREFIX", bin())
            .env("CLAUDE_CODE_EXECPATH", execpath)
            .env("CLAUDE_PROJECT_DIR", &t.outside);
        run(c, false, b"")
    };
    let o = run_as_agent(&agent);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert_eq!(out(&o), format!("{}\nDCJAIL=1\n", t.sub.display()), "{o:?}");
    assert!(top.exists(), "the project is the agent's cwd: {o:?}");
    assert!(!escaped.exists(), "the write outside landed");
    std::fs::remove_file(&top).unwrap();

    let o = run_as_agent(&t.root.join("no-such-agent"));
    assert_eq!(o.status.code(), Some(125), "{o:?}");
    assert!(o.stdout.is_empty());
    assert!(
        err(&o).contains("no process above this one is Claude Code"),
        "{}",
        err(&o)
    );
    assert!(!top.exists() && !escaped.exists());
}

/// One argument is a shell line only when `CLAUDE_CODE_SHELL_PREFIX` names
/// this very dcjail (a symlink to it counts; another program or a copy does
/// not): otherwise `dcjail ARG` runs the program ARG as it always did. Two
/// arguments are an ordinary run whatever the variable says.
#[test]
fn one_argument_without_the_prefix_is_an_ordinary_run() {
    let t = Tree::new("prefix-ordinary");
    // `./say hi` is the program `./say hi` to dcjail, and `./say` with the
    // argument `hi` to a shell.
    std::fs::write(t.ws.join("say hi"), "#!/bin/sh\necho program\n").unwrap();
    std::fs::write(
        t.ws.join("say"),
        "#!/bin/sh\necho \"shell:$1 DCJAIL=$DCJAIL\"\n",
    )
    .unwrap();
    open(&t.ws.join("say hi"), 0o755);
    open(&t.ws.join("say"), 0o755);
    let copy = t.root.join("dcjail-copy");
    std::fs::copy(bin(), &copy).unwrap();
    open(&copy, 0o755);
    let link = t.root.join("dcjail-link");
    symlink(bin(), &link).unwrap();
    let one = |prefix: Option<&Path>, args: &[&str]| {
        let mut c = command(bin(), &t.ws);
        c.args(args).env("CLAUDE_PROJECT_DIR", &t.ws);
        if let Some(p) = prefix {
            c.env("CLAUDE_CODE_SHELL_PREFIX", p);
        }
        run(c, false, b"")
    };
    for p in [None, Some(Path::new("/bin/true")), Some(copy.as_path())] {
        let o = one(p, &["./say hi"]);
        assert_eq!(out(&o), "program\n", "{p:?}: {o:?}");
        let o = one(p, &["true"]);
        assert_eq!(o.status.code(), Some(0), "{p:?}: {o:?}");
        let o = one(p, &["echo hi"]);
        assert_eq!(o.status.code(), Some(127), "{p:?}: {o:?}");
        assert!(o.stdout.is_empty());
    }
    for p in [Path::new(bin()), link.as_path()] {
        let o = one(Some(p), &["./say hi"]);
        assert_eq!(out(&o), "shell:hi DCJAIL=1\n", "{p:?}: {o:?}");
        let o = one(Some(p), &["echo", "two args"]);
        assert_eq!(out(&o), "two args\n", "{p:?}: {o:?}");
        // An option is dcjail's own, also inside a Claude Code session.
        let o = one(Some(p), &["--version"]);
        assert!(out(&o).starts_with("dcjail "), "{p:?}: {o:?}");
        let o = one(Some(p), &["--help"]);
        assert!(out(&o).contains("Usage:"), "{p:?}: {o:?}");
    }
}

/// The policy comes from `DCJAIL_POLICY` / `DCJAIL_POLICY_FORMAT`, which
/// `--install` puts in Claude Code's env: Claude Code's own settings as the
/// policy keep their `Read()` deny inside the call, and a read-only dcjail
/// policy replaces the default (the project writable). A format dcjail
/// does not know refuses the call.
#[test]
fn the_prefix_enforces_the_policy_from_the_environment() {
    let t = Tree::new("prefix-policy");
    std::fs::write(t.ws.join("secret.txt"), "SECRET-CONTENT\n").unwrap();
    let settings = t.policy(
        "settings.json",
        r#"{"permissions": {"deny": ["Read(./secret.txt)"]}, "sandbox": {"enabled": true}}"#,
    );
    let settings = settings.to_str().unwrap();
    let line = "cat secret.txt; echo x > made.txt; echo MARK-RAN";
    let env = [
        ("DCJAIL_POLICY", settings),
        ("DCJAIL_POLICY_FORMAT", "claude-code"),
    ];
    let o = prefix(&t.ws, &t.ws, line, &env, false);
    assert_eq!(out(&o), "MARK-RAN\n", "{o:?}");
    assert!(t.ws.join("made.txt").exists());
    std::fs::remove_file(t.ws.join("made.txt")).unwrap();

    let ro = t.policy("ro.toml", "[sandbox]\nmode = \"read-only\"\n");
    let o = prefix(
        &t.ws,
        &t.ws,
        line,
        &[("DCJAIL_POLICY", ro.to_str().unwrap())],
        false,
    );
    assert_eq!(out(&o), "SECRET-CONTENT\nMARK-RAN\n", "{o:?}");
    assert!(!t.ws.join("made.txt").exists(), "read-only did not hold");

    let o = prefix(
        &t.ws,
        &t.ws,
        line,
        &[("DCJAIL_POLICY_FORMAT", "yaml")],
        false,
    );
    assert_ne!(o.status.code(), Some(0));
    assert!(o.stdout.is_empty());
    assert!(err(&o).contains("DCJAIL_POLICY_FORMAT"), "{}", err(&o));

    assert_eq!(
        out(&bash(&t.ws, line)),
        "SECRET-CONTENT\nMARK-RAN\n",
        "control"
    );
}

/// Without dcjail as the prefix Claude Code would run the line unsandboxed,
/// so the hook denies every Bash call, naming `--install`: the variable
/// unset, empty, naming another program, or a copy of dcjail. Run as
/// Claude Code would then run it, the line writes outside the project.
#[test]
fn the_bash_hook_denies_every_call_when_the_prefix_is_not_dcjail() {
    let t = Tree::new("prefix-missing");
    let escaped = t.outside.join("escaped.txt");
    let line = format!("echo out > '{}'", escaped.display());
    let copy = t.root.join("dcjail-copy");
    std::fs::copy(bin(), &copy).unwrap();
    open(&copy, 0o755);
    let input = payload("claude-code-bash.json", &t.ws, &line);
    for value in [
        None,
        Some(""),
        Some("/bin/true"),
        Some(copy.to_str().unwrap()),
    ] {
        let h = match value {
            None => Hook::claude(&t.ws).unset("CLAUDE_CODE_SHELL_PREFIX"),
            Some(v) => Hook::claude(&t.ws).env("CLAUDE_CODE_SHELL_PREFIX", v),
        };
        let reason = denied(&h.call(&input), &format!("{value:?}"));
        assert!(
            reason
                .starts_with("dcjail: sandbox-unavailable: CLAUDE_CODE_SHELL_PREFIX is not dcjail"),
            "{reason}"
        );
        assert!(
            reason.contains("dcjail hook claude-code --install"),
            "{reason}"
        );
    }
    assert!(!escaped.exists());
    bash(&t.ws, &line);
    assert!(escaped.exists(), "control");
}

/// Plan mode, a policy's permission deny (from `--policy` or from
/// `DCJAIL_POLICY`, as installed), a call outside the project and a session
/// whose project is unknown are Claude Code's deny with dcjail's reason;
/// the same call in default mode gets no opinion.
#[test]
fn the_bash_hook_denies_plan_mode_a_policy_deny_and_a_call_outside_the_project() {
    let t = Tree::new("prefix-hook-deny");
    let input = payload("claude-code-bash.json", &t.ws, "rm -rf build");
    no_opinion(&Hook::claude(&t.ws).call(&input), "default");

    let mut planned = input.clone();
    planned["permission_mode"] = "plan".into();
    let reason = denied(&Hook::claude(&t.ws).call(&planned), "plan");
    assert_eq!(
        reason,
        "dcjail: plan-blocked: plan mode does not run `bash` calls"
    );

    let deny = t.policy(
        "deny.toml",
        "[permission]\noutcome = \"deny\"\nrule = \"Bash(rm:*)\"\n\n[sandbox]\nmode = \"workspace-write\"\n",
    );
    for h in [
        Hook::claude(&t.ws).policy(&deny),
        Hook::claude(&t.ws).env("DCJAIL_POLICY", deny.to_str().unwrap()),
    ] {
        let reason = denied(&h.call(&input), "deny");
        assert!(
            reason.starts_with("dcjail: permission-denied: "),
            "{reason}"
        );
        assert!(reason.contains("Bash(rm:*)"), "{reason}");
    }

    let outside = payload("claude-code-bash.json", &t.outside, "ls");
    let reason = denied(&Hook::claude(&t.ws).call(&outside), "outside");
    assert!(
        reason.starts_with("dcjail: sandbox-denied: the call's directory"),
        "{reason}"
    );
    let reason = denied(
        &Hook::claude(&t.ws).unset("CLAUDE_PROJECT_DIR").call(&input),
        "no project",
    );
    assert!(
        reason.contains("cannot tell which project the agent was started in"),
        "{reason}"
    );
}

/// `--ask` answers "ask"; Claude Code's `autoAllowBashIfSandboxed` in its
/// settings as the policy (by flag or, as installed, by environment)
/// answers "allow" — never for a sandbox that is off — and neither carries
/// an `updatedInput`: the line is not rewritten.
#[test]
fn the_bash_hook_asks_or_allows_only_when_told_and_never_rewrites() {
    let t = Tree::new("prefix-hook-ask");
    let input = payload("claude-code-bash.json", &t.ws, "echo ran");
    let settings = |name: &str, enabled: bool, auto: bool| {
        t.policy(
            name,
            &format!(
                r#"{{"sandbox": {{"enabled": {enabled}, "autoAllowBashIfSandboxed": {auto}}}}}"#
            ),
        )
    };
    let on = settings("on.json", true, true);
    let manual = settings("manual.json", true, false);
    let off = settings("off.json", false, true);
    let flag = |p: &Path| {
        Hook::claude(&t.ws)
            .arg("--policy-format")
            .arg("claude-code")
            .policy(p)
    };
    let env = |p: &Path| {
        Hook::claude(&t.ws)
            .env("DCJAIL_POLICY", p.to_str().unwrap())
            .env("DCJAIL_POLICY_FORMAT", "claude-code")
    };
    let said = |h: Hook, what: &str| {
        let d = decision(&h.call(&input));
        let h = &d["hookSpecificOutput"];
        assert!(h.get("updatedInput").is_none(), "{what}: {d}");
        (
            h["permissionDecision"].as_str().unwrap().to_string(),
            h["permissionDecisionReason"].as_str().unwrap().to_string(),
        )
    };
    let (what, why) = said(Hook::claude(&t.ws).arg("--ask"), "--ask");
    assert_eq!(what, "ask");
    assert!(
        why.starts_with("dcjail: if approved, runs sandboxed ("),
        "{why}"
    );
    for (name, h) in [("flag", flag(&on)), ("env", env(&on))] {
        let (what, why) = said(h, name);
        assert_eq!(what, "allow", "{name}");
        assert!(why.starts_with("dcjail: runs sandboxed ("), "{why}");
    }
    for (name, h) in [
        ("manual flag", flag(&manual)),
        ("manual env", env(&manual)),
        ("off flag", flag(&off)),
        ("off env", env(&off)),
    ] {
        no_opinion(&h.call(&input), name);
    }
    let (what, why) = said(flag(&off).arg("--ask"), "off --ask");
    assert_eq!(what, "ask");
    assert!(why.contains("sandbox off"), "{why}");
}
