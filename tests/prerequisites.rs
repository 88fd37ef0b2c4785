//! Every program the tests run is installed by scripts/test.sh (its
//! `for t in program:package ...` list) or comes with every Debian system
//! (an Essential package): a fresh machine that runs the README's test
//! command has them all, and a test that starts one never fails for a
//! missing install step (issue 29: `setfattr` was run but never installed).
//!
//! The programs are read from the test sources: each `Command::new` with a
//! literal program (or a `const` naming one) and each `scratch::need` call.
//! Programs inside shell strings are not parsed; a test that needs one
//! checks it with `scratch::need`, which this test then sees.

#[path = "support/scratch.rs"]
mod scratch;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Programs of Debian's Essential packages (coreutils, util-linux,
/// bsdutils, diffutils, findutils, grep, sed, tar, dash, bash): on every
/// Debian system, never installed by scripts/test.sh.
const ESSENTIAL: &[&str] = &[
    "sh", "bash", "env", "true", "false", "cat", "chmod", "chown", "cp", "mv", "rm", "mkdir",
    "mkfifo", "ln", "ls", "id", "sleep", "touch", "test", "timeout", "stat", "readlink", "head",
    "tail", "sort", "wc", "printf", "echo", "kill", "mktemp", "realpath", "dd", "sync", "nproc",
    "setsid", "script", "diff", "find", "xargs", "grep", "sed", "tar",
];

/// Every `.rs` file of tests/ and tests/support/, with its text.
fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut out = Vec::new();
    for dir in [root.clone(), root.join("support")] {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "rs")
                && p.file_name() != Some("prerequisites.rs".as_ref())
            {
                let name = p.strip_prefix(&root).unwrap().display().to_string();
                out.push((name, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// The string literal at the start of `s` (after a `"`), without escapes.
fn literal(s: &str) -> Option<&str> {
    let end = s.find('"')?;
    let lit = &s[..end];
    (!lit.contains('\\')).then_some(lit)
}

/// `const NAME: &str = "...";` in `text`, by name.
fn consts(text: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix("const ") else {
            continue;
        };
        let Some((name, value)) = rest.split_once(": &str = \"") else {
            continue;
        };
        if let Some(v) = literal(value) {
            m.insert(name.trim().to_string(), v.to_string());
        }
    }
    m
}

/// The programs `text` runs: `Command::new("p")`, `Command::new(CONST)`
/// and `need("p")`, by their file names (`/usr/bin/python3` is python3).
fn programs(text: &str) -> BTreeSet<String> {
    let consts = consts(text);
    let mut found = BTreeSet::new();
    let command = concat!("Command", "::new(");
    let need = concat!("need", "(\"");
    for (i, _) in text.match_indices(command) {
        let arg = &text[i + command.len()..];
        let program = if let Some(lit) = arg.strip_prefix('"') {
            literal(lit).map(str::to_string)
        } else {
            let name: String = arg
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || *c == '_' || c.is_ascii_digit())
                .collect();
            (!name.is_empty() && arg[name.len()..].starts_with(')'))
                .then(|| consts.get(&name).cloned())
                .flatten()
        };
        found.extend(program);
    }
    for (i, _) in text.match_indices(need) {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        found.extend(literal(&text[i + need.len()..]).map(str::to_string));
    }
    found
        .into_iter()
        .map(|p| p.rsplit('/').next().unwrap_or(&p).to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

#[test]
fn every_program_the_tests_run_is_installed_by_scripts_test_sh() {
    let installed: BTreeSet<String> = scratch::installed_by_test_sh()
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    let mut missing = Vec::new();
    let mut seen = 0;
    for (file, text) in sources() {
        for p in programs(&text) {
            seen += 1;
            if !installed.contains(&p) && !ESSENTIAL.contains(&p.as_str()) {
                missing.push(format!("{p} (run in tests/{file})"));
            }
        }
    }
    // The scan itself works: these are run by tests that exist.
    assert!(seen > 40, "only {seen} programs found: the scan is broken");
    assert!(
        missing.is_empty(),
        "run by the tests but not installed by scripts/test.sh: add `program:package` to its \
         `for t in ...` list:\n  {}",
        missing.join("\n  ")
    );
}

/// The scan finds what it claims to (so the test above can fail).
#[test]
fn the_scan_finds_commands_constants_and_need_calls() {
    let text = concat!(
        "const PY: &str = \"/usr/bin/python3\";\n",
        "Command",
        "::new(\"setfattr\"); Command",
        "::new(PY); Command",
        "::new(bin());\n",
        "scratch::",
        "need(\"zsh\"); ",
        "if ",
        "need(\"fish\") {}; ",
        "my_need(\"no\");\n",
    );
    let got: Vec<String> = programs(text).into_iter().collect();
    assert_eq!(got, ["fish", "python3", "setfattr", "zsh"]);
}

/// scripts/test.sh's list is read whole, across its continued lines.
#[test]
fn the_install_list_is_read_from_scripts_test_sh() {
    let list = scratch::installed_by_test_sh();
    for (p, pkg) in [
        ("bwrap", "bubblewrap"),
        ("setfattr", "attr"),
        ("ip", "iproute2"),
    ] {
        assert!(
            list.iter().any(|(a, b)| a == p && b == pkg),
            "{p}:{pkg} not in {list:?}"
        );
    }
}

/// Run by `the_requirement_check_fails_under_require_and_skips_visibly`
/// in a child process (with PATH emptied): zsh, which scripts/test.sh
/// installs, is missing there.
#[test]
#[ignore = "run by the_requirement_check_fails_under_require_and_skips_visibly"]
fn probe_a_missing_program() {
    assert!(!scratch::need("zsh"));
    eprintln!("PROBE-CONTINUED");
}

/// `scratch::need` with zsh missing: under DCJAIL_TEST_REQUIRE=1 the test
/// fails naming the install line; without it, it says SKIPPED with the same
/// line and goes on.
#[test]
fn the_requirement_check_fails_under_require_and_skips_visibly() {
    let me = std::env::current_exe().unwrap();
    let run = |require: Option<&str>| {
        let mut c = std::process::Command::new(&me);
        c.args([
            "--ignored",
            "--exact",
            "probe_a_missing_program",
            "--nocapture",
        ])
        .env("PATH", "")
        .env_remove("DCJAIL_TEST_REQUIRE");
        if let Some(v) = require {
            c.env("DCJAIL_TEST_REQUIRE", v);
        }
        let o = c.output().unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (ok, err) = run(Some("1"));
    assert!(!ok, "{err}");
    assert!(
        err.contains("missing prerequisite: `zsh` is not installed")
            && err.contains("apt-get install -y zsh"),
        "{err}"
    );
    assert!(!err.contains("PROBE-CONTINUED"), "{err}");
    for require in [None, Some("0")] {
        let (ok, err) = run(require);
        assert!(ok, "{require:?}: {err}");
        assert!(
            err.contains("SKIPPED at tests/prerequisites.rs:")
                && err.contains("apt-get install -y zsh")
                && err.contains("PROBE-CONTINUED"),
            "{require:?}: {err}"
        );
    }
}
