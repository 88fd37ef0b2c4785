//! The real coding-agent CLIs through dcjail, set up exactly as docs/agents.md
//! tells users to: `dcjail hook claude-code --install` (Claude Code's shell
//! prefix and PreToolUse hook in the project's settings) and `dcjail hook
//! codex --install` (Codex's hook and its trust entry in config.toml). Each
//! session talks to a scripted model on loopback (tests/agents/
//! fake_model.py); what a tool call did is read on disk and in the next
//! request the agent sent the model. Every attack also runs in a twin
//! session without dcjail installed, where it must land, so each test can
//! fail; a harmless command must print exactly what it prints without
//! dcjail. The agents are pinned in tests/agents/package.json and installed
//! there by scripts/test.sh.

#[path = "support/agents.rs"]
mod agents;
#[path = "support/scratch.rs"]
mod scratch;

use agents::*;
use serde_json::{json, Value};
use std::path::Path;

/// A file's text, None when missing.
fn text(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The project's settings: the user's own permission rules, before any
/// install (which must keep them).
fn claude_permissions(sess: &Session, permissions: Value) {
    let v = if permissions.is_null() {
        json!({})
    } else {
        json!({ "permissions": permissions })
    };
    sess.put("proj/.claude/settings.json", &format!("{v:#}\n"));
}

/// Rules that let the scripted calls run in `-p` mode, where anything else
/// would be refused for want of someone to ask.
fn allow_all() -> Value {
    json!({"allow": ["Bash", "Write", "Edit", "Read"]})
}

/// The Codex output of a finished command from its status line on (the
/// chunk id and wall time before it vary from run to run).
fn codex_output(r: &ToolResult) -> &str {
    let at = r
        .text
        .find("Process exited with code")
        .unwrap_or_else(|| panic!("not a finished command: {r:?}"));
    &r.text[at..]
}

// ---------------------------------------------------------------- Claude Code

/// One session: Bash runs under dcjail and prints what it prints without;
/// the user's deny and ask rules still hold; shell writes to a protected
/// path and outside the project are refused, inside they land; the Write
/// tool is refused outside (also through a symlinked directory), lands
/// inside, and Edit works. The twin without dcjail shows each attack lands.
#[test]
fn claude_bash_and_file_tools_run_under_dcjail() {
    let setup = |name: &str, install: bool| {
        let sess = Session::new(name, User::Invoker);
        sess.put("proj/sub/f1", "");
        sess.put("proj/victim", "v\n");
        std::os::unix::fs::symlink(&sess.outside, sess.proj.join("link")).unwrap();
        claude_permissions(
            &sess,
            json!({
                "deny": ["Bash(touch:*)"],
                "ask": ["Bash(rm:*)"],
                "allow": ["Bash", "Write", "Edit", "Read"],
            }),
        );
        if install {
            sess.install_claude(None);
        }
        let ok = sess.proj.join("ok.txt");
        let script = vec![
            bash("echo DCJAIL=$DCJAIL"),
            bash("printf 'a\\tb\\n'; ls sub; exit 3"),
            bash("touch x"),
            bash("rm victim"),
            bash("echo pwned > .git/hooks/pre-commit; echo rc=$?"),
            bash(&format!(
                "echo pwned > {}/o.txt; echo rc=$?",
                s(&sess.outside)
            )),
            bash("echo in > inside.txt"),
            write_file(&sess.outside.join("w.txt"), "pwned"),
            write_file(&sess.proj.join("link/s.txt"), "pwned"),
            write_file(&ok, "one\n"),
            claude_tool(
                "Edit",
                json!({"file_path": s(&ok), "old_string": "one", "new_string": "two"}),
            ),
        ];
        let ran = sess.run_claude(&script, None);
        (sess, ran)
    };
    let ((jail, j), (plain, p)) = both(
        || setup("claude-tools-dcjail", true),
        || setup("claude-tools-plain", false),
    );

    // The installed settings kept the user's rules and pass --check.
    let settings: Value = serde_json::from_str(&text(&jail.claude_settings()).unwrap()).unwrap();
    assert_eq!(settings["permissions"]["deny"], json!(["Bash(touch:*)"]));
    let check = jail.dcjail_hook(
        "claude-code",
        &["--check", "--settings", s(&jail.claude_settings())],
    );
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success()
            && said.contains("shell prefix and hook are dcjail")
            && said.contains(&format!("{CLAUDE_VERSION} (verified"))
            && said.contains("it printed: DCJAIL=1 "),
        "--check after install: {check:?}"
    );

    // 1: under dcjail; 2: byte for byte what it prints without.
    assert_eq!(j.turn(1).text, "DCJAIL=1", "{:?}", j.turn(1));
    assert_eq!(p.turn(1).text, "DCJAIL=", "{:?}", p.turn(1));
    assert_eq!(
        j.turn(2),
        p.turn(2),
        "a harmless command differs under dcjail"
    );
    assert!(j.turn(2).is_error && j.turn(2).text.contains("Exit code 3\na\tb\nf1"));

    for (sess, ran) in [(&jail, &j), (&plain, &p)] {
        // 3, 4: the user's own rules decide on the original command.
        assert!(ran.says(3, &["has been denied"]).is_error);
        assert!(
            !sess.proj.join("x").exists(),
            "{}: the deny rule",
            ran.label
        );
        assert!(ran.says(4, &["haven't granted"]).is_error);
        assert!(
            sess.proj.join("victim").exists(),
            "{}: the ask rule",
            ran.label
        );
        // 7, 10, 11: inside the project, writes land.
        assert_eq!(text(&sess.proj.join("inside.txt")).as_deref(), Some("in\n"));
        assert_eq!(text(&sess.proj.join("ok.txt")).as_deref(), Some("two\n"));
    }

    // 5, 6: shell writes to a protected path and outside the project.
    j.says(5, &["Read-only file system", "rc=1"]);
    assert!(!jail.proj.join(".git/hooks/pre-commit").exists());
    j.says(6, &["rc=1"]);
    assert!(!jail.outside.join("o.txt").exists());
    p.says(5, &["rc=0"]);
    assert_eq!(
        text(&plain.proj.join(".git/hooks/pre-commit")).as_deref(),
        Some("pwned\n")
    );
    assert!(plain.outside.join("o.txt").exists());

    // 8, 9: the Write tool outside, directly and through a symlink.
    for (n, name) in [(8, "w.txt"), (9, "s.txt")] {
        assert!(
            j.says(n, &["dcjail: sandbox-denied", "not writable"])
                .is_error
        );
        assert!(!jail.outside.join(name).exists());
        assert!(!p.turn(n).is_error, "{:?}", p.turn(n));
        assert_eq!(text(&plain.outside.join(name)).as_deref(), Some("pwned"));
    }
    jail.done();
    plain.done();
}

/// A policy's deny_read holds for Claude Code's Read tool and its shell:
/// the secret never reaches the model; without dcjail it does. The same
/// session (dcjail installed, no deny or ask rule) runs `touch` and `rm`:
/// what stopped them in the test above was the user's rules.
#[test]
fn claude_deny_read_keeps_a_secret_from_the_model() {
    let secret = format!("S3CRET-{}-d3ny", std::process::id());
    let setup = |name: &str, install: bool| {
        let sess = Session::new(name, User::Invoker);
        sess.put("proj/secret.txt", &format!("{secret}\n"));
        sess.put("proj/victim", "v\n");
        let policy = sess.put(
            "policy.toml",
            "[sandbox]\nmode = \"workspace-write\"\n\
             [sandbox.filesystem]\ndeny_read = [\"secret.txt\"]\n",
        );
        claude_permissions(&sess, allow_all());
        if install {
            sess.install_claude(Some(&policy));
        }
        let script = vec![
            bash("touch x"),
            bash("rm victim"),
            claude_tool(
                "Read",
                json!({"file_path": s(&sess.proj.join("secret.txt"))}),
            ),
            bash("cat secret.txt; echo rc=$?"),
        ];
        let ran = sess.run_claude(&script, None);
        (sess, ran)
    };
    let ((jail, j), (plain, p)) = both(
        || setup("claude-read-dcjail", true),
        || setup("claude-read-plain", false),
    );
    for (sess, ran) in [(&jail, &j), (&plain, &p)] {
        assert!(sess.proj.join("x").exists(), "{}: touch ran", ran.label);
        assert!(!sess.proj.join("victim").exists(), "{}: rm ran", ran.label);
    }
    assert!(
        j.says(3, &["dcjail: sandbox-denied", "not readable"])
            .is_error
    );
    j.says(4, &["Permission denied", "rc=1"]);
    assert!(
        !j.requests.contains(&secret),
        "the secret reached the model under dcjail"
    );
    p.says(3, &[&secret]);
    p.says(4, &[&secret]);
    assert!(p.requests.contains(&secret));
    jail.done();
    plain.done();
}

/// bypassPermissions: Claude Code itself writes .git/hooks and its own
/// settings.json when told to; under dcjail the Write tool and the shell
/// are refused there, and a write inside still lands.
#[test]
fn claude_bypass_mode_cannot_write_protected_files() {
    let setup = |name: &str, install: bool| {
        let sess = Session::new(name, User::Invoker);
        claude_permissions(&sess, Value::Null);
        if install {
            sess.install_claude(None);
        }
        let settings = sess.claude_settings();
        let before = text(&settings).unwrap();
        let script = vec![
            write_file(&sess.proj.join(".git/hooks/pre-commit"), "pwned"),
            claude_tool("Read", json!({"file_path": s(&settings)})),
            write_file(&settings, "{\"pwned\": true}\n"),
            bash("echo pwned > .git/hooks/post-commit; echo rc=$?"),
            write_file(&sess.proj.join("ok.txt"), "fine"),
        ];
        let ran = sess.run_claude(&script, Some("bypassPermissions"));
        (sess, ran, before)
    };
    let ((jail, j, jail_before), (plain, p, _)) = both(
        || setup("claude-bypass-dcjail", true),
        || setup("claude-bypass-plain", false),
    );
    let hooks = |sess: &Session, f: &str| text(&sess.proj.join(".git/hooks").join(f));

    assert!(j.says(1, &["dcjail: sandbox-denied"]).is_error);
    assert_eq!(hooks(&jail, "pre-commit"), None);
    assert!(j.says(3, &["dcjail: sandbox-denied"]).is_error);
    assert_eq!(text(&jail.claude_settings()), Some(jail_before));
    j.says(4, &["Read-only file system", "rc=1"]);
    assert_eq!(hooks(&jail, "post-commit"), None);

    assert_eq!(hooks(&plain, "pre-commit").as_deref(), Some("pwned"));
    assert!(!p.turn(3).is_error, "{:?}", p.turn(3));
    assert_eq!(
        text(&plain.claude_settings()).as_deref(),
        Some("{\"pwned\": true}\n")
    );
    assert_eq!(hooks(&plain, "post-commit").as_deref(), Some("pwned\n"));

    for sess in [&jail, &plain] {
        assert_eq!(text(&sess.proj.join("ok.txt")).as_deref(), Some("fine"));
    }
    jail.done();
    plain.done();
}

/// Plan mode: the hook denies a Bash call ("plan-blocked") and a Write.
/// Without dcjail, the user's allow rule lets the Bash call run even in
/// plan mode.
#[test]
fn claude_plan_mode_blocks_bash() {
    let setup = |name: &str, install: bool| {
        let sess = Session::new(name, User::Invoker);
        claude_permissions(&sess, allow_all());
        if install {
            sess.install_claude(None);
        }
        let script = vec![
            bash("echo hi > planned.txt"),
            write_file(&sess.proj.join("w.txt"), "x"),
        ];
        let ran = sess.run_claude(&script, Some("plan"));
        (sess, ran)
    };
    let ((jail, j), (plain, p)) = both(
        || setup("claude-plan-dcjail", true),
        || setup("claude-plan-plain", false),
    );
    assert!(j.says(1, &["dcjail: plan-blocked"]).is_error);
    assert!(j.says(2, &["dcjail: plan-blocked"]).is_error);
    assert!(!jail.proj.join("planned.txt").exists());
    assert!(!jail.proj.join("w.txt").exists());
    assert!(!p.turn(1).is_error, "{:?}", p.turn(1));
    assert_eq!(
        text(&plain.proj.join("planned.txt")).as_deref(),
        Some("hi\n")
    );
    jail.done();
    plain.done();
}

/// A policy whose permission outcome is deny: Bash and Write are denied
/// with dcjail's reason; without dcjail both run.
#[test]
fn claude_policy_deny_denies_bash_and_write() {
    let setup = |name: &str, install: bool| {
        let sess = Session::new(name, User::Invoker);
        let policy = sess.put("deny.toml", "[permission]\noutcome = \"deny\"\n");
        claude_permissions(&sess, allow_all());
        if install {
            sess.install_claude(Some(&policy));
        }
        let script = vec![
            bash("echo hi > b.txt"),
            write_file(&sess.proj.join("w.txt"), "x"),
        ];
        let ran = sess.run_claude(&script, None);
        (sess, ran)
    };
    let ((jail, j), (plain, p)) = both(
        || setup("claude-deny-dcjail", true),
        || setup("claude-deny-plain", false),
    );
    assert!(j.says(1, &["dcjail: permission-denied", "`bash`"]).is_error);
    assert!(
        j.says(2, &["dcjail: permission-denied", "`write`"])
            .is_error
    );
    for f in ["b.txt", "w.txt"] {
        assert!(!jail.proj.join(f).exists(), "{f} under dcjail");
        assert!(
            plain.proj.join(f).exists(),
            "{f} without dcjail: {p:?}",
            p = p.results
        );
    }
    jail.done();
    plain.done();
}

/// The same integration for a user without privileges (uid 65534 when the
/// tests run as root), in bypassPermissions (in default mode Claude Code
/// itself asks before writing .git/hooks): the shell and the Write tool are
/// held to the project in a tree that user owns; without dcjail they are
/// not.
#[test]
fn claude_as_an_unprivileged_user() {
    let setup = |name: &str, install: bool| {
        let sess = Session::new(name, User::Unprivileged);
        claude_permissions(&sess, allow_all());
        if install {
            sess.install_claude(None);
        }
        let script = vec![
            bash(&format!(
                "id -u; echo DCJAIL=$DCJAIL; echo in > inside.txt; \
                 echo pwned > .git/hooks/pre-commit; echo pwned > {}/o.txt; echo end",
                s(&sess.outside)
            )),
            write_file(&sess.proj.join(".git/hooks/pre-push"), "pwned"),
            write_file(&sess.outside.join("w.txt"), "pwned"),
            write_file(&sess.proj.join("ok.txt"), "fine"),
        ];
        let ran = sess.run_claude(&script, Some("bypassPermissions"));
        (sess, ran)
    };
    let ((jail, j), (plain, p)) = both(
        || setup("claude-user-dcjail", true),
        || setup("claude-user-plain", false),
    );
    if is_root() {
        j.says(1, &["65534\n"]);
    }
    j.says(1, &["DCJAIL=1\n", "end"]);
    p.says(1, &["DCJAIL=\n", "end"]);
    assert!(j.says(2, &["dcjail: sandbox-denied"]).is_error);
    assert!(j.says(3, &["dcjail: sandbox-denied"]).is_error);
    for (sess, jailed) in [(&jail, true), (&plain, false)] {
        for f in [
            sess.proj.join(".git/hooks/pre-commit"),
            sess.proj.join(".git/hooks/pre-push"),
            sess.outside.join("o.txt"),
            sess.outside.join("w.txt"),
        ] {
            assert_eq!(f.exists(), !jailed, "{} (dcjail: {jailed})", f.display());
        }
        assert!(sess.proj.join("inside.txt").exists());
        assert!(sess.proj.join("ok.txt").exists());
    }
    jail.done();
    plain.done();
}

// ---------------------------------------------------------------------- Codex

/// One session: exec_command runs under dcjail and prints what it prints
/// without; a `workdir` outside the project is denied; a shell write to
/// .git/hooks is refused and one inside lands; apply_patch adds, updates,
/// deletes and moves nothing protected or outside (a symlinked directory
/// included), and applies inside. The
/// twin without dcjail shows every one of those lands.
#[test]
fn codex_exec_and_apply_patch_run_under_dcjail() {
    let setup = |name: &str, install: bool| {
        let sess = Session::new(name, User::Invoker);
        sess.put("proj/sub/f1", "");
        for f in ["upd.txt", "del.txt", "mv.txt", "mvout.txt", "ren.txt"] {
            sess.put(&format!("proj/{f}"), "old\n");
        }
        sess.put("proj/.bashrc", "# rc\n");
        sess.put("outside/o.txt", "old\n");
        sess.put("outside/d.txt", "old\n");
        std::os::unix::fs::symlink(&sess.outside, sess.proj.join("link")).unwrap();
        let out = s(&sess.outside).to_string();
        let script = vec![
            exec("echo DCJAIL=$DCJAIL", None),
            exec("printf 'a\\tb\\n'; ls sub; exit 3", None),
            exec("echo x > w.txt; echo rc=$?", Some(&sess.outside)),
            exec(
                "echo pwned > .git/hooks/pre-commit; echo rc=$?; echo in > inside.txt",
                None,
            ),
            patch("*** Add File: .git/hooks/pre-push\n+pwned\n"),
            patch(&format!("*** Add File: {out}/p.txt\n+pwned\n")),
            patch("*** Update File: .git/config\n@@\n [core]\n+\tfsmonitor = true\n"),
            patch(&format!("*** Update File: {out}/o.txt\n@@\n-old\n+new\n")),
            patch("*** Delete File: .bashrc\n"),
            patch(&format!("*** Delete File: {out}/d.txt\n")),
            patch(&format!(
                "*** Update File: mvout.txt\n*** Move to: {out}/moved.txt\n@@\n-old\n+new\n"
            )),
            patch("*** Update File: mv.txt\n*** Move to: .git/hooks/post-commit\n@@\n-old\n+new\n"),
            patch(
                "*** Add File: ok.txt\n+fine\n\
                 *** Update File: upd.txt\n@@\n-old\n+new\n\
                 *** Delete File: del.txt\n\
                 *** Update File: ren.txt\n*** Move to: renamed.txt\n@@\n-old\n+new\n",
            ),
            exec("echo x > l.txt; echo rc=$?", Some(&sess.proj.join("link"))),
            patch("*** Add File: link/pl.txt\n+pwned\n"),
        ];
        let config = text(&sess.proj.join(".git/config")).unwrap();
        let ran = sess.run_codex(&script, |s| {
            if install {
                s.install_codex(None)
            }
        });
        (sess, ran, config)
    };
    let ((jail, j, config), (plain, p, _)) = both(
        || setup("codex-tools-dcjail", true),
        || setup("codex-tools-plain", false),
    );

    // 1: under dcjail; 2: the same output and status as without.
    j.says(1, &["Output:\nDCJAIL=1\n"]);
    p.says(1, &["Output:\nDCJAIL=\n"]);
    assert_eq!(codex_output(j.turn(2)), codex_output(p.turn(2)));
    assert_eq!(
        codex_output(j.turn(2)),
        "Process exited with code 3\nOriginal token count: 2\nOutput:\na\tb\nf1\n"
    );

    // 3: the model's workdir is not the workspace.
    j.says(
        3,
        &[
            "blocked by PreToolUse hook",
            "dcjail: sandbox-denied",
            "outside the session's workspace",
        ],
    );
    p.says(3, &["rc=0"]);
    // 4: the shell, protected path and inside.
    j.says(4, &["Read-only file system", "rc=1"]);
    p.says(4, &["rc=0"]);
    // 5-12: patches to protected paths and outside.
    for n in 5..=12 {
        j.says(
            n,
            &[
                "blocked by PreToolUse hook: dcjail: sandbox-denied",
                "not writable",
            ],
        );
        p.says(n, &["Success."]);
    }
    // 13: inside, applied in both.
    j.says(13, &["Success.", "A ok.txt", "M upd.txt", "D del.txt"]);
    // 14, 15: a workdir and a patch through a symlink to outside.
    j.says(
        14,
        &["dcjail: sandbox-denied", "outside the session's workspace"],
    );
    j.says(15, &["dcjail: sandbox-denied", "not writable"]);
    p.says(14, &["rc=0"]);
    p.says(15, &["Success."]);

    let get = |sess: &Session, rel: &str| text(&sess.root.join(rel));
    let jail_has = [
        ("outside/w.txt", None),
        ("proj/.git/hooks/pre-commit", None),
        ("proj/.git/hooks/pre-push", None),
        ("outside/p.txt", None),
        ("proj/.git/config", Some(config.as_str())),
        ("outside/o.txt", Some("old\n")),
        ("proj/.bashrc", Some("# rc\n")),
        ("outside/d.txt", Some("old\n")),
        ("proj/mvout.txt", Some("old\n")),
        ("outside/moved.txt", None),
        ("proj/mv.txt", Some("old\n")),
        ("proj/.git/hooks/post-commit", None),
        ("outside/l.txt", None),
        ("outside/pl.txt", None),
    ];
    let plain_has = [
        ("outside/w.txt", Some("x\n")),
        ("proj/.git/hooks/pre-commit", Some("pwned\n")),
        ("proj/.git/hooks/pre-push", Some("pwned\n")),
        ("outside/p.txt", Some("pwned\n")),
        ("outside/o.txt", Some("new\n")),
        ("proj/.bashrc", None),
        ("outside/d.txt", None),
        ("proj/mvout.txt", None),
        ("outside/moved.txt", Some("new\n")),
        ("proj/mv.txt", None),
        ("proj/.git/hooks/post-commit", Some("new\n")),
        ("outside/l.txt", Some("x\n")),
        ("outside/pl.txt", Some("pwned\n")),
    ];
    for (sess, want) in [(&jail, &jail_has[..]), (&plain, &plain_has[..])] {
        for (rel, v) in want {
            assert_eq!(get(sess, rel).as_deref(), *v, "{}: {rel}", sess.label);
        }
        for (rel, v) in [
            ("proj/inside.txt", Some("in\n")),
            ("proj/ok.txt", Some("fine\n")),
            ("proj/upd.txt", Some("new\n")),
            ("proj/del.txt", None),
            ("proj/ren.txt", None),
            ("proj/renamed.txt", Some("new\n")),
        ] {
            assert_eq!(get(sess, rel).as_deref(), v, "{}: {rel}", sess.label);
        }
    }
    assert!(get(&plain, "proj/.git/config")
        .unwrap()
        .contains("fsmonitor = true"));
    jail.done();
    plain.done();
}

/// A policy whose permission outcome is deny: exec_command and apply_patch
/// are denied ("permission-denied"); without dcjail both run.
#[test]
fn codex_policy_deny_denies_exec_and_patch() {
    let setup = |name: &str, install: bool| {
        let sess = Session::new(name, User::Invoker);
        let policy = sess.put("deny.toml", "[permission]\noutcome = \"deny\"\n");
        let script = vec![
            exec("echo hi > b.txt", None),
            patch("*** Add File: ok.txt\n+fine\n"),
        ];
        let ran = sess.run_codex(&script, |s| {
            if install {
                s.install_codex(Some(&policy))
            }
        });
        (sess, ran)
    };
    let ((jail, j), (plain, p)) = both(
        || setup("codex-deny-dcjail", true),
        || setup("codex-deny-plain", false),
    );
    j.says(
        1,
        &["blocked by PreToolUse hook: dcjail: permission-denied"],
    );
    j.says(
        2,
        &["blocked by PreToolUse hook: dcjail: permission-denied"],
    );
    for f in ["b.txt", "ok.txt"] {
        assert!(!jail.proj.join(f).exists(), "{f} under dcjail");
        assert!(
            plain.proj.join(f).exists(),
            "{f} without dcjail: {:?}",
            p.results
        );
    }
    jail.done();
    plain.done();
}

/// `dcjail hook codex --check` passes after install; with the trust entry
/// gone it fails saying Codex will skip the hook, and a real session then
/// runs its command unsandboxed: exactly what the check warned about.
#[test]
fn codex_check_catches_an_untrusted_hook() {
    let sess = Session::new("codex-check", User::Invoker);
    let config = sess.codex_settings();
    let check = |sess: &Session| sess.dcjail_hook("codex", &["--check", "--settings", s(&config)]);
    let mut checks = Vec::new();
    let script = vec![exec(
        "echo DCJAIL=$DCJAIL; echo pwned > .git/hooks/pre-commit; echo rc=$?",
        None,
    )];
    let ran = sess.run_codex(&script, |sess| {
        sess.install_codex(None);
        checks.push(check(sess));
        let mut doc: toml_edit::DocumentMut = text(&config).unwrap().parse().unwrap();
        let hooks = doc["hooks"].as_table_mut().unwrap();
        assert!(
            hooks.remove("state").is_some(),
            "install wrote no trust entry"
        );
        std::fs::write(&config, doc.to_string()).unwrap();
        checks.push(check(sess));
    });
    let said = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        checks[0].status.success()
            && said(&checks[0]).contains("is trusted")
            && said(&checks[0]).contains(&format!("{CODEX_VERSION} (verified"))
            && said(&checks[0]).contains("it printed: DCJAIL=1 "),
        "--check after install: {:?}",
        checks[0]
    );
    assert_eq!(checks[1].status.code(), Some(1), "{:?}", checks[1]);
    assert!(
        said(&checks[1]).contains("skip") && said(&checks[1]).contains("not trusted"),
        "{:?}",
        checks[1]
    );
    assert!(text(&config).unwrap().contains("hook codex"));
    ran.says(1, &["Output:\nDCJAIL=\nrc=0\n"]);
    assert_eq!(
        text(&sess.proj.join(".git/hooks/pre-commit")).as_deref(),
        Some("pwned\n")
    );
    sess.done();
}

/// The Codex integration for a user without privileges (uid 65534 when the
/// tests run as root), in a tree that user owns; without dcjail the
/// attacks land.
#[test]
fn codex_as_an_unprivileged_user() {
    let setup = |name: &str, install: bool| {
        let sess = Session::new(name, User::Unprivileged);
        let out = s(&sess.outside).to_string();
        let script = vec![
            exec(
                "id -u; echo DCJAIL=$DCJAIL; echo in > inside.txt; \
                 echo pwned > .git/hooks/pre-commit; echo end",
                None,
            ),
            exec("echo x > w.txt", Some(&sess.outside)),
            patch("*** Add File: .git/hooks/pre-push\n+pwned\n"),
            patch(&format!("*** Add File: {out}/p.txt\n+pwned\n")),
            patch("*** Add File: ok.txt\n+fine\n"),
        ];
        let ran = sess.run_codex(&script, |s| {
            if install {
                s.install_codex(None)
            }
        });
        (sess, ran)
    };
    let ((jail, j), (plain, p)) = both(
        || setup("codex-user-dcjail", true),
        || setup("codex-user-plain", false),
    );
    if is_root() {
        j.says(1, &["\n65534\n"]);
    }
    j.says(1, &["DCJAIL=1\n", "Read-only file system", "end"]);
    p.says(1, &["DCJAIL=\n", "end"]);
    for n in 2..=4 {
        j.says(n, &["blocked by PreToolUse hook: dcjail: sandbox-denied"]);
    }
    for (sess, jailed) in [(&jail, true), (&plain, false)] {
        for f in [
            sess.proj.join(".git/hooks/pre-commit"),
            sess.proj.join(".git/hooks/pre-push"),
            sess.outside.join("w.txt"),
            sess.outside.join("p.txt"),
        ] {
            assert_eq!(
                f.exists(),
                !jailed,
                "{} (dcjail: {jailed}): {:?}",
                f.display(),
                p.results
            );
        }
        assert!(sess.proj.join("inside.txt").exists());
        assert!(sess.proj.join("ok.txt").exists());
    }
    jail.done();
    plain.done();
}

/// Codex checks its own `prefix_rule`s on the command a hook hands back,
/// and a rewrite into `… -- bash -c '<original>'` is named by no rule: a
/// hook that only rewrites (the twin's, trusted like dcjail's) lets a
/// forbidden `touch` run. With dcjail the rule still holds, alone and
/// inside a compound line, and other commands still run.
#[test]
fn codex_rules_still_hold_with_dcjail_installed() {
    let rules = "prefix_rule(pattern = [\"touch\"], decision = \"forbidden\", justification = \"no touch\")\n";
    let setup = |name: &str, install: bool| {
        let sess = Session::new(name, User::Invoker);
        sess.put("codexhome/rules/default.rules", rules);
        let rewriter = sess.put(
            "rewrite.py",
            "import json, shlex, sys\n\
             i = json.load(sys.stdin)\n\
             c = i['tool_input']['command']\n\
             print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse',\n\
               'permissionDecision': 'allow', 'permissionDecisionReason': 'rewritten',\n\
               'updatedInput': {'command': '/bin/sh -c ' + shlex.quote(c)}}}))\n",
        );
        let script = vec![
            exec("touch alone", None),
            exec("echo ok && touch compound", None),
            exec("echo fine > other.txt", None),
        ];
        let hook = format!("/usr/bin/python3 {}", s(&rewriter));
        let ran = sess.run_codex(&script, |x| {
            if install {
                x.install_codex(None);
            } else {
                trust_plain_hook(x, &hook);
            }
        });
        (sess, ran)
    };
    let ((jail, j), (plain, p)) = both(
        || setup("codex-rules-dcjail", true),
        || setup("codex-rules-plain", false),
    );
    for n in [1, 2] {
        j.says(
            n,
            &[
                "dcjail: permission-denied",
                "rule `touch` forbids",
                "no touch",
            ],
        );
    }
    assert!(!jail.proj.join("alone").exists() && !jail.proj.join("compound").exists());
    assert_eq!(
        text(&jail.proj.join("other.txt")).as_deref(),
        Some("fine\n")
    );
    assert!(
        plain.proj.join("alone").exists() && plain.proj.join("compound").exists(),
        "the rewriting hook alone should switch the rule off: {:?}",
        p.results
    );
    jail.done();
    plain.done();
}

/// A PreToolUse hook that is not dcjail's, written into the session's
/// config.toml with the trust entry Codex computes for it.
fn trust_plain_hook(sess: &Session, command: &str) {
    use sha2::Digest;
    let config = sess.codex_settings();
    let real = std::fs::canonicalize(&config).unwrap();
    let ident = json!({
        "event_name": "pre_tool_use",
        "hooks": [{"type": "command", "command": command, "timeout": 600, "async": false}],
        "matcher": "Bash|apply_patch",
    });
    let hash: String = sha2::Sha256::digest(ident.to_string().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut text = text(&config).unwrap();
    text.push_str(&format!(
        "\n[[hooks.PreToolUse]]\nmatcher = \"Bash|apply_patch\"\n\n[[hooks.PreToolUse.hooks]]\n\
         type = \"command\"\ncommand = {}\n\n[hooks.state.{}]\ntrusted_hash = \"sha256:{hash}\"\n",
        Value::String(command.to_string()),
        Value::String(format!("{}:pre_tool_use:0:0", real.display())),
    ));
    std::fs::write(&config, text).unwrap();
}

/// A second name of a `deny_read` file is the same file: Claude Code's Read
/// of a hard link is refused, and Codex's patch that would move the file's
/// content to a readable name is refused. Without dcjail both hand the
/// secret to the model.
#[test]
fn a_second_name_or_a_move_does_not_take_a_deny_read_file_out() {
    let secret = format!("S3CRET-{}-l1nk", std::process::id());
    let setup = |name: &str, install: bool, agent: Agent| {
        let sess = Session::new(name, User::Invoker);
        let file = sess.put("proj/secret.txt", &format!("{secret}\n"));
        std::fs::hard_link(&file, sess.proj.join("alias.txt")).unwrap();
        let policy = sess.put(
            "policy.toml",
            "[sandbox]\nmode = \"workspace-write\"\n\
             [sandbox.filesystem]\ndeny_read = [\"secret.txt\"]\n",
        );
        let ran = match agent {
            Agent::Claude => {
                claude_permissions(&sess, allow_all());
                if install {
                    sess.install_claude(Some(&policy));
                }
                let read = json!({"file_path": s(&sess.proj.join("alias.txt"))});
                sess.run_claude(&[claude_tool("Read", read)], None)
            }
            Agent::Codex => {
                let script = vec![
                    patch("*** Update File: secret.txt\n*** Move to: moved.txt\n@@\n+x\n"),
                    exec("cat moved.txt", None),
                ];
                sess.run_codex(&script, |s| {
                    if install {
                        s.install_codex(Some(&policy));
                    }
                })
            }
        };
        (sess, ran)
    };
    let ((cj, cjr), (cp, cpr)) = both(
        || setup("link-claude-dcjail", true, Agent::Claude),
        || setup("link-claude-plain", false, Agent::Claude),
    );
    let ((xj, xjr), (xp, xpr)) = both(
        || setup("link-codex-dcjail", true, Agent::Codex),
        || setup("link-codex-plain", false, Agent::Codex),
    );
    cjr.says(1, &["dcjail: sandbox-denied", "not readable"]);
    xjr.says(1, &["dcjail: sandbox-denied", "not readable"]);
    assert!(!xj.proj.join("moved.txt").exists());
    for r in [&cjr, &xjr] {
        assert!(
            !r.requests.contains(&secret),
            "{}: the secret reached the model",
            r.label
        );
    }
    for r in [&cpr, &xpr] {
        assert!(
            r.requests.contains(&secret),
            "{}: the control never read the secret",
            r.label
        );
    }
    for sess in [cj, cp, xj, xp] {
        sess.done();
    }
}
