//! Where a policy comes from: a JSON file with the TOML schema, and an
//! inherited descriptor (`--policy-fd N`). Both mean exactly what the TOML
//! file means; bad input on either is one stderr line and exit 125, and
//! nothing starts.

#[path = "support/scratch.rs"]
mod scratch;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use scratch::exe as bin;

use scratch::dcjail;

/// `bash -c SCRIPT` with `$BIN` set to dcjail: the way a caller hands a
/// descriptor over (`3< file`, `3< <(...)`, a here-document).
fn via_bash(dir: &Path, script: &str) -> Output {
    Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env("BIN", bin())
        .env_remove("DCJAIL_POLICY")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn assert_refused(o: &Output, status: i32, reason: &str, want: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(status), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
    assert!(err.starts_with(&format!("dcjail: {reason}: ")), "{err}");
    assert!(err.contains(want), "want {want:?} in {err}");
    assert!(o.stdout.is_empty());
}

const TOML: &str = r#"version = 1
mode = "acceptEdits"
tool = "bash"

[permission]
outcome = "ask"
rule = "Bash(cargo test:*)"
approval = "granted"

[sandbox]
mode = "workspace-write"
timeout = 600

[sandbox.filesystem]
deny_read = ["~/.ssh", "**/.env"]
allow_write = ["extra"]
deny_write = ["ws-secret"]

[sandbox.network]
mode = "allowlist"
allow_domains = ["example.com", "*.example.org:443"]
deny_domains = ["bad.example.com"]
"#;

const JSON: &str = r#"{
  "version": 1,
  "mode": "acceptEdits",
  "tool": "bash",
  "permission": {"outcome": "ask", "rule": "Bash(cargo test:*)", "approval": "granted"},
  "sandbox": {
    "mode": "workspace-write",
    "timeout": 600,
    "filesystem": {
      "deny_read": ["~/.ssh", "**/.env"],
      "allow_write": ["extra"],
      "deny_write": ["ws-secret"]
    },
    "network": {
      "mode": "allowlist",
      "allow_domains": ["example.com", "*.example.org:443"],
      "deny_domains": ["bad.example.com"]
    }
  }
}
"#;

fn explain(dir: &Path, args: &[&str]) -> Value {
    let mut a = vec!["explain"];
    a.extend(args);
    a.extend(["--", "true"]);
    let o = dcjail(dir, &a);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The plan without what names the policy file itself.
fn plan(v: &Value) -> Value {
    let mut p = v["plan"].clone();
    p["filesystem"]["protected"] = Value::Null;
    // ...and the files kept read-only are looked at, the policy file among them.
    p["filesystem"]["hard_links"]["kept_read_only"] = Value::Null;
    // The glob walk counts what is in /tmp at that moment.
    p["filesystem"]["glob_walk"]["entries"] = Value::Null;
    p
}

#[test]
fn a_json_policy_and_a_descriptor_mean_what_the_same_toml_file_means() {
    let root = scratch::fresh("policy-json");
    std::fs::create_dir_all(root.join("extra")).unwrap();
    let (t, j) = (root.join("p.toml"), root.join("p.json"));
    std::fs::write(&t, TOML).unwrap();
    std::fs::write(&j, JSON).unwrap();
    let from_toml = explain(&root, &["--policy", t.to_str().unwrap()]);
    let from_json = explain(&root, &["--policy", j.to_str().unwrap()]);
    assert_eq!(plan(&from_toml), plan(&from_json));
    assert_eq!(from_toml["plan"]["network"]["mode"], "allowlist");
    assert_eq!(from_toml["plan"]["timeout"], 600);
    // The same through a descriptor: a pipe for the JSON, a file for TOML.
    for script in [
        format!(
            "\"$BIN\" explain --policy-fd 3 -- true 3< <(cat '{}')",
            j.display()
        ),
        format!(
            "\"$BIN\" explain --policy-fd 3 -- true 3< '{}'",
            t.display()
        ),
        format!("\"$BIN\" explain --policy-fd 7 -- true 7<<'EOF'\n{JSON}EOF\n"),
    ] {
        let o = via_bash(&root, &script);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(plan(&v), plan(&from_json), "{script}");
    }
    // DCJAIL_POLICY may name a JSON file too.
    let o = Command::new(bin())
        .args(["explain", "--", "true"])
        .current_dir(&root)
        .env("DCJAIL_POLICY", &j)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(plan(&v), plan(&from_json));
    scratch::remove(&root);
}

/// The policy read from the descriptor decides the run (plan mode refuses,
/// workspace-write lets the command write), and the command never sees the
/// descriptor, on every launch path. Without `--policy-fd` the same
/// redirection reaches the command, so the check can fail.
#[test]
fn policy_fd_decides_the_run_and_the_command_does_not_inherit_it() {
    let root = scratch::fresh("policy-fd");
    let marker = root.join("made");
    let probe = format!(
        "echo RAN; touch '{}' 2>/dev/null; [ -e /proc/self/fd/3 ] && echo LEAKED || echo CLEAN",
        marker.display()
    );
    let plan_mode = r#"{"mode": "plan"}"#;
    let run = |flags: &str, policy: &str| {
        via_bash(
            &root,
            &format!(
                "\"$BIN\" --policy-fd 3 {flags} -- sh -c {} 3< <(printf %s {})",
                sh_quote(&probe),
                sh_quote(policy)
            ),
        )
    };
    let o = run("", plan_mode);
    assert_refused(&o, 120, "plan-blocked", "plan mode");
    assert!(!marker.exists());
    // Without protected paths, so that landlock can enforce it too.
    let ww = r#"{"permission": {"approval": "granted"},
        "sandbox": {"mode": "workspace-write", "filesystem": {"protect_defaults": false}}}"#;
    for flags in ["--backend bwrap", "--backend landlock", "--no-sandbox"] {
        let o = run(flags, ww);
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "RAN\nCLEAN\n",
            "{flags}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            marker.exists(),
            "{flags}: the policy from the descriptor was not applied"
        );
        std::fs::remove_file(&marker).unwrap();
    }
    // Control: the same redirection without --policy-fd reaches the command.
    let o = via_bash(
        &root,
        &format!(
            "\"$BIN\" --no-sandbox -- sh -c {} 3< <(printf %s x)",
            sh_quote(&probe)
        ),
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout), "RAN\nLEAKED\n");
    scratch::remove(&root);
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[test]
fn bad_json_policies_are_one_line_naming_the_file_line_and_key() {
    let root = scratch::fresh("policy-json-bad");
    let marker = root.join("ran");
    let cases: &[(&str, &str)] = &[
        (
            "{\n  \"sandbox\": {\n    \"network\": {\"mode\": \"some\"}\n  }\n}\n",
            "p.json:3: key `sandbox.network.mode`: `some` is not one of: none, allowlist, full",
        ),
        (
            "{\"sandbox\": {\"nope\": 1}}",
            "p.json:1: key `sandbox.nope`: unknown field `nope`, expected one of",
        ),
        (
            "{\n\"sandbox\": {\"enabled\": \"yes\"}}",
            "p.json:2: key `sandbox.enabled`: invalid type: string \"yes\", expected a boolean",
        ),
        ("{\"mode\": \"plan\",\n", "p.json:2: EOF while parsing"),
        (
            "{\"mode\": \"plan\"} trailing",
            "p.json:1: trailing characters",
        ),
        (
            "{\"mode\": \"plan\", \"mode\": \"default\"}",
            "duplicate field `mode`",
        ),
        ("{\"version\": 2}", "`version` is 2"),
        (
            "{\"sandbox\": {\"network\": {\"allow_domains\": [\"a b\"]}}}",
            "`sandbox.network.allow_domains`",
        ),
    ];
    let file = root.join("p.json");
    for (text, want) in cases {
        std::fs::write(&file, text).unwrap();
        let o = dcjail(
            &root,
            &[
                "--policy",
                "p.json",
                "--",
                "touch",
                marker.to_str().unwrap(),
            ],
        );
        assert_refused(&o, 125, "policy-error", want);
        assert!(!marker.exists());
        // The same text through a descriptor names the descriptor.
        let o = via_bash(
            &root,
            &format!(
                "\"$BIN\" --policy-fd 3 -- touch '{}' 3< p.json",
                marker.display()
            ),
        );
        assert_refused(&o, 125, "policy-error", "<descriptor 3>");
        assert!(!marker.exists());
    }
    scratch::remove(&root);
}

#[test]
fn a_bad_policy_descriptor_is_one_line_and_exit_125() {
    let root = scratch::fresh("policy-fd-bad");
    let marker: PathBuf = root.join("ran");
    let m = marker.display();
    std::fs::write(root.join("p.toml"), "mode = \"plan\"\n").unwrap();
    let cases: &[(String, &str, &str)] = &[
        (format!("\"$BIN\" --policy-fd 3 -- touch '{m}'"), "policy-error", "descriptor 3 is not open"),
        (format!("\"$BIN\" --policy-fd 0 -- touch '{m}'"), "usage-error", "3 or above"),
        (format!("\"$BIN\" --policy-fd 2 -- touch '{m}'"), "usage-error", "3 or above"),
        (
            format!("\"$BIN\" --policy-fd 3 --policy p.toml -- touch '{m}' 3< p.toml"),
            "usage-error",
            "cannot be used with",
        ),
        (format!("\"$BIN\" --policy-fd 3 -- touch '{m}' 3< /"), "policy-error", "not a directory"),
        (format!("\"$BIN\" --policy-fd x -- touch '{m}'"), "usage-error", "invalid value"),
        (
            format!("\"$BIN\" --policy-format codex -- touch '{m}'"),
            "usage-error",
            "--policy-format codex needs a policy",
        ),
        (
            format!("\"$BIN\" --policy-fd 3 --policy-format codex -- touch '{m}' 3<<<'sandbox_mode = 1'"),
            "policy-error",
            "<descriptor 3>:1: key `sandbox_mode`: expected a string",
        ),
    ];
    for (script, reason, want) in cases {
        let o = via_bash(&root, script);
        assert_refused(&o, 125, reason, want);
        assert!(!marker.exists(), "{script}");
    }
    // A DCJAIL_POLICY in the environment is ignored with --policy-fd.
    let o = Command::new("bash")
        .arg("-c")
        .arg("\"$BIN\" explain --policy-fd 3 -- true 3<<<'mode = \"acceptEdits\"'")
        .current_dir(&root)
        .env("BIN", bin())
        .env("DCJAIL_POLICY", root.join("p.toml"))
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["plan"]["mode"], "acceptEdits", "{v}");
    scratch::remove(&root);
}
