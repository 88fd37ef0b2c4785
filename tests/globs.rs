//! Globs in `deny_read` / `deny_write` / `allow_read` on the Linux backends:
//! expanded once at launch by the glob walk (src/walk.rs) and enforced as
//! literal paths. Each test attacks from inside and asserts the effect did
//! not happen (the secret is not in the output, the file is unchanged), with
//! a control run showing the same command does reach it without the rule.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use scratch::exe as bin;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A fresh directory under the target's tmp dir (not /tmp, which is a
/// writable root, hence a walk root, in workspace-write), removed on drop.
/// Mode 0755 so `nobody` can enter it.
/// A scratch tree (`scratch::Dir`) holding the workspace `ws`.
struct Scratch(scratch::Dir);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let d = scratch::Dir::new(tag);
        std::fs::create_dir_all(d.join("ws")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(d.join("ws"), std::fs::Permissions::from_mode(0o755)).unwrap();
        Scratch(d)
    }
    fn ws(&self) -> PathBuf {
        self.0.join("ws")
    }
    /// Writes `rel` (parents made) under the workspace.
    fn put(&self, rel: &str, content: &str) {
        let p = self.ws().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.ws().join(rel)).unwrap_or_default()
    }
    /// A workspace-write policy for `backend`, outside the workspace. The
    /// built-in protected paths are off so that landlock (which refuses
    /// them inside a writable root) can run it too.
    fn write_policy(&self, backend: &str) -> PathBuf {
        let p = self.0.join("policy.toml");
        std::fs::write(
            &p,
            format!(
                "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
                 [sandbox]\nmode = \"workspace-write\"\nbackend = \"{backend}\"\n\
                 [sandbox.filesystem]\nprotect_defaults = false\n"
            ),
        )
        .unwrap();
        p
    }
}

/// `dcjail ARGS…` in `cwd`, with the environment variables given.
fn dcjail_env(cwd: &Path, args: &[&str], env: &[(&str, &str)], as_nobody: bool) -> Output {
    let mut c = scratch::user_command(as_nobody, bin());
    c.args(args)
        .current_dir(cwd)
        .env_remove("DCJAIL_POLICY")
        .env_remove("DCJAIL_WALK_LIMIT")
        .env_remove("TMPDIR")
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// `dcjail --backend B FLAGS… -- sh -c SCRIPT` in the workspace.
fn jailed(s: &Scratch, backend: &str, flags: &[&str], script: &str) -> Output {
    jailed_as(s, backend, flags, script, false)
}

fn jailed_as(s: &Scratch, backend: &str, flags: &[&str], script: &str, nobody: bool) -> Output {
    let mut a = vec!["--backend", backend];
    a.extend_from_slice(flags);
    a.extend_from_slice(&["--", "sh", "-c", script]);
    dcjail_env(&s.ws(), &a, &[], nobody)
}

fn explain(s: &Scratch, flags: &[&str]) -> serde_json::Value {
    let mut a = vec!["explain"];
    a.extend_from_slice(flags);
    a.extend_from_slice(&["--", "true"]);
    let o = dcjail_env(&s.ws(), &a, &[], false);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Runs `body` once per backend this file covers; both must work here (a
/// skipped attack proves nothing).
fn each_backend(body: impl Fn(&str)) {
    for b in ["bwrap", "landlock"] {
        body(b);
    }
}

const DOTENV_FILES: [(&str, &str); 3] = [
    (".env", "DOTENV-DEPTH1-c81f"),
    ("a/.env", "DOTENV-DEPTH2-77d0"),
    ("a/b/c/.env", "DOTENV-DEPTH4-e3a9"),
];

fn dotenv_tree(s: &Scratch) {
    for (rel, content) in DOTENV_FILES {
        s.put(rel, content);
    }
    s.put("a/b/c/sibling.txt", "SIBLING-OK-41b2");
    s.put("a/.envrc", "ENVRC-OK-9c1e");
}

const CAT_DOTENV: &str =
    "cat .env; cat a/.env; cat a/b/c/.env; cat ./a/b/../b/c/.env; cat a/b/c/sibling.txt a/.envrc";

fn assert_dotenv_hidden(o: &Output, who: &str) {
    let out = text(&o.stdout) + &text(&o.stderr);
    assert!(out.contains("SIBLING-OK-41b2"), "{who}: {out}");
    assert!(out.contains("ENVRC-OK-9c1e"), "{who}: {out}");
    for (rel, content) in DOTENV_FILES {
        assert!(!out.contains(content), "{who}: {rel} leaked: {out}");
    }
}

#[test]
fn unanchored_dotenv_is_unreadable_at_every_depth() {
    each_backend(|b| {
        let s = Scratch::new("dotenv");
        dotenv_tree(&s);
        // Control: the same command reads them all without the rule.
        let o = jailed(&s, b, &[], CAT_DOTENV);
        let out = text(&o.stdout);
        for (_, content) in DOTENV_FILES {
            assert!(out.contains(content), "{b} control: {out}");
        }
        let o = jailed(&s, b, &["--deny-read", "**/.env"], CAT_DOTENV);
        assert_dotenv_hidden(&o, b);
    });
}

#[test]
fn unanchored_dotenv_is_unreadable_for_an_unprivileged_user() {
    if !scratch::root("switch to uid 65534") {
        return;
    }
    each_backend(|b| {
        let s = Scratch::new("dotenv-nobody");
        dotenv_tree(&s);
        let o = jailed_as(&s, b, &[], CAT_DOTENV, true);
        assert!(
            text(&o.stdout).contains("DOTENV-DEPTH4-e3a9"),
            "{b} control as nobody: {} {}",
            text(&o.stdout),
            text(&o.stderr)
        );
        let o = jailed_as(&s, b, &["--deny-read", "**/.env"], CAT_DOTENV, true);
        assert_dotenv_hidden(&o, &format!("{b} as nobody"));
    });
}

#[test]
fn a_directory_glob_hides_every_file_inside() {
    each_backend(|b| {
        let s = Scratch::new("dirglob");
        s.put("secrets/top", "SECRET-TOP-1a");
        s.put("x/secrets/mid", "SECRET-MID-2b");
        s.put("x/secrets/deep/er/low", "SECRET-LOW-3c");
        s.put("x/plain", "PLAIN-OK-4d");
        let script = "cat secrets/top x/secrets/mid x/secrets/deep/er/low x/plain; \
                      find . -path '*secrets*' -type f -exec cat {} +";
        let o = jailed(&s, b, &[], script);
        assert!(text(&o.stdout).contains("SECRET-LOW-3c"), "{b} control");
        let o = jailed(&s, b, &["--deny-read", "**/secrets"], script);
        let out = text(&o.stdout) + &text(&o.stderr);
        assert!(out.contains("PLAIN-OK-4d"), "{b}: {out}");
        for secret in ["SECRET-TOP-1a", "SECRET-MID-2b", "SECRET-LOW-3c"] {
            assert!(!out.contains(secret), "{b}: {secret} leaked: {out}");
        }
    });
}

#[test]
fn allow_read_reopens_a_file_inside_a_denied_glob_directory() {
    each_backend(|b| {
        let s = Scratch::new("reopen");
        s.put("conf/secrets/private.key", "PRIVATE-KEY-5e");
        s.put("conf/secrets/public.txt", "PUBLIC-OK-6f");
        let script = "cat conf/secrets/public.txt conf/secrets/private.key";
        let flags = [
            "--deny-read",
            "**/secrets",
            "--allow-read",
            "**/secrets/*.txt",
        ];
        let o = jailed(&s, b, &flags, script);
        let out = text(&o.stdout) + &text(&o.stderr);
        assert!(out.contains("PUBLIC-OK-6f"), "{b}: {out}");
        assert!(!out.contains("PRIVATE-KEY-5e"), "{b}: {out}");
    });
}

#[test]
fn a_deny_write_glob_keeps_matching_files_unchanged_on_bwrap() {
    let s = Scratch::new("dwlock");
    s.put("x.lock", "LOCK-TOP");
    s.put("sub/deep/y.lock", "LOCK-DEEP");
    let policy = s.write_policy("bwrap");
    let script = "echo HACK > x.lock; echo HACK >> sub/deep/y.lock; \
                  truncate -s 0 sub/deep/y.lock; rm -f x.lock; mv sub/deep/y.lock sub/moved; \
                  echo SIBLING-WRITTEN > sub/deep/sibling.txt";
    let o = dcjail_env(
        &s.ws(),
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--deny-write",
            "**/*.lock",
            "--",
            "sh",
            "-c",
            script,
        ],
        &[],
        false,
    );
    assert_eq!(s.read("x.lock"), "LOCK-TOP", "{}", text(&o.stderr));
    assert_eq!(
        s.read("sub/deep/y.lock"),
        "LOCK-DEEP",
        "{}",
        text(&o.stderr)
    );
    // (`mv` falls back to copy-and-remove: the copy may exist, the
    // original stays in place, unchanged, as asserted above.)
    assert_eq!(s.read("sub/deep/sibling.txt"), "SIBLING-WRITTEN\n");

    // Control: without the rule the same script changes them.
    let s = Scratch::new("dwlock-control");
    s.put("x.lock", "LOCK-TOP");
    let policy = s.write_policy("bwrap");
    dcjail_env(
        &s.ws(),
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "echo HACK > x.lock",
        ],
        &[],
        false,
    );
    assert_eq!(s.read("x.lock"), "HACK\n");
}

#[test]
fn a_deny_write_glob_inside_a_writable_root_is_refused_on_landlock() {
    let s = Scratch::new("dwlock-ll");
    let policy = s.write_policy("landlock");
    let marker = s.ws().join("ran");
    // Refused even though nothing matches yet: the glob could match a file
    // created later, which landlock cannot keep read-only.
    let o = dcjail_env(
        &s.ws(),
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--deny-write",
            "**/*.lock",
            "--",
            "touch",
            marker.to_str().unwrap(),
        ],
        &[],
        false,
    );
    assert_eq!(o.status.code(), Some(122), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.starts_with("dcjail: sandbox-unavailable: "), "{err}");
    assert!(err.contains("**/*.lock") && err.contains("bwrap"), "{err}");
    assert!(!marker.exists());
}

#[test]
fn a_walk_over_its_bound_refuses_122_and_runs_nothing() {
    each_backend(|b| {
        let s = Scratch::new("bound");
        for i in 0..40 {
            s.put(&format!("d{}/f{i}", i % 4), "x");
        }
        let policy = s.write_policy(b);
        let marker = s.ws().join("ran");
        let args = [
            "--policy",
            policy.to_str().unwrap(),
            "--deny-read",
            "**/.env",
            "--",
            "touch",
            marker.to_str().unwrap(),
        ];
        let o = dcjail_env(&s.ws(), &args, &[("DCJAIL_WALK_LIMIT", "10")], false);
        assert_eq!(o.status.code(), Some(122), "{b}: {}", text(&o.stderr));
        let err = text(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{b}: {err}");
        assert!(
            err.starts_with("dcjail: sandbox-unavailable: glob expansion stopped after 10"),
            "{b}: {err}"
        );
        assert!(!marker.exists(), "{b}: the command ran");
        // `explain` says the same, with the status a run would have.
        let mut e = vec!["explain"];
        e.extend_from_slice(&args);
        let o = dcjail_env(&s.ws(), &e, &[("DCJAIL_WALK_LIMIT", "10")], false);
        assert_eq!(o.status.code(), Some(122));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["decision"], "unavailable");
        // Control: with room enough the same launch runs.
        let o = dcjail_env(&s.ws(), &args, &[], false);
        assert_eq!(o.status.code(), Some(0), "{b}: {}", text(&o.stderr));
        assert!(marker.exists(), "{b}: control did not run");
    });
}

#[test]
fn a_bad_walk_limit_is_a_policy_error() {
    let s = Scratch::new("badlimit");
    let o = dcjail_env(
        &s.ws(),
        &["--deny-read", "**/.env", "--", "true"],
        &[("DCJAIL_WALK_LIMIT", "lots")],
        false,
    );
    assert_eq!(o.status.code(), Some(125), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("DCJAIL_WALK_LIMIT"));
}

#[test]
fn explain_says_what_each_glob_covered_and_what_it_does_not() {
    each_backend(|b| {
        let s = Scratch::new("explain");
        dotenv_tree(&s);
        s.put("keys/k.pem", "k");
        let v = explain(
            &s,
            &[
                "--backend",
                b,
                "--deny-read",
                "**/.env",
                "--deny-read",
                "keys/*.pem",
            ],
        );
        let w = &v["plan"]["filesystem"]["glob_walk"];
        assert_eq!(w["walked"], true, "{b}: {w}");
        assert!(w["entries"].as_u64().unwrap() >= 8, "{b}: {w}");
        assert_eq!(w["roots"], serde_json::json!([s.ws().to_str().unwrap()]));
        let globs = w["globs"].as_array().unwrap();
        assert_eq!(globs.len(), 2, "{b}: {w}");
        assert_eq!(globs[0]["glob"], "**/.env");
        assert_eq!(globs[0]["count"], 3);
        let matched: Vec<&str> = globs[0]["matched"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap())
            .collect();
        for (rel, _) in DOTENV_FILES {
            let p = s.ws().join(rel);
            assert!(matched.contains(&p.to_str().unwrap()), "{b}: {rel}: {w}");
        }
        assert_eq!(globs[1]["list"], "deny_read");
        assert_eq!(globs[1]["count"], 1);
        assert!(
            w["created_later"]
                .as_str()
                .unwrap()
                .contains("created later"),
            "{b}: {w}"
        );
    });
}

#[test]
fn no_glob_means_no_walk() {
    let s = Scratch::new("noglob");
    dotenv_tree(&s);
    for flags in [
        &[][..],
        &["--deny-read", "a/.env", "--deny-write", "a/b"][..],
    ] {
        for b in ["bwrap", "landlock"] {
            let mut f = vec!["--backend", b];
            f.extend_from_slice(flags);
            let v = explain(&s, &f);
            let w = &v["plan"]["filesystem"]["glob_walk"];
            assert_eq!(w["walked"], false, "{b} {flags:?}: {w}");
            assert_eq!(w["entries"], 0, "{b} {flags:?}: {w}");
        }
    }
    // A walk bound of 1 would refuse any walk at all: a launch without a
    // glob does not walk, so it runs.
    let o = dcjail_env(
        &s.ws(),
        &["--deny-read", "a/.env", "--", "cat", "a/b/c/sibling.txt"],
        &[("DCJAIL_WALK_LIMIT", "1")],
        false,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("SIBLING-OK-41b2"));
}

#[test]
fn a_symlink_to_a_matched_file_reads_nothing_and_a_matched_symlink_hides_its_target() {
    each_backend(|b| {
        let s = Scratch::new("links");
        s.put("a/b/c/.env", "LINKED-SECRET-7a");
        s.put("real/secret.txt", "TARGET-SECRET-8b");
        std::os::unix::fs::symlink("a/b/c/.env", s.ws().join("alias")).unwrap();
        std::os::unix::fs::symlink("../real/secret.txt", s.ws().join("a/.env")).unwrap();
        let script = "cat alias; cat a/.env; cat real/secret.txt";
        let o = jailed(&s, b, &[], script);
        assert!(text(&o.stdout).contains("TARGET-SECRET-8b"), "{b} control");
        let o = jailed(&s, b, &["--deny-read", "**/.env"], script);
        let out = text(&o.stdout) + &text(&o.stderr);
        assert!(!out.contains("LINKED-SECRET-7a"), "{b}: {out}");
        assert!(!out.contains("TARGET-SECRET-8b"), "{b}: {out}");
    });
}

/// A file created inside a matched directory after launch is covered (bwrap
/// masks the directory, landlock denies the whole tree); the command waits
/// for the test to create it.
#[test]
fn a_file_created_later_inside_a_matched_directory_stays_unreadable() {
    each_backend(|b| {
        for rule in [false, true] {
            let s = Scratch::new("late");
            s.put("x/secrets/early", "EARLY");
            s.put("x/plain", "PLAIN-LATE-OK");
            let script =
                "i=0; while [ ! -e go ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; \
                          cat x/plain x/secrets/late";
            let mut flags = vec!["--backend", b];
            if rule {
                flags.extend_from_slice(&["--deny-read", "**/secrets"]);
            }
            flags.extend_from_slice(&["--", "sh", "-c", script]);
            let mut c = Command::new(bin());
            c.args(&flags)
                .current_dir(s.ws())
                .env_remove("DCJAIL_POLICY")
                .env_remove("DCJAIL_WALK_LIMIT")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let child = c.spawn().unwrap();
            std::thread::sleep(std::time::Duration::from_millis(300));
            s.put("x/secrets/late", "LATE-SECRET-9c");
            s.put("go", "");
            let o = child.wait_with_output().unwrap();
            let out = text(&o.stdout) + &text(&o.stderr);
            assert!(out.contains("PLAIN-LATE-OK"), "{b} rule={rule}: {out}");
            assert_eq!(
                out.contains("LATE-SECRET-9c"),
                !rule,
                "{b} rule={rule}: {out}"
            );
        }
    });
}
