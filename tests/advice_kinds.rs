//! Every kind of suggestion the denial report makes, followed as an agent
//! follows it: a real program (vim, less, git, gpg, coreutils) is refused
//! under dcjail with `--report`; `dcjail explain --denials` turns the
//! report into `flags` and `mkdir_first`; the directories are made (argv,
//! no shell), the flags added, the same command run again. The rerun must
//! work, and the flags must open exactly the directory named (the plan's
//! writable roots compared before and after) — and a path the program did
//! not mean (a file, a temporary name, a directory git makes a repository
//! in) gets no suggestion, with why. As root and as uid 65534, bwrap.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use scratch::{output_within as output, text};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

struct Tree {
    root: PathBuf,
    nobody: bool,
    /// bwrap, or landlock (which cannot hold protected paths inside a
    /// root: its runs go with --no-protect-defaults).
    backend: &'static str,
    /// Beside the tree, not in it: a suggestion may open the tree's top,
    /// and landlock refuses a policy file inside a writable root.
    policy: PathBuf,
}

impl Tree {
    fn new(name: &str, nobody: bool) -> Tree {
        let who = if nobody { "nobody" } else { "caller" };
        let root = scratch::fresh(&format!("kinds-{name}-{who}"));
        for d in ["home", "ws"] {
            std::fs::create_dir(root.join(d)).unwrap();
        }
        let policy = scratch::fresh(&format!("kinds-{name}-{who}-policy")).join("policy.toml");
        std::fs::write(
            &policy,
            "[sandbox]\nmode = \"workspace-write\"\n[permission]\napproval = \"granted\"\n",
        )
        .unwrap();
        let t = Tree {
            root,
            nobody,
            backend: "bwrap",
            policy,
        };
        t.own();
        t
    }
    fn home(&self) -> PathBuf {
        self.root.join("home")
    }
    fn ws(&self) -> PathBuf {
        self.root.join("ws")
    }
    fn report(&self) -> PathBuf {
        self.root.join("report.json")
    }
    /// Gives the tree to uid 65534 when the commands run as it.
    fn own(&self) {
        if self.nobody {
            let o = Command::new("chown")
                .args(["-R", "65534:65534"])
                .arg(&self.root)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", text(&o));
        }
    }
    /// `argv` as the tree's user, in the workspace, with its home and a
    /// fixed git identity (no global git config: it would be protected).
    fn cmd(&self, argv: &[&str]) -> Command {
        let mut c = scratch::command_as(&self.ws(), self.nobody, argv);
        c.env("HOME", self.home())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "T")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "T")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
            .env("TERM", "xterm")
            .env("LC_ALL", "C");
        for v in [
            "GNUPGHOME",
            "XDG_CACHE_HOME",
            "XDG_DATA_HOME",
            "XDG_CONFIG_HOME",
            "XDG_STATE_HOME",
            "XDG_RUNTIME_DIR",
            "LESSHISTFILE",
            "VIMINIT",
        ] {
            c.env_remove(v);
        }
        c
    }
    /// `argv` without dcjail; it must work (the control of every test).
    fn host(&self, argv: &[&str]) -> Output {
        let o = output(self.cmd(argv), 120);
        assert!(o.status.success(), "{argv:?} without dcjail: {}", text(&o));
        o
    }
    fn base(&self) -> Vec<String> {
        let mut v: Vec<String> = [
            "--backend",
            self.backend,
            "--policy",
            &self.policy.display().to_string(),
            "--workspace",
            &self.ws().display().to_string(),
        ]
        .map(String::from)
        .into();
        if self.backend == "landlock" {
            v.push("--no-protect-defaults".into());
        }
        v
    }
    /// `argv` under dcjail with `flags` added (and a report when asked).
    fn jailed(&self, flags: &[String], report: bool, argv: &[&str]) -> Output {
        let exe = scratch::exe();
        let mut words: Vec<String> = vec![exe.to_string()];
        words.extend(self.base());
        words.extend(flags.iter().cloned());
        if report {
            let _ = std::fs::remove_file(self.report());
            words.extend(["--report".into(), self.report().display().to_string()]);
        }
        words.push("--".into());
        words.extend(argv.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = words.iter().map(String::as_str).collect();
        output(self.cmd(&refs), 120)
    }
    /// Records `argv` under dcjail: its output and the report's denials.
    fn record(&self, argv: &[&str]) -> (Output, Vec<Value>) {
        let o = self.jailed(&[], true, argv);
        let text_of = std::fs::read_to_string(self.report())
            .unwrap_or_else(|e| panic!("no report ({e}): {}", text(&o)));
        let rep: Value = serde_json::from_str(&text_of).unwrap();
        (o, rep["denials"].as_array().unwrap().clone())
    }
    /// `dcjail explain --denials` of the last report.
    fn advice(&self) -> Value {
        let o = output(
            self.cmd(&[
                scratch::exe(),
                "explain",
                "--denials",
                &self.report().display().to_string(),
            ]),
            60,
        );
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    }
    /// Follows the advice as an agent does: makes `mkdir_first` (argv, as
    /// the user, outside the sandbox) and returns the flags to add.
    fn apply(&self, advice: &Value) -> Vec<String> {
        let mk = strings(&advice["mkdir_first"]);
        if !mk.is_empty() {
            let refs: Vec<&str> = mk.iter().map(String::as_str).collect();
            self.host(&refs);
        }
        strings(&advice["flags"])
    }
    /// The writable roots the flags add to the base run's plan.
    fn widened(&self, flags: &[String]) -> Vec<String> {
        let roots = |extra: &[String]| -> Vec<String> {
            let mut words: Vec<String> = vec![scratch::exe().into(), "explain".into()];
            words.extend(self.base());
            words.extend(extra.iter().cloned());
            words.extend(["--".into(), "true".into()]);
            let refs: Vec<&str> = words.iter().map(String::as_str).collect();
            let o = output(self.cmd(&refs), 60);
            let v: Value =
                serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", text(&o)));
            strings(&v["plan"]["filesystem"]["writable"])
        };
        let before = roots(&[]);
        roots(flags)
            .into_iter()
            .filter(|r| !before.contains(r))
            .collect()
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        scratch::remove(&self.root);
        if let Some(d) = self.policy.parent() {
            scratch::remove(d);
        }
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

fn ok(o: &Output) {
    assert!(o.status.success(), "{}", text(o));
}

fn failed(o: &Output) {
    assert!(
        !o.status.success(),
        "ran through without the change: {}",
        text(o)
    );
}

/// The denials of `path` (its `resolved`).
fn of<'a>(list: &'a [Value], path: &Path) -> Vec<&'a Value> {
    let p = path.display().to_string();
    list.iter()
        .filter(|d| d["resolved"] == p.as_str())
        .collect()
}

/// Each user with each backend (the tests whose paths need no protected
/// entry to stay read-only run under landlock too).
fn both() -> Vec<(&'static bool, &'static str)> {
    scratch::users()
        .iter()
        .flat_map(|u| [(u, "bwrap"), (u, "landlock")])
        .collect()
}

fn need(program: &str) {
    let o = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{program} is missing: scripts/test.sh installs it"
    );
}

fn as_str(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

#[test]
fn vim_s_viminfo_is_a_file_and_gets_no_directory_made() {
    need("vim.basic");
    let v = Command::new("vim.basic").arg("--version").output().unwrap();
    assert!(
        String::from_utf8_lossy(&v.stdout).contains("+viminfo"),
        "this vim keeps no viminfo (vim-tiny?): scripts/test.sh installs vim"
    );
    for &nobody in scratch::users() {
        // Fresh (vim writes ~/.viminfo) and with one there (vim writes
        // ~/.viminfo.tmp and renames it over ~/.viminfo).
        for existing in [false, true] {
            let t = Tree::new(&format!("vim-{existing}"), nobody);
            std::fs::write(t.ws().join("f.txt"), "one\ntwo\n").unwrap();
            t.own();
            let vim = ["vim.basic", "-N", "-es", "-c", "1d", "-c", "wq", "f.txt"];
            if existing {
                t.host(&vim);
                assert!(t.home().join(".viminfo").is_file());
                std::fs::write(t.ws().join("f.txt"), "one\ntwo\n").unwrap();
                t.own();
            }
            let before = std::fs::read(t.home().join(".viminfo")).ok();
            let (o, list) = t.record(&vim);
            ok(&o);
            // The edit itself is the one vim makes without dcjail.
            assert_eq!(
                std::fs::read_to_string(t.ws().join("f.txt")).unwrap(),
                "two\n"
            );
            let name = if existing { ".viminfo.tmp" } else { ".viminfo" };
            let ds = of(&list, &t.home().join(name));
            assert!(!ds.is_empty(), "no denial of ~/{name}: {list:#?}");
            for d in &list {
                assert_eq!(d["fix"], Value::Null, "{d}");
            }
            let why = as_str(&ds[0]["why_not"]);
            assert!(why.contains("directly in the home directory"), "{why}");
            if existing {
                assert!(why.contains("temporary name for `~/.viminfo`"), "{why}");
            }
            let advice = t.advice();
            assert!(strings(&advice["flags"]).is_empty(), "{advice}");
            assert!(strings(&advice["mkdir_first"]).is_empty(), "{advice}");
            // ~/.viminfo is what it was: a file, or nothing.
            assert_eq!(std::fs::read(t.home().join(".viminfo")).ok(), before);
            assert!(!t.home().join(".viminfo").is_dir());
        }
    }
}

#[test]
fn less_s_temporary_history_name_maps_to_lesshst_and_gets_nothing() {
    need("less");
    need("script");
    for &nobody in scratch::users() {
        let t = Tree::new("less", nobody);
        std::fs::write(t.ws().join("f.txt"), "alpha\nbeta\n").unwrap();
        t.own();
        // A search, then quit: less keeps its history in ~/.lesshst,
        // written as ~/.lesshsQ and renamed.
        let run = |jailed: bool| -> Output {
            let mut words: Vec<String> = Vec::new();
            if jailed {
                let _ = std::fs::remove_file(t.report());
                words.push(scratch::exe().into());
                words.extend(t.base());
                words.extend([
                    "--report".into(),
                    t.report().display().to_string(),
                    "--".into(),
                ]);
            }
            words.extend(["script", "-qc", "less f.txt", "/dev/null"].map(String::from));
            let refs: Vec<&str> = words.iter().map(String::as_str).collect();
            let mut c = t.cmd(&refs);
            c.stdin(Stdio::piped());
            let mut child = c
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            use std::io::Write;
            let mut input = child.stdin.take().unwrap();
            std::thread::sleep(std::time::Duration::from_millis(300));
            input.write_all(b"/beta\n").unwrap();
            std::thread::sleep(std::time::Duration::from_millis(300));
            input.write_all(b"q").unwrap();
            drop(input);
            child.wait_with_output().unwrap()
        };
        // Control: without dcjail less writes ~/.lesshst.
        run(false);
        assert!(t.home().join(".lesshst").is_file(), "less wrote no history");
        std::fs::remove_file(t.home().join(".lesshst")).unwrap();
        let o = run(true);
        let rep: Value = serde_json::from_str(
            &std::fs::read_to_string(t.report())
                .unwrap_or_else(|_| panic!("no report: {}", text(&o))),
        )
        .unwrap();
        let list = rep["denials"].as_array().unwrap().clone();
        let ds = of(&list, &t.home().join(".lesshsQ"));
        assert!(!ds.is_empty(), "{list:#?}");
        assert_eq!(ds[0]["fix"], Value::Null, "{}", ds[0]);
        let why = as_str(&ds[0]["why_not"]);
        assert!(why.contains("temporary name for `~/.lesshst`"), "{why}");
        let advice = t.advice();
        assert!(strings(&advice["flags"]).is_empty(), "{advice}");
        assert!(strings(&advice["mkdir_first"]).is_empty(), "{advice}");
        assert!(!t.home().join(".lesshsQ").exists() && !t.home().join(".lesshst").exists());
    }
}

#[test]
fn a_program_s_cache_and_data_get_its_own_directory_not_the_shared_one() {
    for (&nobody, backend) in both() {
        let mut t = Tree::new(&format!("xdg-{backend}"), nobody);
        t.backend = backend;
        for d in [".cache/other", ".local/share/other"] {
            std::fs::create_dir_all(t.home().join(d)).unwrap();
        }
        t.own();
        let script = "mkdir -p \"$HOME/.cache/kindtool/a\" \"$HOME/.local/share/kindtool\" \
                      && echo x > \"$HOME/.cache/kindtool/a/f\" \
                      && echo y > \"$HOME/.local/share/kindtool/db\"";
        let (o, list) = t.record(&["sh", "-c", script]);
        failed(&o);
        let cache = t.home().join(".cache/kindtool");
        let d = of(&list, &cache);
        assert_eq!(d[0]["fix"]["allow_write"], "~/.cache/kindtool", "{list:#?}");
        let data = t.home().join(".local/share/kindtool");
        let d = of(&list, &data);
        assert_eq!(
            d[0]["fix"]["allow_write"], "~/.local/share/kindtool",
            "{list:#?}"
        );
        let advice = t.advice();
        let all = t.apply(&advice);
        assert_eq!(
            all,
            [
                "--allow-write",
                "~/.cache/kindtool",
                "--allow-write",
                "~/.local/share/kindtool"
            ],
            "{advice}"
        );
        let o = t.jailed(&all, false, &["sh", "-c", script]);
        ok(&o);
        assert_eq!(std::fs::read_to_string(cache.join("a/f")).unwrap(), "x\n");
        assert_eq!(std::fs::read_to_string(data.join("db")).unwrap(), "y\n");
        assert_eq!(
            t.widened(&all),
            [cache.display().to_string(), data.display().to_string()]
        );
        // The shared directories stay read-only under the same flags.
        let o = t.jailed(
            &all,
            false,
            &[
                "sh",
                "-c",
                "echo z > \"$HOME/.cache/other/f\" || echo z > \"$HOME/.local/share/other/f\" || echo refused",
            ],
        );
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("refused"),
            "{}",
            text(&o)
        );
        assert!(!t.home().join(".cache/other/f").exists());
    }
}

/// A repository in the workspace with one commit.
fn repo(t: &Tree) {
    need("git");
    std::fs::write(t.ws().join("a"), "1\n").unwrap();
    t.own();
    t.host(&["git", "init", "-q", "-b", "main"]);
    t.host(&["git", "add", "a"]);
    t.host(&["git", "commit", "-qm", "one"]);
}

#[test]
fn a_sibling_worktree_is_its_own_directory_and_making_one_is_done_outside() {
    for &nobody in scratch::users() {
        let t = Tree::new("sibling", nobody);
        repo(&t);
        let sib = t.root.join("sib");
        let add = ["git", "worktree", "add", "-q", "-B", "sib", "../sib"];
        // git makes ../sib and its .git, which no writable root may get
        // (measured: allowing ../sib still fails on ../sib/.git).
        let (o, list) = t.record(&add);
        failed(&o);
        let d = of(&list, &sib);
        assert_eq!(d[0]["fix"], Value::Null, "{list:#?}");
        assert!(
            as_str(&d[0]["why_not"]).contains("worktree add"),
            "{}",
            d[0]
        );
        assert!(strings(&t.advice()["flags"]).is_empty());
        let attempt = t.jailed(
            &["--allow-write".into(), sib.display().to_string()],
            false,
            &add,
        );
        failed(&attempt);
        // Made outside, as the why_not says; then work in it from here.
        let _ = std::fs::remove_dir(&sib);
        t.host(&["git", "worktree", "prune"]);
        t.host(&add);
        std::fs::create_dir_all(sib.join("src")).unwrap();
        t.own();
        let work =
            "echo 2 > ../sib/src/b && git -C ../sib add src/b && git -C ../sib commit -qm two";
        let (o, list) = t.record(&["sh", "-c", work]);
        failed(&o);
        let d = of(&list, &sib.join("src/b"));
        assert_eq!(
            d[0]["fix"]["allow_write"],
            sib.display().to_string().as_str(),
            "{list:#?}"
        );
        assert_eq!(d[0]["warning"], Value::Null, "{}", d[0]);
        let flags = t.apply(&t.advice());
        ok(&t.jailed(&flags, false, &["sh", "-c", work]));
        let log = t.host(&["git", "-C", "../sib", "log", "--format=%s", "-1"]);
        assert_eq!(String::from_utf8_lossy(&log.stdout), "two\n");
        assert_eq!(t.widened(&flags), [sib.display().to_string()]);
    }
}

#[test]
fn a_push_to_a_bare_repository_opens_that_repository_and_its_hooks_stay_read_only() {
    for &nobody in scratch::users() {
        let t = Tree::new("bare", nobody);
        repo(&t);
        let bare = t.root.join("bare.git");
        let b = bare.display().to_string();
        t.host(&["git", "init", "-q", "--bare", &b]);
        t.host(&["git", "push", "-q", &b, "main"]);
        std::fs::write(t.ws().join("a"), "2\n").unwrap();
        t.own();
        t.host(&["git", "commit", "-qam", "two"]);
        let push = ["git", "push", "-q", &b, "main"];
        let (o, list) = t.record(&push);
        failed(&o);
        assert!(!list.is_empty());
        for d in &list {
            assert_eq!(d["fix"]["allow_write"], b.as_str(), "{d}");
            assert!(as_str(&d["warning"]).contains("hooks, config"), "{d}");
        }
        let advice = t.advice();
        assert!(
            strings(&advice["warnings"])[0].contains("hooks, config"),
            "{advice}"
        );
        let flags = t.apply(&advice);
        assert_eq!(flags, ["--allow-write", b.as_str()]);
        ok(&t.jailed(&flags, false, &push));
        let head = t.host(&["git", "rev-parse", "HEAD"]).stdout;
        assert_eq!(t.host(&["git", "-C", &b, "rev-parse", "main"]).stdout, head);
        assert_eq!(t.widened(&flags), std::slice::from_ref(&b));
        // Deleting a packed branch rewrites packed-refs at the top: the
        // same flags let it through (objects/ and refs/ alone would not).
        t.host(&["git", "push", "-q", &b, "main:gone"]);
        t.host(&["git", "-C", &b, "pack-refs", "--all"]);
        let narrower: Vec<String> = ["objects", "refs"]
            .iter()
            .flat_map(|d| ["--allow-write".to_string(), format!("{b}/{d}")])
            .collect();
        failed(&t.jailed(&narrower, false, &["git", "push", "-q", &b, ":gone"]));
        ok(&t.jailed(&flags, false, &["git", "push", "-q", &b, ":gone"]));
        let refs = t.host(&["git", "-C", &b, "for-each-ref", "--format=%(refname)"]);
        assert_eq!(String::from_utf8_lossy(&refs.stdout), "refs/heads/main\n");
        // Under the same flags the command runs, and the repository's hook
        // and config stay as they were; without dcjail the same lines
        // write them (the control, undone after).
        let hook = bare.join("hooks/post-receive");
        let config = std::fs::read(bare.join("config")).unwrap();
        let attack = format!(
            "printf '#!/bin/sh\\ntouch {}/pwned\\n' > {b}/hooks/post-receive; echo '[core]fsmonitor=touch' >> {b}/config; echo ran",
            t.root.display()
        );
        let o = t.jailed(&flags, false, &["sh", "-c", &attack]);
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("ran"),
            "{}",
            text(&o)
        );
        assert!(!hook.exists(), "{}", text(&o));
        assert_eq!(std::fs::read(bare.join("config")).unwrap(), config);
        t.host(&["sh", "-c", &attack]);
        assert!(hook.exists() && std::fs::read(bare.join("config")).unwrap() != config);
    }
}

#[test]
fn a_signed_commit_needs_the_gpg_agent_socket_and_not_the_gnupg_directory() {
    need("gpg");
    need("gpg-agent");
    for &nobody in scratch::users() {
        let t = Tree::new("gpg", nobody);
        repo(&t);
        struct Agent<'a>(&'a Tree);
        impl Drop for Agent<'_> {
            fn drop(&mut self) {
                let _ = output(self.0.cmd(&["gpgconf", "--kill", "gpg-agent"]), 30);
            }
        }
        let _agent = Agent(&t);
        t.host(&[
            "gpg",
            "--batch",
            "--pinentry-mode",
            "loopback",
            "--passphrase",
            "",
            "--quick-gen-key",
            "T <t@example.com>",
            "ed25519",
            "sign",
            "never",
        ]);
        let sock = String::from_utf8(t.host(&["gpgconf", "--list-dirs", "agent-socket"]).stdout)
            .unwrap()
            .trim()
            .to_string();
        let shown = match Path::new(&sock).strip_prefix(t.home()) {
            Ok(rest) => format!("~/{}", rest.display()),
            Err(_) => sock.clone(),
        };
        std::fs::write(t.ws().join("a"), "2\n").unwrap();
        t.own();
        let commit = [
            "git",
            "-c",
            "user.signingkey=t@example.com",
            "commit",
            "-S",
            "-qam",
            "signed",
        ];
        let (o, list) = t.record(&commit);
        failed(&o);
        let d = of(&list, Path::new(&sock));
        assert_eq!(
            d[0]["fix"]["allow_unix_sockets"],
            shown.as_str(),
            "{list:#?}"
        );
        assert!(
            as_str(&d[0]["warning"]).contains("signs as you"),
            "{}",
            d[0]
        );
        for d in &list {
            assert_eq!(d["fix"]["allow_write"], Value::Null, "{d}");
        }
        let flags = t.apply(&t.advice());
        assert_eq!(flags, ["--allow-unix-socket", shown.as_str()]);
        let o = t.jailed(&flags, true, &commit);
        ok(&o);
        t.host(&["git", "verify-commit", "HEAD"]);
        let rep: Value =
            serde_json::from_str(&std::fs::read_to_string(t.report()).unwrap()).unwrap();
        assert_eq!(rep["denials"], serde_json::json!([]), "{}", text(&o));
        assert!(t.widened(&flags).is_empty());
    }
}

#[test]
fn a_file_beside_the_project_opens_the_parent_with_a_warning() {
    for (&nobody, backend) in both() {
        let mut t = Tree::new(&format!("parent-{backend}"), nobody);
        t.backend = backend;
        repo(&t);
        let script = "echo n > ../notes.txt";
        let (o, list) = t.record(&["sh", "-c", script]);
        failed(&o);
        let d = of(&list, &t.root.join("notes.txt"));
        let r = t.root.display().to_string();
        assert_eq!(d[0]["fix"]["allow_write"], r.as_str(), "{list:#?}");
        assert!(
            as_str(&d[0]["warning"]).contains("other projects"),
            "{}",
            d[0]
        );
        let advice = t.advice();
        assert!(strings(&advice["warnings"])[0].contains("other projects"));
        let flags = t.apply(&advice);
        ok(&t.jailed(&flags, false, &["sh", "-c", script]));
        assert_eq!(
            std::fs::read_to_string(t.root.join("notes.txt")).unwrap(),
            "n\n"
        );
        assert_eq!(t.widened(&flags), [r]);
    }
}

#[test]
fn a_trust_store_or_a_shared_directory_comes_with_a_warning() {
    for &nobody in scratch::users() {
        let t = Tree::new("trust", nobody);
        std::fs::create_dir_all(t.home().join(".config")).unwrap();
        std::fs::write(
            t.ws().join("ca.pem"),
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        t.own();
        // An NSS trust store (what Chromium and certutil read), and a file
        // directly in ~/.config (mimeapps.list: which program opens what).
        for (script, made, shown, warns) in [
            (
                "mkdir -p \"$HOME/.pki/nssdb\" && cp ca.pem \"$HOME/.pki/nssdb/\"",
                t.home().join(".pki"),
                "~/.pki",
                "trust store",
            ),
            (
                "echo '[Default Applications]' > \"$HOME/.config/mimeapps.list\"",
                t.home().join(".config/mimeapps.list"),
                "~/.config",
                "every program",
            ),
        ] {
            let (o, list) = t.record(&["sh", "-c", script]);
            failed(&o);
            let d = of(&list, &made);
            assert_eq!(d[0]["fix"]["allow_write"], shown, "{list:#?}");
            assert!(as_str(&d[0]["warning"]).contains(warns), "{}", d[0]);
            let advice = t.advice();
            assert!(
                strings(&advice["warnings"])
                    .iter()
                    .any(|w| w.contains(warns)),
                "{advice}"
            );
            let flags = t.apply(&advice);
            ok(&t.jailed(&flags, false, &["sh", "-c", script]));
            let root = t.home().join(shown.trim_start_matches("~/"));
            assert_eq!(t.widened(&flags), [root.display().to_string()]);
        }
        assert!(t.home().join(".pki/nssdb/ca.pem").is_file());
        assert!(t.home().join(".config/mimeapps.list").is_file());
    }
}
