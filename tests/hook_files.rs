//! The file tools an agent runs in its own process, outside any sandbox —
//! Claude Code's Read, Grep, Glob, Write, Edit, MultiEdit, NotebookEdit and
//! Codex's apply_patch — held by the hook to the plan a shell call gets:
//! the path resolved as the kernel resolves it, writes only where the
//! sandbox lets a command write, reads never of a `deny_read` file. A
//! refusal is the agent's deny; an allowed call gets no output. Each attack
//! is first shown to work from the agent's own process (this test, or
//! uid 65534), where the hook is all that stops it.

#[path = "support/hook.rs"]
mod common;
#[path = "support/scratch.rs"]
mod scratch;

use common::*;
use serde_json::Value;
use std::os::unix::fs::symlink;
use std::path::Path;

const EDITORS: &[&str] = &[
    "claude-code-write.json",
    "claude-code-edit.json",
    "claude-code-multiedit.json",
    "claude-code-notebookedit.json",
];

/// A file tool's call with its path field set to `path`, made in `cwd`.
fn tool(fixture: &str, cwd: &Path, path: &Path) -> Value {
    payload(fixture, cwd, path.to_str().unwrap())
}

fn write_denied(o: &std::process::Output, what: &str, written: &Path) -> String {
    let reason = denied(o, what);
    assert!(
        reason.starts_with(&format!(
            "dcjail: sandbox-denied: write of `{}` refused: ",
            written.display()
        )),
        "{what}: {reason}"
    );
    reason
}

/// The write as the agent's own process makes it: `sh` opening the path
/// for writing (following every symlink), as root or uid 65534.
fn agent_writes(dir: &Path, path: &Path, nobody: bool) -> bool {
    let o = shell(
        dir,
        &["sh", "-c", "printf x > \"$1\"", "sh"],
        path.to_str().unwrap(),
        nobody,
    );
    o.status.success()
}

/// As root and as uid 65534: every editing tool's write outside the
/// project (absolute, or relative to a call made in a subdirectory) is
/// denied; the same tools inside the project, with no policy (the project
/// writable), get no opinion. The agent's own process can write outside.
#[test]
fn file_tool_writes_outside_the_project_are_denied_and_inside_get_no_opinion() {
    for nobody in [false, true] {
        let t = Tree::new(&format!("files-outside-{nobody}"));
        std::fs::write(t.ws.join("notes.txt"), "a c\n").unwrap();
        open(&t.ws.join("notes.txt"), 0o666);
        let target = t.outside.join("target.txt");
        for fixture in EDITORS {
            let h = Hook::claude(&t.ws).nobody(nobody);
            let what = format!("{fixture} nobody={nobody}");
            write_denied(&h.call(&tool(fixture, &t.ws, &target)), &what, &target);
            let rel = Path::new("../../outside/target.txt");
            write_denied(&h.call(&tool(fixture, &t.sub, rel)), &what, rel);
            for inside in [
                t.ws.join("notes.txt"),
                t.ws.join("new.txt"),
                t.sub.join("deeper/new.ipynb"),
            ] {
                no_opinion(&h.call(&tool(fixture, &t.sub, &inside)), &what);
            }
            no_opinion(
                &h.call(&tool(fixture, &t.sub, Path::new("../new.txt"))),
                &what,
            );
        }
        assert!(!target.exists());
        assert!(agent_writes(&t.ws, &target, nobody), "control");
        assert!(target.exists(), "control");
    }
}

/// Protected files in the project — git hooks and config, shell startup
/// files, the agent's own settings — are denied to every editing tool in
/// every mode, `bypassPermissions` included; plan mode denies every write.
/// The agent's own process writes them.
#[test]
fn protected_files_in_the_project_are_denied_in_every_mode() {
    let t = Tree::new("files-protected");
    let kept = [
        ".git/hooks/pre-commit",
        ".git/config",
        ".bashrc",
        ".claude/settings.json",
        ".claude/settings.local.json",
    ];
    for mode in ["default", "acceptEdits", "dontAsk", "bypassPermissions"] {
        for fixture in EDITORS {
            for k in kept {
                let p = t.ws.join(k);
                let mut input = tool(fixture, &t.ws, &p);
                input["permission_mode"] = mode.into();
                let reason = write_denied(
                    &Hook::claude(&t.ws).call(&input),
                    &format!("{mode} {fixture}"),
                    &p,
                );
                assert!(
                    reason.contains("is not writable under the policy"),
                    "{reason}"
                );
            }
        }
    }
    let mut input = tool("claude-code-write.json", &t.ws, &t.ws.join("new.txt"));
    input["permission_mode"] = "plan".into();
    let reason = denied(&Hook::claude(&t.ws).call(&input), "plan");
    assert_eq!(
        reason,
        "dcjail: plan-blocked: plan mode does not run `write` calls"
    );

    for k in kept {
        let p = t.ws.join(k);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        assert!(agent_writes(&t.ws, &p, false), "control {k}");
    }
    assert_eq!(t.pre_commit(), "x");
}

/// Paths resolve as the kernel resolves them when the agent opens them: a
/// symlinked directory pointing outside, a dangling symlink in the project
/// whose target is outside (the write would create it there), `..` after a
/// symlinked directory, a relative symlink, and a symlink to `.git/hooks`
/// are denied; a symlink loop is denied; a symlink to a file in the
/// project gets no opinion. The agent's own writes land where the kernel
/// says.
#[test]
fn symlinks_in_a_path_are_followed_as_the_kernel_follows_them() {
    let t = Tree::new("files-symlinks");
    symlink(&t.outside, t.ws.join("outlink")).unwrap();
    symlink(t.outside.join("new.txt"), t.ws.join("dangle")).unwrap();
    symlink("../outside", t.ws.join("rel")).unwrap();
    symlink(".git/hooks", t.ws.join("hooks-link")).unwrap();
    symlink("loop-b", t.ws.join("loop-a")).unwrap();
    symlink("loop-a", t.ws.join("loop-b")).unwrap();
    std::fs::write(t.ws.join("real.txt"), "r").unwrap();
    symlink("real.txt", t.ws.join("alias.txt")).unwrap();
    let cases = [
        ("outlink/y", t.outside.join("y")),
        ("dangle", t.outside.join("new.txt")),
        ("outlink/../escape.txt", t.root.join("escape.txt")),
        ("rel/z", t.outside.join("z")),
        ("hooks-link/pre-commit", t.ws.join(".git/hooks/pre-commit")),
    ];
    for fixture in EDITORS {
        for (written, lands) in &cases {
            let p = t.ws.join(written);
            let reason = write_denied(
                &Hook::claude(&t.ws).call(&tool(fixture, &t.ws, &p)),
                fixture,
                &p,
            );
            assert!(
                reason.contains(&format!("`{}` is not writable", lands.display())),
                "{written}: {reason}"
            );
        }
        let p = t.ws.join("loop-a");
        let reason = write_denied(
            &Hook::claude(&t.ws).call(&tool(fixture, &t.ws, &p)),
            fixture,
            &p,
        );
        assert!(reason.ends_with("a symlink loop"), "{reason}");
        no_opinion(
            &Hook::claude(&t.ws).call(&tool(fixture, &t.ws, &t.ws.join("alias.txt"))),
            fixture,
        );
    }
    for (written, lands) in &cases {
        assert!(agent_writes(&t.ws, &t.ws.join(written), false), "{written}");
        assert_eq!(
            std::fs::read_to_string(lands).unwrap(),
            "x",
            "control {written}"
        );
    }
}

/// A hard link made earlier in the project to `.git/config` (or to a git
/// hook) is another name of a kept file: writing it is denied. A hard link
/// between two ordinary files gets no opinion. Written by the agent's own
/// process, the link changes `.git/config`.
#[test]
fn a_hard_link_to_a_kept_file_is_denied() {
    let t = Tree::new("files-hardlink");
    let alias = t.ws.join("cfg-alias");
    let hook_alias = t.sub.join("hook-alias");
    std::fs::hard_link(t.ws.join(".git/config"), &alias).unwrap();
    std::fs::hard_link(t.ws.join(".git/hooks/pre-commit"), &hook_alias).unwrap();
    std::fs::write(t.ws.join("a.txt"), "a").unwrap();
    std::fs::hard_link(t.ws.join("a.txt"), t.sub.join("b.txt")).unwrap();
    for fixture in EDITORS {
        for p in [&alias, &hook_alias] {
            write_denied(
                &Hook::claude(&t.ws).call(&tool(fixture, &t.ws, p)),
                fixture,
                p,
            );
        }
        no_opinion(
            &Hook::claude(&t.ws).call(&tool(fixture, &t.ws, &t.sub.join("b.txt"))),
            fixture,
        );
    }
    let before = std::fs::read_to_string(t.ws.join(".git/config")).unwrap();
    assert!(agent_writes(&t.ws, &alias, false));
    let after = std::fs::read_to_string(t.ws.join(".git/config")).unwrap();
    assert_ne!(before, after, "control: the alias is .git/config");
}

/// A policy replaces the default: read-only denies a write in the project
/// that the default (no policy: the project writable) lets through.
#[test]
fn the_policy_decides_what_the_file_tools_may_write() {
    let t = Tree::new("files-policy");
    let p = t.ws.join("new.txt");
    let input = tool("claude-code-write.json", &t.ws, &p);
    no_opinion(&Hook::claude(&t.ws).call(&input), "no policy");
    let ro = t.policy("ro.toml", "[sandbox]\nmode = \"read-only\"\n");
    for h in [
        Hook::claude(&t.ws).policy(&ro),
        Hook::claude(&t.ws).env("DCJAIL_POLICY", ro.to_str().unwrap()),
    ] {
        let reason = write_denied(&h.call(&input), "read-only", &p);
        assert!(reason.contains("(read-only)"), "{reason}");
    }
    let extra = t.policy(
        "extra.toml",
        &format!(
            "[sandbox]\nmode = \"workspace-write\"\n[sandbox.filesystem]\nallow_write = [\"{}\"]\n",
            t.outside.display()
        ),
    );
    let out_file = t.outside.join("allowed.txt");
    no_opinion(
        &Hook::claude(&t.ws)
            .policy(&extra)
            .call(&tool("claude-code-write.json", &t.ws, &out_file)),
        "allow_write",
    );
}

/// `deny_read` holds for the reading tools: Read of the file (directly,
/// through a symlink, from a subdirectory) or of a file in a denied
/// directory, and a Grep or Glob of a directory holding one, are denied;
/// other reads and searches get no opinion. The agent's own process reads
/// the file; a shell call through the prefix does not, so the hook and the
/// sandbox agree.
#[test]
fn reads_of_deny_read_files_are_denied_and_other_reads_get_no_opinion() {
    let t = Tree::new("files-read");
    let secret = t.ws.join("secret.txt");
    std::fs::write(&secret, "SECRET-CONTENT\n").unwrap();
    std::fs::create_dir(t.ws.join("private")).unwrap();
    std::fs::write(t.ws.join("private/key"), "KEY\n").unwrap();
    std::fs::write(t.sub.join("readme"), "hello\n").unwrap();
    symlink(&secret, t.sub.join("link")).unwrap();
    let policy = t.policy(
        "p.toml",
        "[sandbox]\nmode = \"workspace-write\"\n[sandbox.filesystem]\ndeny_read = [\"secret.txt\", \"private\"]\n",
    );
    let h = || Hook::claude(&t.ws).policy(&policy);
    let read_denied = |input: &Value, written: &str| {
        let reason = denied(&h().call(input), written);
        assert!(
            reason.starts_with(&format!(
                "dcjail: sandbox-denied: read of `{written}` refused: "
            )),
            "{reason}"
        );
        assert!(
            reason.contains("is not readable under the policy"),
            "{reason}"
        );
    };
    for (fixture, cwd, path) in [
        ("claude-code-read-path.json", &t.ws, secret.clone()),
        ("claude-code-read-path.json", &t.sub, "../secret.txt".into()),
        ("claude-code-read-path.json", &t.ws, t.sub.join("link")),
        (
            "claude-code-read-path.json",
            &t.ws,
            t.ws.join("private/key"),
        ),
        ("claude-code-grep.json", &t.ws, secret.clone()),
        ("claude-code-grep.json", &t.sub, t.ws.clone()),
        ("claude-code-grep.json", &t.ws, t.root.clone()),
        ("claude-code-grep.json", &t.ws, "/".into()),
        ("claude-code-glob.json", &t.ws, t.ws.clone()),
    ] {
        read_denied(&tool(fixture, cwd, &path), path.to_str().unwrap());
    }
    // A Grep without a path searches the call's directory.
    read_denied(&payload("claude-code-grep-no-path.json", &t.ws, ""), ".");
    no_opinion(
        &h().call(&payload("claude-code-grep-no-path.json", &t.sub, "")),
        "grep sub",
    );
    for (fixture, path) in [
        ("claude-code-read-path.json", t.sub.join("readme")),
        ("claude-code-read-path.json", "/etc/hostname".into()),
        ("claude-code-grep.json", t.sub.clone()),
        ("claude-code-glob.json", t.sub.clone()),
    ] {
        no_opinion(
            &h().call(&tool(fixture, &t.ws, &path)),
            &path.display().to_string(),
        );
    }
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        "SECRET-CONTENT\n"
    );
    // A glob denies what it matches below a searched directory too.
    std::fs::create_dir_all(t.sub.join("deep")).unwrap();
    std::fs::write(t.sub.join("deep/.env"), "TOKEN=1\n").unwrap();
    let globbed = t.policy(
        "g.toml",
        "[sandbox]\nmode = \"workspace-write\"\n[sandbox.filesystem]\ndeny_read = [\"**/.env\"]\n",
    );
    let g = || Hook::claude(&t.ws).policy(&globbed);
    for fixture in ["claude-code-grep.json", "claude-code-glob.json"] {
        denied(
            &g().call(&tool(fixture, &t.ws, &t.sub)),
            t.sub.to_str().unwrap(),
        );
        no_opinion(
            &g().call(&tool(fixture, &t.ws, &t.ws.join("private"))),
            "a directory without a match",
        );
    }
    let env = [("DCJAIL_POLICY", policy.to_str().unwrap())];
    let o = prefix(&t.ws, &t.ws, "cat secret.txt; echo MARK", &env, false);
    assert_eq!(
        out(&o),
        "MARK\n",
        "the sandbox holds the same deny_read: {o:?}"
    );
}

/// A hard link is the file it names: a Read of another name (made earlier)
/// of a `deny_read` file is denied, as the sandbox denies `cat` of it. A
/// tool that writes also reads what it changes (an edit shows the lines
/// around it, a patch can move the content to a new name), so every
/// editing tool and an apply_patch of the file are denied too. The agent's
/// own process reads the secret through the other name.
#[test]
fn another_name_of_a_deny_read_file_and_edits_of_it_are_denied() {
    let t = Tree::new("files-read-alias");
    let secret = t.ws.join("secret.txt");
    let alias = t.sub.join("alias");
    std::fs::write(&secret, "SECRET-CONTENT\n").unwrap();
    std::fs::hard_link(&secret, &alias).unwrap();
    let policy = t.policy(
        "p.toml",
        "[sandbox]\nmode = \"workspace-write\"\n[sandbox.filesystem]\ndeny_read = [\"secret.txt\"]\n",
    );
    let input = tool("claude-code-read-path.json", &t.ws, &alias);
    let reason = denied(&Hook::claude(&t.ws).policy(&policy).call(&input), "alias");
    assert!(
        reason.starts_with(&format!(
            "dcjail: sandbox-denied: read of `{}` refused: ",
            alias.display()
        )),
        "{reason}"
    );
    for fixture in EDITORS {
        let input = tool(fixture, &t.ws, &secret);
        let reason = write_denied(
            &Hook::claude(&t.ws).policy(&policy).call(&input),
            fixture,
            &secret,
        );
        assert!(
            reason.contains("is not readable under the policy"),
            "{reason}"
        );
    }
    let body = "*** Update File: secret.txt\n*** Move to: sub/leaked.txt\n@@\n-x\n+x";
    let input = payload("codex-apply-patch-any.json", &t.ws, &patch(body));
    write_denied(
        &Hook::codex(&t.ws).policy(&policy).call(&input),
        "apply_patch",
        Path::new("secret.txt"),
    );

    assert_eq!(std::fs::read_to_string(&alias).unwrap(), "SECRET-CONTENT\n");
    let env = [("DCJAIL_POLICY", policy.to_str().unwrap())];
    let o = prefix(&t.ws, &t.ws, "cat sub/alias; echo MARK", &env, false);
    assert_eq!(
        out(&o),
        "MARK\n",
        "the sandbox denies the other name: {o:?}"
    );
}

fn patch(body: &str) -> String {
    format!("*** Begin Patch\n{body}\n*** End Patch\n")
}

/// Codex's apply_patch: every path an `Add File`, `Update File`,
/// `Delete File` or `Move to` names (relative to the call's directory) must
/// be writable. Each kind aimed outside the project or at a protected file
/// is denied, in `bypassPermissions` too; the same kinds inside get no
/// opinion; a marker the hook cannot read, a call from outside the session
/// root and plan mode are denied. Codex applies patches in its own process,
/// which can write every one of those paths.
#[test]
fn codex_apply_patch_is_checked_path_by_path() {
    for nobody in [false, true] {
        let t = Tree::new(&format!("files-patch-{nobody}"));
        std::fs::write(t.ws.join("notes.txt"), "a\n").unwrap();
        std::fs::write(t.ws.join(".bashrc"), "# rc\n").unwrap();
        symlink(&t.outside, t.ws.join("outlink")).unwrap();
        let out_abs = t.outside.join("abs.txt");
        let refused = [
            (
                "*** Add File: ../../outside/a.txt\n+a",
                "../../outside/a.txt",
            ),
            (
                &*format!("*** Add File: {}\n+a", out_abs.display()),
                &*out_abs.to_string_lossy(),
            ),
            ("*** Add File: ../outlink/b.txt\n+b", "../outlink/b.txt"),
            (
                "*** Add File: ../.git/hooks/post-checkout\n+#!/bin/sh",
                "../.git/hooks/post-checkout",
            ),
            (
                "*** Update File: ../.git/config\n@@\n-a\n+b",
                "../.git/config",
            ),
            ("*** Delete File: ../.bashrc", "../.bashrc"),
            (
                "*** Update File: ../notes.txt\n*** Move to: ../../outside/notes.txt\n@@\n-a\n+b",
                "../../outside/notes.txt",
            ),
            (
                "*** Update File: ../notes.txt\n*** Move to: ../.git/hooks/pre-commit\n@@\n-a\n+b",
                "../.git/hooks/pre-commit",
            ),
            (
                "*** Add File: ok.txt\n+fine\n*** Delete File: ../.claude/settings.json",
                "../.claude/settings.json",
            ),
        ];
        for mode in ["default", "bypassPermissions"] {
            for (body, path) in refused {
                let mut input = payload("codex-apply-patch-any.json", &t.sub, &patch(body));
                input["permission_mode"] = mode.into();
                let o = Hook::codex(&t.ws).nobody(nobody).call(&input);
                write_denied(
                    &o,
                    &format!("{mode} nobody={nobody}: {body}"),
                    Path::new(path),
                );
            }
        }
        for body in [
            "*** Add File: new.txt\n+new",
            "*** Add File: ../top.txt\n+top",
            "*** Update File: ../notes.txt\n@@\n-a\n+b",
            "*** Delete File: ../notes.txt",
            "*** Update File: ../notes.txt\n*** Move to: renamed.txt\n@@\n-a\n+b",
            "*** Add File: deeper/x.txt\n+x\n*** End of File",
        ] {
            let input = payload("codex-apply-patch-any.json", &t.sub, &patch(body));
            no_opinion(&Hook::codex(&t.ws).nobody(nobody).call(&input), body);
        }
        for (body, why) in [
            (
                "*** Rename File: notes.txt",
                "an unknown patch marker `*** Rename File: notes.txt`",
            ),
            ("*** Add File:   \n+x", "`*** Add File:` names no file"),
        ] {
            let input = payload("codex-apply-patch-any.json", &t.sub, &patch(body));
            let reason = denied(&Hook::codex(&t.ws).nobody(nobody).call(&input), body);
            assert_eq!(
                reason,
                format!("dcjail: sandbox-denied: the patch cannot be checked: {why}")
            );
        }
        let input = payload(
            "codex-apply-patch-any.json",
            &t.outside,
            &patch("*** Add File: x\n+x"),
        );
        let reason = denied(&Hook::codex(&t.ws).nobody(nobody).call(&input), "outside");
        assert!(
            reason.contains("is outside the session's workspace"),
            "{reason}"
        );
        let mut input = payload(
            "codex-apply-patch-any.json",
            &t.ws,
            &patch("*** Add File: x\n+x"),
        );
        input["permission_mode"] = "plan".into();
        let reason = denied(&Hook::codex(&t.ws).nobody(nobody).call(&input), "plan");
        assert!(reason.starts_with("dcjail: plan-blocked: "), "{reason}");

        for p in [
            t.outside.join("a.txt"),
            out_abs.clone(),
            t.ws.join(".git/config"),
            t.ws.join(".bashrc"),
        ] {
            open(p.parent().unwrap(), 0o777);
            if p.exists() {
                open(&p, 0o666);
            }
            assert!(agent_writes(&t.ws, &p, nobody), "control {}", p.display());
        }
    }
}
