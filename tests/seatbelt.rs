//! The Seatbelt renderer, proven without a Mac: golden argv and profile text
//! for a set of plans, a structural checker run over every rendered profile
//! (adversarial paths included), glob → regex agreement with globset checked
//! through a second regex engine (`grep -E`), and `dcjail explain --backend
//! seatbelt` on Linux.
//!
//! Regenerate the goldens with `DCJAIL_BLESS=1 cargo test --test seatbelt`.

#[cfg(not(target_os = "macos"))]
#[path = "support/scratch.rs"]
mod scratch;

use dcjail::backend::seatbelt::{self, glob_regex, Lean, Rendered};
use dcjail::plan::{FsPlan, Glob, NetPlan, PathRule, Plan};
use dcjail::policy::{BackendChoice, Mode, NetMode, SandboxMode, Tool};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::Command;

// ---------------------------------------------------------------- plans

fn glob(pattern: &str) -> PathRule {
    let matcher = globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .expect("test glob")
        .compile_matcher();
    PathRule::Glob(Glob {
        pattern: pattern.to_string(),
        written: pattern.to_string(),
        matcher,
    })
}

fn lit(p: impl Into<OsString>) -> PathRule {
    PathRule::Literal(PathBuf::from(p.into()))
}

/// Some names of the protected table (`dcjail::protected::TABLE`): the
/// renderer treats every protected path alike, so a fixed sample keeps the
/// goldens stable as the table grows.
const PROTECTED_NAMES: &[&str] = &[
    ".gitmodules",
    ".bashrc",
    ".bash_profile",
    ".zshrc",
    ".zprofile",
    ".profile",
    ".mcp.json",
    ".vscode",
    ".idea",
    ".claude/commands",
    ".claude/agents",
    ".dcjail",
];

/// The protected paths of one root with a `.git` directory, built without
/// touching the filesystem.
fn protected(root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = PROTECTED_NAMES.iter().map(|n| root.join(n)).collect();
    v.push(root.join(".git/hooks"));
    v.push(root.join(".git/config"));
    v
}

const HOME: &str = "/Users/alice";
const PROJ: &str = "/Users/alice/proj";
const TMPDIR: &str = "/var/folders/xy/abc123/T";

fn base_plan() -> Plan {
    Plan {
        argv: vec!["git".into(), "status".into()],
        cwd: PROJ.into(),
        workspace: PROJ.into(),
        worktree: None,
        mode: Mode::Default,
        tool: Tool::Bash,
        sandboxed: true,
        backend: BackendChoice::Seatbelt,
        fs: FsPlan {
            access: SandboxMode::ReadOnly,
            writable: Vec::new(),
            deny_read: Vec::new(),
            allow_read: Vec::new(),
            deny_write: Vec::new(),
            protected: Vec::new(),
            held: Vec::new(),
            caches: None,
            git_checkouts: Vec::new(),
        },
        net: NetPlan {
            mode: NetMode::None,
            allow: Vec::new(),
            deny: Vec::new(),
            allow_unix_sockets: Vec::new(),
            credentials: Vec::new(),
        },
        timeout: None,
        env: dcjail::policy::env::EnvRules::new(&Default::default()).unwrap(),
        policy_file: None,
        observe: false,
        report_fd: None,
        facts: Default::default(),
    }
}

fn workspace_write() -> Plan {
    let mut p = base_plan();
    p.fs.access = SandboxMode::WorkspaceWrite;
    p.fs.writable = vec![PROJ.into(), "/tmp".into(), TMPDIR.into()];
    p.fs.protected =
        p.fs.writable
            .iter()
            .flat_map(|r| protected(&seatbelt::canonical(r)))
            .collect();
    p
}

/// The named plans whose argv and profile are golden.
fn golden_plans() -> Vec<(&'static str, Plan, Option<u16>)> {
    let mut out = Vec::new();

    let mut p = base_plan();
    p.fs.deny_read = vec![lit(format!("{HOME}/.ssh")), lit(format!("{HOME}/.aws"))];
    p.fs.allow_read = vec![lit(format!("{HOME}/.ssh/known_hosts"))];
    out.push(("read_only", p, None));

    let mut p = workspace_write();
    // A linked worktree: its git dir lives in the main repository.
    p.worktree = Some(format!("{HOME}/main-wt").into());
    p.fs.protected
        .push(format!("{HOME}/main/.git/worktrees/wt/hooks").into());
    p.fs.protected
        .push(format!("{HOME}/main/.git/worktrees/wt/config").into());
    p.fs.protected.push(format!("{PROJ}/.dcjail.toml").into());
    p.fs.deny_write = vec![lit(format!("{PROJ}/vendor"))];
    out.push(("workspace_write_protected", p, None));

    let mut p = workspace_write();
    p.fs.deny_read = vec![glob("**/.env"), glob(&format!("{PROJ}/secrets-?/[a-c]*"))];
    p.fs.allow_read = vec![glob("**/.env.example")];
    p.fs.deny_write = vec![
        glob("**/*.pem"),
        glob(&format!("{PROJ}/conf/*.{{key,crt}}")),
    ];
    out.push(("deny_globs", p, None));

    let mut p = workspace_write();
    p.fs.access = SandboxMode::DangerFullAccess;
    p.fs.writable = vec!["/".into()];
    p.fs.protected = Vec::new();
    p.fs.deny_write = vec![lit(format!("{HOME}/.ssh"))];
    out.push(("danger_full_access", p, None));

    out.push(("net_none", base_plan(), None));

    let mut p = workspace_write();
    p.net.allow_unix_sockets = vec![
        format!("{HOME}/.gnupg/S.gpg-agent").into(),
        "/tmp/tmux-501".into(),
    ];
    out.push(("net_none_unix_sockets", p, None));

    let mut p = base_plan();
    p.net.mode = NetMode::Allowlist;
    out.push(("net_allowlist", p, Some(3128)));

    let mut p = base_plan();
    p.net.mode = NetMode::Full;
    out.push(("net_full", p, None));

    out
}

// ---------------------------------------------------------------- checker

#[derive(Debug, PartialEq)]
enum Tok {
    Open,
    Close,
    Atom(String),
    Str(String),
}

/// Tokenizes SBPL text: `;` comments, `"…"` strings with `\` escapes, `#"…"`
/// raw strings, parentheses and atoms. Panics on anything malformed.
fn tokenize(text: &str) -> Vec<Tok> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b';' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'(' => {
                out.push(Tok::Open);
                i += 1;
            }
            b')' => {
                out.push(Tok::Close);
                i += 1;
            }
            c if c.is_ascii_whitespace() => i += 1,
            b'"' | b'#' => {
                let raw = b[i] == b'#';
                if raw {
                    assert_eq!(b.get(i + 1), Some(&b'"'), "`#` not starting a raw string");
                    i += 1;
                }
                i += 1;
                let mut s = Vec::new();
                loop {
                    let c = *b.get(i).expect("unterminated string in profile");
                    assert_ne!(c, b'\n', "newline inside a profile string");
                    if c == b'"' {
                        i += 1;
                        break;
                    }
                    if c == b'\\' && !raw {
                        s.push(*b.get(i + 1).expect("dangling escape"));
                        i += 2;
                        continue;
                    }
                    s.push(c);
                    i += 1;
                }
                out.push(Tok::Str(String::from_utf8(s).expect("utf-8 string")));
            }
            _ => {
                let start = i;
                while i < b.len() && !b" \t\r\n()\";".contains(&b[i]) {
                    i += 1;
                }
                out.push(Tok::Atom(text[start..i].to_string()));
            }
        }
    }
    out
}

/// Checks one rendered launch; returns the `-D` parameters as parsed from the
/// argv (name → value bytes).
fn check(r: &Rendered, argv: &[OsString], command: &[OsString]) -> Vec<(String, OsString)> {
    // argv shape: sandbox-exec -p PROFILE (-D NAME=VALUE)* -- COMMAND…
    assert_eq!(argv[0], "/usr/bin/sandbox-exec");
    assert_eq!(argv[1], "-p");
    assert_eq!(argv[2].as_bytes(), r.profile.as_bytes());
    let mut i = 3;
    let mut params: Vec<(String, OsString)> = Vec::new();
    while argv[i] == "-D" {
        let kv = argv[i + 1].as_bytes();
        let eq = kv.iter().position(|c| *c == b'=').expect("-D without =");
        let name = std::str::from_utf8(&kv[..eq])
            .expect("utf-8 name")
            .to_string();
        assert!(
            !name.is_empty()
                && name
                    .bytes()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_'),
            "bad parameter name {name:?}"
        );
        assert!(
            !params.iter().any(|(n, _)| *n == name),
            "duplicate -D {name}"
        );
        params.push((name, OsString::from_vec(kv[eq + 1..].to_vec())));
        i += 2;
    }
    assert_eq!(argv[i], "--", "options end before the command");
    assert_eq!(&argv[i + 1..], command, "the command follows byte-exact");

    // Balanced s-expressions; only version/allow/deny at the top level.
    let toks = tokenize(&r.profile);
    let mut depth: i64 = 0;
    let mut tops: Vec<Vec<&Tok>> = Vec::new();
    for (k, t) in toks.iter().enumerate() {
        match t {
            Tok::Open => {
                if depth == 0 {
                    tops.push(Vec::new());
                }
                depth += 1;
            }
            Tok::Close => {
                depth -= 1;
                assert!(depth >= 0, "unbalanced `)` at token {k}");
            }
            _ => assert!(depth > 0, "bare token at top level: {t:?}"),
        }
        if let Some(last) = tops.last_mut() {
            last.push(t);
        }
    }
    assert_eq!(depth, 0, "unclosed `(`");
    for f in &tops {
        match f.get(1) {
            Some(Tok::Atom(a)) if a == "version" || a == "allow" || a == "deny" => {}
            other => panic!("unexpected top-level form head {other:?}"),
        }
    }
    let atom = |f: &Vec<&Tok>, n: usize| match f.get(n) {
        Some(Tok::Atom(a)) => a.clone(),
        _ => String::new(),
    };
    assert_eq!(
        (atom(&tops[0], 1), atom(&tops[0], 2)),
        ("version".into(), "1".into())
    );
    assert_eq!(
        (atom(&tops[1], 1), atom(&tops[1], 2)),
        ("deny".into(), "default".into())
    );
    let last = tops.last().expect("forms");
    assert_eq!(
        last.iter().map(|t| format!("{t:?}")).collect::<Vec<_>>().join(" "),
        "Open Atom(\"deny\") Atom(\"file-ioctl\") Open Atom(\"ioctl-command\") Atom(\"TIOCSTI\") Close Close",
        "the TIOCSTI denial is the last rule"
    );
    for f in &tops {
        assert!(
            !(atom(f, 1) == "allow" && atom(f, 2) == "default"),
            "profile allows default"
        );
    }

    // Every (param "X") has a -D X=, every -D is referenced.
    let mut used: Vec<String> = Vec::new();
    for w in toks.windows(4) {
        if let [Tok::Open, Tok::Atom(a), x, Tok::Close] = w {
            if a == "param" {
                match x {
                    Tok::Str(name) => used.push(name.clone()),
                    other => panic!("param of a non-string {other:?}"),
                }
            }
        }
    }
    assert_eq!(
        toks.iter()
            .filter(|t| **t == Tok::Atom("param".into()))
            .count(),
        used.len(),
        "every `param` is of the form (param \"NAME\")"
    );
    for u in &used {
        assert!(
            params.iter().any(|(n, _)| n == u),
            "(param {u:?}) has no -D"
        );
    }
    for (n, _) in &params {
        assert!(used.contains(n), "-D {n} is never used");
    }

    // No parameter value (a path, or a regex built from one) is pasted into
    // the profile text.
    for (n, v) in &params {
        if v.len() >= 4 {
            assert!(
                !contains(r.profile.as_bytes(), v.as_bytes()),
                "value of {n} ({v:?}) appears in the profile text"
            );
        }
    }
    params
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn rendered(plan: &Plan, port: Option<u16>) -> (Rendered, Vec<OsString>) {
    let r = seatbelt::render(plan, port).expect("render");
    let argv = r.argv(&plan.argv).expect("argv");
    (r, argv)
}

// ---------------------------------------------------------------- goldens

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/seatbelt")
}

/// The argv as one JSON string per line, the profile replaced by a pointer
/// to the `.sbpl` golden next to it.
fn argv_text(name: &str, argv: &[OsString]) -> String {
    let mut out = String::new();
    for (i, a) in argv.iter().enumerate() {
        let shown = if i == 2 {
            format!("<profile: {name}.sbpl>")
        } else {
            a.to_str().expect("golden argv is UTF-8").to_string()
        };
        out.push_str(&serde_json::to_string(&shown).expect("json"));
        out.push('\n');
    }
    out
}

#[test]
fn seatbelt_argv_and_profile_match_the_goldens() {
    let bless = std::env::var_os("DCJAIL_BLESS").is_some_and(|v| v == "1");
    let dir = golden_dir();
    if bless {
        std::fs::create_dir_all(&dir).expect("golden dir");
    }
    let mut failures = Vec::new();
    for (name, plan, port) in golden_plans() {
        let (r, argv) = rendered(&plan, port);
        check(&r, &argv, &plan.argv);
        for (file, text) in [
            (format!("{name}.sbpl"), r.profile.clone()),
            (format!("{name}.argv"), argv_text(name, &argv)),
        ] {
            let path = dir.join(&file);
            if bless {
                std::fs::write(&path, &text).expect("write golden");
                continue;
            }
            match std::fs::read_to_string(&path) {
                Ok(want) if want == text => {}
                Ok(_) => failures.push(format!("{file} differs (DCJAIL_BLESS=1 to regenerate)")),
                Err(e) => failures.push(format!("{file}: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn goldens_hold_no_machine_specific_path() {
    let here = env!("CARGO_MANIFEST_DIR");
    let home = std::env::var("HOME").unwrap_or_default();
    for entry in std::fs::read_dir(golden_dir()).expect("golden dir") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("golden");
        assert!(
            !text.contains(here),
            "{} names the checkout",
            path.display()
        );
        assert!(
            home.len() < 2 || !text.contains(&format!("{home}/")),
            "{} names this HOME",
            path.display()
        );
        assert!(!text.contains("/work/"), "{} names /work", path.display());
    }
}

#[test]
fn every_golden_plan_names_the_rules_the_issue_asks_for() {
    let plans = golden_plans();
    let get = |n: &str| {
        let (_, p, port) = plans.iter().find(|(k, _, _)| *k == n).expect("plan");
        rendered(p, *port)
    };
    // read-only: no write rule but the devices; deny_read excluded, allow_read re-opened.
    let (r, _) = get("read_only");
    assert!(!r.profile.contains("(allow file-write*"));
    assert!(r
        .profile
        .contains("(require-not (subpath (param \"NOREAD_0\")))"));
    assert!(r.profile.contains("(subpath (param \"READ_0\"))"));
    // workspace-write: protected paths excluded as literal and subpath.
    let (r, argv) = get("workspace_write_protected");
    let hooks = argv
        .iter()
        .filter_map(|a| a.to_str())
        .find(|a| a.ends_with("=/Users/alice/proj/.git/hooks"))
        .expect("hooks param");
    let name = &hooks[..hooks.find('=').expect("=")];
    assert!(r
        .profile
        .contains(&format!("(require-not (literal (param \"{name}\")))")));
    assert!(r
        .profile
        .contains(&format!("(require-not (subpath (param \"{name}\")))")));
    // /tmp and /var are passed canonical.
    assert!(argv.iter().any(|a| a == "WRITABLE_1=/private/tmp"));
    assert!(argv
        .iter()
        .any(|a| a == "WRITABLE_2=/private/var/folders/xy/abc123/T"));
    assert!(!argv.iter().any(|a| a.as_bytes().ends_with(b"=/tmp")));
    // network modes.
    let (r, _) = get("net_none");
    assert!(!r.profile.contains("(allow network"));
    // Unix sockets are refused in every mode but where the plan says.
    assert!(r
        .profile
        .contains("(deny network-outbound (remote unix-socket))"));
    let (r, argv) = get("net_allowlist");
    assert!(r
        .profile
        .contains("(allow network-outbound (remote tcp (param \"PROXY\")))"));
    assert!(argv.iter().any(|a| a == "PROXY=localhost:3128"));
    assert!(!r.profile.contains("(allow network*)"));
    let (r, _) = get("net_full");
    let open = r.profile.find("(allow network*)").unwrap();
    let closed = r
        .profile
        .find("(deny network-outbound (remote unix-socket))")
        .unwrap();
    // `full` opens the internet, not the host's unix sockets: the later
    // rule wins.
    assert!(open < closed, "{}", r.profile);
    let (r, argv) = get("net_none_unix_sockets");
    assert!(!r.profile.contains("(allow network*)"));
    for (name, value) in [
        ("UNIX_SOCKET_0", "/Users/alice/.gnupg/S.gpg-agent"),
        ("UNIX_SOCKET_1", "/private/tmp/tmux-501"),
    ] {
        assert!(argv.iter().any(|a| a == format!("{name}={value}").as_str()));
        assert!(r.profile.contains(&format!(
            "(remote unix-socket (subpath (param \"{name}\")))"
        )));
    }
    // Sockets are bound in the writable roots and reached in the workspace
    // (not /tmp: a host's socket there needs naming).
    assert!(r
        .profile
        .contains("(local unix-socket (subpath (param \"WRITABLE_1\")))"));
    assert!(r
        .profile
        .contains("(remote unix-socket (subpath (param \"WRITABLE_0\")))"));
    assert!(!r
        .profile
        .contains("(remote unix-socket (subpath (param \"WRITABLE_1\")))"));
}

// ---------------------------------------------------------------- adversarial

/// Paths meant to break out of a string or an s-expression, or to smuggle
/// bytes that are not UTF-8.
fn nasty_names() -> Vec<OsString> {
    vec![
        OsString::from("q\"uote"),
        OsString::from("pa(ren)s"),
        OsString::from("new\nline"),
        OsString::from("\")(allow default)("),
        OsString::from("semi;colon #\"raw\" \\back"),
        OsString::from("-D X=y"),
        OsString::from("(param \"WRITABLE_0\")"),
        OsString::from_vec(b"bad\xff\xfebytes".to_vec()),
    ]
}

/// A plan of fixed shape whose every path ends in `name`.
fn shaped_plan(name: &OsStr) -> Plan {
    let j = |dir: &str| {
        let mut p = PathBuf::from(dir);
        p.push(name);
        p
    };
    let mut p = base_plan();
    p.fs.access = SandboxMode::WorkspaceWrite;
    p.argv = vec!["cat".into(), name.to_os_string()];
    p.fs.writable = vec![j("/Users/alice"), j("/tmp")];
    p.fs.protected = vec![j("/Users/alice/.git/hooks"), j("/tmp/.bashrc")];
    p.fs.deny_read = vec![PathRule::Literal(j("/Users/alice/.ssh"))];
    p.fs.allow_read = vec![PathRule::Literal(j("/Users/alice/.ssh/pub"))];
    p.fs.deny_write = vec![PathRule::Literal(j("/Users/alice/vendor"))];
    p.net.mode = NetMode::Allowlist;
    p.net.allow_unix_sockets = vec![j("/Users/alice/.gnupg")];
    p
}

#[test]
fn adversarial_paths_cannot_change_the_profile() {
    let (benign, _) = rendered(&shaped_plan(OsStr::new("plain")), Some(1080));
    for name in nasty_names() {
        let plan = shaped_plan(&name);
        let (r, argv) = rendered(&plan, Some(1080));
        let params = check(&r, &argv, &plan.argv);
        assert_eq!(
            r.profile, benign.profile,
            "the profile text depends on the bytes of {name:?}"
        );
        // The bytes reach sandbox-exec exactly, as one argv element each.
        let mut want = b"/Users/alice/".to_vec();
        want.extend_from_slice(name.as_bytes());
        assert!(
            params
                .iter()
                .any(|(n, v)| n == "WRITABLE_0" && v.as_bytes() == want),
            "WRITABLE_0 is not byte-exact for {name:?}"
        );
    }
}

#[test]
fn adversarial_globs_stay_inside_their_parameter() {
    let base = |g: &str| {
        let mut p = workspace_write();
        p.fs.deny_read = vec![glob(g)];
        p.fs.deny_write = vec![glob(g)];
        p.fs.allow_read = vec![glob(g)];
        p
    };
    for g in [
        "**/\")(allow default)(",
        "**/q\"uote*",
        "/Users/alice/proj/pa(ren)s/**",
        "**/semi;colon #\"raw\"",
        "**/a.b+c$d^e|f",
        "**/{x,\")(allow default)(}",
        "**/[*]lit",
    ] {
        // The same glob with every dangerous character made harmless: the
        // profile may depend on a glob's directory structure (which parent
        // directories keep their names), never on its characters.
        let tame: String = g
            .chars()
            .map(|c| if "\"();# +$^|.".contains(c) { 'x' } else { c })
            .collect();
        let (benign, _) = rendered(&base(&tame), None);
        let plan = base(g);
        let (r, argv) = rendered(&plan, None);
        check(&r, &argv, &plan.argv);
        assert_eq!(r.profile, benign.profile, "profile depends on glob {g:?}");
    }
}

#[test]
fn globs_that_cannot_be_expressed_are_refused_not_guessed() {
    for g in [
        "**/new\nline",
        "**/lossy\u{fffd}",
        "**/[éa]",
        "**/[a/b]",
        "**/{open",
        "**/close}",
        "**/trailing\\",
        "**/[]",
    ] {
        let mut p = workspace_write();
        p.fs.deny_read = vec![PathRule::Glob(Glob {
            pattern: g.to_string(),
            written: g.to_string(),
            matcher: globset::Glob::new("x").expect("x").compile_matcher(),
        })];
        let e = seatbelt::render(&p, None).expect_err(g);
        assert!(e.contains("cannot be expressed"), "{e}");
    }
}

#[test]
fn allowlist_without_a_port_is_pending_and_gives_no_argv() {
    let mut p = base_plan();
    p.net.mode = NetMode::Allowlist;
    let r = seatbelt::render(&p, None).expect("render");
    assert!(r.proxy_pending);
    assert!(r.argv(&p.argv).is_err(), "no launch without the proxy port");
    assert!(r.to_json(&p.argv)["pending"]["PROXY"].is_string());
}

#[test]
fn proxy_port_filled_in_later_gives_the_same_launch_as_rendering_with_it() {
    let mut p = base_plan();
    p.net.mode = NetMode::Allowlist;
    let later = seatbelt::render(&p, None)
        .expect("render")
        .with_proxy_port(40123);
    let now = seatbelt::render(&p, Some(40123)).expect("render");
    assert_eq!(later, now);
    let argv = later.argv(&p.argv).expect("argv");
    check(&later, &argv, &p.argv);
    assert!(argv.iter().any(|a| a == "PROXY=localhost:40123"));
}

#[test]
fn firmlinked_tops_are_passed_in_their_private_form() {
    for (given, want) in [
        ("/var/folders/x/T", "/private/var/folders/x/T"),
        ("/tmp", "/private/tmp"),
        ("/etc/hosts", "/private/etc/hosts"),
        ("/private/tmp/x", "/private/tmp/x"),
        ("/variable/x", "/variable/x"),
        ("/Users/alice/tmp", "/Users/alice/tmp"),
    ] {
        assert_eq!(seatbelt::canonical(Path::new(given)), Path::new(want));
    }
    let re = glob_regex("/tmp/**/*.log", Lean::Allow).expect("regex");
    assert!(re.as_bytes().starts_with(b"^/private/tmp/"), "{re:?}");
}

#[test]
fn unsandboxed_plan_has_no_profile() {
    let mut p = base_plan();
    p.sandboxed = false;
    assert!(seatbelt::render(&p, None).is_err());
}

// ---------------------------------------------------------------- glob semantics

/// Lines of `paths` that `grep -E` (POSIX ERE, byte-wise in the C locale, as
/// a stand-in for Seatbelt's engine) matches with `regex`.
fn grep_matches(regex: &OsStr, paths: &[&str]) -> Vec<bool> {
    let input: String = paths.iter().map(|p| format!("{p}\n")).collect();
    let mut child = Command::new("grep")
        .env("LC_ALL", "C")
        .arg("-n")
        .arg("-E")
        .arg("-e")
        .arg(regex)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("grep");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(input.as_bytes()).expect("write");
    }
    let out = child.wait_with_output().expect("grep output");
    assert!(
        out.status.code() == Some(0) || out.status.code() == Some(1),
        "grep failed on {regex:?}"
    );
    let hits: Vec<usize> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split(':').next()?.parse().ok())
        .collect();
    (1..=paths.len()).map(|n| hits.contains(&n)).collect()
}

#[test]
fn glob_regexes_cover_what_globset_covers() {
    let globs = [
        "**/.env",
        "**/.env*",
        "/Users/alice/proj/conf/*.{key,crt}",
        "/Users/alice/proj/secrets-?/[a-c]*",
        "/Users/alice/proj/x[!0-9]y",
        "/Users/alice/**/id_*",
        "/Users/alice/proj/**",
        "/Users/alice/proj/a.b/**/c+d",
        "/Users/alice/[*]star",
        "/tmp/build/*.log",
    ];
    let paths = [
        "/Users/alice/proj/.env",
        "/Users/alice/proj/a/b/c/.env",
        "/Users/alice/proj/.env.local",
        "/Users/alice/proj/.ENV",
        "/Users/alice/proj/.env/inner",
        "/Users/alice/proj/xenv",
        "/Users/alice/proj/conf/a.key",
        "/Users/alice/proj/conf/a.crt",
        "/Users/alice/proj/conf/a.pem",
        "/Users/alice/proj/conf/sub/a.key",
        "/Users/alice/proj/secrets-1/apple",
        "/Users/alice/proj/secrets-é/bee",
        "/Users/alice/proj/secrets-12/apple",
        "/Users/alice/proj/secrets-1/zebra",
        "/Users/alice/proj/xay",
        "/Users/alice/proj/x5y",
        "/Users/alice/proj/x/y",
        "/Users/alice/.ssh/id_rsa",
        "/Users/alice/id_rsa",
        "/Users/alice/proj",
        "/Users/alice/proj/deep/file",
        "/Users/alice/proj/a.b/c+d",
        "/Users/alice/proj/a.b/x/y/c+d",
        "/Users/alice/proj/aXb/c+d",
        "/Users/alice/*star",
        "/Users/alice/Xstar",
        "/private/tmp/build/x.log",
        "/tmp/build/x.log",
    ];
    for g in globs {
        // Seatbelt sees canonical paths (/private/tmp): compare with the
        // canonical form of the glob, as macOS would evaluate it.
        let canon_rule = glob(&g.replacen("/tmp/", "/private/tmp/", 1));
        for lean in [Lean::Deny, Lean::Allow] {
            let re = glob_regex(g, lean).expect("regex");
            let got = grep_matches(&re, &paths);
            for (path, hit) in paths.iter().zip(got) {
                let want = canon_rule.covers(Path::new(path));
                match lean {
                    // A denial may cover more (case variants), never less.
                    Lean::Deny => assert!(hit || !want, "deny regex {re:?} of {g} misses {path}"),
                    // A re-allowance may cover less, never more.
                    Lean::Allow => assert!(
                        !hit || want,
                        "allow regex {re:?} of {g} over-matches {path}"
                    ),
                }
                if lean == Lean::Allow && path.is_ascii() {
                    assert_eq!(hit, want, "allow regex {re:?} of {g} on {path}");
                }
            }
        }
    }
}

#[test]
fn deny_regexes_catch_case_variants() {
    let re = glob_regex("**/.git/hooks", Lean::Deny).expect("regex");
    assert_eq!(
        grep_matches(
            &re,
            &[
                "/w/.GIT/Hooks/pre-commit",
                "/w/.git/hooks",
                "/w/.gitx/hooks"
            ]
        ),
        vec![true, true, false]
    );
}

// ---------------------------------------------------------------- the binary

/// Off macOS a Seatbelt run must be refused, while `explain` still shows the
/// launch. (On macOS these would run the real sandbox-exec instead.)
#[cfg(not(target_os = "macos"))]
mod off_macos {
    use super::*;

    fn dcjail() -> Command {
        let mut c = Command::new(super::scratch::exe());
        c.env_remove("DCJAIL_POLICY");
        c
    }

    /// Scratch space under the checkout's target/, not the system's /tmp.
    use super::scratch::Dir as TempDir;

    fn tempdir(tag: &str) -> TempDir {
        TempDir::new(&format!("seatbelt-{tag}"))
    }

    #[test]
    fn explain_backend_seatbelt_on_linux_prints_profile_and_params() {
        let t = tempdir("explain");
        let ws = t.0.join("ws\")(allow default)(");
        std::fs::create_dir_all(&ws).expect("ws");
        let out = dcjail()
            .current_dir(&ws)
            .args([
                "explain",
                "--backend",
                "seatbelt",
                "--sandbox-mode",
                "workspace-write",
            ])
            .args(["--deny-read", "**/.env", "--net", "none", "--", "true"])
            .output()
            .expect("run dcjail");
        // A real run would be refused here: explain exits with that status.
        assert_eq!(
            out.status.code(),
            Some(122),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(v["decision"], "unavailable");
        assert!(v["message"]
            .as_str()
            .unwrap_or("")
            .contains("Seatbelt exists only on macOS"));
        let sb = &v["seatbelt"];
        let profile = sb["profile"].as_str().expect("profile");
        assert!(profile.contains("(deny default)"));
        assert!(profile.contains("(deny file-ioctl (ioctl-command TIOCSTI))"));
        // The renderer passes macOS-canonical paths (/tmp → /private/tmp).
        let ws_canon = seatbelt::canonical(&std::fs::canonicalize(&ws).expect("canon"));
        let ws_s = ws_canon.to_str().expect("utf-8").to_string();
        assert!(
            !profile.contains(&ws_s),
            "workspace path pasted into the profile"
        );
        assert!(!profile.contains("(allow default)"));
        let params = sb["params"].as_array().expect("params");
        assert!(
            params
                .iter()
                .any(|p| p["name"] == "WRITABLE_0" && p["value"] == ws_s.as_str()),
            "workspace not passed as WRITABLE_0: {params:?}"
        );
        assert!(params.iter().any(|p| p["name"] == "NOREAD_GLOB_0"));
        let argv: Vec<&str> = sb["argv"]
            .as_array()
            .expect("argv")
            .iter()
            .filter_map(|a| a.as_str())
            .collect();
        assert_eq!(&argv[..2], &["/usr/bin/sandbox-exec", "-p"]);
        assert_eq!(argv[2], profile);
        assert!(argv.contains(&format!("WRITABLE_0={ws_s}").as_str()));
        assert_eq!(&argv[argv.len() - 2..], &["--", "true"]);
    }

    #[test]
    fn explain_shows_non_utf8_parameter_bytes_exactly_in_hex() {
        let t = tempdir("bytes");
        let ws = t.0.join(OsStr::from_bytes(b"ws-\xff\xfe-x"));
        std::fs::create_dir_all(&ws).expect("ws");
        let out = dcjail()
            .current_dir(&ws)
            .args([
                "explain",
                "--backend",
                "seatbelt",
                "--sandbox-mode",
                "workspace-write",
            ])
            .args(["--", "true"])
            .output()
            .expect("run dcjail");
        assert_eq!(out.status.code(), Some(122));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let canon = seatbelt::canonical(&std::fs::canonicalize(&ws).expect("canon"));
        let want: String = canon
            .as_os_str()
            .as_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let params = v["seatbelt"]["params"].as_array().expect("params");
        let w0 = params
            .iter()
            .find(|p| p["name"] == "WRITABLE_0")
            .expect("WRITABLE_0");
        assert_eq!(w0["value_hex"], want.as_str(), "{w0:?}");
    }

    #[test]
    fn run_with_backend_seatbelt_on_linux_is_refused_and_runs_nothing() {
        let t = tempdir("run");
        let marker = t.0.join("ran");
        let out = dcjail()
            .current_dir(&t.0)
            .args([
                "--backend",
                "seatbelt",
                "--sandbox-mode",
                "workspace-write",
                "--",
            ])
            .arg("touch")
            .arg(&marker)
            .output()
            .expect("run dcjail");
        assert_eq!(out.status.code(), Some(122));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("dcjail: sandbox-unavailable: "), "{err}");
        assert!(err.contains("Seatbelt exists only on macOS"), "{err}");
        assert!(!marker.exists(), "the command ran");
    }
}

// ---------------------------------------------------------------- meaning
//
// A small evaluator of the rendered profile under the documented SBPL
// semantics (the last matching rule decides; `deny default` otherwise; the
// filters of one rule are alternatives; `literal`, `subpath`, `regex`,
// `require-all/any/not` over `(param …)` values), with `grep -E` in the C
// locale standing in for Seatbelt's regex engine. It checks that the profile
// means what the plan says: never more access than `Plan::readable` /
// `Plan::writable` grant, and exactly that access for ordinary paths.

#[derive(Debug, Clone)]
enum Sx {
    List(Vec<Sx>),
    Atom(String),
    Str(String),
}

fn parse_forms(text: &str) -> Vec<Sx> {
    let toks = tokenize(text);
    let mut stack: Vec<Vec<Sx>> = vec![Vec::new()];
    for t in toks {
        match t {
            Tok::Open => stack.push(Vec::new()),
            Tok::Close => {
                let done = stack.pop().expect("balanced");
                stack.last_mut().expect("parent").push(Sx::List(done));
            }
            Tok::Atom(a) => stack.last_mut().expect("open").push(Sx::Atom(a)),
            Tok::Str(s) => stack.last_mut().expect("open").push(Sx::Str(s)),
        }
    }
    stack.pop().expect("top")
}

struct Eval<'a> {
    forms: Vec<Sx>,
    params: &'a [(String, OsString)],
    /// (regex, path) → match, filled by one grep per regex.
    regex_hits: Vec<(Vec<u8>, Vec<u8>, bool)>,
}

impl<'a> Eval<'a> {
    fn new(r: &Rendered, params: &'a [(String, OsString)], paths: &[Vec<u8>]) -> Eval<'a> {
        let forms = parse_forms(&r.profile);
        let mut regexes: Vec<Vec<u8>> = Vec::new();
        fn collect(sx: &Sx, params: &[(String, OsString)], out: &mut Vec<Vec<u8>>) {
            if let Sx::List(items) = sx {
                if let [Sx::Atom(a), arg] = items.as_slice() {
                    if a == "regex" {
                        let v = match arg {
                            Sx::Str(s) => s.as_bytes().to_vec(),
                            Sx::List(p) => match p.as_slice() {
                                [Sx::Atom(k), Sx::Str(n)] if k == "param" => params
                                    .iter()
                                    .find(|(pn, _)| pn == n)
                                    .expect("param defined")
                                    .1
                                    .as_bytes()
                                    .to_vec(),
                                _ => panic!("regex of {p:?}"),
                            },
                            other => panic!("regex of {other:?}"),
                        };
                        out.push(v);
                    }
                }
                for i in items {
                    collect(i, params, out);
                }
            }
        }
        for f in &forms {
            collect(f, params, &mut regexes);
        }
        regexes.sort();
        regexes.dedup();
        let mut regex_hits = Vec::new();
        let mut input = Vec::new();
        for p in paths {
            assert!(
                !p.contains(&b'\n'),
                "grep cannot take a path with a newline"
            );
            input.extend_from_slice(p);
            input.push(b'\n');
        }
        for re in regexes {
            let hits = grep_lines(&re, &input);
            for (k, p) in paths.iter().enumerate() {
                regex_hits.push((re.clone(), p.clone(), hits.contains(&(k + 1))));
            }
        }
        Eval {
            forms,
            params,
            regex_hits,
        }
    }

    fn value(&self, arg: &Sx) -> Vec<u8> {
        match arg {
            Sx::Str(s) => s.as_bytes().to_vec(),
            Sx::List(p) => match p.as_slice() {
                [Sx::Atom(k), Sx::Str(n)] if k == "param" => self
                    .params
                    .iter()
                    .find(|(pn, _)| pn == n)
                    .expect("param defined")
                    .1
                    .as_bytes()
                    .to_vec(),
                _ => panic!("value of {p:?}"),
            },
            Sx::Atom(a) => panic!("value of atom {a}"),
        }
    }

    /// Whether a filter matches a file operation on `path`. Filters that do
    /// not look at paths (ioctl-command, target, global-name…) never match a
    /// plain file read or write.
    fn filter(&self, f: &Sx, path: &[u8]) -> bool {
        let Sx::List(items) = f else {
            panic!("filter {f:?}")
        };
        let Some(Sx::Atom(head)) = items.first() else {
            panic!("filter {f:?}")
        };
        let rest = &items[1..];
        match head.as_str() {
            "literal" => self.value(&rest[0]) == path,
            "subpath" => {
                let root = self.value(&rest[0]);
                root == b"/"
                    || path == root.as_slice()
                    || (path.starts_with(&root) && path.get(root.len()) == Some(&b'/'))
            }
            "regex" => {
                let re = self.value(&rest[0]);
                self.regex_hits
                    .iter()
                    .find(|(r, p, _)| *r == re && p == path)
                    .map(|(_, _, hit)| *hit)
                    .unwrap_or_else(|| {
                        panic!(
                            "regex {:?} not evaluated on {:?}",
                            String::from_utf8_lossy(&re),
                            String::from_utf8_lossy(path)
                        )
                    })
            }
            "require-all" => rest.iter().all(|x| self.filter(x, path)),
            "require-any" => rest.iter().any(|x| self.filter(x, path)),
            "require-not" => !self.filter(&rest[0], path),
            _ => false,
        }
    }

    fn allowed(&self, op: &str, path: &[u8]) -> bool {
        let mut verdict = false;
        for f in &self.forms {
            let Sx::List(items) = f else { continue };
            let Some(Sx::Atom(action)) = items.first() else {
                continue;
            };
            if action != "allow" && action != "deny" {
                continue;
            }
            let ops: Vec<&str> = items[1..]
                .iter()
                .filter_map(|x| match x {
                    Sx::Atom(a) => Some(a.as_str()),
                    _ => None,
                })
                .collect();
            let covers_op = ops.iter().any(|o| {
                *o == op
                    || *o == "default"
                    || o.strip_suffix('*').is_some_and(|pre| op.starts_with(pre))
            });
            if !covers_op {
                continue;
            }
            let filters: Vec<&Sx> = items[1..]
                .iter()
                .filter(|x| matches!(x, Sx::List(_)))
                .collect();
            if filters.is_empty() || filters.iter().any(|x| self.filter(x, path)) {
                verdict = action == "allow";
            }
        }
        verdict
    }
}

fn grep_lines(re: &[u8], input: &[u8]) -> Vec<usize> {
    let mut child = Command::new("grep")
        .env("LC_ALL", "C")
        .args(["-n", "-a", "-E", "-e"])
        .arg(OsStr::from_bytes(re))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("grep");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(input).expect("write");
    }
    let out = child.wait_with_output().expect("grep output");
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "grep failed on {re:?}"
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split(':').next()?.parse().ok())
        .collect()
}

fn meaning_plan() -> Plan {
    let mut p = base_plan();
    p.fs.access = SandboxMode::WorkspaceWrite;
    p.fs.writable = vec![
        PROJ.into(),
        "/private/tmp".into(),
        "/private/var/folders/xy/abc123/T".into(),
    ];
    p.fs.protected = p.fs.writable.iter().flat_map(|r| protected(r)).collect();
    p.fs.deny_read = vec![lit(format!("{HOME}/.ssh")), glob("**/.env")];
    p.fs.allow_read = vec![lit(format!("{HOME}/.ssh/known_hosts"))];
    p.fs.deny_write = vec![lit(format!("{PROJ}/vendor")), glob("**/*.pem")];
    p
}

#[test]
fn rendered_profile_grants_what_the_plan_grants_and_nothing_more() {
    let plan = meaning_plan();
    let (r, argv) = rendered(&plan, None);
    let params = check(&r, &argv, &plan.argv);
    let paths: Vec<&str> = vec![
        "/Users/alice/proj/src/main.rs",
        "/Users/alice/proj/new-file",
        "/Users/alice/proj/.git/objects/ab/cdef",
        "/Users/alice/proj/.git/index",
        "/Users/alice/proj/.git/refs/heads/main",
        "/Users/alice/proj/.git/hooks",
        "/Users/alice/proj/.git/hooks/pre-commit",
        "/Users/alice/proj/.git/config",
        "/Users/alice/proj/.GIT/Hooks/pre-commit",
        "/Users/alice/proj/.Git/CONFIG",
        "/Users/alice/proj/.bashrc",
        "/Users/alice/proj/.BashRC",
        "/Users/alice/proj/.vscode/settings.json",
        "/Users/alice/proj/.claude/commands/evil.md",
        "/Users/alice/proj/.claude/settings.json",
        "/Users/alice/proj/.mcp.json",
        "/Users/alice/proj/.dcjail",
        "/Users/alice/proj/vendor",
        "/Users/alice/proj/vendor/lib.rs",
        "/Users/alice/proj/key.pem",
        "/Users/alice/proj/a/b/cert.pem",
        "/Users/alice/proj/a/b/cert.PEM",
        "/Users/alice/proj/.env",
        "/Users/alice/proj/sub/dir/.env",
        "/Users/alice/proj/.envrc",
        "/Users/alice/.ssh/id_rsa",
        "/Users/alice/.ssh/known_hosts",
        "/Users/alice/.SSH/id_rsa",
        "/Users/alice/.bashrc",
        "/Users/alice/other.txt",
        "/Users/alice/projx/file",
        "/private/tmp/scratch",
        "/private/tmp/.bashrc",
        "/private/var/folders/xy/abc123/T/t.txt",
        "/private/etc/passwd",
        "/etc/passwd",
        "/dev/null",
        "/Users/alice/proj",
        "/Users/alice/proj/.git",
        "/Users/alice/proj/.claude",
    ];
    let bytes: Vec<Vec<u8>> = paths.iter().map(|p| p.as_bytes().to_vec()).collect();
    let ev = Eval::new(&r, &params, &bytes);
    let read = |p: &str| ev.allowed("file-read-data", p.as_bytes());
    let write = |p: &str| ev.allowed("file-write-create", p.as_bytes());

    // Never more than the plan grants.
    for p in &paths {
        let path = Path::new(p);
        if read(p) {
            assert!(
                plan.readable(path),
                "profile lets {p} be read; plan does not"
            );
        }
        if write(p) && *p != "/dev/null" {
            assert!(
                plan.writable(path),
                "profile lets {p} be written; plan does not"
            );
        }
    }
    // What the plan grants, ordinary paths get.
    for p in [
        "/Users/alice/proj/src/main.rs",
        "/Users/alice/proj/new-file",
        "/Users/alice/proj/.git/objects/ab/cdef",
        "/Users/alice/proj/.git/index",
        "/Users/alice/proj/.git/refs/heads/main",
        "/Users/alice/proj/.claude/settings.json",
        "/Users/alice/proj/.envrc",
        "/private/tmp/scratch",
        "/private/var/folders/xy/abc123/T/t.txt",
    ] {
        assert!(write(p), "{p} should be writable");
        assert!(read(p), "{p} should be readable");
    }
    for p in [
        "/Users/alice/.ssh/known_hosts",
        "/private/etc/passwd",
        "/Users/alice/.bashrc",
    ] {
        assert!(read(p), "{p} should be readable");
    }
    // Protected, denied, outside: not writable, case variants included.
    for p in [
        "/Users/alice/proj/.git/hooks",
        "/Users/alice/proj/.git/hooks/pre-commit",
        "/Users/alice/proj/.git/config",
        "/Users/alice/proj/.GIT/Hooks/pre-commit",
        "/Users/alice/proj/.Git/CONFIG",
        "/Users/alice/proj/.bashrc",
        "/Users/alice/proj/.BashRC",
        "/Users/alice/proj/.vscode/settings.json",
        "/Users/alice/proj/.claude/commands/evil.md",
        "/Users/alice/proj/.mcp.json",
        "/Users/alice/proj/.dcjail",
        "/Users/alice/proj/vendor",
        "/Users/alice/proj/vendor/lib.rs",
        "/Users/alice/proj/key.pem",
        "/Users/alice/proj/a/b/cert.pem",
        "/Users/alice/proj/a/b/cert.PEM",
        "/Users/alice/.bashrc",
        "/Users/alice/other.txt",
        "/Users/alice/projx/file",
        "/private/tmp/.bashrc",
        "/private/etc/passwd",
    ] {
        assert!(!write(p), "{p} must not be writable");
    }
    // Denied reads, case variants included; and they cannot be renamed away.
    for p in [
        "/Users/alice/.ssh/id_rsa",
        "/Users/alice/.SSH/id_rsa",
        "/Users/alice/proj/.env",
        "/Users/alice/proj/sub/dir/.env",
    ] {
        assert!(!read(p), "{p} must not be readable");
        assert!(
            !write(p),
            "{p} must not be writable (renaming it would expose it)"
        );
    }
    // The root and the directories holding protected paths keep their names:
    // `mv .git g; edit g/hooks/x; mv g .git` fails at the first step.
    for p in [
        "/Users/alice/proj",
        "/Users/alice/proj/.git",
        "/Users/alice/proj/.claude",
    ] {
        assert!(!write(p), "{p} must keep its name");
    }
    // Devices of the base profile.
    assert!(ev.allowed("file-write-data", b"/dev/null"));
    assert!(!ev.allowed("file-write-create", b"/dev/null"));
}

#[test]
fn adversarial_paths_keep_their_meaning_as_parameters() {
    for name in nasty_names() {
        if name.as_bytes().contains(&b'\n') {
            continue; // grep reads lines; the structural test covers this one
        }
        let plan = shaped_plan(&name);
        let (r, argv) = rendered(&plan, Some(1080));
        let params = check(&r, &argv, &plan.argv);
        let root = {
            let mut b = b"/Users/alice/".to_vec();
            b.extend_from_slice(name.as_bytes());
            b
        };
        let join = |s: &[u8]| {
            let mut b = root.clone();
            b.extend_from_slice(s);
            b
        };
        let file = join(b"/src/file");
        let hook = {
            let mut b = b"/Users/alice/.git/hooks/".to_vec();
            b.extend_from_slice(name.as_bytes());
            b
        };
        let outside = b"/Users/alice/elsewhere".to_vec();
        let paths = vec![file.clone(), hook.clone(), outside.clone(), root.clone()];
        let ev = Eval::new(&r, &params, &paths);
        assert!(
            ev.allowed("file-write-create", &file),
            "{name:?}: root not writable"
        );
        assert!(
            !ev.allowed("file-write-create", &hook),
            "{name:?}: protected path writable"
        );
        assert!(
            !ev.allowed("file-write-create", &outside),
            "{name:?}: outside writable"
        );
        assert!(
            !ev.allowed("file-write-unlink", &root),
            "{name:?}: root can be renamed"
        );
    }
}

#[test]
fn a_held_home_is_unwritable_but_for_the_roots_inside_it() {
    let mut plan = base_plan();
    plan.fs.access = SandboxMode::WorkspaceWrite;
    plan.workspace = HOME.into();
    plan.cwd = HOME.into();
    plan.fs.writable = vec![HOME.into(), PROJ.into(), "/private/tmp".into()];
    plan.fs.held = vec![HOME.into()];
    plan.fs.protected = vec![
        format!("{PROJ}/.git/hooks").into(),
        "/private/tmp/.bashrc".into(),
    ];
    let (r, argv) = rendered(&plan, None);
    let params = check(&r, &argv, &plan.argv);
    let paths = [
        "/Users/alice/.gdbinit",
        "/Users/alice/.lesskey",
        "/Users/alice/.ipython/profile_default/startup/0.py",
        "/Users/alice/other/x",
        "/Users/alice/proj/src/main.rs",
        "/Users/alice/proj/.git/hooks/pre-commit",
        "/private/tmp/scratch",
        "/private/tmp/.bashrc",
    ];
    let bytes: Vec<Vec<u8>> = paths.iter().map(|p| p.as_bytes().to_vec()).collect();
    let ev = Eval::new(&r, &params, &bytes);
    for p in paths {
        let write = ev.allowed("file-write-create", p.as_bytes());
        assert_eq!(write, plan.writable(Path::new(p)), "{p}");
    }
    assert!(ev.allowed("file-write-create", b"/Users/alice/proj/src/main.rs"));
    assert!(!ev.allowed("file-write-create", b"/Users/alice/.gdbinit"));
}
