//! Advice is data, never text a shell re-reads; everything dcjail prints to
//! a terminal is escaped and bounded. Real denials from the real binary,
//! with names a hostile command chose: the suggestion, applied exactly as
//! an agent applies it (the `flags` array as argv, the `command_line`
//! through `sh -c`), widens nothing but the one directory and runs
//! nothing, where the old joining (reproduced here as the control) ran
//! `touch` on the host and switched the run to full access; names that
//! cannot be shown safely get no suggestion; and the summary line a real
//! terminal (a pty) receives holds no escape sequence, no line break in
//! its middle, no bidirectional or invisible character, and is bounded.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use serde_json::Value;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The names a hostile command makes in `$HOME`: each would widen the
/// run or run a command if a suggestion carrying it were re-read by a
/// shell.
const INJECTED: [&str; 4] = [
    ".npm --sandbox-mode danger-full-access --net full",
    "$(touch ${HOME}${IFS}pwned)",
    "`touch pwned2`;x",
    "a'b; touch pwned3 #\"",
];

struct Tree {
    root: PathBuf,
}

impl Tree {
    fn new(name: &str) -> Tree {
        let root = scratch::fresh(&format!("advice-{name}"));
        for d in ["ws", "home"] {
            std::fs::create_dir(root.join(d)).unwrap();
        }
        Tree { root }
    }
    fn ws(&self) -> PathBuf {
        self.root.join("ws")
    }
    fn home(&self) -> PathBuf {
        self.root.join("home")
    }
    fn report(&self) -> PathBuf {
        self.root.join("report.json")
    }
    /// dcjail with HOME in the tree, started in the workspace.
    fn dcjail(&self) -> Command {
        let mut c = Command::new(scratch::exe());
        c.current_dir(self.ws())
            .env("HOME", self.home())
            .stdin(Stdio::null());
        c
    }
    /// Every `pwned*` file anywhere in the tree.
    fn pwned(&self) -> Vec<PathBuf> {
        let mut found = Vec::new();
        let mut todo = vec![self.root.clone()];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                if e.file_name().to_string_lossy().starts_with("pwned") {
                    found.push(e.path());
                }
                if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                    todo.push(e.path());
                }
            }
        }
        found
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        scratch::remove(&self.root);
    }
}

/// The options of every run here: bwrap, the tree's workspace, and the
/// mode from a policy file (as an agent's setup gives it), so that an
/// option on the line could still change it.
use scratch::{output_within as output, text};

fn base(t: &Tree) -> Vec<String> {
    let policy = t.root.join("policy.toml");
    if !policy.exists() {
        std::fs::write(
            &policy,
            "[sandbox]\nmode = \"workspace-write\"\n[permission]\napproval = \"granted\"\n",
        )
        .unwrap();
    }
    [
        "--backend".to_string(),
        "bwrap".into(),
        "--policy".into(),
        policy.display().to_string(),
        "--workspace".into(),
        t.ws().display().to_string(),
    ]
    .into()
}

/// Runs the hostile command: `mkdir "$HOME/NAME"` for each name (given as
/// arguments, so no shell reads them), recorded in the report.
fn record(t: &Tree, names: &[OsString], also: &str) -> Value {
    let mut c = t.dcjail();
    c.args(base(t))
        .arg("--report")
        .arg(t.report())
        .args(["--", "sh", "-c"])
        .arg(format!(
            "for n; do mkdir -- \"$HOME/$n\"; done 2>/dev/null; {also} echo marker"
        ))
        .arg("sh")
        .args(names);
    let o = output(c, 120);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("marker"),
        "{}",
        text(&o)
    );
    serde_json::from_str(&std::fs::read_to_string(t.report()).unwrap()).unwrap()
}

fn explain_denials(t: &Tree) -> (Value, Vec<u8>) {
    let mut c = t.dcjail();
    c.args(["explain", "--denials"]).arg(t.report());
    let o = output(c, 60);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    (serde_json::from_slice(&o.stdout).unwrap(), o.stdout)
}

/// `dcjail explain` of the base run plus `extra` (argv), or of the base
/// run plus `line` spliced into a `sh -c` command line.
fn explain_plan(t: &Tree, extra: &[String], line: Option<&str>) -> Value {
    let o = match line {
        None => {
            let mut c = t.dcjail();
            c.arg("explain")
                .args(base(t))
                .args(extra)
                .args(["--", "true"]);
            output(c, 60)
        }
        Some(line) => {
            let mut c = Command::new("sh");
            c.current_dir(t.ws())
                .env("HOME", t.home())
                .stdin(Stdio::null())
                .arg("-c")
                .arg(format!(
                    "{} explain {} {line} -- true",
                    scratch::exe(),
                    base(t).join(" ")
                ));
            output(c, 60)
        }
    };
    serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", text(&o)))
}

fn writable(plan: &Value) -> Vec<String> {
    plan["plan"]["filesystem"]["writable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn an_injected_suggestion_applied_as_an_agent_does_widens_nothing_and_runs_nothing() {
    let t = Tree::new("inject");
    let names: Vec<OsString> = INJECTED.iter().map(OsString::from).collect();
    // One more: a file named directly in $HOME, which only $HOME itself
    // would allow: no suggestion at all (never a directory made in its
    // place).
    let rep = record(&t, &names, "touch \"$HOME/.npm --net full\" 2>/dev/null;");
    assert!(t.pwned().is_empty(), "the run itself: {:?}", t.pwned());
    let list = rep["denials"].as_array().unwrap();
    for n in INJECTED {
        let abs = t.home().join(n).display().to_string();
        let d = list
            .iter()
            .find(|d| d["resolved"] == abs.as_str())
            .unwrap_or_else(|| panic!("no denial of {abs}: {list:#?}"));
        assert_eq!(d["fix"]["allow_write"], format!("~/{n}").as_str(), "{d}");
        assert_eq!(d["fix"]["sandbox_mode"], Value::Null, "{d}");
        assert_eq!(
            strings(&d["fix"]["mkdir_first"]),
            ["mkdir", "-p", "--", abs.as_str()],
            "{d}"
        );
    }
    let file = t.home().join(".npm --net full").display().to_string();
    let d = list
        .iter()
        .find(|d| d["resolved"] == file.as_str() && d["op"] != "utimensat")
        .unwrap_or_else(|| panic!("no denial of {file}: {list:#?}"));
    assert_eq!(d["fix"], Value::Null, "{d}");
    assert!(
        d["why_not"]
            .as_str()
            .unwrap()
            .contains("home directory itself"),
        "{d}"
    );

    let (advice, _) = explain_denials(&t);
    let flags = strings(&advice["flags"]);
    let line = advice["command_line"].as_str().unwrap().to_string();
    let mkdir = strings(&advice["mkdir_first"]);
    let mut want_flags = Vec::new();
    for n in INJECTED {
        want_flags.extend(["--allow-write".to_string(), format!("~/{n}")]);
    }
    assert_eq!(flags, want_flags);
    assert_eq!(&mkdir[..3], ["mkdir", "-p", "--"]);

    // The agent makes the directories (argv, no shell), then applies the
    // flags as argv and the line through a shell.
    let o = output(
        {
            let mut c = Command::new(&mkdir[0]);
            c.args(&mkdir[1..]).current_dir(t.ws());
            c
        },
        30,
    );
    assert!(o.status.success(), "{}", text(&o));
    let before = explain_plan(&t, &[], None);
    let by_argv = explain_plan(&t, &flags, None);
    let by_line = explain_plan(&t, &[], Some(&line));
    assert!(t.pwned().is_empty(), "{line}: ran {:?}", t.pwned());
    let mut want_roots = writable(&before);
    for n in INJECTED {
        want_roots.push(t.home().join(n).display().to_string());
    }
    want_roots.sort();
    for (how, after) in [("flags", &by_argv), ("command_line", &by_line)] {
        assert_eq!(after["decision"], "run", "{how}: {after}");
        let fs = &after["plan"]["filesystem"];
        assert_eq!(
            fs["access"], before["plan"]["filesystem"]["access"],
            "{how}"
        );
        assert_eq!(after["plan"]["network"], before["plan"]["network"], "{how}");
        let mut got = writable(after);
        got.sort();
        assert_eq!(
            got, want_roots,
            "{how}: only the named directories are added"
        );
    }
    // And the change does what it says: the same hostile run now makes
    // its directories' contents, through the line as a shell reads it.
    let mut c = Command::new("sh");
    c.current_dir(t.ws())
        .env("HOME", t.home())
        .stdin(Stdio::null())
        .arg("-c")
        .arg(format!(
            "{} {} {line} -- sh -c 'for n; do : > \"$HOME/$n/f\"; done' sh \"$@\"",
            scratch::exe(),
            base(&t).join(" ")
        ))
        .arg("sh")
        .args(INJECTED);
    let o = output(c, 120);
    assert!(o.status.success(), "{}", text(&o));
    for n in INJECTED {
        assert!(t.home().join(n).join("f").exists(), "{n}: {}", text(&o));
    }
    assert!(t.pwned().is_empty(), "{:?}", t.pwned());

    // Control: the old joining (the flags as they are, with spaces) of the
    // first two names read by the same shell runs `touch` on the host and
    // switches the run to full access with the network: what the
    // assertions above rule out.
    let naive = flags[..4].join(" ");
    let old = explain_plan(&t, &[], Some(&naive));
    assert!(
        !t.pwned().is_empty(),
        "the control did not run touch: the test cannot fail"
    );
    assert_eq!(
        old["plan"]["filesystem"]["access"], "danger-full-access",
        "{old}"
    );
    assert_eq!(old["plan"]["network"]["mode"], "full", "{old}");
}

/// Names holding what cannot be shown safely: each gets no suggestion
/// (`fix` null, `why_not` says why), and `explain --denials` prints no
/// such character.
#[test]
fn a_name_that_cannot_be_shown_safely_is_reported_not_suggested() {
    let t = Tree::new("unshowable");
    let names: Vec<OsString> = vec![
        "esc\u{1b}]52;c;aGk=\u{7}".into(),
        "title\u{1b}]0;owned\u{1b}\\".into(),
        "line\nbreak".into(),
        "cr\rdcjail: ok".into(),
        "bidi\u{202e}gpj.exe".into(),
        "iso\u{2066}x".into(),
        "zw\u{200b}sp".into(),
        "c1\u{9b}31m".into(),
        OsString::from_vec(b"not-utf8-\xff".to_vec()),
    ];
    let rep = record(&t, &names, "");
    let list = rep["denials"].as_array().unwrap();
    let mine: Vec<&Value> = list.iter().filter(|d| d["op"] != "utimensat").collect();
    assert_eq!(mine.len(), names.len(), "{list:#?}");
    for d in &mine {
        assert_eq!(d["fix"], Value::Null, "{d}");
        assert_eq!(d["allow"], Value::Null, "{d}");
        assert!(
            d["why_not"]
                .as_str()
                .unwrap()
                .contains("cannot be shown safely"),
            "{d}"
        );
    }
    let (advice, raw) = explain_denials(&t);
    assert!(strings(&advice["flags"]).is_empty(), "{advice}");
    assert!(strings(&advice["mkdir_first"]).is_empty(), "{advice}");
    assert_eq!(advice["cannot"].as_array().unwrap().len(), names.len());
    assert_clean(&String::from_utf8(raw).unwrap(), true);
}

/// No byte of `s` a terminal acts on or hides: ESC, BEL, C1, DEL, CR, a
/// LF (unless `lf_ok`: pretty JSON), bidirectional and zero-width
/// characters.
fn assert_clean(s: &str, lf_ok: bool) {
    for (i, c) in s.char_indices() {
        let bad = match c {
            '\n' => !lf_ok,
            '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
            '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
            '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{61c}' => true,
            _ => false,
        };
        assert!(!bad, "{:?} at {i} in {s:?}", c);
    }
}

/// Runs `argv` with stderr on a new pty (python3's `pty`), stdout and
/// stdin elsewhere; returns every byte the terminal received.
fn on_a_pty(t: &Tree, argv: &[OsString]) -> Vec<u8> {
    let script = r#"
import os, pty, select, subprocess, sys, time
m, s = pty.openpty()
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=s)
os.close(s)
out = b""
end = time.time() + 120
while time.time() < end:
    r, _, _ = select.select([m], [], [], 1)
    if r:
        try:
            d = os.read(m, 65536)
        except OSError:
            break
        if not d:
            break
        out += d
    elif p.poll() is not None:
        break
if p.poll() is None:
    p.kill()
p.wait()
sys.stdout.buffer.write(out)
"#;
    assert!(
        Command::new("python3").arg("-V").output().is_ok(),
        "python3 is needed for the pty: apt-get install -y python3"
    );
    let mut c = Command::new("python3");
    c.current_dir(t.ws())
        .env("HOME", t.home())
        .arg("-c")
        .arg(script)
        .args(argv);
    let o = output(c, 180);
    assert!(o.status.success(), "{}", text(&o));
    o.stdout
}

#[test]
fn the_summary_line_a_terminal_receives_holds_no_control_bidi_or_invisible_character_and_is_bounded(
) {
    let t = Tree::new("pty");
    let long = "L".repeat(250);
    let sets: [Vec<OsString>; 3] = [
        vec![
            "\u{1b}]52;c;aGk=\u{7}clip".into(),
            "x\u{202e}gpj.exe".into(),
            "\u{1b}[2K\rdcjail: nothing was blocked\n".into(),
        ],
        vec![
            "\u{1b}]0;title\u{7}".into(),
            "zero\u{200b}width\u{feff}\u{2066}".into(),
            "c1\u{9b}1;31m\u{7f}".into(),
        ],
        (1..=4).map(|i| format!("{long}{i}").into()).collect(),
    ];
    let run = |names: &[OsString], quiet: bool| -> String {
        let mut argv: Vec<OsString> = vec![scratch::exe().into()];
        argv.extend(base(&t).into_iter().map(OsString::from));
        argv.extend(["--", "sh", "-c"].map(OsString::from));
        argv.push(if quiet {
            "for n; do mkdir -- \"$HOME/$n\" 2>/dev/null; done".into()
        } else {
            "for n; do printf '%s' \"$n\" >&2; done".into()
        });
        argv.push("sh".into());
        argv.extend(names.iter().cloned());
        let got = on_a_pty(&t, &argv);
        for n in names {
            let _ = std::fs::remove_dir(t.home().join(n));
        }
        String::from_utf8(got).expect("the terminal got UTF-8")
    };
    // Control: the capture sees what a name carries when it is written
    // raw (here by the command itself).
    let raw = run(&sets[0], false);
    assert!(
        raw.contains('\u{1b}') && raw.contains('\u{202e}') && raw.contains('\r'),
        "the pty capture does not see raw bytes: the test cannot fail"
    );
    // dcjail's own line: everything the terminal gets when the command
    // says nothing.
    for (i, names) in sets.iter().enumerate() {
        let s = run(names, true);
        let line = s
            .strip_suffix("\r\n")
            .unwrap_or_else(|| panic!("not one line ending the output: {s:?}"));
        assert!(line.starts_with("dcjail: "), "{line:?}");
        assert_clean(line, false);
        assert!(
            line.chars().count() <= 1100,
            "{} characters: {line}",
            line.chars().count()
        );
        // What the names were is still readable, escaped.
        match i {
            0 => assert!(
                line.contains("\\u{202e}") && line.contains("\\u{1b}]52") && line.contains("\\r"),
                "{line}"
            ),
            1 => assert!(
                line.contains("\\u{200b}") && line.contains("\\u{9b}") && line.contains("\\u{7f}"),
                "{line}"
            ),
            _ => assert!(
                line.contains("characters]"),
                "the long names are cut: {line}"
            ),
        }
    }
}

#[test]
fn a_report_path_with_controls_is_escaped_in_the_refusal_line() {
    let t = Tree::new("refusal");
    let mut c = t.dcjail();
    c.args(["explain", "--denials"]).arg(OsStr::from_bytes(
        b"/nowhere/\x1b]0;x\x07\xe2\x80\xae\n.json",
    ));
    let o = output(c, 30);
    assert_eq!(o.status.code(), Some(125), "{}", text(&o));
    let err = String::from_utf8(o.stderr).unwrap();
    let line = err.strip_suffix('\n').unwrap();
    assert_clean(line, false);
    assert!(line.starts_with("dcjail: usage-error: "), "{line}");
}
