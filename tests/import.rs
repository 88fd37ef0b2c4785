//! Other tools' settings (tests/fixtures/settings/, written from their
//! documentation) → a dcjail policy → the allow/deny outcomes the source
//! tool documents, on a table of paths (real runs under the sandbox, each
//! first run without it, where it must succeed) and of domains (the
//! converted rules, matched by dcjail's own matcher). Also: `dcjail import`
//! prints TOML that means the same, a setting dcjail cannot honour is an
//! error naming it, and `explain` says where each field came from.

#[path = "support/scratch.rs"]
mod scratch;

use dcjail::net::domain::{Host, Rules, Verdict};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use scratch::exe as bin;

struct Tree {
    root: PathBuf,
    ws: PathBuf,
    home: PathBuf,
    settings: PathBuf,
}

impl Drop for Tree {
    fn drop(&mut self) {
        scratch::remove(&self.root);
    }
}

const FILES: &[&str] = &[
    "ws/src/main.rs",
    "ws/secrets/key",
    "ws/secrets/public/cert",
    "ws/.env",
    "ws/config/production.json",
    "ws/.git/config",
    "ws/.codex/config.toml",
    "ws/.agents/skills/s.md",
    "home/.ssh/id_rsa",
    "home/.aws/credentials",
    "extra/notes.txt",
    "extra/.git/HEAD",
    "outside/data.txt",
];

/// A scratch tree with FILES, and the fixture `name` written (with `@ROOT@`
/// filled in) to `at` under it.
fn tree(tag: &str, name: &str, at: &str) -> Tree {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/settings")
            .join(name),
    )
    .unwrap();
    tree_text(tag, &text, at)
}

/// A scratch tree with FILES, and `text` (with `@ROOT@` filled in) written
/// to `at` under it.
fn tree_text(tag: &str, text: &str, at: &str) -> Tree {
    let root = scratch::fresh(tag);
    for f in FILES {
        touch(&root, f);
    }
    let text = text.replace("@ROOT@", root.to_str().unwrap());
    let settings = root.join(at);
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, text).unwrap();
    Tree {
        ws: root.join("ws"),
        home: root.join("home"),
        settings,
        root,
    }
}

/// Creates `rel` (and its directories) under `root`.
fn touch(root: &Path, rel: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, format!("content of {rel}\n")).unwrap();
}

/// The plan `explain` prints for the imported file.
fn plan(format: &str, t: &Tree) -> Value {
    let mut args = vec!["explain"];
    args.extend(policy_args(format, t));
    args.extend(["--", "true"]);
    let o = dcjail(t, &args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["plan"].clone()
}

fn dcjail(t: &Tree, args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .current_dir(&t.ws)
        .env("HOME", &t.home)
        .env_remove("DCJAIL_POLICY")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn policy_args<'a>(format: &'a str, t: &'a Tree) -> Vec<&'a str> {
    vec![
        "--policy-format",
        format,
        "--policy",
        t.settings.to_str().unwrap(),
    ]
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Read,
    Write,
}

/// Runs each (op, path) under the imported policy and without any sandbox;
/// the sandboxed outcome must be `want`, the unsandboxed one must succeed.
fn check_paths(format: &str, t: &Tree, table: &[(Op, &str, bool)]) {
    let mut wrong = Vec::new();
    for (op, rel, want) in table {
        let path = t.root.join(rel);
        let script = match op {
            Op::Read => format!("echo RAN; cat '{}' >/dev/null && echo OK", path.display()),
            Op::Write => format!("echo RAN; echo x >> '{}' && echo OK", path.display()),
        };
        let mut args = policy_args(format, t);
        args.extend(["--", "sh", "-c", &script]);
        let o = dcjail(t, &args);
        let got = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            got.starts_with("RAN\n"),
            "{format} {op:?} {rel}: the command did not run: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        if (got == "RAN\nOK\n") != *want {
            wrong.push(format!(
                "{op:?} {rel}: want {}, got {got:?}",
                if *want { "allowed" } else { "denied" }
            ));
        }
        let control = Command::new("sh")
            .arg("-c")
            .arg(&script)
            .current_dir(&t.ws)
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&control.stdout),
            "RAN\nOK\n",
            "control {op:?} {rel} must succeed without a sandbox"
        );
    }
    assert!(wrong.is_empty(), "{format}: {wrong:#?}");
}

/// The imported network rules, matched by dcjail's matcher: `None` when the
/// mode is `none`, every destination allowed when it is `full`.
fn check_domains(format: &str, t: &Tree, want_mode: &str, table: &[(&str, u16, bool)]) {
    let mut args = vec!["explain"];
    args.extend(policy_args(format, t));
    args.extend(["--", "true"]);
    let o = dcjail(t, &args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let net = &v["plan"]["network"];
    assert_eq!(net["mode"], want_mode, "{format}: {net}");
    let rules = |k: &str| {
        net[k]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| dcjail::net::domain::DomainRule::parse(d.as_str().unwrap()).unwrap())
            .collect::<Vec<_>>()
    };
    let r = Rules {
        allow: rules("allow_domains"),
        deny: rules("deny_domains"),
    };
    for (host, port, want) in table {
        let got = match want_mode {
            "none" => false,
            "full" => true,
            _ => r.verdict(&Host::parse(host).unwrap(), *port) == Verdict::Allowed,
        };
        assert_eq!(got, *want, "{format}: {host}:{port}");
    }
}

use Op::{Read, Write};

#[test]
fn srt_settings_allow_and_deny_what_srt_documents() {
    let t = tree("import-srt", "srt-settings.json", "srt-settings.json");
    // Reads everywhere but denyRead, with allowRead re-opened inside it;
    // writes only allowWrite, minus denyWrite.
    check_paths(
        "srt",
        &t,
        &[
            (Read, "ws/src/main.rs", true),
            (Read, "home/.ssh/id_rsa", false),
            (Read, "ws/secrets/key", false),
            (Read, "ws/secrets/public/cert", true),
            (Read, "outside/data.txt", true),
            (Write, "ws/src/main.rs", true),
            (Write, "ws/src/new.rs", true),
            (Write, "extra/notes.txt", true),
            (Write, "ws/.env", false),
            (Write, "ws/config/production.json", false),
            (Write, "outside/data.txt", false),
            (Write, "home/.aws/credentials", false),
        ],
    );
    // deniedDomains first, then allowedDomains; `*.` is strict subdomains;
    // a `:port` restricts the entry; anything else is refused.
    check_domains(
        "srt",
        &t,
        "allowlist",
        &[
            ("github.com", 443, true),
            ("GitHub.com", 80, true),
            ("api.github.com", 443, true),
            ("gist.github.com", 443, false),
            ("npmjs.org", 443, true),
            ("npmjs.org", 80, false),
            ("registry.npmjs.org", 443, false),
            ("example.com", 443, false),
            ("github.com.evil.example", 443, false),
        ],
    );
}

#[test]
fn srt_without_allow_write_or_domains_is_read_only_with_no_network() {
    let t = tree("import-srt-ro", "srt-read-only.json", "s.json");
    check_paths(
        "srt",
        &t,
        &[
            (Read, "ws/src/main.rs", true),
            (Read, "home/.aws/credentials", false),
            (Write, "ws/src/main.rs", false),
            (Write, "outside/data.txt", false),
        ],
    );
    check_domains("srt", &t, "none", &[("github.com", 443, false)]);
}

#[test]
fn claude_code_settings_allow_and_deny_what_claude_code_documents() {
    let t = tree(
        "import-claude",
        "claude-code-settings.json",
        "ws/.claude/settings.json",
    );
    // The working directory and Edit allow rules are writable; Read deny
    // rules and sandbox.filesystem.denyRead are unreadable; Edit deny rules
    // and denyWrite are unwritable.
    check_paths(
        "claude-code",
        &t,
        &[
            (Read, "ws/src/main.rs", true),
            (Read, "ws/.env", false),
            (Read, "home/.ssh/id_rsa", false),
            (Read, "home/.aws/credentials", false),
            (Read, "outside/data.txt", true),
            (Write, "ws/src/main.rs", true),
            (Write, "extra/notes.txt", true),
            (Write, "ws/config/production.json", false),
            (Write, "ws/secrets/key", false),
            (Write, "outside/data.txt", false),
        ],
    );
    check_domains(
        "claude-code",
        &t,
        "allowlist",
        &[
            ("github.com", 443, true),
            ("registry.npmjs.org", 443, true),
            ("npmjs.org", 443, false),
            ("docs.rs", 443, true),
            ("evil.example", 443, false),
            ("example.com", 443, false),
        ],
    );
}

#[test]
fn codex_config_allows_and_denies_what_codex_documents() {
    let t = tree("import-codex", "codex-config.toml", "config.toml");
    // workspace-write: the working directory and writable_roots, with .git
    // and .codex read-only in each; no network without network_access.
    check_paths(
        "codex",
        &t,
        &[
            (Read, "home/.ssh/id_rsa", true),
            (Read, "outside/data.txt", true),
            (Write, "ws/src/main.rs", true),
            (Write, "ws/.git/config", false),
            (Write, "ws/.codex/config.toml", false),
            (Write, "extra/notes.txt", true),
            (Write, "extra/.git/HEAD", false),
            (Write, "outside/data.txt", false),
        ],
    );
    check_domains("codex", &t, "none", &[("github.com", 443, false)]);
    assert_tmp_not_writable(&t);
}

#[test]
fn a_codex_profile_overrides_and_danger_full_access_has_no_limit() {
    let t = tree("import-codex-profile", "codex-profile.toml", "config.toml");
    check_paths(
        "codex",
        &t,
        &[
            (Read, "ws/src/main.rs", true),
            (Write, "ws/src/main.rs", false),
        ],
    );
    let t = tree("import-codex-full", "codex-full.toml", "config.toml");
    check_domains("codex", &t, "full", &[("example.com", 443, true)]);
    let mut args = vec!["explain"];
    args.extend(policy_args("codex", &t));
    args.extend(["--", "true"]);
    let v: Value = serde_json::from_slice(&dcjail(&t, &args).stdout).unwrap();
    assert_eq!(v["plan"]["filesystem"]["access"], "danger-full-access");
}

/// Claude Code reads a user settings file's `/x` rule under `~/.claude`
/// (its `getSettingsRootPathForSource("userSettings")`), so `Edit(/)` there
/// is `~/.claude`, never the home directory; a relative `sandbox.filesystem`
/// path is under the same directory. A bare `WebFetch` allow approves Claude
/// Code's own fetch tool and gives the sandbox no network, so with no domain
/// allowed the network is `none` and the denied domains go with it (never
/// `full` beside a deny list).
#[test]
fn claude_code_user_settings_root_rules_at_dot_claude_not_home() {
    let t = tree(
        "import-claude-user",
        "claude-code-user-settings.json",
        "home/.claude/settings.json",
    );
    for f in [
        "home/.claude/notes.txt",
        "home/.claude/cache/c.txt",
        "home/.claude/private/p.txt",
        "home/notes.txt",
    ] {
        touch(&t.root, f);
    }
    check_paths(
        "claude-code",
        &t,
        &[
            (Write, "home/.claude/notes.txt", true),
            (Write, "home/.claude/cache/c.txt", false),
            (Read, "home/.claude/private/p.txt", false),
            (Read, "home/.claude/notes.txt", true),
            (Write, "home/notes.txt", false),
            (Write, "home/.aws/credentials", false),
            (Write, "ws/src/main.rs", true),
        ],
    );
    check_domains(
        "claude-code",
        &t,
        "none",
        &[("github.com", 443, false), ("evil.example", 443, false)],
    );
    let p = plan("claude-code", &t);
    assert_eq!(p["network"]["deny_domains"], Value::Array(vec![]), "{p}");
    let writable: Vec<&str> = p["filesystem"]["writable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    let home = t.home.canonicalize().unwrap();
    assert!(
        writable.contains(&home.join(".claude").to_str().unwrap()),
        "{writable:?}"
    );
    assert!(!writable.contains(&home.to_str().unwrap()), "{writable:?}");
}

/// A settings file given with `claude --settings FILE`: its `/x` rules and
/// relative sandbox paths are under the file's own directory.
#[test]
fn claude_code_settings_file_elsewhere_roots_rules_at_its_directory() {
    let text = r#"{"permissions": {"allow": ["Edit(/)"]},
                   "sandbox": {"filesystem": {"denyWrite": ["data.txt"]}}}"#;
    let t = tree_text("import-claude-flag", text, "outside/cc.json");
    check_paths(
        "claude-code",
        &t,
        &[
            (Write, "outside/new.txt", true),
            (Write, "outside/data.txt", false),
            (Write, "extra/notes.txt", false),
            (Write, "ws/src/main.rs", true),
        ],
    );
}

/// Destinations and whether each may be reached.
type DomainTable<'a> = &'a [(&'a str, u16, bool)];

/// Claude Code's sandbox reaches `sandbox.network.allowedDomains` and the
/// `WebFetch(domain:…)` allow rules, minus the denied ones; a bare
/// `WebFetch` allow adds nothing; a bare `WebFetch` deny is read the
/// narrower way: no network.
#[test]
fn claude_code_web_fetch_rules_shape_the_network_as_its_sandbox_does() {
    let cases: &[(&str, &str, DomainTable)] = &[
        (
            r#"{"permissions": {"allow": ["WebFetch"]}}"#,
            "none",
            &[("github.com", 443, false)],
        ),
        (
            r#"{"permissions": {"allow": ["WebFetch"]},
                "sandbox": {"network": {"deniedDomains": ["evil.example"]}}}"#,
            "none",
            &[("example.com", 443, false)],
        ),
        (
            r#"{"permissions": {"allow": ["WebFetch", "WebFetch(domain:github.com)"],
                                "deny": ["WebFetch(domain:api.github.com)"]},
                "sandbox": {"network": {"allowedDomains": ["*.github.com"],
                                        "deniedDomains": ["gist.github.com"]}}}"#,
            "allowlist",
            &[
                ("github.com", 443, true),
                ("raw.github.com", 443, true),
                ("api.github.com", 443, false),
                ("gist.github.com", 443, false),
                ("example.com", 443, false),
            ],
        ),
        (
            r#"{"permissions": {"deny": ["WebFetch"]},
                "sandbox": {"network": {"allowedDomains": ["github.com"]}}}"#,
            "none",
            &[("github.com", 443, false)],
        ),
    ];
    for (i, (text, mode, table)) in cases.iter().enumerate() {
        let t = tree_text(&format!("import-claude-web-{i}"), text, "s.json");
        check_domains("claude-code", &t, mode, table);
        let net = &plan("claude-code", &t)["network"];
        assert_ne!(net["mode"], "full", "{text}: {net}");
    }
}

/// Codex takes only `sandbox_mode` from a profile: the top-level
/// `[sandbox_workspace_write]` applies under the profile's workspace-write,
/// with its exclusions; `writable_roots` entries are `~/x` in the home
/// directory and relative ones under the config file's directory; `.git`,
/// `.codex` and `.agents` stay read-only in the workspace and each root.
#[test]
fn codex_profile_mode_uses_the_top_level_workspace_write_table() {
    let t = tree(
        "import-codex-profile-write",
        "codex-profile-write.toml",
        "config.toml",
    );
    touch(&t.root, "extra/.agents/a.md");
    check_paths(
        "codex",
        &t,
        &[
            (Write, "ws/src/main.rs", true),
            (Write, "extra/notes.txt", true),
            (Write, "home/.aws/credentials", true),
            (Write, "extra/.git/HEAD", false),
            (Write, "extra/.agents/a.md", false),
            (Write, "ws/.agents/skills/s.md", false),
            (Write, "ws/.codex/config.toml", false),
            (Write, "outside/data.txt", false),
        ],
    );
    assert_tmp_not_writable(&t);
    check_domains("codex", &t, "none", &[("github.com", 443, false)]);
}

/// Codex's `exclude_slash_tmp`: /tmp is not writable under the imported
/// policy (checked with `explain`, without writing it).
fn assert_tmp_not_writable(t: &Tree) {
    let o = dcjail(
        t,
        &[
            "explain",
            "--policy-format",
            "codex",
            "--policy",
            t.settings.to_str().unwrap(),
            "--tool",
            "write",
            "--path",
            "/tmp/dcjail-import-probe",
            "--",
            "true",
        ],
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["reason"], "sandbox-denied", "exclude_slash_tmp: {v}");
}

/// `dcjail import` prints a policy that means what the file means: the plan
/// from the printed TOML is the plan from the file read directly.
#[test]
fn imported_toml_means_the_same_as_the_file_read_directly() {
    for (format, name, at) in [
        ("srt", "srt-settings.json", "s.json"),
        ("srt", "srt-read-only.json", "s.json"),
        (
            "claude-code",
            "claude-code-settings.json",
            "ws/.claude/settings.json",
        ),
        ("codex", "codex-config.toml", "config.toml"),
        ("codex", "codex-profile.toml", "config.toml"),
    ] {
        let t = tree(&format!("import-roundtrip-{format}"), name, at);
        let o = dcjail(&t, &["import", format, t.settings.to_str().unwrap()]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let toml_text = String::from_utf8(o.stdout).unwrap();
        assert!(
            toml_text.contains(&format!("# from {format} ")),
            "{toml_text}"
        );
        let out = t.root.join("imported.toml");
        std::fs::write(&out, &toml_text).unwrap();
        let plan = |args: Vec<&str>| {
            let mut a = vec!["explain"];
            a.extend(args);
            a.extend(["--", "true"]);
            let v: Value = serde_json::from_slice(&dcjail(&t, &a).stdout).unwrap();
            let mut p = v["plan"].clone();
            // Each policy file is protected from writes: they differ by name,
            // and so do the kept files looked at for other names.
            p["filesystem"]["protected"] = Value::Null;
            p["filesystem"]["hard_links"]["kept_read_only"] = Value::Null;
            // The glob walk counts what is in /tmp at that moment.
            p["filesystem"]["glob_walk"]["entries"] = Value::Null;
            p
        };
        assert_eq!(
            plan(vec!["--policy", out.to_str().unwrap()]),
            plan(policy_args(format, &t)),
            "{format} {name}:\n{toml_text}"
        );
    }
}

#[test]
fn explain_says_which_setting_each_field_came_from() {
    let t = tree("import-sources", "srt-settings.json", "s.json");
    let mut args = vec!["explain"];
    args.extend(policy_args("srt", &t));
    args.extend([
        "--deny-read",
        "/nope",
        "--mode",
        "acceptEdits",
        "--",
        "true",
    ]);
    let v: Value = serde_json::from_slice(&dcjail(&t, &args).stdout).unwrap();
    let s = &v["sources"];
    let name = t.settings.display().to_string();
    assert_eq!(
        s["sandbox.filesystem.deny_read"],
        format!("srt {name}: filesystem.denyRead + --deny-read")
    );
    assert_eq!(
        s["sandbox.network.allow_domains"],
        format!("srt {name}: network.allowedDomains")
    );
    assert_eq!(s["mode"], "--mode");
    assert_eq!(s["sandbox.backend"], "default");
    assert!(s["permission.approval"]
        .as_str()
        .unwrap()
        .starts_with("srt import"));
    // A dcjail policy file: the fields it changed say so.
    std::fs::write(
        t.root.join("p.toml"),
        "[sandbox]\nmode = \"workspace-write\"\n",
    )
    .unwrap();
    let p = t.root.join("p.toml");
    let v: Value = serde_json::from_slice(
        &dcjail(
            &t,
            &["explain", "--policy", p.to_str().unwrap(), "--", "true"],
        )
        .stdout,
    )
    .unwrap();
    assert_eq!(
        v["sources"]["sandbox.mode"],
        format!("policy file {}", p.display())
    );
    assert_eq!(v["sources"]["sandbox.network.mode"], "default");
}

/// Each of these settings cannot be honoured: import and a run both refuse
/// with exactly one line naming the key, exit 125, and start nothing.
#[test]
fn a_setting_dcjail_cannot_honour_is_an_error_naming_it() {
    let cases: &[(&str, &str, &str)] = &[
        ("srt", r#"{"network": {"allowLocalBinding": true}}"#, "network.allowLocalBinding"),
        (
            "srt",
            r#"{"network": {"allowAllUnixSockets": true}}"#,
            "network.allowAllUnixSockets",
        ),
        ("srt", r#"{"network": {"httpProxyPort": 8080}}"#, "network.httpProxyPort"),
        ("srt", r#"{"mitmProxy": {"socketPath": "/x"}}"#, "mitmProxy"),
        ("srt", r#"{"filesystem": {"allowWrite": ["/srv/out"]}}"#, "filesystem.allowWrite"),
        ("srt", r#"{"filesystem": {"allowWrite": [".", "src/**/*.ts"]}}"#, "filesystem.allowWrite"),
        ("srt", r#"{"filesystem": {"denyRead": "~/.ssh"}}"#, "filesystem.denyRead"),
        ("srt", r#"{"network": {"allowedDomains": ["bad domain"]}}"#, "network.allowedDomains"),
        ("srt", r#"{"ignoreViolations": {"*": ["/usr/bin"]}}"#, "ignoreViolations"),
        ("srt", r#"{"enableWeakerNestedSandbox": true}"#, "enableWeakerNestedSandbox"),
        ("srt", "[1, 2]", "one JSON object"),
        ("srt", "{\n  \"network\": \n", "not valid JSON"),
        ("claude-code", r#"{"sandbox": {"excludedCommands": ["docker"]}}"#, "sandbox.excludedCommands"),
        (
            "claude-code",
            r#"{"sandbox": {"allowUnsandboxedCommands": true}}"#,
            "sandbox.allowUnsandboxedCommands",
        ),
        (
            "claude-code",
            r#"{"sandbox": {"network": {"socksProxyPort": 1080}}}"#,
            "sandbox.network.socksProxyPort",
        ),
        ("claude-code", r#"{"sandbox": {"mystery": 1}}"#, "sandbox.mystery"),
        ("claude-code", r#"{"filesystem": {"denyRead": []}}"#, "use --policy-format srt"),
        ("claude-code", r#"{"permissions": {"deny": ["Read"]}}"#, "permissions.deny"),
        (
            "claude-code",
            r#"{"permissions": {"allow": ["Edit(src/**/*.ts)"]}}"#,
            "permissions.allow",
        ),
        ("codex", "sandbox_mode = \"yolo\"\n", "read-only, workspace-write, danger-full-access"),
        (
            "codex",
            "sandbox_mode = \"workspace-write\"\n[sandbox_workspace_write]\nallow_everything = true\n",
            "sandbox_workspace_write.allow_everything",
        ),
        ("codex", "default_permissions = \"dev\"\n", "default_permissions"),
        // Codex's profile type has no such table: Codex ignores it, dcjail
        // refuses it rather than grant what Codex does not.
        (
            "codex",
            "profile = \"p\"\n[sandbox_workspace_write]\nexclude_slash_tmp = true\n[profiles.p]\nsandbox_mode = \"workspace-write\"\n[profiles.p.sandbox_workspace_write]\nwritable_roots = [\"/srv\"]\n",
            "codex.toml:6: key `profiles.p.sandbox_workspace_write`",
        ),
        ("codex", "profile = \"nope\"\n", "[profiles.nope]"),
        ("codex", "sandbox_mode = \n", "codex.toml:1"),
    ];
    let root = scratch::fresh("import-errors");
    let marker = root.join("ran");
    for (format, text, want) in cases {
        let file = root.join(if *format == "codex" {
            "codex.toml"
        } else {
            "s.json"
        });
        std::fs::write(&file, text).unwrap();
        for run in [false, true] {
            let mut args: Vec<String> = if run {
                vec![
                    "--policy-format".into(),
                    format.to_string(),
                    "--policy".into(),
                ]
            } else {
                vec!["import".into(), format.to_string()]
            };
            args.push(file.to_str().unwrap().into());
            if run {
                args.extend(["--".into(), "touch".into(), marker.to_str().unwrap().into()]);
            }
            let o = Command::new(bin())
                .args(&args)
                .current_dir(&root)
                .env_remove("DCJAIL_POLICY")
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(125), "{format} {text}: {err}");
            assert_eq!(err.lines().count(), 1, "{format} {text}: {err:?}");
            assert!(err.starts_with("dcjail: policy-error: "), "{err}");
            assert!(
                err.contains(want),
                "{format} {text}: want {want:?} in {err}"
            );
            assert!(o.stdout.is_empty());
            assert!(!marker.exists(), "a refused run started the command");
        }
    }
    scratch::remove(&root);
}

/// Codex's network switch, end to end: a loopback listener is reachable
/// with `network_access = true` and not without it (nor in read-only).
#[test]
fn codex_network_access_decides_whether_the_command_reaches_the_network() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let script = format!(
        "echo RAN; python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)' 2>/dev/null && echo CONNECTED"
    );
    let root = scratch::fresh("import-codex-net");
    for (text, want) in [
        ("sandbox_mode = \"workspace-write\"\n[sandbox_workspace_write]\nnetwork_access = true\n", true),
        ("sandbox_mode = \"workspace-write\"\n[sandbox_workspace_write]\nnetwork_access = false\n", false),
        ("sandbox_mode = \"read-only\"\n[sandbox_workspace_write]\nnetwork_access = true\n", false),
    ] {
        let f = root.join("config.toml");
        std::fs::write(&f, text).unwrap();
        let o = Command::new(bin())
            .args(["--policy-format", "codex", "--policy", f.to_str().unwrap()])
            .args(["--", "sh", "-c", &script])
            .current_dir(&root)
            .output()
            .unwrap();
        let got = String::from_utf8_lossy(&o.stdout);
        assert!(got.starts_with("RAN\n"), "{text}: {}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(got.contains("CONNECTED"), want, "{text}: {got}");
    }
    let control = Command::new("sh").arg("-c").arg(&script).output().unwrap();
    assert!(String::from_utf8_lossy(&control.stdout).contains("CONNECTED"));
    scratch::remove(&root);
}
