//! The Seatbelt backend on a real Mac (the macOS job of
//! .github/workflows/ci.yml): each case runs the real binary, which runs
//! /usr/bin/sandbox-exec, proves the command ran (a marker it printed), and
//! asserts the effect did not happen; each first runs unsandboxed
//! (`--no-sandbox`) to prove the effect happens there, so the case can fail.
//! Off macOS this file is empty: the renderer and the allowlist wiring are
//! tested on every OS (tests/seatbelt.rs, tests/seatbelt_proxy.rs).
#![cfg(target_os = "macos")]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const BIN: &str = env!("CARGO_BIN_EXE_dcjail");

/// A scratch root with `ws` (the workspace and cwd) and `outside`, not
/// under /tmp or $TMPDIR (writable roots in workspace-write).
struct Scratch {
    root: PathBuf,
    ws: PathBuf,
    outside: PathBuf,
}

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let base = std::fs::canonicalize(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let root = base.join(format!("sb-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let ws = root.join("ws");
        let outside = root.join("outside");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        Scratch { root, ws, outside }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn dcjail(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env_remove("DCJAIL_POLICY")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn sh(dir: &Path, opts: &[&str], script: &str) -> Output {
    let mut args = opts.to_vec();
    args.extend_from_slice(&["--", "/bin/sh", "-c", script]);
    dcjail(dir, &args)
}

/// A loopback HTTP server answering 200 and counting requests.
fn origin() -> (u16, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let n = Arc::new(AtomicUsize::new(0));
    let n2 = n.clone();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { continue };
            n2.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf);
            let _ =
                c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        }
    });
    (port, n)
}

#[test]
fn doctor_says_seatbelt_works_and_auto_uses_it() {
    let o = dcjail(Path::new("/"), &["doctor", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(v["auto"], "seatbelt", "{v}");
}

#[test]
fn read_only_cannot_write_the_workspace() {
    let s = Scratch::new("ro");
    let o = sh(&s.ws, &["--no-sandbox"], "echo x > control");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(s.ws.join("control").exists());
    let o = sh(&s.ws, &[], "echo ran-$DCJAIL_BACKEND; echo x > f");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("ran-seatbelt"),
        "{}",
        text(&o)
    );
    assert!(!s.ws.join("f").exists(), "{}", text(&o));
}

#[test]
fn workspace_write_writes_inside_and_not_outside_nor_in_git_hooks() {
    let s = Scratch::new("ww");
    let ok = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&s.ws)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    std::fs::create_dir_all(s.ws.join(".git/hooks")).unwrap();
    let outside = s.outside.join("out");
    let hook = s.ws.join(".git/hooks/pre-commit");
    let script = format!(
        "echo ran; echo in > inside; echo out > '{}'; echo evil > .git/hooks/pre-commit",
        outside.display()
    );
    let o = sh(&s.ws, &["--no-sandbox"], &script);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(outside.exists() && hook.exists(), "control");
    std::fs::remove_file(&outside).unwrap();
    std::fs::remove_file(&hook).unwrap();
    std::fs::remove_file(s.ws.join("inside")).unwrap();

    let o = sh(&s.ws, &["--sandbox-mode", "workspace-write"], &script);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("ran"),
        "{}",
        text(&o)
    );
    assert!(s.ws.join("inside").exists(), "{}", text(&o));
    assert!(
        !outside.exists(),
        "wrote outside the workspace: {}",
        text(&o)
    );
    assert!(!hook.exists(), "wrote a git hook: {}", text(&o));
}

#[test]
fn deny_read_is_unreadable() {
    let s = Scratch::new("dr");
    std::fs::write(s.ws.join("secret.txt"), "SECRET-VALUE").unwrap();
    let o = sh(&s.ws, &["--no-sandbox"], "cat secret.txt");
    assert!(String::from_utf8_lossy(&o.stdout).contains("SECRET-VALUE"));
    let o = sh(
        &s.ws,
        &["--deny-read", "secret.txt"],
        "echo ran; cat secret.txt",
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("ran"), "{}", text(&o));
    assert!(!out.contains("SECRET-VALUE"), "{}", text(&o));
}

#[test]
fn network_none_reaches_nothing() {
    let s = Scratch::new("nn");
    let (port, hits) = origin();
    let url = format!("http://127.0.0.1:{port}/");
    let script = format!("echo ran; /usr/bin/curl -s -m 5 --noproxy '*' {url}");
    let o = sh(&s.ws, &["--no-sandbox"], &script);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("ok"),
        "{}",
        text(&o)
    );
    let before = hits.load(Ordering::SeqCst);
    let o = sh(&s.ws, &[], &script);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("ran") && !out.contains("ok"), "{}", text(&o));
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(hits.load(Ordering::SeqCst), before);
}

#[test]
fn the_allowlist_goes_through_dcjails_proxy_and_a_direct_connection_fails() {
    let s = Scratch::new("al");
    let (port, hits) = origin();
    let allow = format!("localhost:{port}");
    let opts = ["--net", "allowlist", "--allow-domain", allow.as_str()];
    // The launch explain shows: the profile, the port still to come.
    let o = dcjail(
        &s.ws,
        &[
            "explain",
            "--net",
            "allowlist",
            "--allow-domain",
            &allow,
            "--",
            "true",
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["backend"], "seatbelt", "{v}");
    assert!(
        v["launch"]["seatbelt"]["pending"]["PROXY"].is_string(),
        "{v}"
    );

    let through = format!("echo ran; /usr/bin/curl -s -m 10 http://localhost:{port}/");
    let o = sh(&s.ws, &opts, &through);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("ok"),
        "{}",
        text(&o)
    );
    assert_eq!(hits.load(Ordering::SeqCst), 1);

    let direct = format!("echo ran; /usr/bin/curl -s -m 5 --noproxy '*' http://127.0.0.1:{port}/");
    let o = sh(&s.ws, &["--no-sandbox"], &direct);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("ok"),
        "control: {}",
        text(&o)
    );
    let before = hits.load(Ordering::SeqCst);
    let o = sh(&s.ws, &opts, &direct);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("ran") && !out.contains("ok"), "{}", text(&o));
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(
        hits.load(Ordering::SeqCst),
        before,
        "a direct connection got through"
    );

    // A name not allowed is refused by the proxy and reported.
    let o = sh(
        &s.ws,
        &opts,
        "echo ran; /usr/bin/curl -s -m 10 -o /dev/null -w '%{http_code}' http://denied.example/",
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("ran") && out.contains("403"), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("dcjail: network-denied: "),
        "{}",
        text(&o)
    );
}
