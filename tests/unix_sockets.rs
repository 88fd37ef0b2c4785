//! Unix sockets are named, not all-or-nothing: a socket the command did not
//! bind is reached only when the policy names it (the socket or a directory
//! above it), in every network mode, as root and as uid 65534, under bwrap,
//! landlock and auto. Each attack first succeeds without dcjail (the
//! control), then runs under dcjail, where the command runs and the effect
//! does not happen; real work beside it is compared with the run without
//! dcjail.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use scratch::{output_within, text};
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PY: &str = "/usr/bin/python3";
const BACKENDS: &[&str] = &["bwrap", "landlock", "auto"];
const NETS: &[&str] = &["none", "full"];

/// The uids a test runs as: the caller's, and 65534 when the caller is
/// root (`scratch::users`).
fn users() -> Vec<u32> {
    // SAFETY: getuid never fails.
    let me = unsafe { libc::getuid() };
    scratch::users()
        .iter()
        .map(|nobody| if *nobody { 65534 } else { me })
        .collect()
}

/// `cmd` run as `uid` (through setpriv when that is not who we are).
fn as_user(uid: u32, prog: &str) -> Command {
    // SAFETY: getuid never fails.
    let nobody = uid != unsafe { libc::getuid() };
    assert!(
        !nobody || uid == 65534,
        "uid {uid}: only 65534 is switched to"
    );
    scratch::user_command(nobody, prog)
}

/// A scratch directory owned by `uid`: outside every writable root.
fn owned(name: &str, uid: u32) -> PathBuf {
    let d = scratch::socket_dir(&format!("{name}-{uid}"));
    std::os::unix::fs::chown(&d, Some(uid), Some(uid)).unwrap();
    d
}

/// dcjail as `uid` in `ws`, workspace-write, the given backend and network
/// mode, with `extra` options; the command is `sh -c script`.
fn jail(uid: u32, ws: &Path, be: &str, net: &str, extra: &[&str], script: &str) -> Output {
    let mut c = as_user(uid, scratch::exe());
    c.args([
        "--backend",
        be,
        "--sandbox-mode",
        "workspace-write",
        "--net",
        net,
    ]);
    if be == "landlock" {
        // landlock alone cannot hold protected names inside a writable root.
        c.arg("--no-protect-defaults");
    }
    c.args(extra).args(["--", "sh", "-c", script]);
    c.current_dir(ws)
        .env_remove("DCJAIL_POLICY")
        .env_remove("TMUX");
    // A home of its own beside the workspace: a workspace that is the home
    // directory is held read-only by class.
    let home = ws.with_file_name(format!(
        "{}-home",
        ws.file_name().unwrap_or_default().to_string_lossy()
    ));
    std::fs::create_dir_all(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(uid), Some(uid)).unwrap();
    c.env("HOME", &home);
    output_within(c, 60)
}

fn modes() -> Vec<(&'static str, &'static str)> {
    let mut v = Vec::new();
    for be in BACKENDS {
        for net in NETS {
            v.push((*be, *net));
        }
    }
    // The allowlist needs bwrap (landlock cannot filter TCP by address).
    v.push(("bwrap", "allowlist"));
    v
}

/// A tmux server of `uid`'s on a socket under /tmp, a writable root of
/// every workspace-write run (tmux keeps its default socket there too).
struct Tmux {
    uid: u32,
    sock: PathBuf,
}

impl Tmux {
    fn start(uid: u32, tag: &str) -> Tmux {
        let dir = scratch::fresh_in_tmp(&format!("tmux-{tag}"), uid);
        let sock = dir.join("sock");
        let mut c = as_user(uid, "tmux");
        c.args(["-S", sock.to_str().unwrap(), "-f", "/dev/null"]);
        c.args(["new-session", "-d", "-s", "t", "sleep 600"]);
        // tmux runs the session's command with $SHELL, else the user's
        // login shell: uid 65534's is nologin, and without SHELL in the
        // environment (CI, a fresh machine) the session ended at once and
        // the server with it.
        c.env_remove("TMUX").env("SHELL", "/bin/sh");
        let o = output_within(c, 20);
        assert!(o.status.success(), "tmux server: {}", text(&o));
        Tmux { uid, sock }
    }

    /// `tmux -S SOCK run-shell CMD` as words of a shell line.
    fn run_shell(&self, sock: &Path, cmd: &str) -> String {
        format!("tmux -S '{}' run-shell '{cmd}'", sock.display())
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let mut c = as_user(self.uid, "tmux");
        c.args(["-S", self.sock.to_str().unwrap(), "kill-server"]);
        let _ = c.output();
        if let Some(dir) = self.sock.parent() {
            scratch::remove(dir);
        }
    }
}

#[test]
fn a_tmux_server_is_driven_only_when_its_socket_is_named() {
    if !scratch::need("tmux") {
        return;
    }
    for uid in users() {
        let ws = owned("tmux-ws", uid);
        let out = owned("tmux-out", uid);
        let marker = out.join("ran-outside");
        let tmux = Tmux::start(uid, &format!("drive-{uid}"));
        let drive = tmux.run_shell(&tmux.sock, &format!("touch {}", marker.display()));

        // Control: without dcjail the command runs outside, by the server.
        let mut c = as_user(uid, "sh");
        c.args(["-c", &drive]).env_remove("TMUX");
        let o = output_within(c, 20);
        assert!(marker.exists(), "control did not escape: {}", text(&o));
        std::fs::remove_file(&marker).unwrap();

        for (be, net) in modes() {
            let o = jail(uid, &ws, be, net, &[], &format!("echo RAN; {drive}"));
            let said = String::from_utf8_lossy(&o.stdout);
            assert!(said.contains("RAN"), "{uid} {be} {net}: {}", text(&o));
            assert!(
                !marker.exists(),
                "{uid} {be} {net}: tmux ran a command outside: {}",
                text(&o)
            );
            assert!(
                String::from_utf8_lossy(&o.stderr).contains("Permission denied"),
                "{uid} {be} {net}: {}",
                text(&o)
            );
        }

        // Renaming the server's socket onto a socket the command bound
        // itself does not make it the command's: the broker knows its own
        // by inode.
        let own = tmux.sock.with_file_name("own");
        let swap = format!(
            "{PY} -c \"import socket, os; s = socket.socket(socket.AF_UNIX); s.bind('{own}'); os.rename('{theirs}', '{own}')\"; echo RAN; {}",
            tmux.run_shell(&own, &format!("touch {}", marker.display())),
            own = own.display(),
            theirs = tmux.sock.display(),
        );
        let o = jail(uid, &ws, "bwrap", "none", &[], &swap);
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("RAN"),
            "{}",
            text(&o)
        );
        assert!(
            !marker.exists(),
            "{uid}: renamed socket reached: {}",
            text(&o)
        );
        // Put it back for the named run (the command moved it).
        std::fs::rename(&own, &tmux.sock).unwrap();

        // Named, the socket is the command's to drive: what the policy says.
        for be in BACKENDS {
            let s = tmux.sock.to_str().unwrap();
            let o = jail(uid, &ws, be, "none", &["--allow-unix-socket", s], &drive);
            assert!(
                marker.exists(),
                "{uid} {be}: named socket refused: {}",
                text(&o)
            );
            std::fs::remove_file(&marker).unwrap();
        }
        drop(tmux);
        scratch::remove(&ws);
        scratch::remove(&out);
    }
}

/// A listener of the test's own outside the writable roots; whether it
/// got bytes.
fn got_bytes(l: &UnixListener) -> bool {
    use std::io::Read;
    l.set_nonblocking(true).unwrap();
    match l.accept() {
        Ok((mut s, _)) => {
            s.set_read_timeout(Some(std::time::Duration::from_millis(500)))
                .unwrap();
            let mut b = [0u8; 16];
            matches!(s.read(&mut b), Ok(n) if n > 0)
        }
        Err(_) => false,
    }
}

#[test]
fn a_host_socket_is_not_reached_by_name_symlink_or_hard_link() {
    for uid in users() {
        let ws = owned("host-ws", uid);
        let dir = owned("host-sock", uid);
        let sock = dir.join("docker.sock");
        let l = UnixListener::bind(&sock).unwrap();
        std::os::unix::fs::chown(&sock, Some(uid), Some(uid)).unwrap();
        let send = |p: &str| {
            format!("{PY} -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{p}'); s.sendall(b'ESCAPE')\"")
        };
        // Control.
        let mut c = as_user(uid, "sh");
        c.args(["-c", &send(sock.to_str().unwrap())]);
        let o = output_within(c, 20);
        assert!(got_bytes(&l), "control did not reach it: {}", text(&o));

        let s = sock.display();
        let script = format!(
            "echo RAN; {}; ln -s '{s}' link; {}; ln '{s}' hard && {}; true",
            send(sock.to_str().unwrap()),
            send("link"),
            send("hard")
        );
        for (be, net) in modes() {
            let o = jail(uid, &ws, be, net, &[], &script);
            assert!(
                String::from_utf8_lossy(&o.stdout).contains("RAN"),
                "{}",
                text(&o)
            );
            assert!(!got_bytes(&l), "{uid} {be} {net}: reached: {}", text(&o));
            let _ = std::fs::remove_file(ws.join("link"));
            let _ = std::fs::remove_file(ws.join("hard"));
        }
        // A directory named holds the sockets in it.
        let d = dir.to_str().unwrap();
        let o = jail(
            uid,
            &ws,
            "bwrap",
            "none",
            &["--allow-unix-socket", d],
            &send(&s.to_string()),
        );
        assert!(
            got_bytes(&l),
            "{uid}: named directory refused: {}",
            text(&o)
        );
        drop(l);
        scratch::remove(&ws);
        scratch::remove(&dir);
    }
}

#[test]
fn unix_datagrams_are_refused_from_socket_and_socketpair() {
    for uid in users() {
        let ws = owned("dgram-ws", uid);
        let dir = owned("dgram-sock", uid);
        let p = dir.join("log");
        let d = UnixDatagram::bind(&p).unwrap();
        std::os::unix::fs::chown(&p, Some(uid), Some(uid)).unwrap();
        d.set_nonblocking(true).unwrap();
        let py = format!(
            "import socket\n\
             for make in (lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM), lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0]):\n\
             \ttry:\n\t\tmake().sendto(b'ESCAPE', '{}'); print('SENT')\n\
             \texcept OSError as e: print('REFUSED', e.errno)\n",
            p.display()
        );
        let mut c = as_user(uid, PY);
        c.args(["-c", &py]);
        let o = output_within(c, 20);
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "SENT\nSENT\n",
            "{}",
            text(&o)
        );
        let mut b = [0u8; 16];
        assert!(d.recv(&mut b).is_ok() && d.recv(&mut b).is_ok(), "control");
        for (be, net) in modes() {
            let mut c = as_user(uid, scratch::exe());
            c.args(["--backend", be, "--net", net, "--", PY, "-c", &py]);
            c.current_dir(&ws).env_remove("DCJAIL_POLICY");
            let o = output_within(c, 60);
            assert_eq!(
                String::from_utf8_lossy(&o.stdout),
                "REFUSED 1\nREFUSED 1\n",
                "{uid} {be} {net}: {}",
                text(&o)
            );
            assert!(
                d.recv(&mut b).is_err(),
                "{uid} {be} {net}: a datagram arrived"
            );
        }
        drop(d);
        scratch::remove(&ws);
        scratch::remove(&dir);
    }
}

const SERVER_AND_CLIENT: &str = r#"
import os, socket, threading
p = "srv.sock"
s = socket.socket(socket.AF_UNIX); s.bind(p); s.listen(1)
def serve():
    c, _ = s.accept(); c.sendall(c.recv(100).upper()); c.close()
t = threading.Thread(target=serve); t.start()
c = socket.socket(socket.AF_UNIX); c.connect(p); c.sendall(b"hello"); print(c.recv(100)); t.join()
c = socket.socket(socket.AF_UNIX); c.setblocking(False)
try:
    c.connect(p)
except OSError as e:
    print("after close:", e.errno)
a = socket.socket(socket.AF_UNIX); a.bind(b"\0dcjail-test-" + str(os.getpid()).encode()); a.listen(1)
b = socket.socket(socket.AF_UNIX); b.connect(b"\0dcjail-test-" + str(os.getpid()).encode()); print("abstract ok")
x, y = socket.socketpair(); x.send(b"pair"); print(y.recv(10))
x, y = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET); x.send(b"seq"); print(y.recv(10))
os.unlink(p)
"#;

#[test]
fn a_server_and_its_client_in_the_workspace_work_as_without_dcjail() {
    for uid in users() {
        let ws = owned("srv-ws", uid);
        let script = format!("{PY} -c '{}'", SERVER_AND_CLIENT.replace('\'', "'\\''"));
        let mut c = as_user(uid, "sh");
        c.args(["-c", &script]).current_dir(&ws);
        let control = output_within(c, 30);
        assert!(control.status.success(), "{}", text(&control));
        assert!(String::from_utf8_lossy(&control.stdout).contains("b'HELLO'"));
        for (be, net) in modes() {
            let o = jail(uid, &ws, be, net, &[], &script);
            assert_eq!(
                o.status.code(),
                control.status.code(),
                "{uid} {be} {net}: {}",
                text(&o)
            );
            assert_eq!(o.stdout, control.stdout, "{uid} {be} {net}: {}", text(&o));
        }
        scratch::remove(&ws);
    }
}

/// An ssh-agent of the test's own, stopped by its pid however the test ends.
struct Agent(std::process::Child);

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn an_ssh_agent_socket_named_works_and_unnamed_is_refused() {
    if !scratch::need("ssh-agent") || !scratch::need("ssh-add") {
        return;
    }
    for uid in users() {
        let ws = owned("agent-ws", uid);
        let dir = owned("agent", uid);
        let sock = dir.join("agent.sock");
        let agent = Agent(
            as_user(uid, "ssh-agent")
                .args(["-D", "-a", sock.to_str().unwrap()])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap(),
        );
        for _ in 0..100 {
            if sock.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let list = format!(
            "SSH_AUTH_SOCK='{}' ssh-add -l; echo status $?",
            sock.display()
        );
        let mut c = as_user(uid, "sh");
        c.args(["-c", &list]);
        let control = output_within(c, 20);
        assert_eq!(
            String::from_utf8_lossy(&control.stdout),
            "The agent has no identities.\nstatus 1\n",
            "{}",
            text(&control)
        );
        for (be, net) in modes() {
            let o = jail(uid, &ws, be, net, &[], &list);
            assert_eq!(
                String::from_utf8_lossy(&o.stdout),
                "status 2\n",
                "{uid} {be} {net}: {}",
                text(&o)
            );
            assert!(
                String::from_utf8_lossy(&o.stderr).contains("Permission denied"),
                "{}",
                text(&o)
            );
            let s = sock.to_str().unwrap();
            let o = jail(uid, &ws, be, net, &["--allow-unix-socket", s], &list);
            assert_eq!(o.stdout, control.stdout, "{uid} {be} {net}: {}", text(&o));
        }
        drop(agent);
        scratch::remove(&ws);
        scratch::remove(&dir);
    }
}

#[test]
fn the_report_names_the_refused_socket_and_its_suggestion_reruns() {
    let uid = users()[0];
    let ws = owned("report-ws", uid);
    let dir = owned("report-sock", uid);
    let sock = dir.join("api.sock");
    let l = UnixListener::bind(&sock).unwrap();
    let send = format!(
        "{PY} -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); s.sendall(b'WORK')\"",
        sock.display()
    );
    let report = dir.join("report.json");
    let r = report.to_str().unwrap();
    let o = jail(uid, &ws, "bwrap", "none", &["--report", r], &send);
    assert!(!got_bytes(&l), "{}", text(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let list = v["denials"].as_array().unwrap();
    let d = list
        .iter()
        .find(|d| d["kind"] == "unix_socket")
        .unwrap_or_else(|| panic!("{list:#?}"));
    assert_eq!(d["op"], "connect");
    assert_eq!(d["rule"], "unix socket not named");
    assert_eq!(d["resolved"], sock.to_str().unwrap());
    let allow = d["allow"].as_str().unwrap();
    assert_eq!(allow, format!("--allow-unix-socket {}", sock.display()));
    assert!(d["warning"].as_str().unwrap().contains("tmux"), "{d:#}");
    // The suggestion, applied, lets the rerun through.
    let words: Vec<&str> = allow.split(' ').collect();
    let o = jail(uid, &ws, "bwrap", "none", &words, &send);
    assert!(got_bytes(&l), "{}", text(&o));
    drop(l);
    scratch::remove(&ws);
    scratch::remove(&dir);
}

#[test]
fn allow_unix_sockets_true_is_refused_and_the_named_list_is_explained() {
    let ws = owned("policy-ws", users()[0]);
    let p = ws.join("p.toml");
    std::fs::write(&p, "[sandbox.network]\nallow_unix_sockets = true\n").unwrap();
    let mut c = Command::new(scratch::exe());
    c.args(["--policy", p.to_str().unwrap(), "--", "true"])
        .current_dir(&ws);
    let o = output_within(c, 20);
    assert_eq!(o.status.code(), Some(125), "{}", text(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("no longer accepted") && e.contains("tmux"),
        "{e}"
    );

    std::fs::write(
        &p,
        "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
         [sandbox.network]\nallow_unix_sockets = [\"~/.gnupg/S.gpg-agent\"]\n",
    )
    .unwrap();
    let mut c = Command::new(scratch::exe());
    c.args([
        "explain",
        "--policy",
        p.to_str().unwrap(),
        "--backend",
        "bwrap",
        "--",
        "true",
    ]);
    c.current_dir(&ws).env("HOME", &ws);
    let o = output_within(c, 20);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let want = ws.join(".gnupg/S.gpg-agent");
    assert_eq!(
        v["plan"]["network"]["allow_unix_sockets"][0],
        want.to_str().unwrap(),
        "{v:#}"
    );
    // The layer says what holds: the named list the broker reads.
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(
        t.contains("\"unix_sockets\": {") && t.contains("the command bound it during this run"),
        "{t}"
    );
    scratch::remove(&ws);
}

#[test]
fn inside_a_sandbox_that_holds_the_broker_unix_sockets_are_refused_and_naming_one_is_122() {
    let ws = owned("nested-ws", users()[0]);
    let inner = |extra: &str, py: &str| {
        format!(
            "{} --backend landlock {extra} -- {PY} -c \"{py}\"",
            scratch::exe()
        )
    };
    let make = "import socket\ntry:\n  socket.socket(socket.AF_UNIX); print('MADE')\nexcept OSError as e: print('REFUSED', e.errno)\na, b = socket.socketpair(); print('PAIR')";
    let o = jail(users()[0], &ws, "bwrap", "none", &[], &inner("", make));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "REFUSED 1\nPAIR\n",
        "{}",
        text(&o)
    );
    let o = jail(
        users()[0],
        &ws,
        "bwrap",
        "none",
        &[],
        &format!(
            "{}; echo status $?",
            inner("--allow-unix-socket /run/x", "print(1)")
        ),
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "status 122\n",
        "{}",
        text(&o)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("allow_unix_sockets"));
    scratch::remove(&ws);
}

#[test]
fn an_abstract_socket_outside_stays_out_of_reach_though_the_broker_connects() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::SocketAddr;
    for uid in users() {
        let ws = owned("abstract-ws", uid);
        let name = format!("dcjail-abstract-{uid}-{}", std::process::id());
        let l = UnixListener::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap())
            .unwrap();
        let send = format!(
            "{PY} -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect(b'\\0{name}'); s.sendall(b'ESCAPE')\""
        );
        let mut c = as_user(uid, "sh");
        c.args(["-c", &send]);
        let o = output_within(c, 20);
        assert!(got_bytes(&l), "control did not reach it: {}", text(&o));
        // `full` shares the host's network namespace, where the abstract
        // name lives: only landlock's scope holds it, the command's and the
        // broker's own (the broker makes every connect).
        for (be, net) in modes() {
            let o = jail(uid, &ws, be, net, &[], &format!("echo RAN; {send}"));
            assert!(
                String::from_utf8_lossy(&o.stdout).contains("RAN"),
                "{}",
                text(&o)
            );
            assert!(!got_bytes(&l), "{uid} {be} {net}: reached: {}", text(&o));
        }
        drop(l);
        scratch::remove(&ws);
    }
}

/// A blocking connect waits while the listener's backlog is full and goes
/// through once it accepts (the broker's child makes that call); the other
/// calls go on meanwhile.
const FULL_BACKLOG: &str = r#"
import os, socket, threading, time
p = "full.sock"
s = socket.socket(socket.AF_UNIX); s.bind(p); s.listen(0)
done = []
def client(i):
    c = socket.socket(socket.AF_UNIX); c.connect(p); c.sendall(b"%d" % i); done.append(c)
ts = [threading.Thread(target=client, args=(i,)) for i in range(4)]
for t in ts: t.start()
time.sleep(0.5)
print("connected before accept:", len(done) < 4)
got = sorted(s.accept()[0].recv(1) for _ in range(4))
for t in ts: t.join()
print(got, len(done))
os.unlink(p)
"#;

/// The same over TCP on loopback (`--net full`): a SYN to a full accept
/// queue is dropped and sent again, so the connect outlasts the broker's
/// one-tick try and its child waits for the handshake.
const FULL_BACKLOG_TCP: &str = r#"
import socket, threading, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(0); a = s.getsockname()
done = []
def client(i):
    c = socket.socket(); c.connect(a); c.sendall(b"%d" % i); done.append(c)
ts = [threading.Thread(target=client, args=(i,)) for i in range(3)]
for t in ts: t.start()
time.sleep(0.5)
print("connected before accept:", len(done) < 3)
got = sorted(s.accept()[0].recv(1) for _ in range(3))
for t in ts: t.join()
print(got, len(done))
"#;

#[test]
fn a_blocking_connect_waits_for_a_full_backlog_as_without_dcjail() {
    for uid in users() {
        let ws = owned("backlog-ws", uid);
        let script = format!("{PY} -c '{}'", FULL_BACKLOG.replace('\'', "'\\''"));
        let mut c = as_user(uid, "sh");
        c.args(["-c", &script]).current_dir(&ws);
        let control = output_within(c, 30);
        assert_eq!(
            String::from_utf8_lossy(&control.stdout),
            "connected before accept: True\n[b'0', b'1', b'2', b'3'] 4\n",
            "{}",
            text(&control)
        );
        for (be, net) in modes() {
            let o = jail(uid, &ws, be, net, &[], &script);
            assert_eq!(o.stdout, control.stdout, "{uid} {be} {net}: {}", text(&o));
        }
        let script = format!("{PY} -c '{}'", FULL_BACKLOG_TCP.replace('\'', "'\\''"));
        let mut c = as_user(uid, "sh");
        c.args(["-c", &script]).current_dir(&ws);
        let control = output_within(c, 60);
        assert_eq!(
            String::from_utf8_lossy(&control.stdout),
            "connected before accept: True\n[b'0', b'1', b'2'] 3\n",
            "{}",
            text(&control)
        );
        for be in BACKENDS {
            let o = jail(uid, &ws, be, "full", &[], &script);
            assert_eq!(o.stdout, control.stdout, "{uid} {be} full: {}", text(&o));
        }
        scratch::remove(&ws);
    }
}
