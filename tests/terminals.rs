//! Of the terminal devices, only the command's own terminal is reachable
//! (SPEC §5). The attack: another session's pseudo-terminal, held open by
//! this test, read (what the user types there: passwords) and written (a
//! fake prompt). The control, without the sandbox, does both; under each
//! backend neither happens while the command still runs; the command's own
//! terminal keeps working. As root and as uid 65534 (whose "other session"
//! is a pty of its own uid, which it could open without dcjail).
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use scratch::exe as bin;

fn python() -> &'static str {
    "/usr/bin/python3"
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

fn users() -> Vec<u32> {
    // SAFETY: geteuid never fails.
    if unsafe { libc::geteuid() } == 0 {
        vec![0, 65534]
    } else {
        eprintln!("note: not root, cannot switch to uid 65534; only this user is tested");
        // SAFETY: getuid never fails.
        vec![unsafe { libc::getuid() }]
    }
}

/// A pseudo-terminal pair held by the test: "another session".
struct Pty {
    master: File,
    slave: File,
    path: PathBuf,
}

impl Pty {
    fn open(owner: u32) -> Pty {
        let (mut m, mut s) = (0, 0);
        // SAFETY: openpty writes two descriptors.
        let r = unsafe {
            libc::openpty(
                &mut m,
                &mut s,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: fresh descriptors owned here.
        let (master, slave) = unsafe { (File::from_raw_fd(m), File::from_raw_fd(s)) };
        let path = std::fs::read_link(format!("/proc/self/fd/{s}")).unwrap();
        // SAFETY: getuid never fails.
        if owner != unsafe { libc::getuid() } {
            std::os::unix::fs::fchown(&slave, Some(owner), Some(owner)).unwrap();
        }
        // SAFETY: plain fcntl on our descriptor.
        unsafe {
            let fl = libc::fcntl(m, libc::F_GETFL);
            libc::fcntl(m, libc::F_SETFL, fl | libc::O_NONBLOCK);
        }
        Pty {
            master,
            slave,
            path,
        }
    }

    /// What the user "types" in that session.
    fn type_in(&mut self, s: &str) {
        self.master.write_all(s.as_bytes()).unwrap();
    }

    /// Everything written to the terminal since the last call.
    fn drain(&mut self) -> String {
        let mut out = Vec::new();
        let mut b = [0u8; 4096];
        while let Ok(n) = self.master.read(&mut b) {
            if n == 0 {
                break;
            }
            out.extend_from_slice(&b[..n]);
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// Opens the other session's terminal by path (and, for root, through the
/// test's own descriptor in /proc), reads what was typed, writes a prompt.
const ATTACK: &str = r#"
import os, sys
for p in sys.argv[1:]:
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
        print("GOT", os.read(fd, 200))
    except OSError as e:
        print("READ-FAILED", p, e)
    try:
        fd = os.open(p, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
        os.write(fd, b"FAKE-PROMPT")
    except OSError as e:
        print("WRITE-FAILED", p, e)
print("ATTACK-RAN")
"#;

fn as_user(uid: u32, argv: &[String]) -> Command {
    // SAFETY: getuid never fails.
    let nobody = uid != unsafe { libc::getuid() };
    assert!(
        !nobody || uid == 65534,
        "uid {uid}: only 65534 is switched to"
    );
    let mut c = scratch::user_command(nobody, &argv[0]);
    c.args(&argv[1..]);
    c.current_dir(scratch::base())
        .env_remove("DCJAIL_POLICY")
        .env("HOME", "/nonexistent")
        .stdin(Stdio::null());
    c
}

fn attack(uid: u32, backend: Option<&str>, targets: &[String]) -> Output {
    let mut argv: Vec<String> = Vec::new();
    if let Some(b) = backend {
        argv.extend([bin().into(), "--backend".into(), b.into(), "--".into()]);
    }
    argv.extend([python().into(), "-c".into(), ATTACK.into()]);
    argv.extend(targets.iter().cloned());
    as_user(uid, &argv).output().unwrap()
}

fn another_sessions_terminal_is_unreachable_on(backend: &str) {
    for uid in users() {
        let mut other = Pty::open(uid);
        let mut targets = vec![other.path.display().to_string()];
        if uid == 0 {
            targets.push(format!(
                "/proc/{}/fd/{}",
                std::process::id(),
                other.slave.as_raw_fd()
            ));
        }
        // Control: without dcjail the typed line is read and the prompt lands.
        other.type_in("TYPED-PASSWORD\n");
        let o = attack(uid, None, &targets);
        assert!(
            text(&o).contains("TYPED-PASSWORD"),
            "uid {uid} control: {}",
            text(&o)
        );
        assert!(other.drain().contains("FAKE-PROMPT"), "uid {uid} control");

        other.type_in("TYPED-PASSWORD\n");
        let _ = other.drain(); // the echo of what was typed
        let o = attack(uid, Some(backend), &targets);
        let out = text(&o);
        assert!(out.contains("ATTACK-RAN"), "{backend} uid {uid}: {out}");
        assert!(
            !out.contains("TYPED-PASSWORD"),
            "{backend} uid {uid}: {out}"
        );
        let seen = other.drain();
        assert!(!seen.contains("FAKE-PROMPT"), "{backend} uid {uid}: {seen}");
    }
}

#[test]
fn landlock_another_sessions_terminal_can_be_neither_read_nor_written() {
    another_sessions_terminal_is_unreachable_on("landlock");
}

#[test]
fn bwrap_another_sessions_terminal_can_be_neither_read_nor_written() {
    another_sessions_terminal_is_unreachable_on("bwrap");
}

/// Runs `argv` as `uid` with a new pty as its controlling terminal and
/// stdin, stdout, stderr; returns what it wrote there. `input` is typed first.
fn under_own_terminal(uid: u32, argv: &[String], input: &str) -> (Option<i32>, String) {
    let mut own = Pty::open(uid);
    own.type_in(input);
    let mut c = as_user(uid, argv);
    let fd = own.slave.as_raw_fd();
    c.stdin(Stdio::from(own.slave.try_clone().unwrap()))
        .stdout(Stdio::from(own.slave.try_clone().unwrap()))
        .stderr(Stdio::from(own.slave.try_clone().unwrap()));
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        c.pre_exec(move || {
            libc::setsid();
            if libc::ioctl(0, libc::TIOCSCTTY, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let _ = fd;
            Ok(())
        });
    }
    let mut child = c.spawn().unwrap();
    let mut seen = String::new();
    let status = loop {
        seen.push_str(&own.drain());
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    seen.push_str(&own.drain());
    (status.code(), seen)
}

#[test]
fn landlock_the_commands_own_terminal_and_dev_tty_still_work() {
    // /dev/tty is the controlling terminal, this one: detached from it (a
    // new session), the command gets no terminal at all through /dev/tty.
    let script = "t=$(tty); echo \"OWN-PATH:$t\"; echo OWN-WRITE > \"$t\"; \
                  read a < \"$t\"; echo \"OWN-READ:$a\"; echo TTY-WRITE > /dev/tty; \
                  read b < /dev/tty; echo \"TTY-READ:$b\"; \
                  setsid -w sh -c 'echo DETACHED-LEAK > /dev/tty' 2>/dev/null || echo NO-TTY-DETACHED; \
                  echo CASE-RAN";
    for uid in users() {
        for backend in [None, Some("landlock")] {
            let mut argv: Vec<String> = Vec::new();
            if let Some(b) = backend {
                argv.extend([bin().into(), "--backend".into(), b.into(), "--".into()]);
            }
            argv.extend(["sh".into(), "-c".into(), script.into()]);
            let (code, seen) = under_own_terminal(uid, &argv, "first\nsecond\n");
            let who = format!("{backend:?} uid {uid}");
            assert_eq!(code, Some(0), "{who}: {seen}");
            for want in [
                "OWN-PATH:/dev/pts/",
                "OWN-WRITE",
                "OWN-READ:first",
                "TTY-WRITE",
                "TTY-READ:second",
                "NO-TTY-DETACHED",
                "CASE-RAN",
            ] {
                assert!(seen.contains(want), "{who}: {want} missing: {seen}");
            }
            assert!(!seen.contains("DETACHED-LEAK"), "{who}: {seen}");
        }
    }
}

/// Landlock cannot tell a pseudo-terminal the command opens from another
/// session's (both are files in /dev/pts), so none can be opened there;
/// bwrap's /dev has a devpts instance of the command's own.
#[test]
fn a_new_pseudo_terminal_opens_under_bwrap_but_not_under_landlock() {
    let script = "import os\ntry:\n m, s = os.openpty(); os.write(m, b'x'); print('PTY-OPENED')\n\
                  except OSError as e: print('PTY-REFUSED', e)\nprint('CASE-RAN')";
    for uid in users() {
        for (backend, opened) in [
            (None, true),
            (Some("bwrap"), true),
            (Some("landlock"), false),
        ] {
            let mut argv: Vec<String> = Vec::new();
            if let Some(b) = backend {
                argv.extend([bin().into(), "--backend".into(), b.into(), "--".into()]);
            }
            argv.extend([python().into(), "-c".into(), script.into()]);
            let o = as_user(uid, &argv).output().unwrap();
            let out = text(&o);
            assert!(out.contains("CASE-RAN"), "{backend:?} uid {uid}: {out}");
            assert_eq!(
                out.contains("PTY-OPENED"),
                opened,
                "{backend:?} uid {uid}: {out}"
            );
        }
    }
}

#[test]
fn landlock_explain_lists_no_terminal_but_its_own() {
    let o = Command::new(bin())
        .args(["explain", "--backend", "landlock", "--", "true"])
        .env_remove("DCJAIL_POLICY")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rules = v["launch"]["filesystem"]["rules"].as_array().unwrap();
    for r in rules {
        let p = r["path"].as_str().unwrap();
        assert!(
            !p.starts_with("/dev/pts") && p != "/dev/ptmx" && p != "/dev/console",
            "{p} is granted: {r}"
        );
        assert!(
            !(p.starts_with("/dev/tty") && p != "/dev/tty"),
            "{p} is granted: {r}"
        );
    }
    let notes = v["launch"]["notes"].to_string();
    assert!(notes.contains("only the command's own"), "{notes}");
}
