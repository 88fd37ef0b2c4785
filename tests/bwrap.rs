//! The `bwrap` backend, attacked from inside: each test runs the real binary
//! with `--backend bwrap` and asserts the effect did not happen on the host.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The dcjail the tests run: `scratch::exe` keeps it runnable wherever the
/// checkout lives (landlock refuses a dcjail inside a writable root).
use scratch::exe as bin;
const PY: &str = "/usr/bin/python3";

/// A scratch directory outside /tmp (which is a writable root itself),
/// removed on drop.
use scratch::Dir as Scratch;

/// A scratch git repository with a `.git/hooks` directory.
fn git_scratch(tag: &str) -> Scratch {
    let s = Scratch::new(tag);
    let ok = Command::new("git")
        .args(["init", "-q"])
        .current_dir(s.path())
        .status()
        .unwrap()
        .success();
    assert!(ok);
    std::fs::create_dir_all(s.join(".git/hooks")).unwrap();
    s
}

fn give_to_nobody(s: &Scratch) {
    let ok = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(s.path())
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

/// dcjail with `--backend bwrap`, in `dir`, as root or as `nobody`.
fn jail(dir: &Path, opts: &[&str], cmd: &[&str], as_nobody: bool) -> Output {
    let argv: Vec<&str> = [bin(), "--backend", "bwrap"]
        .into_iter()
        .chain(opts.iter().copied())
        .chain(["--"])
        .chain(cmd.iter().copied())
        .collect();
    let mut c = scratch::command_as(dir, as_nobody, &argv);
    if as_nobody {
        // Not the workspace: a workspace at the home directory is held
        // read-only by class; root's own home is closed to uid 65534.
        c.env("HOME", "/nonexistent");
    }
    c.output().unwrap()
}

fn sh(dir: &Path, opts: &[&str], script: &str) -> Output {
    jail(dir, opts, &["sh", "-c", script], false)
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

const WW: &[&str] = &["--sandbox-mode", "workspace-write"];

#[test]
fn write_outside_the_workspace_leaves_no_file() {
    for &nobody in scratch::users() {
        let ws = Scratch::new("ws");
        let out = Scratch::new("out");
        if nobody {
            give_to_nobody(&ws);
            give_to_nobody(&out);
        }
        let target = out.join("escaped");
        let o = jail(
            ws.path(),
            WW,
            &[
                "sh",
                "-c",
                &format!("echo x > {}; echo in > inside", target.display()),
            ],
            nobody,
        );
        assert!(!target.exists(), "wrote outside: {}", text(&o));
        assert!(
            ws.join("inside").exists(),
            "workspace not writable: {}",
            text(&o)
        );
    }
}

#[test]
fn read_only_mode_writes_nothing_to_the_workspace() {
    let ws = Scratch::new("ro");
    let o = sh(ws.path(), &[], "echo x > f; mkdir d; echo done");
    assert!(!ws.join("f").exists() && !ws.join("d").exists());
    assert!(text(&o).contains("done"));
}

#[test]
fn deny_read_file_content_does_not_reach_the_output() {
    let ws = Scratch::new("dr");
    std::fs::write(ws.join("secret.txt"), "TOPSECRET-4711").unwrap();
    std::fs::create_dir(ws.join("vault")).unwrap();
    std::fs::write(ws.join("vault/key"), "VAULTKEY-0815").unwrap();
    std::fs::create_dir(ws.join("vault/pub")).unwrap();
    std::fs::write(ws.join("vault/pub/ok"), "PUBLIC-1").unwrap();
    std::fs::write(ws.join("plain"), "PLAIN-2").unwrap();
    let o = sh(
        ws.path(),
        &[
            "--deny-read",
            "secret.txt",
            "--deny-read",
            "vault",
            "--allow-read",
            "vault/pub",
        ],
        "cat secret.txt vault/key vault/pub/ok plain; ls -a vault",
    );
    let t = text(&o);
    assert!(!t.contains("TOPSECRET") && !t.contains("VAULTKEY"), "{t}");
    assert!(t.contains("PUBLIC-1") && t.contains("PLAIN-2"), "{t}");
}

#[test]
fn loopback_tcp_connect_gets_no_byte() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    l.set_nonblocking(true).unwrap();
    let ws = Scratch::new("tcp");
    let o = jail(
        ws.path(),
        &[],
        &[
            "bash",
            "-c",
            &format!("echo LEAK > /dev/tcp/127.0.0.1/{port}; echo rc=$?"),
        ],
        false,
    );
    let deadline = Instant::now() + Duration::from_millis(300);
    while Instant::now() < deadline {
        if let Ok((mut s, _)) = l.accept() {
            let mut buf = Vec::new();
            let _ = s.read_to_end(&mut buf);
            panic!(
                "a connection arrived with {} bytes: {}",
                buf.len(),
                text(&o)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn udp_and_dns_get_nothing_out() {
    let u = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = u.local_addr().unwrap().port();
    u.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let ws = Scratch::new("udp");
    let o = jail(
        ws.path(),
        &[],
        &[
            "bash",
            "-c",
            &format!(
                "echo LEAK > /dev/udp/127.0.0.1/{port}; getent hosts localhost.localdomain example.com; echo end"
            ),
        ],
        false,
    );
    let mut buf = [0u8; 64];
    assert!(
        u.recv(&mut buf).is_err(),
        "a datagram arrived: {}",
        text(&o)
    );
    assert!(!text(&o).contains("example.com"), "{}", text(&o));
}

#[test]
fn unix_socket_to_a_host_listener_is_refused() {
    let dir = Scratch::new("unix");
    let sock = dir.join("s");
    let l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    l.set_nonblocking(true).unwrap();
    let o = jail(
        dir.path(),
        &[],
        &[
            PY,
            "-c",
            &format!(
                "import socket\ns=socket.socket(socket.AF_UNIX)\ns.connect('{}')\ns.send(b'LEAK')\nprint('connected')",
                sock.display()
            ),
        ],
        false,
    );
    std::thread::sleep(Duration::from_millis(100));
    assert!(l.accept().is_err(), "connected: {}", text(&o));
    assert!(!text(&o).contains("connected\n"), "{}", text(&o));
    // socketpair keeps working.
    let o = jail(
        dir.path(),
        &[],
        &[
            PY,
            "-c",
            "import socket\na,b=socket.socketpair()\na.send(b'p')\nprint(b.recv(1))",
        ],
        false,
    );
    assert!(text(&o).contains("b'p'"), "{}", text(&o));
}

#[test]
fn ptrace_of_a_sibling_fails() {
    let ws = Scratch::new("ptrace");
    let o = jail(
        ws.path(),
        &[],
        &[
            PY,
            "-c",
            "import ctypes,subprocess,os\nc=subprocess.Popen(['sleep','5'])\nl=ctypes.CDLL(None,use_errno=True)\nr=l.ptrace(16,c.pid,0,0)\nprint('attach', r, ctypes.get_errno())\nc.kill()",
        ],
        false,
    );
    let t = text(&o);
    assert!(t.contains("attach -1"), "{t}");
}

#[test]
fn new_user_namespace_is_refused() {
    let ws = Scratch::new("unshare");
    let o = sh(ws.path(), &[], "unshare -U -r id -u && echo ESCAPED");
    assert!(!text(&o).contains("ESCAPED"), "{}", text(&o));
}

#[test]
fn tiocsti_injection_fails() {
    let ws = Scratch::new("tiocsti");
    let o = jail(
        ws.path(),
        &[],
        &[
            PY,
            "-c",
            "import os,pty,fcntl,termios\nm,s=pty.openpty()\ntry:\n fcntl.ioctl(s,termios.TIOCSTI,b'x')\n print('INJECTED')\nexcept OSError as e:\n print('refused',e.errno)",
        ],
        false,
    );
    let t = text(&o);
    assert!(t.contains("refused") && !t.contains("INJECTED"), "{t}");
}

#[test]
fn signals_do_not_reach_processes_outside() {
    let mut victim = Command::new("sleep").arg("30").spawn().unwrap();
    let ws = Scratch::new("kill");
    let o = sh(
        ws.path(),
        &[],
        &format!("kill -9 {}; echo rc=$?", victim.id()),
    );
    std::thread::sleep(Duration::from_millis(50));
    let alive = victim.try_wait().unwrap().is_none();
    let _ = victim.kill();
    let _ = victim.wait();
    assert!(alive, "the host process was killed: {}", text(&o));
}

#[test]
fn io_uring_setup_is_refused() {
    let ws = Scratch::new("uring");
    let o = jail(
        ws.path(),
        &[],
        &[
            PY,
            "-c",
            "import ctypes\nl=ctypes.CDLL(None,use_errno=True)\nbuf=ctypes.create_string_buffer(120)\nr=l.syscall(425,8,buf)\nprint('uring', r, ctypes.get_errno())",
        ],
        false,
    );
    let t = text(&o);
    assert!(t.contains("uring -1"), "{t}");
}

#[test]
fn no_new_privs_and_no_capabilities_as_root_and_as_nobody() {
    for &nobody in scratch::users() {
        let ws = Scratch::new("caps");
        if nobody {
            give_to_nobody(&ws);
        }
        let o = jail(ws.path(), &[], &["cat", "/proc/self/status"], nobody);
        let t = text(&o);
        assert!(t.contains("NoNewPrivs:\t1"), "{t}");
        for k in ["CapEff", "CapPrm", "CapInh", "CapBnd", "CapAmb"] {
            assert!(
                t.contains(&format!("{k}:\t0000000000000000")),
                "{k} not empty (nobody={nobody}): {t}"
            );
        }
    }
}

#[test]
fn protected_git_paths_stay_read_only_while_siblings_write() {
    for &nobody in scratch::users() {
        let ws = git_scratch("prot");
        std::fs::write(ws.join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
        let config_before = std::fs::read(ws.join(".git/config")).unwrap();
        if nobody {
            give_to_nobody(&ws);
        }
        let o = jail(
            ws.path(),
            WW,
            &[
                "sh",
                "-c",
                "echo evil > .git/hooks/x; echo evil >> .git/hooks/pre-commit; echo '[core]' >> .git/config; \
                 echo fine > .git/sibling; echo fine > src.txt; rm -f .git/config; echo end",
            ],
            nobody,
        );
        let t = text(&o);
        assert!(!ws.join(".git/hooks/x").exists(), "{t}");
        assert!(!std::fs::read_to_string(ws.join(".git/hooks/pre-commit"))
            .unwrap()
            .contains("evil"));
        assert_eq!(
            std::fs::read(ws.join(".git/config")).unwrap(),
            config_before
        );
        assert!(ws.join(".git/sibling").exists(), "sibling not written: {t}");
        assert!(ws.join("src.txt").exists(), "{t}");
    }
}

#[test]
fn missing_protected_paths_cannot_be_created_and_leave_nothing_behind() {
    for &nobody in scratch::users() {
        let ws = Scratch::new("missing");
        if nobody {
            give_to_nobody(&ws);
        }
        let before: Vec<_> = std::fs::read_dir(ws.path()).unwrap().collect();
        assert!(before.is_empty());
        let o = jail(
            ws.path(),
            WW,
            &[
                "sh",
                "-c",
                "mkdir -p .vscode .claude/commands .git/hooks; echo x > .mcp.json; echo x > .bashrc; \
                 echo x > .vscode/settings.json; echo x > .git/hooks/post-checkout; echo x > normal; echo end",
            ],
            nobody,
        );
        let t = text(&o);
        assert!(t.contains("end"), "{t}");
        let mut names: Vec<String> = std::fs::read_dir(ws.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, vec!["normal".to_string()], "{t}");
    }
}

#[test]
fn renaming_git_away_to_write_hooks_fails() {
    let ws = git_scratch("rename");
    let o = sh(
        ws.path(),
        WW,
        "mv .git .git-old; mkdir -p .git/hooks; echo evil > .git/hooks/pre-commit; \
         mv .git/hooks .git/hooks-old; mkdir .git/hooks; echo evil > .git/hooks/pre-commit; echo end",
    );
    let t = text(&o);
    assert!(!ws.join(".git-old").exists(), "{t}");
    assert!(!ws.join(".git/hooks/pre-commit").exists(), "{t}");
    assert!(!ws.join(".git/hooks-old").exists(), "{t}");
}

#[test]
fn hard_linking_a_protected_file_gives_no_write_access() {
    let ws = git_scratch("hardlink");
    let before = std::fs::read(ws.join(".git/config")).unwrap();
    let o = sh(
        ws.path(),
        WW,
        "ln .git/config cfg && echo '[evil]' >> cfg; echo end",
    );
    assert_eq!(
        std::fs::read(ws.join(".git/config")).unwrap(),
        before,
        "{}",
        text(&o)
    );
}

#[test]
fn a_symlink_pointing_out_of_the_workspace_gives_no_write_access() {
    let ws = Scratch::new("symlink");
    let out = Scratch::new("symout");
    std::os::unix::fs::symlink(out.path(), ws.join("link")).unwrap();
    let o = sh(
        ws.path(),
        WW,
        "echo x > link/escaped; ln -s .. up; echo y > up/escaped2; echo end",
    );
    assert!(!out.join("escaped").exists(), "{}", text(&o));
    assert!(!ws.path().parent().unwrap().join("escaped2").exists());
}

#[test]
fn the_pid_namespace_hides_host_processes() {
    let mut victim = Command::new("sleep").arg("31.4159").spawn().unwrap();
    let ws = Scratch::new("pidns");
    let o = sh(
        ws.path(),
        &[],
        "cat /proc/[0-9]*/cmdline | tr '\\0' ' '; echo; echo $$",
    );
    let _ = victim.kill();
    let _ = victim.wait();
    let t = text(&o);
    assert!(t.contains("sh -c"), "{t}");
    assert!(!t.contains("31.4159"), "host process visible: {t}");
}

fn host_has(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .map(|c| String::from_utf8_lossy(&c).contains(marker))
            .unwrap_or(false)
    })
}

#[test]
fn a_background_process_is_gone_after_dcjail_exits() {
    let ws = Scratch::new("bg");
    let marker = format!("27.{}", std::process::id());
    let o = sh(
        ws.path(),
        &[],
        &format!("(setsid sleep {marker} &) ; nohup sleep {marker} >/dev/null 2>&1 & echo started"),
    );
    assert!(text(&o).contains("started"));
    std::thread::sleep(Duration::from_millis(100));
    assert!(!host_has(&marker), "a sandboxed process survived");
}

#[test]
fn exit_status_and_signals_pass_through() {
    let ws = Scratch::new("status");
    assert_eq!(sh(ws.path(), &[], "exit 7").status.code(), Some(7));
    assert_eq!(sh(ws.path(), &[], "kill -TERM $$").status.code(), Some(143));
    assert_eq!(
        jail(ws.path(), &[], &["/nonexistent/cmd"], false)
            .status
            .code(),
        Some(127)
    );
}

#[test]
fn timeout_kills_the_tree_with_124() {
    let ws = Scratch::new("timeout");
    let marker = format!("28.{}", std::process::id());
    let t0 = Instant::now();
    let o = sh(
        ws.path(),
        &["--timeout", "1"],
        &format!("sleep {marker} & sleep {marker}"),
    );
    assert_eq!(o.status.code(), Some(124), "{}", text(&o));
    assert!(t0.elapsed() < Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(100));
    assert!(!host_has(&marker));
}

#[test]
fn sigterm_to_dcjail_reaches_the_command() {
    let ws = Scratch::new("sigterm");
    let mut child = Command::new(bin())
        .args(["--backend", "bwrap", "--sandbox-mode", "workspace-write", "--"])
        .args([
            "sh",
            "-c",
            "trap 'echo got-term > term.txt; exit 3' TERM; echo ready > ready.txt; while :; do sleep 0.05; done",
        ])
        .current_dir(ws.path())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ws.join("ready.txt").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: a signal to our own child, by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(3));
    assert!(ws.join("term.txt").exists());
}

#[test]
fn a_killed_run_leaves_nothing_in_the_workspace() {
    let ws = Scratch::new("killed");
    let mut child = Command::new(bin())
        .args([
            "--backend",
            "bwrap",
            "--sandbox-mode",
            "workspace-write",
            "--",
        ])
        .args(["sh", "-c", "echo r > ready.txt; sleep 30"])
        .current_dir(ws.path())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ws.join("ready.txt").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: a signal to our own child, by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    // Nothing of the killed run may be in the workspace, before or after
    // the next run (no host placeholder exists to be left behind).
    let names = || {
        let mut n: Vec<String> = std::fs::read_dir(ws.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    };
    assert_eq!(names(), vec!["ready.txt".to_string()]);
    let o = sh(ws.path(), WW, "echo end");
    assert!(text(&o).contains("end"));
    assert_eq!(names(), vec!["ready.txt".to_string()]);
}

#[test]
fn concurrent_runs_keep_missing_names_uncreatable() {
    let ws = Scratch::new("concurrent");
    let long = Command::new(bin())
        .args(["--backend", "bwrap", "--sandbox-mode", "workspace-write", "--"])
        .args([
            "sh",
            "-c",
            "while [ ! -e go ]; do sleep 0.02; done; mkdir .vscode 2>/dev/null && echo CREATED; echo x > .mcp.json 2>/dev/null && echo WROTE; true",
        ])
        .current_dir(ws.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // A short run over the same workspace ends first: the long one's
    // missing names must stay uncreatable after it.
    std::thread::sleep(Duration::from_millis(300));
    let o = sh(ws.path(), WW, "echo short");
    assert!(text(&o).contains("short"));
    std::fs::write(ws.join("go"), "").unwrap();
    let out = long.wait_with_output().unwrap();
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(!t.contains("CREATED") && !t.contains("WROTE"), "{t}");
    assert!(!ws.join(".vscode").exists() && !ws.join(".mcp.json").exists());
}

#[test]
fn stage2_cannot_be_invoked_by_hand_with_a_layer_of_ones_own() {
    let ws = Scratch::new("stage2");
    let layer = ws.join("layer");
    std::fs::write(&layer, b"anything").unwrap();
    let o = Command::new(bin())
        .args(["__stage2", "0", "0", "--", "sh", "-c", "echo RAN"])
        .stdin(std::fs::File::open(&layer).unwrap())
        .output()
        .unwrap();
    assert!(!text(&o).contains("RAN"), "{}", text(&o));
    assert_ne!(o.status.code(), Some(0));
}

#[test]
fn explain_shows_the_bwrap_argv_and_auto_prefers_bwrap() {
    let ws = git_scratch("explain");
    let o = Command::new(bin())
        .args(["explain", "--sandbox-mode", "workspace-write", "--", "true"])
        .current_dir(ws.path())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["backend"], "bwrap", "{v}");
    let argv: Vec<String> = v["launch"]["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let at = |seq: &[&str]| {
        argv.windows(seq.len())
            .position(|w| w.iter().zip(seq).all(|(a, b)| a == b))
            .unwrap_or_else(|| panic!("{seq:?} not in {argv:?}"))
    };
    let ws_s = ws.path().to_string_lossy().into_owned();
    let hooks = format!("{ws_s}/.git/hooks");
    assert!(at(&["--ro-bind", "/", "/"]) < at(&["--bind", &ws_s, &ws_s]));
    assert!(at(&["--bind", &ws_s, &ws_s]) < at(&["--ro-bind-try", &hooks, &hooks]));
    // explain creates nothing.
    assert!(!ws.join(".vscode").exists());
}

#[test]
fn doctor_json_says_bwrap_works_here() {
    let o = Command::new(bin())
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let b = v["backends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["backend"] == "bwrap")
        .unwrap()
        .clone();
    assert_eq!(b["works"], true, "{v}");
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn bwrap_that_cannot_build_the_sandbox_refuses_with_one_line_122() {
    // bwrap cannot chdir into a cwd the policy masks: the sandbox is never
    // built, so the refusal is dcjail's single line, not bwrap's words.
    let ws = Scratch::new("nochdir");
    std::fs::create_dir(ws.join("sub")).unwrap();
    let deny = ws.path().to_string_lossy().into_owned();
    let o = jail(
        &ws.join("sub"),
        &["--deny-read", &deny],
        &["sh", "-c", "echo RAN"],
        false,
    );
    assert_eq!(o.status.code(), Some(122), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("dcjail: sandbox-unavailable: "), "{err}");
    assert!(!text(&o).contains("RAN"));
}

#[test]
fn auto_falls_back_to_landlock_when_bwrap_cannot_build_the_sandbox() {
    let ws = Scratch::new("fallback");
    std::fs::create_dir(ws.join("sub")).unwrap();
    let deny = ws.path().to_string_lossy().into_owned();
    let o = Command::new(bin())
        .args([
            "--deny-read",
            &deny,
            "--",
            "sh",
            "-c",
            "echo ran-under-$DCJAIL_BACKEND",
        ])
        .current_dir(ws.join("sub"))
        .output()
        .unwrap();
    assert!(text(&o).contains("ran-under-landlock"), "{}", text(&o));
}

#[test]
fn stage2_starts_when_dcjails_own_directory_is_denied_and_only_stdio_is_inherited() {
    let ws = Scratch::new("hiddenexe");
    let bin_dir = Path::new(bin())
        .parent()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let o = sh(
        ws.path(),
        &["--deny-read", &bin_dir],
        &format!("ls {bin_dir} | wc -l; ls /proc/self/fd; echo $DCJAIL_BACKEND"),
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.first(), Some(&"0"), "denied dir listed: {t}");
    // 0, 1, 2 and the directory ls itself opened.
    assert_eq!(&lines[1..5], &["0", "1", "2", "3"], "{t}");
    assert_eq!(lines.get(5), Some(&"bwrap"), "{t}");
}

#[test]
fn a_policy_with_a_thousand_paths_goes_through_args_fd() {
    let ws = Scratch::new("many");
    let mut opts: Vec<String> = Vec::new();
    for i in 0..1000 {
        let name = format!("s{i}");
        std::fs::write(ws.join(&name), format!("SECRET-{i}-X")).unwrap();
        opts.push("--deny-read".into());
        opts.push(name);
    }
    std::fs::write(ws.join("open"), "VISIBLE").unwrap();
    let refs: Vec<&str> = opts.iter().map(String::as_str).collect();
    let o = sh(ws.path(), &refs, "cat s0 s500 s999 open");
    let t = text(&o);
    assert!(!t.contains("SECRET-"), "{t}");
    assert!(t.contains("VISIBLE"), "{t}");
}

#[test]
fn a_symlink_in_the_workspace_pointing_at_a_protected_path_gives_no_write_access() {
    let ws = git_scratch("symprot");
    let before = std::fs::read(ws.join(".git/config")).unwrap();
    let o = sh(
        ws.path(),
        WW,
        "ln -s .git/config c; echo '[evil]' >> c; ln -s .git/hooks h; echo evil > h/pre-push; echo end",
    );
    assert_eq!(
        std::fs::read(ws.join(".git/config")).unwrap(),
        before,
        "{}",
        text(&o)
    );
    assert!(!ws.join(".git/hooks/pre-push").exists(), "{}", text(&o));
}

#[test]
fn a_gitdir_pointer_file_cannot_be_swapped_for_a_directory_with_hooks() {
    let main = git_scratch("main");
    let git = |dir: &Path, args: &[&str]| {
        let ok = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(ok.status.success(), "{}", text(&ok));
    };
    git(
        main.path(),
        &["commit", "-q", "--allow-empty", "-m", "init"],
    );
    let wt_parent = Scratch::new("wt");
    let wt = wt_parent.join("linked");
    git(
        main.path(),
        &["worktree", "add", "-q", wt.to_str().unwrap()],
    );
    let pointer = std::fs::read(wt.join(".git")).unwrap();
    let o = sh(
        &wt,
        WW,
        "rm -f .git; mv .git .git-old; echo 'gitdir: /tmp/evil' > .git; echo fine > file; echo end",
    );
    let t = text(&o);
    assert_eq!(std::fs::read(wt.join(".git")).unwrap(), pointer, "{t}");
    assert!(wt.join("file").exists(), "{t}");
    let _ = Command::new("git")
        .args(["worktree", "remove", "--force"])
        .arg(&wt)
        .current_dir(main.path())
        .output();
}

#[test]
fn explain_says_the_embedded_stub_is_the_second_stage() {
    let ws = Scratch::new("stubexplain");
    let o = Command::new(bin())
        .args(["explain", "--backend", "bwrap", "--", "true"])
        .current_dir(ws.path())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = v["launch"]["stage2"]["runs"].as_str().unwrap_or_default();
    assert!(runs.starts_with("the embedded stub ("), "{v}");
}

/// Where this system refuses to execute memfds (vm.memfd_noexec = 2), the
/// embedded stub cannot start: dcjail runs itself as the second stage, and
/// the same layer still holds. The sysctl is per pid namespace, so the test
/// sets it in a namespace of its own, never on the machine.
#[test]
fn where_memfds_cannot_execute_dcjail_itself_applies_the_same_layer() {
    if !scratch::root("make a pid namespace of its own") {
        return;
    }
    let ws = Scratch::new("noexecmemfd");
    let inside = ws.join("inside");
    let victim = ws.join("victim");
    std::fs::create_dir_all(&inside).unwrap();
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(
        ws.join("probe.py"),
        "import os\ntry:\n    os.memfd_create('x', 0x10)\n    print('EXEC-MEMFD-ALLOWED')\n\
         except PermissionError:\n    print('EXEC-MEMFD-REFUSED')\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("ptrace.py"),
        "import ctypes\nprint('ptrace', ctypes.CDLL(None).ptrace(16, 1, 0, 0))\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("inner.sh"),
        format!(
            "grep -E '^(NoNewPrivs|Seccomp|CapEff):' /proc/self/status\n\
             {PY} '{ptrace}'\n\
             touch '{victim}/escaped' 2>/dev/null || echo OUTSIDE-WRITE-FAILED\n\
             echo in > ok && echo INSIDE-WRITE-OK\n",
            ptrace = ws.join("ptrace.py").display(),
            victim = victim.display(),
        ),
    )
    .unwrap();
    let script = format!(
        "echo 2 > /proc/sys/vm/memfd_noexec || exit 3\n\
         {PY} '{probe}'\n\
         cd '{inside}' && '{dcjail}' --backend bwrap --sandbox-mode workspace-write -- sh '{inner}'\n\
         echo rc=$?\n",
        probe = ws.join("probe.py").display(),
        inside = inside.display(),
        inner = ws.join("inner.sh").display(),
        dcjail = bin(),
    );
    let o = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "sh", "-c", &script])
        .env_remove("DCJAIL_POLICY")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let t = text(&o);
    assert!(
        t.contains("EXEC-MEMFD-REFUSED"),
        "memfd exec still allowed: {t}"
    );
    assert!(t.contains("NoNewPrivs:\t1"), "{t}");
    assert!(t.contains("Seccomp:\t2"), "{t}");
    assert!(t.contains("CapEff:\t0000000000000000"), "{t}");
    assert!(t.contains("ptrace -1"), "{t}");
    assert!(t.contains("OUTSIDE-WRITE-FAILED"), "{t}");
    assert!(!victim.join("escaped").exists());
    assert!(t.contains("INSIDE-WRITE-OK"), "{t}");
    assert!(inside.join("ok").exists());
    assert!(t.contains("rc=0"), "{t}");
}

/// The embedded second stage execs the command itself: it must say and
/// return exactly what dcjail says and returns without a sandbox (execvp
/// semantics, 126/127, the one-line escaping of odd names, argv byte-exact).
#[test]
fn the_second_stage_execs_like_dcjail_does_without_a_sandbox() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let ws = Scratch::new("execparity");
    let noexec = ws.join("noexec.sh");
    std::fs::write(&noexec, "#!/bin/sh\necho RAN\n").unwrap();
    let script = ws.join("bare-script");
    std::fs::write(&script, "echo script-ran-by-sh \"$1\"\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let local = ws.join("local-cmd");
    std::fs::write(&local, "#!/bin/sh\necho local-ran\n").unwrap();
    std::fs::set_permissions(&local, std::fs::Permissions::from_mode(0o755)).unwrap();
    let odd: &[u8] = b"no-such\ncommand\xff\x01";
    let cases: Vec<(Vec<&OsStr>, Option<&str>)> = vec![
        (vec![OsStr::new("dcjail-no-such-command")], None),
        (vec![noexec.as_os_str()], None),
        (vec![ws.path().as_os_str()], None),
        (
            vec![script.as_os_str(), OsStr::from_bytes(b"arg\xfe")],
            None,
        ),
        (vec![OsStr::from_bytes(odd)], None),
        (vec![OsStr::new("")], None),
        (vec![OsStr::new("local-cmd")], Some(":/usr/bin:/bin")),
        (
            vec![
                OsStr::new("printf"),
                OsStr::new("%s|"),
                OsStr::from_bytes(b"a b"),
                OsStr::from_bytes(b"\xff\n"),
            ],
            None,
        ),
        (
            vec![
                OsStr::new("sh"),
                OsStr::new("-c"),
                OsStr::new("yes | head -1"),
            ],
            None,
        ),
    ];
    for (argv, path) in cases {
        let run = |sandbox: &[&str]| {
            let mut c = Command::new(bin());
            c.args(sandbox).arg("--").args(&argv).current_dir(ws.path());
            c.env_remove("DCJAIL_POLICY").stdin(Stdio::null());
            if let Some(p) = path {
                c.env("PATH", p);
            }
            c.output().unwrap()
        };
        let plain = run(&["--no-sandbox"]);
        let jailed = run(&["--backend", "bwrap"]);
        assert_eq!(
            jailed.status.code(),
            plain.status.code(),
            "{argv:?}: {}",
            text(&jailed)
        );
        assert_eq!(jailed.stdout, plain.stdout, "{argv:?}");
        assert_eq!(jailed.stderr, plain.stderr, "{argv:?}");
    }
    // And what they say is what the cases are about.
    let o = Command::new(bin())
        .args(["--backend", "bwrap", "--"])
        .arg(OsStr::from_bytes(odd))
        .current_dir(ws.path())
        .env_remove("DCJAIL_POLICY")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(127));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "dcjail: no-such\\ncommand\u{fffd}\\u{1}: command not found\n"
    );
}

/// dcjail returns as soon as bwrap reports the command's status; whatever
/// the command left running in the sandbox must stop having effects at
/// once: a writer looping in the background writes nothing after a short
/// grace (the namespace's teardown), and no process of it is left.
#[test]
fn a_background_writer_stops_writing_once_dcjail_has_returned() {
    let ws = Scratch::new("bgwriter");
    let out = ws.join("out");
    let marker = format!("dcjail-bgw-{}", std::process::id());
    let o = sh(
        ws.path(),
        WW,
        &format!(
            "(exec -a {marker} sh -c 'while :; do echo x >> \"$0\"; done' '{out}') & \
             (setsid sh -c 'while :; do echo y >> \"$1\"; done' {marker} '{out}' &) ; \
             sleep 0.2; echo started",
            out = out.display()
        ),
    );
    assert!(text(&o).contains("started"), "{}", text(&o));
    let size = || std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
    assert!(size() > 0, "the writers never wrote");
    std::thread::sleep(Duration::from_millis(50));
    let settled = size();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(size(), settled, "something in the sandbox kept writing");
    assert!(!host_has(&marker), "a sandboxed process survived");
}

/// `explain` is a function of its inputs, and says which one decided the
/// rule that varies with them: landlock's truncate right is kept when the
/// caller's stdin is a host file outside the writable roots (it could be
/// truncated through /proc/self/fd/0 past the read-only mounts) and left to
/// the mounts when stdin is /dev/null or a file inside a writable root; the
/// launch's `facts` name the descriptor and its file.
#[test]
fn explain_names_the_descriptor_that_decides_the_truncate_right() {
    if !scratch::need("bwrap") {
        return;
    }
    let ws = Scratch::new("truncfact-ws");
    let outside = Scratch::new("truncfact-host");
    let host_file = outside.join("input.txt");
    let inner_file = ws.join("inside.txt");
    std::fs::write(&host_file, "host\n").unwrap();
    std::fs::write(&inner_file, "inner\n").unwrap();
    let explain = |stdin: Stdio| -> serde_json::Value {
        let o = Command::new(bin())
            .args([
                "explain",
                "--backend",
                "bwrap",
                "--sandbox-mode",
                "workspace-write",
                "--",
                "true",
            ])
            .current_dir(ws.path())
            .env_remove("DCJAIL_POLICY")
            .stdin(stdin)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", scratch::text(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let truncate = |v: &serde_json::Value| -> (String, bool) {
        let facts = v["launch"]["facts"].as_array().cloned().unwrap_or_default();
        let fact = facts
            .iter()
            .filter_map(|f| f.as_str())
            .find(|f| f.starts_with("truncate: "))
            .unwrap_or_else(|| panic!("no truncate fact in {}", v["launch"]))
            .to_string();
        let handled = v["launch"]["stage2"]["layer"]["filesystem"]["handled"]
            .as_array()
            .unwrap_or_else(|| panic!("no handled rights in {}", v["launch"]))
            .iter()
            .any(|r| r == "truncate");
        (fact, handled)
    };

    let (null_fact, null_handled) = truncate(&explain(Stdio::null()));
    let (host_fact, host_handled) = truncate(&explain(Stdio::from(
        std::fs::File::open(&host_file).unwrap(),
    )));
    let (inner_fact, inner_handled) = truncate(&explain(Stdio::from(
        std::fs::File::open(&inner_file).unwrap(),
    )));

    // The rule differs with the descriptor, as it must...
    assert!(host_handled, "{host_fact}");
    assert!(!null_handled, "{null_fact}");
    assert!(!inner_handled, "{inner_fact}");
    // ...and explain says why, naming the descriptor and its file.
    let canon = std::fs::canonicalize(&host_file).unwrap();
    assert_eq!(
        host_fact,
        format!(
            "truncate: kept, stdin is a host file outside the writable roots, open for \
             reading ({})",
            canon.display()
        )
    );
    for f in [&null_fact, &inner_fact] {
        assert!(
            f.starts_with(
                "truncate: left to the read-only mounts, no descriptor reaches a host file"
            ),
            "{f}"
        );
    }
    assert!(
        null_fact.contains("stdin: a pipe or a device"),
        "{null_fact}"
    );
    let inner = std::fs::canonicalize(&inner_file).unwrap();
    assert!(
        inner_fact.contains(&format!(
            "stdin: a file open for reading only ({})",
            inner.display()
        )),
        "{inner_fact}"
    );
}
