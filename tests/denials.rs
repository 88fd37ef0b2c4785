//! The denial report through the real binary: each kind of denial under
//! each Linux backend is recorded with its path, its rule and the option
//! that would allow it; rerunning with that option lets the same run
//! through; recording never turns a denial into an allow (a symlink
//! swapped under the named path, with a control run showing the swap
//! works without the sandbox); and with reporting off nothing is started.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BACKENDS: [&str; 2] = ["bwrap", "landlock"];

fn is_root() -> bool {
    // SAFETY: geteuid never fails.
    unsafe { libc::geteuid() == 0 }
}

/// A scratch tree: `ws` (the workspace) and `out` (outside every root),
/// both owned by `uid` so that the command may write where allowed.
struct Tree {
    root: PathBuf,
    uid: u32,
}

impl Tree {
    fn new(name: &str, uid: u32) -> Tree {
        let root = scratch::fresh(&format!("denials-{name}-{uid}"));
        for d in ["ws", "out"] {
            std::fs::create_dir(root.join(d)).unwrap();
        }
        let t = Tree { root, uid };
        t.own();
        t
    }
    fn ws(&self) -> PathBuf {
        self.root.join("ws")
    }
    fn out(&self) -> PathBuf {
        self.root.join("out")
    }
    fn report(&self) -> PathBuf {
        self.root.join("report.json")
    }
    /// Gives every entry to the tree's user (after a root-made file).
    fn own(&self) {
        let _ = Command::new("chown")
            .args(["-R", &format!("{0}:{0}", self.uid)])
            .arg(&self.root)
            .status();
        std::fs::set_permissions(&self.root, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        scratch::remove(&self.root);
    }
}

/// dcjail OPTS -- sh -c SCRIPT in the workspace, as the tree's user.
fn run(t: &Tree, opts: &[&str], script: &str) -> Output {
    run_env(t, opts, script, &[])
}

fn run_env(t: &Tree, opts: &[&str], script: &str, env: &[(&str, &Path)]) -> Output {
    let mut c = if t.uid == 0 {
        Command::new(scratch::exe())
    } else {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid",
            &t.uid.to_string(),
            "--regid",
            &t.uid.to_string(),
            "--clear-groups",
            "--",
            scratch::exe(),
        ]);
        c
    };
    for (k, v) in env {
        c.env(k, v);
    }
    c.current_dir(t.ws())
        .arg("--workspace")
        .arg(t.ws())
        .args(opts)
        .args(["--", "sh", "-c", script]);
    c.output().unwrap()
}

fn report(t: &Tree) -> Value {
    let text = std::fs::read_to_string(t.report()).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn denials(t: &Tree) -> Vec<Value> {
    report(t)["denials"].as_array().cloned().unwrap_or_default()
}

/// The one denial whose resolved path is `p`.
fn denial_of(list: &[Value], p: &Path) -> Value {
    let p = p.display().to_string();
    list.iter()
        .find(|d| d["resolved"] == p.as_str() && d["op"] != "utimensat")
        .cloned()
        .unwrap_or_else(|| panic!("no denial of {p} in {list:#?}"))
}

fn users() -> Vec<u32> {
    if is_root() {
        vec![0, 65534]
    } else {
        vec![]
    }
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Splits an `allow` string into the options it names.
fn words(allow: &Value) -> Vec<String> {
    allow
        .as_str()
        .unwrap_or_default()
        .split(' ')
        .map(String::from)
        .collect()
}

#[test]
fn a_write_outside_the_roots_is_recorded_and_the_suggested_option_lets_it_through() {
    for uid in users() {
        for be in BACKENDS {
            let t = Tree::new(&format!("outside-{be}"), uid);
            let f = t.out().join("f");
            let script = format!("echo marker; echo x > {}", f.display());
            let rep = t.report().display().to_string();
            let o = run(&t, &["--backend", be, "--report", &rep], &script);
            assert!(
                String::from_utf8_lossy(&o.stdout).contains("marker"),
                "{be}/{uid}: {}",
                text(&o)
            );
            assert!(!f.exists(), "{be}/{uid}: the write happened");
            let d = denial_of(&denials(&t), &f);
            assert_eq!(d["rule"], "outside the writable roots", "{d}");
            assert_eq!(d["kind"], "write");
            assert_eq!(d["program"], "sh");
            assert_eq!(d["path"], f.display().to_string());
            let want = format!(
                "--sandbox-mode workspace-write --allow-write {}",
                t.out().display()
            );
            assert_eq!(d["allow"], want.as_str(), "{be}/{uid}");
            // The same run with the option: the write happens.
            let mut opts: Vec<String> = vec!["--backend".into(), be.into()];
            opts.extend(words(&d["allow"]));
            if be == "landlock" {
                opts.push("--no-protect-defaults".into());
            }
            let opts: Vec<&str> = opts.iter().map(String::as_str).collect();
            let o = run(&t, &opts, &script);
            assert_eq!(
                std::fs::read_to_string(&f).ok().as_deref(),
                Some("x\n"),
                "{be}/{uid}: {}",
                text(&o)
            );
        }
    }
}

#[test]
fn in_workspace_write_the_suggestion_is_the_directory_being_made_and_it_lets_the_run_through() {
    for be in BACKENDS {
        let t = Tree::new(&format!("ww-{be}"), 0);
        let dir = t.out().join("cache");
        let deep = t.out().join("new").join("x");
        let script = format!(
            "mkdir {}; mkdir -p {}; echo marker",
            dir.display(),
            deep.display()
        );
        let rep = t.report().display().to_string();
        let mut opts = vec![
            "--backend",
            be,
            "--sandbox-mode",
            "workspace-write",
            "--report",
            &rep,
        ];
        if be == "landlock" {
            opts.push("--no-protect-defaults");
        }
        let o = run(&t, &opts, &script);
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("marker"),
            "{}",
            text(&o)
        );
        assert!(!dir.exists() && !t.out().join("new").exists());
        // Each directory the program was making is the one suggested (made
        // first), never their parent, which holds whatever else is there.
        let list = denials(&t);
        let mut again = opts.clone();
        again.retain(|o| *o != "--report" && *o != rep.as_str());
        let mut roots = Vec::new();
        for made in [dir.clone(), t.out().join("new")] {
            let d = denial_of(&list, &made);
            let shown = made.display().to_string();
            assert_eq!(d["allow"], format!("--allow-write {shown}").as_str(), "{d}");
            assert_eq!(
                d["fix"]["mkdir_first"],
                serde_json::json!(["mkdir", "-p", "--", shown]),
                "{d}"
            );
            std::fs::create_dir_all(&made).unwrap();
            roots.push(shown);
        }
        // Rerun with the suggestion: both directories are made, and only
        // they were opened (the parent stays read-only).
        for r in &roots {
            again.extend(["--allow-write", r.as_str()]);
        }
        let o = run(
            &t,
            &again,
            &format!("{script}; echo x > {}/f", t.out().display()),
        );
        assert!(!t.out().join("f").exists(), "{}", text(&o));
        assert!(dir.is_dir() && deep.is_dir(), "{}", text(&o));
    }
}

#[test]
fn protected_paths_are_recorded_with_their_entry_and_why_no_option_allows_them() {
    // Only bwrap holds protected paths (landlock refuses such a plan).
    let t = Tree::new("protected", 0);
    std::fs::write(t.ws().join(".bashrc"), "# mine\n").unwrap();
    std::fs::write(t.ws().join(".profile"), "# mine\n").unwrap();
    let rep = t.report().display().to_string();
    let o = run(
        &t,
        &[
            "--backend",
            "bwrap",
            "--sandbox-mode",
            "workspace-write",
            "--report",
            &rep,
        ],
        "echo marker; echo evil >> .bashrc; truncate -c -s 0 .profile; echo evil > .zshrc",
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("marker"),
        "{}",
        text(&o)
    );
    assert_eq!(
        std::fs::read_to_string(t.ws().join(".bashrc")).unwrap(),
        "# mine\n"
    );
    assert_eq!(
        std::fs::read_to_string(t.ws().join(".profile")).unwrap(),
        "# mine\n"
    );
    assert!(!t.ws().join(".zshrc").exists());
    let list = denials(&t);
    // `>>` and `>` create when missing: the broker answers them; `truncate
    // -c` opens without O_CREAT: the kernel does, as predicted.
    let by = |name: &str, seen: &str| {
        list.iter()
            .find(|d| {
                d["resolved"] == t.ws().join(name).display().to_string().as_str()
                    && d["seen_by"] == seen
            })
            .cloned()
            .unwrap_or_else(|| panic!("no {seen} denial of {name}: {list:#?}"))
    };
    for (name, seen) in [
        (".bashrc", "broker"),
        (".profile", "predicted"),
        (".zshrc", "broker"),
    ] {
        let d = by(name, seen);
        assert_eq!(d["rule"], "protected", "{d}");
        assert!(d["matched"].as_str().unwrap().ends_with(name), "{d}");
        assert_eq!(d["allow"], Value::Null);
        assert!(
            d["why_not"]
                .as_str()
                .unwrap()
                .contains("--no-protect-defaults"),
            "{d}"
        );
    }
    // Control: the same script without the sandbox changes both.
    let o = run(
        &t,
        &["--no-sandbox"],
        "echo evil >> .bashrc; echo evil > .zshrc",
    );
    assert!(
        std::fs::read_to_string(t.ws().join(".bashrc"))
            .unwrap()
            .contains("evil"),
        "{}",
        text(&o)
    );
    assert!(t.ws().join(".zshrc").exists());
}

#[test]
fn deny_write_is_recorded_with_the_pattern_that_matched() {
    let t = Tree::new("denywrite", 0);
    std::fs::write(t.ws().join("keep.lock"), "v1\n").unwrap();
    let rep = t.report().display().to_string();
    let o = run(
        &t,
        &[
            "--backend",
            "bwrap",
            "--sandbox-mode",
            "workspace-write",
            "--deny-write",
            "*.lock",
            "--report",
            &rep,
        ],
        "echo marker; echo v2 > keep.lock",
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("marker"),
        "{}",
        text(&o)
    );
    assert_eq!(
        std::fs::read_to_string(t.ws().join("keep.lock")).unwrap(),
        "v1\n"
    );
    let d = denial_of(&denials(&t), &t.ws().join("keep.lock"));
    assert_eq!(d["rule"], "deny_write", "{d}");
    assert_eq!(d["matched"], "*.lock");
    assert!(d["why_not"].as_str().unwrap().contains("deny_write"), "{d}");
}

#[test]
fn metadata_changes_outside_the_roots_are_recorded_by_the_filter_and_by_the_broker() {
    for (be, mode, uid) in BACKENDS
        .iter()
        .flat_map(|b| ["read-only", "workspace-write"].map(|m| (*b, m)))
        .flat_map(|(b, m)| users().into_iter().map(move |u| (b, m, u)))
    {
        {
            let t = Tree::new(&format!("meta-{be}-{mode}"), uid);
            let f = t.out().join("file");
            std::fs::write(&f, "x").unwrap();
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
            // The command's own file: only the sandbox can refuse the change.
            t.own();
            let rep = t.report().display().to_string();
            let mut opts = vec!["--backend", be, "--sandbox-mode", mode, "--report", &rep];
            if be == "landlock" {
                opts.push("--no-protect-defaults");
            }
            let o = run(
                &t,
                &opts,
                &format!("echo marker; chmod 600 {}", f.display()),
            );
            assert!(
                String::from_utf8_lossy(&o.stdout).contains("marker"),
                "{}",
                text(&o)
            );
            let m = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
            assert_eq!(m, 0o644, "{be}/{mode}/{uid}: the mode changed");
            let d = denial_of(&denials(&t), &f);
            assert_eq!(d["kind"], "metadata", "{d}");
            assert_eq!(d["rule"], "outside the writable roots");
            let by = if mode == "read-only" {
                "filter"
            } else {
                "broker"
            };
            assert_eq!(d["seen_by"], by, "{be}/{mode}/{uid}: {d}");
            // Control: without the sandbox the same user changes the mode.
            run(&t, &["--no-sandbox"], &format!("chmod 600 {}", f.display()));
            let m = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
            assert_eq!(m, 0o600, "{be}/{mode}/{uid}: the control run failed");
        }
    }
}

#[test]
fn a_setuid_bit_is_recorded_and_no_option_allows_it() {
    for be in BACKENDS {
        let t = Tree::new(&format!("setuid-{be}"), 0);
        let f = t.ws().join("tool");
        std::fs::write(&f, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
        let rep = t.report().display().to_string();
        let mut opts = vec![
            "--backend",
            be,
            "--sandbox-mode",
            "workspace-write",
            "--report",
            &rep,
        ];
        if be == "landlock" {
            opts.push("--no-protect-defaults");
        }
        let o = run(&t, &opts, "echo marker; chmod u+s tool");
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("marker"),
            "{}",
            text(&o)
        );
        assert_eq!(
            std::fs::metadata(&f).unwrap().permissions().mode() & 0o7000,
            0
        );
        let d = denial_of(&denials(&t), &f);
        assert_eq!(
            (d["kind"].as_str(), d["rule"].as_str()),
            (Some("setuid"), Some("setuid")),
            "{d}"
        );
        assert_eq!(d["allow"], Value::Null);
        assert!(d["why_not"].as_str().unwrap().contains("setuid"));
    }
    // Control: without the sandbox the bit is set.
    let t = Tree::new("setuid-control", 0);
    let f = t.ws().join("tool");
    std::fs::write(&f, "#!/bin/sh\n").unwrap();
    run(&t, &["--no-sandbox"], "chmod u+s tool");
    assert_ne!(
        std::fs::metadata(&f).unwrap().permissions().mode() & 0o4000,
        0
    );
}

#[test]
fn a_unix_socket_connect_is_recorded_and_naming_the_socket_lets_it_through() {
    use std::os::unix::net::UnixListener;
    let py = "/usr/bin/python3";
    assert!(Path::new(py).exists(), "this test needs {py}");
    for be in BACKENDS {
        let t = Tree::new(&format!("unix-{be}"), 0);
        let dir = scratch::socket_dir(&format!("denial-sock-{be}"));
        let sock = dir.join("api.sock");
        let l = UnixListener::bind(&sock).unwrap();
        l.set_nonblocking(true).unwrap();
        let script = format!(
            "{py} -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"{}\"); print(\"made\")'; echo marker",
            sock.display()
        );
        let rep = t.report().display().to_string();
        let o = run(&t, &["--backend", be, "--report", &rep], &script);
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(
            out.contains("marker") && !out.contains("made"),
            "{}",
            text(&o)
        );
        assert!(l.accept().is_err(), "{be}: the listener was reached");
        let list = denials(&t);
        let d = list
            .iter()
            .find(|d| d["kind"] == "unix_socket")
            .unwrap_or_else(|| panic!("{list:#?}"));
        let want = format!("--allow-unix-socket {}", sock.display());
        assert_eq!(d["allow"], want.as_str());
        assert_eq!(d["fix"]["allow_unix_sockets"], sock.to_str().unwrap());
        assert_eq!(d["rule"], "unix socket not named");
        assert_eq!(d["program"], py);
        let s = sock.to_str().unwrap();
        let o = run(&t, &["--backend", be, "--allow-unix-socket", s], &script);
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("made"),
            "{be}: {}",
            text(&o)
        );
        drop(l);
        scratch::remove(&dir);
    }
}

#[test]
fn events_stream_one_json_object_per_denial_while_the_command_runs() {
    for be in BACKENDS {
        let t = Tree::new(&format!("events-{be}"), 0);
        let ev = t.root.join("events.jsonl");
        let (a, b) = (t.out().join("a"), t.out().join("b"));
        let inner = format!(
            "exec {} --backend {be} --workspace {} --events 3 -- sh -c 'echo x > {}; echo x > {}; echo marker' 3>{}",
            scratch::exe(),
            t.ws().display(),
            a.display(),
            b.display(),
            ev.display()
        );
        let o = Command::new("sh").arg("-c").arg(&inner).output().unwrap();
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("marker"),
            "{}",
            text(&o)
        );
        let lines: Vec<Value> = std::fs::read_to_string(&ev)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let _ = denial_of(&lines, &a);
        let _ = denial_of(&lines, &b);
        assert!(lines.iter().all(|l| l["count"] == 1));
    }
}

#[test]
fn with_a_terminal_on_stderr_one_summary_line_is_printed_there_and_never_on_stdout() {
    assert!(
        Command::new("script").arg("--version").output().is_ok(),
        "script(1) is needed for a terminal: apt-get install -y util-linux"
    );
    for be in BACKENDS {
        let t = Tree::new(&format!("tty-{be}"), 0);
        let stdout = t.root.join("stdout.txt");
        let f = t.out().join("f");
        let inner = format!(
            "{} --backend {be} --workspace {} -- sh -c 'echo x > {} 2>/dev/null; echo marker' > {}",
            scratch::exe(),
            t.ws().display(),
            f.display(),
            stdout.display()
        );
        let o = Command::new("script")
            .args(["-qec", &inner, "/dev/null"])
            .output()
            .unwrap();
        let tty = String::from_utf8_lossy(&o.stdout).to_string();
        let want = format!(
            "dcjail: 1 call blocked outside the writable roots: {} (--sandbox-mode workspace-write --allow-write {})",
            f.display(),
            t.out().display()
        );
        assert!(tty.contains(&want), "{be}: {tty}");
        let plain = std::fs::read_to_string(&stdout).unwrap();
        assert_eq!(plain, "marker\n", "{be}: stdout got {plain:?}");
    }
}

#[test]
fn explain_denials_prints_the_smallest_change_and_that_change_lets_the_run_through() {
    let t = Tree::new("explain", 0);
    let (a, b) = (t.out().join("one"), t.root.join("other"));
    std::fs::create_dir(&b).unwrap();
    let script = format!(
        "echo x > {}/f; echo y > {}/g; echo marker",
        a.display(),
        b.display()
    );
    std::fs::create_dir(&a).unwrap();
    t.own();
    let rep = t.report().display().to_string();
    run(&t, &["--backend", "bwrap", "--report", &rep], &script);
    let o = Command::new(scratch::exe())
        .args(["explain", "--denials", &rep])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let flags: Vec<String> = v["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        flags,
        [
            "--sandbox-mode".to_string(),
            "workspace-write".into(),
            "--allow-write".into(),
            a.display().to_string(),
            "--allow-write".into(),
            b.display().to_string()
        ]
    );
    let toml = v["toml"].as_str().unwrap();
    assert!(
        toml.contains("mode = \"workspace-write\"") && toml.contains("allow_write = ["),
        "{toml}"
    );
    let mut opts: Vec<&str> = vec!["--backend", "bwrap"];
    opts.extend(flags.iter().map(String::as_str));
    let o = run(&t, &opts, &script);
    assert!(a.join("f").exists() && b.join("g").exists(), "{}", text(&o));
}

/// A loop swaps `ws/link` between `ws/in` and `out` while another writes
/// through it: inside the sandbox nothing lands in `out`, whatever the
/// observer saw; without it, some writes land there.
#[test]
fn a_symlink_swapped_under_the_named_path_cannot_turn_a_denial_into_an_allow() {
    let script = "mkdir -p in; ( i=0; while [ $i -lt 20000 ]; do ln -sfn OUT link; ln -sfn in link; i=$((i+1)); done ) & \
                  i=0; while [ $i -lt 400 ]; do echo x > link/f$i 2>/dev/null; mkdir link/d$i 2>/dev/null; i=$((i+1)); done; \
                  kill $! 2>/dev/null; wait; echo marker";
    let control = Tree::new("race-control", 0);
    let s = script.replace("OUT", &control.out().display().to_string());
    run(&control, &["--no-sandbox"], &s);
    let landed = std::fs::read_dir(control.out()).unwrap().count();
    assert!(
        landed > 0,
        "the swap never won without the sandbox: the test cannot fail"
    );
    for (be, mode, uid) in BACKENDS
        .iter()
        .flat_map(|b| ["read-only", "workspace-write"].map(|m| (*b, m)))
        .flat_map(|(b, m)| users().into_iter().map(move |u| (b, m, u)))
    {
        {
            let t = Tree::new(&format!("race-{be}-{mode}"), uid);
            let s = script.replace("OUT", &t.out().display().to_string());
            let rep = t.report().display().to_string();
            let mut opts = vec!["--backend", be, "--sandbox-mode", mode, "--report", &rep];
            if be == "landlock" {
                opts.push("--no-protect-defaults");
            }
            let o = run(&t, &opts, &s);
            assert!(
                String::from_utf8_lossy(&o.stdout).contains("marker"),
                "{}",
                text(&o)
            );
            let got: Vec<_> = std::fs::read_dir(t.out())
                .unwrap()
                .flatten()
                .map(|e| e.file_name())
                .collect();
            assert!(
                got.is_empty(),
                "{be}/{mode}/{uid}: written outside: {got:?}"
            );
            assert!(report(&t)["denials_total"].as_u64().unwrap() > 0);
        }
    }
}

/// Strace counts the pipes and threads dcjail makes: none for the report
/// when nothing asks for one, and a thread only for `--events`.
#[test]
fn with_reporting_off_no_pipe_is_made_and_no_thread_ever() {
    assert!(
        Command::new("strace").arg("-V").output().is_ok(),
        "strace is needed (scripts/test.sh installs it): apt-get install -y strace"
    );
    let t = Tree::new("off", 0);
    let trace = |extra: &[&str]| {
        let log = t.root.join("trace.txt");
        let mut c = Command::new("strace");
        c.args(["-qq", "-e", "trace=pipe2,clone,clone3", "-o"])
            .arg(&log)
            .arg(scratch::exe())
            .args(["--backend", "landlock"])
            .args(extra)
            .args(["--", "true"]);
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        std::fs::read_to_string(&log).unwrap()
    };
    let off = trace(&[]);
    assert!(!off.contains("O_NONBLOCK"), "{off}");
    assert!(!off.contains("CLONE_THREAD"), "{off}");
    // A report is read once the command is done: a pipe, no thread.
    let rep = t.report().display().to_string();
    let on = trace(&["--report", &rep]);
    assert!(on.contains("O_NONBLOCK"), "{on}");
    assert!(!on.contains("CLONE_THREAD"), "{on}");
    // Events stream while it runs, read by the supervisor beside its
    // signals: a pipe, still no thread.
    let on = trace(&["--events", "2"]);
    assert!(on.contains("O_NONBLOCK"), "{on}");
    assert!(!on.contains("CLONE_THREAD"), "{on}");
}

#[test]
fn under_home_the_suggestion_is_its_top_level_directory_and_a_missing_one_is_made_first() {
    for be in BACKENDS {
        let t = Tree::new(&format!("home-{be}"), 0);
        let home = t.root.join("home");
        std::fs::create_dir_all(home.join(".tooldata/_store")).unwrap();
        let (cached, fresh) = (home.join(".tooldata/_store/x"), home.join(".newcache/y"));
        let script = format!(
            "echo x > {}; mkdir -p {}; echo marker",
            cached.display(),
            fresh.parent().unwrap().display()
        );
        let rep = t.report().display().to_string();
        let mut opts = vec!["--backend", be, "--sandbox-mode", "workspace-write"];
        if be == "landlock" {
            opts.push("--no-protect-defaults");
        }
        let mut with_report = opts.clone();
        with_report.extend(["--report", &rep]);
        let o = run_env(&t, &with_report, &script, &[("HOME", &home)]);
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("marker"),
            "{}",
            text(&o)
        );
        let list = denials(&t);
        let d = denial_of(&list, &cached);
        assert_eq!(d["allow"], "--allow-write ~/.tooldata", "{d}");
        assert_eq!(d["shown_as"], "~/.tooldata/_store/x");
        let d = denial_of(&list, &home.join(".newcache"));
        // Data, not a line: the argv that makes it, by its full path.
        let made = home.join(".newcache").display().to_string();
        assert_eq!(
            d["fix"]["mkdir_first"],
            serde_json::json!(["mkdir", "-p", "--", made]),
            "{d}"
        );
        assert_eq!(d["allow"], "--allow-write ~/.newcache");
        // What the report says, done: the directory made, both roots added.
        std::fs::create_dir(home.join(".newcache")).unwrap();
        opts.extend([
            "--allow-write",
            "~/.tooldata",
            "--allow-write",
            "~/.newcache",
        ]);
        let o = run_env(&t, &opts, &script, &[("HOME", &home)]);
        assert!(
            cached.exists() && home.join(".newcache").is_dir(),
            "{}",
            text(&o)
        );
    }
}
