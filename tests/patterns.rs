//! Every spelling of a `deny_read` / `deny_write` path rule means what it
//! reads as, through the real binary: `./x`, `x/./y`, `x//y`, a trailing `/`
//! or `/.` (the directory and what is below it), a trailing `/**`, `**/x`,
//! absolute and relative, glob and literal. Each form is attacked on both
//! Linux backends, as root and as uid 65534, with the plain absolute path
//! of the same file as the control that is denied too, and runs without the
//! rule (and without dcjail) as the control that reads or writes it. Forms
//! with no clear meaning are refused with 125, naming the key and the
//! pattern; a glob that matches nothing at launch is listed by `explain`
//! and in `--report`; denied domains with the `full` network are refused.
//!
//! `docs/patterns.md` is generated from what these runs observe: with
//! `DCJAIL_WRITE_PATTERN_TABLE=1` the table test writes it, otherwise it
//! checks that the committed file is exactly what it would write.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The files of the fixture workspace and what each holds.
const FILES: [(&str, &str); 4] = [
    ("sub/a.txt", "PATTERN-A-71c4"),
    ("sub/deep/b.txt", "PATTERN-B-2e90"),
    ("other/sub/c.txt", "PATTERN-C-5d41"),
    ("top.txt", "PATTERN-TOP-8a07"),
];

/// A form as written (`<ws>` stands for the workspace's absolute path) and
/// which of `FILES` it must deny.
struct Form {
    written: &'static str,
    denies: [bool; 4],
}

const A: [bool; 4] = [true, false, false, false];
const A_C: [bool; 4] = [true, false, true, false];
const SUB: [bool; 4] = [true, true, false, false];
const ANY_SUB: [bool; 4] = [true, true, true, false];
const ALL: [bool; 4] = [true, true, true, true];

const fn f(written: &'static str, denies: [bool; 4]) -> Form {
    Form { written, denies }
}

/// The plain absolute path of `sub/a.txt`: the control form.
const PLAIN: &str = "<ws>/sub/a.txt";

const FORMS: &[Form] = &[
    f(PLAIN, A),
    f("sub/a.txt", A),
    f("./sub/a.txt", A),
    f("sub/./a.txt", A),
    f("sub//a.txt", A),
    f("sub/deep/../a.txt", A),
    f("sub", SUB),
    f("sub/", SUB),
    f("sub/.", SUB),
    f("./sub", SUB),
    f("<ws>/sub/", SUB),
    f("sub/*.txt", A),
    f("./sub/*.txt", A),
    f("sub/./*.txt", A),
    f("sub//*.txt", A),
    f("<ws>/sub/*.txt", A),
    f("<ws>/./sub/*.txt", A),
    f("sub/**", SUB),
    f("./sub/**", SUB),
    f("sub/**/", SUB),
    f("**/a.txt", A),
    f("./**/a.txt", A),
    f("**/sub/*.txt", A_C),
    f("**/sub", ANY_SUB),
    f("**/sub/", ANY_SUB),
    f("**/sub/.", ANY_SUB),
    f("**/sub/**", ANY_SUB),
    f(".", ALL),
    f("./**", ALL),
    f("**", ALL),
    f("**/.", ALL),
];

/// Forms refused with 125, naming the key and the pattern.
const REFUSED: &[&str] = &["", "sub/../sub/*.txt", "../ws/sub/*.txt", "**/..", "/"];

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A fresh tree `<base>/patterns-…/{ws,policy.toml}`, removed on drop.
struct Tree(PathBuf);

impl Tree {
    fn new(tag: &str) -> Tree {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "patterns-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        let d = scratch::fresh(&name);
        std::fs::create_dir_all(d.join("ws")).unwrap();
        let t = Tree(d);
        t.fill(false);
        t
    }

    fn ws(&self) -> PathBuf {
        self.0.join("ws")
    }

    /// (Re)writes `FILES`, every directory 0755 and file 0644, owned by
    /// uid 65534 when `nobody`, else by root (who holds no capability over
    /// another user's files inside the sandbox).
    fn fill(&self, nobody: bool) {
        for (rel, content) in FILES {
            let p = self.ws().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, content).unwrap();
        }
        let st = Command::new("chown")
            .arg("-R")
            .arg(if nobody { "65534:65534" } else { "0:0" })
            .arg(self.ws())
            .status()
            .unwrap();
        assert!(st.success());
        for d in [&self.0, &self.ws()] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    fn abs(&self, rel: &str) -> PathBuf {
        self.ws().join(rel)
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.abs(rel)).unwrap_or_default()
    }

    /// `written` with `<ws>` replaced by the workspace.
    fn form(&self, written: &str) -> String {
        written.replace("<ws>", &self.ws().to_string_lossy())
    }

    /// A policy file for `backend` in `mode` with `key = [form]` (none when
    /// `form` is `None`), outside the workspace.
    fn policy(&self, backend: &str, mode: &str, key: &str, form: Option<&str>) -> PathBuf {
        let p = self.0.join("policy.toml");
        let rule = match form {
            Some(w) => format!("{key} = [{}]\n", toml_string(&self.form(w))),
            None => String::new(),
        };
        std::fs::write(
            &p,
            format!(
                "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
                 [sandbox]\nmode = \"{mode}\"\nbackend = \"{backend}\"\ntimeout = 60\n\
                 [sandbox.filesystem]\nprotect_defaults = false\n{rule}"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        p
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        scratch::remove(&self.0);
    }
}

fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `PROGRAM ARGS…` in `cwd`, as uid 65534 when `nobody`, killed after two
/// minutes whatever happens.
fn run_as(cwd: &Path, program: &str, args: &[&str], nobody: bool) -> Output {
    let mut c = Command::new("timeout");
    c.args(["-k", "5", "120"]);
    if nobody {
        c.args([
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
        ]);
    }
    c.arg(program)
        .args(args)
        .current_dir(cwd)
        .env_remove("DCJAIL_POLICY")
        .env_remove("DCJAIL_WALK_LIMIT")
        .env_remove("TMPDIR")
        .stdin(Stdio::null());
    c.output().unwrap()
}

fn dcjail(t: &Tree, args: &[&str], nobody: bool) -> Output {
    run_as(&t.ws(), scratch::exe(), args, nobody)
}

fn who(nobody: bool) -> &'static str {
    if nobody {
        "uid 65534"
    } else {
        "root"
    }
}

/// Every user the attacks run as: root and uid 65534 (switching needs
/// root; these tests do not pass without it, rather than skip).
fn each_user(body: impl Fn(bool)) {
    assert!(
        nix::unistd::geteuid().is_root(),
        "tests/patterns.rs runs as root (it switches to uid 65534)"
    );
    for nobody in [false, true] {
        body(nobody);
    }
}

const BACKENDS: [&str; 2] = ["bwrap", "landlock"];
const RAN: &str = "COMMAND-RAN-3f1e";

/// A script that prints each of `FILES` it can read, then `RAN`.
fn cat_script(t: &Tree) -> String {
    let mut s = String::new();
    for (rel, _) in FILES {
        s.push_str(&format!(
            "cat '{}' 2>/dev/null; echo; ",
            t.abs(rel).display()
        ));
    }
    s.push_str(&format!("echo {RAN}"));
    s
}

/// A script that appends to each of `FILES`, then prints `RAN`.
fn write_script(t: &Tree) -> String {
    let mut s = String::new();
    for (rel, _) in FILES {
        s.push_str(&format!(
            "echo HACK >> '{}' 2>/dev/null; ",
            t.abs(rel).display()
        ));
    }
    s.push_str(&format!("echo {RAN}"));
    s
}

/// Which of `FILES` a read-only run with `deny_read = [form]` could not
/// read (`None`: no rule).
fn hidden(t: &Tree, backend: &str, form: Option<&str>, nobody: bool) -> [bool; 4] {
    let p = t.policy(backend, "read-only", "deny_read", form);
    let script = cat_script(t);
    let o = dcjail(
        t,
        &["--policy", p.to_str().unwrap(), "--", "sh", "-c", &script],
        nobody,
    );
    let out = text(&o.stdout);
    assert!(
        o.status.success() && out.contains(RAN),
        "{backend} {} deny_read {form:?}: did not run: {}{out}",
        who(nobody),
        text(&o.stderr)
    );
    FILES.map(|(_, content)| !out.contains(content))
}

/// Which of `FILES` a workspace-write run with `deny_write = [form]` left
/// unchanged, and whether the command ran (landlock refuses, 122, a
/// `deny_write` rule inside a writable root: nothing runs then).
fn kept(t: &Tree, backend: &str, form: Option<&str>, nobody: bool) -> ([bool; 4], bool) {
    t.fill(nobody);
    let p = t.policy(backend, "workspace-write", "deny_write", form);
    let script = write_script(t);
    let o = dcjail(
        t,
        &["--policy", p.to_str().unwrap(), "--", "sh", "-c", &script],
        nobody,
    );
    let out = text(&o.stdout);
    let ran = out.contains(RAN);
    let err = text(&o.stderr);
    if !ran {
        assert_eq!(
            (backend, o.status.code()),
            ("landlock", Some(122)),
            "{backend} {} deny_write {form:?}: did not run: {err}",
            who(nobody)
        );
        assert!(
            err.starts_with("dcjail: sandbox-unavailable: ")
                && err.contains("landlock cannot enforce deny_write"),
            "{err}"
        );
    }
    (FILES.map(|(rel, content)| t.read(rel) == content), ran)
}

#[test]
fn without_dcjail_every_file_is_readable_and_writable_by_both_users() {
    each_user(|nobody| {
        let t = Tree::new("bare");
        t.fill(nobody);
        let o = run_as(&t.ws(), "sh", &["-c", &cat_script(&t)], nobody);
        let out = text(&o.stdout);
        for (rel, content) in FILES {
            assert!(out.contains(content), "{}: {rel}: {out}", who(nobody));
        }
        run_as(&t.ws(), "sh", &["-c", &write_script(&t)], nobody);
        for (rel, content) in FILES {
            assert_eq!(t.read(rel), format!("{content}HACK\n"), "{}", who(nobody));
        }
    });
}

#[test]
fn every_deny_read_form_hides_what_it_reads_as_on_both_backends() {
    each_user(|nobody| {
        for b in BACKENDS {
            let t = Tree::new("read");
            // Controls: without a rule every file is readable; the plain
            // absolute path hides its file.
            assert_eq!(
                hidden(&t, b, None, nobody),
                [false; 4],
                "{b} {}",
                who(nobody)
            );
            assert_eq!(hidden(&t, b, Some(PLAIN), nobody), A, "{b} {}", who(nobody));
            for form in FORMS {
                assert_eq!(
                    hidden(&t, b, Some(form.written), nobody),
                    form.denies,
                    "{b} {} deny_read `{}` (denied: {:?})",
                    who(nobody),
                    form.written,
                    FILES.map(|(rel, _)| rel)
                );
            }
        }
    });
}

#[test]
fn every_deny_write_form_keeps_what_it_reads_as_unchanged_on_both_backends() {
    each_user(|nobody| {
        for b in BACKENDS {
            let t = Tree::new("write");
            let ctx = |w: &str| format!("{b} {} deny_write `{w}`", who(nobody));
            // Control: without a rule the command changes every file.
            let (k, ran) = kept(&t, b, None, nobody);
            assert!(ran && k == [false; 4], "{}: {k:?}", ctx("(none)"));
            // Control: the plain absolute path keeps its file (bwrap), or
            // is refused with nothing run (landlock).
            let (k, ran) = kept(&t, b, Some(PLAIN), nobody);
            assert!(k[0], "{}", ctx(PLAIN));
            assert_eq!(ran, b == "bwrap", "{}", ctx(PLAIN));
            for form in FORMS {
                let (k, ran) = kept(&t, b, Some(form.written), nobody);
                for (i, (rel, _)) in FILES.iter().enumerate() {
                    if form.denies[i] {
                        assert!(k[i], "{}: {rel} was written", ctx(form.written));
                    } else if ran {
                        assert!(!k[i], "{}: {rel} was kept too", ctx(form.written));
                    }
                }
                if b == "bwrap" {
                    assert!(ran, "{}: bwrap enforces every form", ctx(form.written));
                }
            }
        }
    });
}

#[test]
fn a_form_without_a_clear_meaning_is_refused_with_125_naming_it() {
    let t = Tree::new("refused");
    for key in ["deny_read", "deny_write", "allow_read"] {
        for written in REFUSED {
            let marker = t.ws().join("ran");
            let p = t.policy("bwrap", "workspace-write", key, Some(written));
            let o = dcjail(
                &t,
                &[
                    "--policy",
                    p.to_str().unwrap(),
                    "--",
                    "touch",
                    marker.to_str().unwrap(),
                ],
                false,
            );
            let err = text(&o.stderr);
            let ctx = format!("{key} `{written}`: {err}");
            if *written == "/" {
                // Control: `/` is a clear path, accepted (and then the
                // deny_read of the whole filesystem leaves nothing to run).
                assert_ne!(o.status.code(), Some(125), "{ctx}");
                continue;
            }
            assert_eq!(o.status.code(), Some(125), "{ctx}");
            assert!(err.starts_with("dcjail: policy-error: "), "{ctx}");
            assert!(
                err.contains(&format!("`sandbox.filesystem.{key}`")),
                "{ctx}"
            );
            if !written.is_empty() {
                assert!(err.contains(&format!("`{written}`")), "{ctx}");
            }
            assert_eq!(err.lines().count(), 1, "{ctx}");
            assert!(!marker.exists(), "{ctx}: the command ran");
        }
    }
    // The same through the command line.
    let o = dcjail(&t, &["--deny-read", "**/sub/../x", "--", "true"], false);
    assert_eq!(o.status.code(), Some(125), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("`**/sub/../x`"));
}

fn explain(t: &Tree, args: &[&str]) -> serde_json::Value {
    let mut a = vec!["explain"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--", "true"]);
    let o = dcjail(t, &a, false);
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "explain {args:?}: {e}: {}{}",
            text(&o.stdout),
            text(&o.stderr)
        )
    })
}

#[test]
fn a_glob_that_matches_nothing_is_listed_by_explain_and_in_the_report() {
    let t = Tree::new("nothing");
    let args = [
        "--backend",
        "bwrap",
        "--deny-read",
        "**/sub",
        "--deny-read",
        "./sub/*.md",
        "--deny-read",
        "**/no-such-name",
        "--deny-read",
        "nowhere/secret.txt",
    ];
    let want = serde_json::json!([
        {"list": "deny_read", "glob": "./sub/*.md"},
        {"list": "deny_read", "glob": "**/no-such-name"},
    ]);
    let v = explain(&t, &args);
    let w = &v["plan"]["filesystem"]["glob_walk"];
    assert_eq!(v["decision"], "run", "{v}");
    assert_eq!(w["matched_nothing"], want, "{w}");
    // The glob that matches is not listed; the literal path is no glob.
    assert_eq!(w["globs"][0]["count"], 2, "{w}");

    let report = t.0.join("report.json");
    let mut a = vec!["--report", report.to_str().unwrap()];
    a.extend_from_slice(&args);
    a.extend_from_slice(&["--", "true"]);
    let o = dcjail(&t, &a, false);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // Nothing on the terminal: a `**/.env` rule in a project without one
    // would say it before every command.
    assert_eq!(text(&o.stderr), "");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(
        r["plan"]["filesystem"]["glob_walk"]["matched_nothing"],
        want
    );

    // Control: once a file matches, the glob leaves the list.
    std::fs::write(t.ws().join("sub/notes.md"), "x").unwrap();
    let v = explain(&t, &args);
    assert_eq!(
        v["plan"]["filesystem"]["glob_walk"]["matched_nothing"],
        serde_json::json!([{"list": "deny_read", "glob": "**/no-such-name"}])
    );
}

#[test]
fn denied_domains_with_the_full_network_are_refused_and_nothing_runs() {
    let t = Tree::new("net");
    let marker = t.ws().join("ran");
    let m = marker.to_str().unwrap();
    let o = dcjail(
        &t,
        &[
            "--net",
            "full",
            "--deny-domain",
            "example.com",
            "--",
            "touch",
            m,
        ],
        false,
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(125), "{err}");
    assert!(err.starts_with("dcjail: policy-error: "), "{err}");
    for part in [
        "deny_domains",
        "example.com",
        "--net full",
        "--net allowlist",
    ] {
        assert!(err.contains(part), "{part}: {err}");
    }
    assert!(!marker.exists(), "the command ran");
    // The same from a policy file, and in `explain`.
    let p = t.0.join("net.toml");
    std::fs::write(
        &p,
        "[sandbox.network]\nmode = \"full\"\ndeny_domains = [\"example.com\"]\n",
    )
    .unwrap();
    let o = dcjail(
        &t,
        &["--policy", p.to_str().unwrap(), "--", "touch", m],
        false,
    );
    assert_eq!(o.status.code(), Some(125), "{}", text(&o.stderr));
    assert!(!marker.exists());
    let v = explain(&t, &["--net", "full", "--deny-domain", "example.com"]);
    assert_eq!(v["reason"], "policy-error", "{v}");
    assert_eq!(v["refusal_status"], 125, "{v}");

    // Controls: `full` alone runs; denied domains with the allowlist, where
    // the proxy checks them first, are accepted.
    let o = dcjail(&t, &["--net", "full", "--", "sh", "-c", "echo RAN"], false);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "RAN\n");
    let v = explain(
        &t,
        &[
            "--net",
            "allowlist",
            "--allow-domain",
            "example.org",
            "--deny-domain",
            "example.com",
        ],
    );
    assert_eq!(v["decision"], "run", "{v}");
    assert_eq!(
        v["plan"]["network"]["deny_domains"],
        serde_json::json!(["example.com"])
    );
}

/// One row of the table: what `explain` says and what a bwrap run as root
/// could read.
fn row(t: &Tree, written: &str) -> String {
    let ws = t.ws().to_string_lossy().into_owned();
    let shown = |s: &str| s.replace(&ws, "<workspace>");
    let code = |s: &str| {
        if s.is_empty() {
            "(empty)".to_string()
        } else {
            format!("`{}`", s.replace('|', "\\|"))
        }
    };
    let p = t.policy("bwrap", "read-only", "deny_read", Some(written));
    let v = explain(t, &["--policy", p.to_str().unwrap()]);
    if v["decision"] != "run" {
        return format!(
            "| {} | refused ({}) | {} |",
            code(written),
            v["refusal_status"],
            shown(v["message"].as_str().unwrap_or_default()).replace('|', "\\|")
        );
    }
    let rule = v["plan"]["filesystem"]["deny_read"][0]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let glob = &v["plan"]["filesystem"]["glob_walk"]["globs"][0];
    let (kind, count) = if glob.is_null() {
        ("path", "—".to_string())
    } else {
        ("glob", glob["count"].to_string())
    };
    let denied = hidden(t, "bwrap", Some(written), false);
    let cells: Vec<&str> = denied
        .iter()
        .map(|d| if *d { "denied" } else { "" })
        .collect();
    format!(
        "| {} | {kind} | {} | {} | {count} |",
        code(written),
        code(&shown(&rule)),
        cells.join(" | ")
    )
}

fn table() -> String {
    let t = Tree::new("table");
    let mut out = String::from(TABLE_HEAD);
    out.push_str(&format!(
        "| written | kind | read as | {} | globs: matches at launch |\n",
        FILES
            .iter()
            .map(|(rel, _)| format!("`{rel}`"))
            .collect::<Vec<_>>()
            .join(" | ")
    ));
    out.push_str("|---|---|---|---|---|---|---|---|\n");
    for form in FORMS {
        out.push_str(&row(&t, form.written));
        out.push('\n');
    }
    out.push_str(TABLE_REFUSED);
    out.push_str("| written | result | message |\n");
    out.push_str("|---|---|---|\n");
    for written in REFUSED.iter().filter(|w| **w != "/") {
        out.push_str(&row(&t, written));
        out.push('\n');
    }
    out.push_str(TABLE_TAIL);
    out
}

const TABLE_HEAD: &str = "\
# Path patterns: what each form matches

<!-- Generated by tests/patterns.rs (`DCJAIL_WRITE_PATTERN_TABLE=1 cargo test --test patterns`); do not edit by hand. -->

`deny_read`, `deny_write` and `allow_read` (and `--deny-read`,
`--deny-write`, `--allow-read`) take paths and globs. Each is read the way
it looks:

- a relative path or glob starts at the workspace (the worktree root when
  one is set); `~/` starts at your home directory; `/` is absolute;
- `**/x`, written without `./`, is looked for in every root the run grants:
  the workspace, the worktree and the writable roots (in `workspace-write`
  that includes `/tmp` and `$TMPDIR`); `./**/x` stays in the workspace;
- `.` components and repeated slashes are dropped: `./x`, `x/./y`, `x//y`;
- a trailing `/`, `/.` or `/**` names the directory itself, so the rule
  covers the directory and everything below it, including files created
  there later (`sub/`, `sub/.`, `sub/**` are all `sub`);
- a rule on a directory covers everything below it, so `**/sub` denies
  every file under every directory named `sub`;
- `**` alone (and `**/.`, which is the same) matches each of those roots
  itself, so it covers everything in them; `./**` (and `.`) is the
  workspace;
- a literal path may hold `..` (it is resolved, symlinks first); a glob may
  not, and neither may a rule be empty: those are refused with exit status
  125 and a message naming the key and the pattern.

Globs are expanded once, when dcjail starts, on the Linux backends: a glob
that matches nothing then is listed under
`plan.filesystem.glob_walk.matched_nothing` by `dcjail explain` and in the
`--report` file (it is not printed on the terminal, where a `**/.env` rule
in a project without one would be repeated before every command).

The table below is what dcjail does with each form, observed by the tests:
the workspace holds the four files of the columns, the rule is a
`deny_read`, and the run is `bwrap` as root (the same tests check
`landlock` and uid 65534, and `deny_write`, against the same expectations).
\"read as\" is the rule as `dcjail explain` shows it
(`plan.filesystem.deny_read`), a glob's count is its
`plan.filesystem.glob_walk.globs[].count`.

";

const TABLE_REFUSED: &str = "
## Refused forms

";

const TABLE_TAIL: &str = "
The empty form can only be written in a policy file (the command line
refuses an empty value itself).
";

fn docs_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/patterns.md")
}

#[test]
fn docs_patterns_md_is_the_table_these_runs_observe() {
    let want = table();
    if std::env::var_os("DCJAIL_WRITE_PATTERN_TABLE").is_some_and(|v| v == "1") {
        std::fs::write(docs_file(), &want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(docs_file()).unwrap_or_default();
    assert!(
        have == want,
        "docs/patterns.md is out of date; regenerate with\n  \
         DCJAIL_WRITE_PATTERN_TABLE=1 cargo test --test patterns docs_patterns_md"
    );
}
