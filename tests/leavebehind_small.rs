//! Nothing a sandboxed run leaves behind runs later: a workspace or
//! writable root on a kernel interface filesystem (`/proc`, `/sys`, `/dev`)
//! is refused, as root and as uid 65534, also through a symlink; and with
//! `--net full` the command still cannot reach the host's unix sockets
//! (code outside the sandbox) unless `allow_unix_sockets` names them, even
//! one inside the workspace, while it reaches the sockets it binds itself.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use scratch::text;

const PY: &str = "/usr/bin/python3";
const BACKENDS: [&str; 2] = ["bwrap", "landlock"];

/// Runs `cmd` for at most 60 seconds, stdin closed.
fn run(mut cmd: Command) -> Output {
    cmd.stdin(Stdio::null());
    scratch::output_within(cmd, 60)
}

/// dcjail with `args` in `cwd`, as root or (`nobody`) as uid 65534.
fn dcjail(cwd: &Path, nobody: bool, args: &[&str]) -> Output {
    let mut cmd = scratch::user_command(nobody, scratch::exe());
    cmd.current_dir(cwd).env_remove("DCJAIL_POLICY").args(args);
    run(cmd)
}

#[test]
fn kernel_interface_filesystems_are_refused_as_workspace_or_writable_root() {
    let dir = scratch::fresh("lb-pseudo");
    let link = dir.join("to-proc");
    std::os::unix::fs::symlink("/proc", &link).unwrap();
    let link = link.to_string_lossy().into_owned();
    let users = scratch::users();
    let cases: Vec<Vec<&str>> = vec![
        vec!["--workspace", "/proc"],
        vec!["--workspace", &link],
        vec!["--workspace", "/sys"],
        vec!["--workspace", "/dev"],
        vec!["--sandbox-mode", "workspace-write", "--workspace", "/proc"],
        vec![
            "--sandbox-mode",
            "workspace-write",
            "--allow-write",
            "/sys/kernel",
        ],
        vec!["--sandbox-mode", "workspace-write", "--allow-write", &link],
        vec!["--sandbox-mode", "workspace-write", "--allow-write", "/dev"],
    ];
    for &nobody in users {
        for be in BACKENDS {
            for case in &cases {
                let mut args = vec!["--backend", be];
                args.extend(case.iter().copied());
                args.extend(["--", "/bin/sh", "-c", "echo RAN"]);
                let o = dcjail(&dir, nobody, &args);
                let err = String::from_utf8_lossy(&o.stderr);
                assert_eq!(o.status.code(), Some(125), "{case:?}: {}", text(&o));
                assert!(!String::from_utf8_lossy(&o.stdout).contains("RAN"));
                let named = case.last().copied().unwrap_or_default();
                assert!(
                    err.contains(named) && err.contains("kernel interface"),
                    "{case:?}: {err}"
                );
            }
        }
    }
    // /dev/shm is a tmpfs of its own: storage, usable as a writable root.
    if Path::new("/dev/shm").is_dir() {
        let o = dcjail(
            &dir,
            false,
            &[
                "--sandbox-mode",
                "workspace-write",
                "--allow-write",
                "/dev/shm",
                "--",
                "/bin/sh",
                "-c",
                "echo RAN",
            ],
        );
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("RAN"),
            "{}",
            text(&o)
        );
    }
    scratch::remove(&dir);
}

const CLIENT: &str = "import socket,sys\n\
try:\n s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.send(b'LEAK'); print('CONNECTED')\n\
except OSError as e: print('REFUSED', e.errno)\n\
a,b=socket.socketpair(); a.send(b'p'); print('PAIR', b.recv(1))\n\
try:\n o=socket.socket(socket.AF_UNIX); o.bind(sys.argv[2]); o.listen(1); c=socket.socket(socket.AF_UNIX); c.connect(sys.argv[2]); print('OWN-OK')\n\
except OSError as e: print('OWN-REFUSED', e.errno)\n";

fn accepted(l: &UnixListener) -> bool {
    std::thread::sleep(Duration::from_millis(100));
    l.accept().is_ok()
}

#[test]
fn net_full_keeps_host_unix_sockets_out_unless_named() {
    assert!(Path::new(PY).exists(), "this test needs {PY}");
    let dir = scratch::socket_dir("lb-unix");
    let sock = dir.join("s");
    let l = UnixListener::bind(&sock).unwrap();
    l.set_nonblocking(true).unwrap();
    let sock = sock.to_string_lossy().into_owned();

    // Control: outside dcjail the command reaches the host's socket.
    let own = dir.join("own0").to_string_lossy().into_owned();
    let mut c = Command::new(PY);
    c.args(["-c", CLIENT, &sock, &own]);
    let o = run(c);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("CONNECTED"),
        "{}",
        text(&o)
    );
    assert!(accepted(&l), "control did not reach the listener");

    for (i, be) in BACKENDS.iter().enumerate() {
        let mut last_out: Option<String> = None;
        for net in ["none", "full"] {
            let own = dir
                .join(format!("own-{i}-{net}"))
                .to_string_lossy()
                .into_owned();
            let ws = dir.to_string_lossy().into_owned();
            let args = [
                "--backend",
                be,
                "--net",
                net,
                "--sandbox-mode",
                "workspace-write",
                "--workspace",
                &ws,
                "--no-protect-defaults",
                "--",
                PY,
                "-c",
                CLIENT,
                &sock,
                &own,
            ];
            let o = dcjail(&dir, false, &args);
            let out = String::from_utf8_lossy(&o.stdout).into_owned();
            assert!(out.contains("REFUSED"), "{be} {net}: {}", text(&o));
            assert!(!out.contains("CONNECTED"), "{be} {net}: {}", text(&o));
            assert!(!accepted(&l), "{be} --net {net} reached the host's socket");
            assert!(out.contains("PAIR b'p'"), "{be} {net}: {}", text(&o));
            assert!(out.contains("OWN-OK"), "{be} {net}: {}", text(&o));
            // The same answers in both modes: the network mode says
            // nothing about unix sockets.
            if let Some(prev) = &last_out {
                assert_eq!(prev, &out, "{be}: none and full differ");
            }
            last_out = Some(out);
        }
        // Allowed: it connects, under full as under none.
        let own = dir
            .join(format!("own-{i}-allowed"))
            .to_string_lossy()
            .into_owned();
        let o = dcjail(
            &dir,
            false,
            &[
                "--backend",
                be,
                "--net",
                "full",
                "--allow-unix-socket",
                &sock,
                "--",
                PY,
                "-c",
                CLIENT,
                &sock,
                &own,
            ],
        );
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("CONNECTED"),
            "{be}: {}",
            text(&o)
        );
        assert!(
            accepted(&l),
            "{be}: --allow-unix-socket did not reach the listener"
        );

        // explain says what is enforced: the socket rule of the filter.
        let o = dcjail(
            &dir,
            false,
            &["explain", "--backend", be, "--net", "full", "--", "true"],
        );
        let t = String::from_utf8_lossy(&o.stdout);
        assert!(
            t.contains("AF_UNIX type is SOCK_DGRAM"),
            "{be}: {}",
            text(&o)
        );
        assert!(t.contains("\"allow_unix_sockets\": []"), "{be}: {t}");
        assert!(
            t.contains("the command bound it during this run"),
            "{be}: {t}"
        );
    }
    drop(l);
    scratch::remove(&dir);
}
