//! The command's environment is a policy field: variables whose names look
//! like credentials are not inherited (by default), `--env-pass` keeps one,
//! `--env-deny` removes more and beats it, and `explain` lists what was
//! removed by name, never by value. Checked with what the command itself
//! can read: `env` and `/proc/self/environ`, on every Linux backend, as
//! root and as uid 65534, with a control run without dcjail.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use std::process::Output;

use scratch::text;

const SECRET: &str = "s3cr3t-value-7d41";

fn with_secrets(tag: &str, nobody: bool, argv: &[&str]) -> Output {
    let dir = scratch::fresh(&format!("env-scrub-{tag}-{}", u8::from(nobody)));
    let mut c = scratch::command_as(&dir, nobody, argv);
    for k in [
        "GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "ANTHROPIC_API_KEY",
        "NPM_TOKEN",
        "DB_PASSWORD",
    ] {
        c.env(k, format!("{k}={SECRET}"));
    }
    c.env("PLAIN_SETTING", "visible");
    c.env("MY_SETTING", "mine");
    scratch::output_within(c, 60)
}

const READ_BOTH: &str = "env; echo ---; tr '\\0' '\\n' < /proc/self/environ";

fn dcjail<'a>(backend: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![scratch::exe(), "--backend", backend];
    v.extend_from_slice(extra);
    v.extend(["--", "/bin/sh", "-c", READ_BOTH]);
    v
}

#[test]
fn credentials_never_reach_the_command_and_the_rest_does() {
    // Control: without dcjail the command reads every one of them.
    let bare = with_secrets("bare", false, &["/bin/sh", "-c", READ_BOTH]);
    let out = String::from_utf8_lossy(&bare.stdout);
    assert_eq!(out.matches(SECRET).count(), 12, "{out}");
    for &nobody in scratch::users() {
        for be in ["bwrap", "landlock", "auto"] {
            let o = with_secrets(be, nobody, &dcjail(be, &[]));
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(o.status.success(), "{be}: {}", text(&o));
            assert!(!out.contains(SECRET), "{be}: {out}");
            assert!(out.contains("PLAIN_SETTING=visible"), "{be}: {out}");
            assert!(out.contains("MY_SETTING="), "{be}: {out}");
            assert!(out.contains("DCJAIL=1"), "{be}: {out}");
        }
    }
}

#[test]
fn pass_keeps_one_and_deny_removes_more() {
    for &nobody in scratch::users() {
        let args = [
            "--env-pass",
            "GITHUB_TOKEN",
            "--env-pass",
            "NPM_*",
            "--env-deny",
            "MY_*",
            "--env-deny",
            "NPM_TOKEN",
        ];
        let o = with_secrets("pass", nobody, &dcjail("bwrap", &args));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{}", text(&o));
        assert!(
            out.contains(&format!("GITHUB_TOKEN=GITHUB_TOKEN={SECRET}")),
            "{out}"
        );
        assert!(!out.contains("NPM_TOKEN="), "deny beats pass: {out}");
        assert!(!out.contains("MY_SETTING="), "{out}");
        assert!(!out.contains("AWS_SECRET_ACCESS_KEY="), "{out}");
        assert!(out.contains("PLAIN_SETTING=visible"), "{out}");
    }
}

#[test]
fn explain_names_what_is_removed_and_never_a_value() {
    let o = with_secrets("explain", false, &[scratch::exe(), "explain", "--", "true"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!out.contains(SECRET), "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let removed: Vec<String> = v["plan"]["environment"]["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect();
    for k in [
        "GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "ANTHROPIC_API_KEY",
        "NPM_TOKEN",
        "DB_PASSWORD",
    ] {
        assert!(removed.contains(&k.to_string()), "{k}: {removed:?}");
    }
    assert!(!removed.contains(&"MY_SETTING".to_string()), "{removed:?}");
    assert!(
        !removed.contains(&"PLAIN_SETTING".to_string()),
        "{removed:?}"
    );
}

#[test]
fn a_bad_pattern_is_a_policy_error_and_nothing_runs() {
    let dir = scratch::fresh("env-bad");
    let marker = dir.join("ran");
    let m = marker.to_string_lossy().into_owned();
    for bad in ["A=B", "x y", "[abc", ""] {
        let o = scratch::run_as(
            &dir,
            false,
            &[
                scratch::exe(),
                "--env-deny",
                bad,
                "--sandbox-mode",
                "workspace-write",
                "--",
                "touch",
                &m,
            ],
        );
        assert_eq!(o.status.code(), Some(125), "{bad:?}: {}", text(&o));
        assert!(
            text(&o).contains("sandbox.env.deny"),
            "{bad:?}: {}",
            text(&o)
        );
        assert!(!marker.exists(), "{bad:?}");
    }
}
