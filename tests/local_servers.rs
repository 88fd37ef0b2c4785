//! Local servers without opening the network: under bwrap the command has a
//! network namespace of its own, so with `--net none` and `--net allowlist`
//! a server it starts on loopback, and a client of that server in the same
//! command, work exactly as without dcjail (python's http.server and UDP,
//! IPv6, node's http with `os.networkInterfaces()`), while the host's
//! loopback services stay unreachable and the allowlist still holds. The
//! landlock backend has no namespace: a bind would be on the host's
//! loopback, so it stays refused and the report says why, naming the family.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

use scratch::text;

const PY: &str = "/usr/bin/python3";

/// A server and its client in one program: HTTP on 127.0.0.1, UDP to
/// itself, an IPv6 listener; prints what each got.
const PY_SERVER: &str = r#"
import http.server, threading, urllib.request, socket
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"served " + self.path.encode())
    def log_message(self, *a): pass
srv = http.server.HTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()
for host in ("127.0.0.1", "localhost"):
    print(urllib.request.urlopen(f"http://{host}:{srv.server_port}/x").read().decode())
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 0))
u.sendto(b"udp to itself", u.getsockname()); print(u.recv(64).decode())
s6 = socket.socket(socket.AF_INET6); s6.bind(("::1", 0)); s6.listen(); print("ipv6 listening")
srv.shutdown()
"#;

const NODE_SERVER: &str = r#"
const os = require('os'); const http = require('http');
console.log('interfaces', Object.keys(os.networkInterfaces()).includes('lo'));
const s = http.createServer((q, r) => r.end('node served ' + q.url)).listen(0, '127.0.0.1', () => {
  http.get({host: '127.0.0.1', port: s.address().port, path: '/y'}, r => {
    let b = ''; r.on('data', d => b += d); r.on('end', () => { console.log(b); s.close(); });
  });
});
"#;

fn dcjail<'a>(backend: &'a str, net: &'a str, argv: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![scratch::exe(), "--backend", backend, "--net", net, "--"];
    v.extend_from_slice(argv);
    v
}

fn node() -> &'static str {
    for n in ["/usr/bin/node", "/usr/local/bin/node"] {
        if Path::new(n).exists() {
            return n;
        }
    }
    panic!("node is not installed (scripts/test.sh installs nodejs)");
}

#[test]
fn a_server_and_its_client_in_one_command_work_under_none_and_allowlist() {
    let dir = scratch::fresh("local-servers");
    let node = node();
    let programs: [(&str, &[&str]); 2] = [
        ("python", &[PY, "-c", PY_SERVER]),
        ("node", &[node, "-e", NODE_SERVER]),
    ];
    for (name, argv) in programs {
        let bare = scratch::run_as(&dir, false, argv);
        assert!(bare.status.success(), "{name} bare: {}", text(&bare));
        for &nobody in scratch::users() {
            for net in ["none", "allowlist"] {
                let o = scratch::run_as(&dir, nobody, &dcjail("bwrap", net, argv));
                assert!(o.status.success(), "{name} {net}: {}", text(&o));
                assert_eq!(o.stdout, bare.stdout, "{name} {net}: {}", text(&o));
            }
        }
    }
}

#[test]
fn a_dev_server_started_by_a_call_is_gone_when_the_call_ends() {
    let dir = scratch::fresh("local-devserver");
    let marker = format!("dcjail-devserver-{}", std::process::id());
    let script = format!(
        "exec -a {marker} {PY} -m http.server 0 --bind 127.0.0.1 >/dev/null 2>&1 & sleep 0.5; \
         kill -0 $! && echo serving"
    );
    let o = scratch::run_as(
        &dir,
        false,
        &dcjail("bwrap", "none", &["/bin/bash", "-c", &script]),
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("serving"),
        "{}",
        text(&o)
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let left = Command::new("pgrep")
        .args(["-f", &marker])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "left running: {}",
        String::from_utf8_lossy(&left.stdout)
    );
}

/// A listener of the host on 127.0.0.1 that answers "host secret".
fn host_listener() -> (u16, std::thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    l.set_nonblocking(true).unwrap();
    let h = std::thread::spawn(move || {
        let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::time::Instant::now() < end {
            if let Ok((mut c, _)) = l.accept() {
                let mut b = [0u8; 64];
                let _ = c.set_nonblocking(false);
                let _ = c.read(&mut b);
                let _ = c.write_all(b"host secret\n");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    });
    (port, h)
}

#[test]
fn the_hosts_loopback_and_the_outside_stay_unreachable() {
    let dir = scratch::fresh("local-host");
    let (port, _h) = host_listener();
    let probe = format!(
        "import socket\n\
         for addr in [('127.0.0.1', {port}), ('10.255.255.1', 80)]:\n\
         \x20   s = socket.socket(); s.settimeout(3)\n\
         \x20   try:\n\
         \x20       s.connect(addr); s.sendall(b'x'); print(addr[0], s.recv(64).decode().strip())\n\
         \x20   except OSError as e:\n\
         \x20       print(addr[0], 'refused', type(e).__name__)\n\
         try:\n\
         \x20   v = socket.socket(40, socket.SOCK_STREAM); print('vsock made')\n\
         except OSError as e:\n\
         \x20   print('vsock refused', e.errno)\n\
         print('RAN')\n"
    );
    // Control: without dcjail the host's service answers.
    let bare = scratch::run_as(&dir, false, &[PY, "-c", &probe]);
    assert!(
        String::from_utf8_lossy(&bare.stdout).contains("127.0.0.1 host secret"),
        "{}",
        text(&bare)
    );
    for &nobody in scratch::users() {
        for net in ["none", "allowlist"] {
            let o = scratch::run_as(&dir, nobody, &dcjail("bwrap", net, &[PY, "-c", &probe]));
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(out.contains("RAN"), "{net}: {}", text(&o));
            assert!(!out.contains("host secret"), "{net}: {}", text(&o));
            assert!(out.contains("127.0.0.1 refused"), "{net}: {}", text(&o));
            assert!(out.contains("10.255.255.1 refused"), "{net}: {}", text(&o));
            assert!(out.contains("vsock refused"), "{net}: {}", text(&o));
        }
    }
}

#[test]
fn landlock_refuses_a_local_server_and_the_report_says_why() {
    let dir = scratch::fresh("local-landlock");
    let report = dir.join("report.json");
    let r = report.to_string_lossy().into_owned();
    let argv = [
        scratch::exe(),
        "--backend",
        "landlock",
        "--net",
        "none",
        "--report",
        &r,
        "--",
        PY,
        "-c",
        PY_SERVER,
    ];
    let o = scratch::run_as(&dir, false, &argv);
    assert!(!o.status.success(), "{}", text(&o));
    let rep = std::fs::read_to_string(&report).unwrap();
    assert!(
        rep.contains("AF_INET socket would use the host's network"),
        "{rep}"
    );
    assert!(
        rep.contains("bwrap backend gives the command its own loopback"),
        "{rep}"
    );
}
