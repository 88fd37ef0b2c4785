//! Every refusal dcjail causes is in the report: `git config` (and husky's
//! `prepare`, which runs `git config core.hooksPath`) renames its lock file
//! onto `.git/config`, which a read-only mount keeps: the kernel answers
//! EBUSY, and the report says it was dcjail, on which path, by which rule.
//! `git submodule add` is refused on the protected files it writes, and
//! each refusal is listed. Each runs once without dcjail (git succeeds) and
//! under dcjail with `--report`, as root and as uid 65534.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use std::os::unix::fs::chown;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use scratch::text;

fn run(cwd: &Path, nobody: bool, argv: &[&str]) -> Output {
    let mut cmd = scratch::command_as(cwd, nobody, argv);
    // Beside the workspace: a workspace at the home directory would be
    // held read-only by class, .git included.
    let home = cwd.parent().unwrap_or(cwd).join("home");
    cmd.env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env("GIT_ALLOW_PROTOCOL", "file");
    scratch::output_within(cmd, 60)
}

/// A repository with one commit, owned by the user who runs the command.
fn repo(tag: &str, nobody: bool) -> PathBuf {
    let d = scratch::fresh(&format!("refusals-{tag}-{}", u8::from(nobody)));
    let ws = d.join("ws");
    std::fs::create_dir(&ws).unwrap();
    for a in [
        &["git", "init", "-q", "-b", "main", "."][..],
        &["git", "commit", "-q", "--allow-empty", "-m", "one"],
    ] {
        let o = run(&ws, false, a);
        assert!(o.status.success(), "{}", text(&o));
    }
    if nobody {
        Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(&d)
            .status()
            .unwrap();
        chown(&d, Some(65534), Some(65534)).unwrap();
    }
    ws
}

fn report_of(ws: &Path, nobody: bool, argv: &[&str]) -> (Output, serde_json::Value) {
    let rep = ws.parent().unwrap().join("report.json");
    let r = rep.to_string_lossy().into_owned();
    let mut a = vec![
        scratch::exe(),
        "--backend",
        "bwrap",
        "--sandbox-mode",
        "workspace-write",
        "--report",
        &r,
        "--",
    ];
    a.extend_from_slice(argv);
    let o = run(ws, nobody, &a);
    let v = serde_json::from_str(&std::fs::read_to_string(&rep).unwrap()).unwrap();
    (o, v)
}

/// The report's denials for `path` (its end), as (op, errno, rule).
fn refusals(v: &serde_json::Value, path_end: &str) -> Vec<(String, String, String)> {
    v["denials"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| {
            d["resolved"]
                .as_str()
                .is_some_and(|p| p.ends_with(path_end))
        })
        .map(|d| {
            let s = |k: &str| d[k].as_str().unwrap_or("").to_string();
            (s("op"), s("errno"), s("rule"))
        })
        .collect()
}

#[test]
fn git_config_refused_on_the_kept_config_is_in_the_report() {
    for &nobody in scratch::users() {
        for args in [
            &["git", "config", "user.name", "someone"][..],
            // husky's `prepare`
            &["git", "config", "core.hooksPath", ".husky/_"],
        ] {
            // Control: without dcjail the config changes.
            let ws = repo("config-bare", nobody);
            let o = run(&ws, nobody, args);
            assert!(o.status.success(), "{}", text(&o));
            let cfg = std::fs::read_to_string(ws.join(".git/config")).unwrap();
            assert!(cfg.contains(args[3]), "{cfg}");

            let ws = repo("config", nobody);
            let before = std::fs::read_to_string(ws.join(".git/config")).unwrap();
            let (o, v) = report_of(&ws, nobody, args);
            assert!(!o.status.success(), "{}", text(&o));
            assert!(text(&o).contains("Device or resource busy"), "{}", text(&o));
            assert_eq!(
                std::fs::read_to_string(ws.join(".git/config")).unwrap(),
                before
            );
            let r = refusals(&v, ".git/config");
            assert!(
                r.contains(&("rename".into(), "EBUSY".into(), "protected".into())),
                "{r:?} {v}"
            );
        }
    }
}

#[test]
fn git_submodule_add_lists_each_refusal() {
    for &nobody in scratch::users() {
        let ws = repo("submodule", nobody);
        let sub = repo("submodule-src", nobody);
        let url = format!("file://{}", sub.display());
        let args = [
            "git",
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            &url,
            "lib",
        ];
        // Control: without dcjail the submodule is added.
        let bare_ws = repo("submodule-bare", nobody);
        let o = run(&bare_ws, nobody, &args);
        assert!(o.status.success(), "{}", text(&o));
        assert!(bare_ws.join(".gitmodules").exists());

        let (o, v) = report_of(&ws, nobody, &args);
        assert!(!o.status.success(), "{}", text(&o));
        assert!(!ws.join(".gitmodules").exists(), "{}", text(&o));
        let all = v["denials"].as_array().unwrap();
        assert!(!all.is_empty(), "no refusal reported: {v}");
        // The clone's .git inside the workspace's repository, and the
        // protected files: each with its path and its rule.
        for d in all {
            let rule = d["rule"].as_str().unwrap_or("");
            assert_eq!(rule, "protected", "{d}");
            assert!(d["resolved"].as_str().is_some(), "{d}");
            assert!(d["why_not"].as_str().is_some(), "{d}");
        }
    }
}
