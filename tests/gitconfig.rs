//! dcjail's reader of git's configuration syntax agrees with git: for
//! generated files, whenever git reads a file, dcjail reads the same keys
//! and values (a file git refuses may be read or refused). Reading less
//! than git would be a hole: an include dcjail missed is a file it would
//! not protect.

#[path = "support/scratch.rs"]
mod scratch;

use dcjail::gitconfig;
use std::process::Command;

/// Pieces a config file is made of, chosen to hit quoting, escapes,
/// continuations, comments and headers.
const PIECES: &[&str] = &[
    "[core]",
    "[Core]",
    "[include]",
    "[includeIf \"gitdir:~/w/\"]",
    "[a \"x\\\"y\"]",
    "[a.B]",
    "[a \"s\"] k = v",
    "[bad",
    "\n",
    "\r\n",
    " ",
    "\t",
    "path = x",
    "hooksPath=.husky/_",
    "fsmonitor = \"./a b\"",
    "k = \"q ; # \"",
    "k = v ; c",
    "k = v # c",
    "k",
    "k = a\\\n b",
    "k = \\t\\n\\\\\\\"",
    "k = \\q",
    "k = \"open",
    "# comment",
    "; comment",
    "k = x\\",
    "K-2 = y",
    "1k = z",
    "k = 'single'",
    "=",
    "k=",
];

fn git_list(file: &std::path::Path) -> Option<Vec<(String, Option<Vec<u8>>)>> {
    let o = Command::new("git")
        .args(["config", "--no-includes", "-z", "--list", "-f"])
        .arg(file)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    if !o.status.success() {
        return None;
    }
    let mut out = Vec::new();
    for rec in o.stdout.split(|c| *c == 0).filter(|r| !r.is_empty()) {
        match rec.iter().position(|c| *c == b'\n') {
            Some(i) => out.push((
                String::from_utf8_lossy(&rec[..i]).into_owned(),
                Some(rec[i + 1..].to_vec()),
            )),
            None => out.push((String::from_utf8_lossy(rec).into_owned(), None)),
        }
    }
    Some(out)
}

fn ours(text: &[u8]) -> Option<Vec<(String, Option<Vec<u8>>)>> {
    let entries = gitconfig::parse(text)?;
    Some(
        entries
            .into_iter()
            .map(|e| {
                let mut k = e.section.clone();
                if let Some(s) = &e.sub {
                    k.push('.');
                    k.push_str(&String::from_utf8_lossy(s));
                }
                if !k.is_empty() {
                    k.push('.');
                }
                k.push_str(&e.name);
                (k, e.value)
            })
            .collect(),
    )
}

#[test]
fn reads_what_git_reads() {
    let dir = scratch::fresh(&format!("gitconfig-{}", std::process::id()));
    let file = dir.join("config");
    let mut s: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: usize| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s % n as u64) as usize
    };
    let mut mismatches = Vec::new();
    let mut read_by_git = 0;
    for _ in 0..300 {
        let mut text = String::new();
        for _ in 0..(1 + next(12)) {
            text.push_str(PIECES[next(PIECES.len())]);
            if next(3) > 0 {
                text.push('\n');
            }
        }
        std::fs::write(&file, &text).unwrap();
        let theirs = git_list(&file);
        if let Some(theirs) = theirs {
            read_by_git += 1;
            let mine = ours(text.as_bytes());
            if mine.as_ref() != Some(&theirs) {
                mismatches.push(format!(
                    "{text:?}\n  git:    {theirs:?}\n  dcjail: {mine:?}"
                ));
            }
        }
    }
    scratch::remove(&dir);
    eprintln!("{read_by_git} of 300 files read by git");
    assert!(
        read_by_git > 50,
        "too few files git accepted: {read_by_git}"
    );
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
