//! Connections that never reach dcjail's proxy are in the report. Under
//! bwrap with `--net none` or `allowlist` the command has a network
//! namespace of its own: a `git://` fetch, a database client, a name lookup
//! of its own find no route out, and a server on the host's loopback is not
//! on the command's loopback. Each is recorded with the address, the errno
//! and why, and a connect to the command's own loopback where nothing
//! listens on the host either (a client polling for its own server) is not
//! dcjail's doing and stays out of the report. Each reachability claim has
//! its control: the same program without dcjail reaches the host's server.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use serde_json::Value;
use std::net::TcpListener;
use std::os::unix::fs::chown;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use scratch::text;

/// The host's first global IPv4 address (not loopback): a destination the
/// host reaches and the command's namespace has no route to.
fn host_ip() -> String {
    let o = Command::new("ip")
        .args(["-4", "-o", "addr", "show", "scope", "global"])
        .output()
        .expect("ip (iproute2) runs: scripts/test.sh installs it");
    let s = String::from_utf8_lossy(&o.stdout);
    s.split_whitespace()
        .skip_while(|w| *w != "inet")
        .nth(1)
        .and_then(|a| a.split('/').next())
        .map(str::to_string)
        .unwrap_or_else(|| panic!("this machine has no global IPv4 address: {s}"))
}

/// A scratch directory with a workspace, owned by the user who runs the
/// command.
fn place(tag: &str, nobody: bool) -> PathBuf {
    let d = scratch::fresh(&format!("repnet-{tag}-{}", u8::from(nobody)));
    std::fs::create_dir(d.join("ws")).unwrap();
    if nobody {
        for p in [d.clone(), d.join("ws")] {
            chown(&p, Some(65534), Some(65534)).unwrap();
        }
    }
    d
}

/// `argv` under dcjail (bwrap, `net`, a report beside the workspace), or
/// bare when `net` is `None`; the report, if one was asked for.
fn run(d: &Path, nobody: bool, net: Option<&str>, argv: &[&str]) -> (Output, Option<Value>) {
    let rep = d.join("report.json");
    let _ = std::fs::remove_file(&rep);
    let r = rep.to_string_lossy().into_owned();
    let mut a: Vec<&str> = Vec::new();
    if let Some(net) = net {
        a.extend([scratch::exe(), "--backend", "bwrap", "--net", net]);
        if net == "allowlist" {
            a.extend(["--allow-domain", "example.com"]);
        }
        a.extend(["--report", &r, "--"]);
    }
    a.extend_from_slice(argv);
    let mut c = scratch::command_as(&d.join("ws"), nobody, &a);
    c.env("HOME", d);
    let o = scratch::output_within(c, 60);
    let v = std::fs::read_to_string(&rep)
        .ok()
        .map(|s| serde_json::from_str(&s).unwrap());
    (o, v)
}

/// The report's network denials, as (resolved, errno, why_not).
fn network(v: &Value) -> Vec<(String, String, String)> {
    v["denials"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "network" && d["op"] == "connect")
        .map(|d| {
            (
                d["resolved"].as_str().unwrap_or("").to_string(),
                d["errno"].as_str().unwrap_or("").to_string(),
                d["why_not"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// Connections the listener took since the last call.
fn accepted(l: &TcpListener) -> usize {
    l.set_nonblocking(true).unwrap();
    let mut n = 0;
    // A connection made just before is queued by the time the client
    // printed; a short wait covers the scheduler.
    let end = Instant::now() + Duration::from_millis(300);
    while Instant::now() < end {
        match l.accept() {
            Ok(_) => n += 1,
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    n
}

const CLIENT: &str = r#"
import socket, sys
print("RAN")
for host, port, kind in [(sys.argv[1], int(sys.argv[2]), socket.SOCK_STREAM),
                         (sys.argv[3], int(sys.argv[2]), socket.SOCK_STREAM),
                         (sys.argv[3], 53, socket.SOCK_DGRAM)]:
    s = socket.socket(socket.AF_INET, kind)
    s.settimeout(5)
    try:
        s.connect((host, port))
        print("reached", host, port)
    except OSError as e:
        print("refused", host, port, e.errno)
    s.close()
"#;

#[test]
fn a_server_on_the_host_is_out_of_reach_and_the_report_says_so() {
    let ip = host_ip();
    for &nobody in scratch::users() {
        let d = place("host", nobody);
        let l = TcpListener::bind("0.0.0.0:0").unwrap();
        let port = l.local_addr().unwrap().port().to_string();
        let argv = ["/usr/bin/python3", "-c", CLIENT, "127.0.0.1", &port, &ip];

        // Control: without dcjail both reach the host's server.
        let (o, _) = run(&d, nobody, None, &argv);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains(&format!("reached 127.0.0.1 {port}"))
                && out.contains(&format!("reached {ip} {port}")),
            "control: {}",
            text(&o)
        );
        assert_eq!(accepted(&l), 2, "control");

        for net in ["none", "allowlist"] {
            let (o, v) = run(&d, nobody, Some(net), &argv);
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(out.contains("RAN"), "{net}: {}", text(&o));
            assert!(
                out.contains(&format!("refused 127.0.0.1 {port}"))
                    && out.contains(&format!("refused {ip} {port}")),
                "{net}: {}",
                text(&o)
            );
            assert_eq!(accepted(&l), 0, "{net}: the host's server was reached");
            let got = network(&v.unwrap_or_else(|| panic!("{net}: no report: {}", text(&o))));
            let find = |addr: &str| {
                got.iter()
                    .find(|g| g.0 == addr)
                    .unwrap_or_else(|| panic!("{net}: no denial of {addr}: {got:#?}"))
                    .clone()
            };
            let lo = find(&format!("127.0.0.1:{port}"));
            assert_eq!(lo.1, "ECONNREFUSED", "{net}: {lo:?}");
            assert!(lo.2.contains("host's loopback"), "{net}: {lo:?}");
            let out_ = find(&format!("{ip}:{port}"));
            assert_eq!(out_.1, "ENETUNREACH", "{net}: {out_:?}");
            assert!(out_.2.contains("--net full"), "{net}: {out_:?}");
            let dns = find(&format!("{ip}:53 (udp)"));
            assert!(dns.2.starts_with("a name lookup"), "{net}: {dns:?}");
        }
        drop(l);
        scratch::remove(&d);
    }
}

#[test]
fn a_client_polling_its_own_loopback_leaves_nothing_in_the_report() {
    for &nobody in scratch::users() {
        let d = place("own", nobody);
        // A port nothing listens on, on the host or in the sandbox: a
        // listener's port, closed again.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
            .to_string();
        let argv = [
            "/usr/bin/python3",
            "-c",
            CLIENT,
            "127.0.0.1",
            &port,
            "127.0.0.1",
        ];
        for net in ["none", "allowlist"] {
            let (o, v) = run(&d, nobody, Some(net), &argv);
            assert!(
                String::from_utf8_lossy(&o.stdout).contains(&format!("refused 127.0.0.1 {port}")),
                "{net}: {}",
                text(&o)
            );
            let v = v.unwrap_or_else(|| panic!("{net}: no report: {}", text(&o)));
            let got = network(&v);
            assert!(
                !got.iter()
                    .any(|g| g.0.starts_with("127.0.0.1:") && g.1 == "ECONNREFUSED"),
                "{net}: {got:#?}"
            );
        }
        scratch::remove(&d);
    }
}

/// `git daemon` serving `root` on every address, port `port`, in a process
/// group of its own: `git` runs `git-daemon` as a child, so the group is
/// what is killed, when the test ends or fails.
struct GitDaemon(Child);

impl Drop for GitDaemon {
    fn drop(&mut self) {
        // SAFETY: a signal to the process group this test made.
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

fn git_daemon(root: &Path, port: u16) -> GitDaemon {
    use std::os::unix::process::CommandExt;
    let c = Command::new("git")
        .args(["daemon", "--export-all", "--reuseaddr", "--listen=0.0.0.0"])
        .arg(format!("--port={port}"))
        .arg(format!("--base-path={}", root.display()))
        .arg(root)
        .process_group(0)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("git daemon");
    let d = GitDaemon(c);
    let end = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < end, "git daemon did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    d
}

#[test]
fn a_git_protocol_fetch_is_in_the_report_with_its_address() {
    let ip = host_ip();
    let srv = scratch::fresh("repnet-gitd");
    let bare = srv.join("r.git");
    let st = Command::new("git")
        .args(["init", "-q", "--bare", "-b", "main"])
        .arg(&bare)
        .status()
        .unwrap();
    assert!(st.success());
    let seed = srv.join("seed");
    for a in [
        &["git", "init", "-q", "-b", "main", "."][..],
        &[
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "one",
        ],
        &["git", "push", "-q", "../r.git", "main"],
    ] {
        std::fs::create_dir_all(&seed).unwrap();
        let o = scratch::run_as(&seed, false, a);
        assert!(o.status.success(), "{}", text(&o));
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let daemon = git_daemon(&srv, port);
    for &nobody in scratch::users() {
        let d = place("git", nobody);
        for host in ["127.0.0.1", ip.as_str()] {
            let url = format!("git://{host}:{port}/r.git");
            let argv = ["git", "ls-remote", &url];
            let (o, _) = run(&d, nobody, None, &argv);
            assert!(
                String::from_utf8_lossy(&o.stdout).contains("refs/heads/main"),
                "control: {}",
                text(&o)
            );
            for net in ["none", "allowlist"] {
                let (o, v) = run(&d, nobody, Some(net), &argv);
                assert!(!o.status.success(), "{net} {host}: {}", text(&o));
                assert!(
                    !String::from_utf8_lossy(&o.stdout).contains("refs/heads/main"),
                    "{net} {host}: {}",
                    text(&o)
                );
                let got = network(&v.unwrap_or_else(|| panic!("no report: {}", text(&o))));
                let want = format!("{host}:{port}");
                let hit = got.iter().find(|g| g.0 == want);
                assert!(hit.is_some(), "{net} {host}: {got:#?}");
                let why = &hit.unwrap().2;
                if net == "allowlist" && host != "127.0.0.1" {
                    assert!(why.contains("https:// URL"), "{why}");
                }
            }
        }
        scratch::remove(&d);
    }
    drop(daemon);
    scratch::remove(&srv);
}
