//! Attacks on the `landlock` backend from inside the sandbox: each test
//! tries to break one guarantee of SPEC §5 and asserts the effect did not
//! happen (the file is absent, no byte arrived, the process still runs).
//! Where the attack could fail for a reason other than the sandbox, a
//! control run without it shows that the attack works.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use scratch::exe as bin;

/// A fresh directory under the target's tmp dir (not /tmp, which is a
/// writable root in workspace-write), removed on drop.
/// A scratch tree (`scratch::Dir`) holding the workspace `ws`.
struct Scratch(scratch::Dir);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let d = scratch::Dir::new(tag);
        std::fs::create_dir_all(d.join("ws")).unwrap();
        Scratch(d)
    }
    fn ws(&self) -> PathBuf {
        self.0.join("ws")
    }
    /// A workspace-write policy without the built-in protected paths, kept
    /// outside the workspace (the policy file itself is protected).
    fn write_policy(&self) -> PathBuf {
        let p = self.0.join("policy.toml");
        std::fs::write(
            &p,
            "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
             [sandbox]\nmode = \"workspace-write\"\nbackend = \"landlock\"\n\
             [sandbox.filesystem]\nprotect_defaults = false\n",
        )
        .unwrap();
        p
    }
}

use scratch::dcjail;

/// `dcjail --backend landlock [extra] -- argv…`
fn jailed(cwd: &Path, extra: &[&str], argv: &[&str]) -> Output {
    let mut a = vec!["--backend", "landlock"];
    a.extend_from_slice(extra);
    a.push("--");
    a.extend_from_slice(argv);
    dcjail(cwd, &a)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn python() -> &'static str {
    if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    }
}

fn py(cwd: &Path, extra: &[&str], script: &str) -> Output {
    jailed(cwd, extra, &[python(), "-c", script])
}

/// Whether a process whose command line contains `marker` is alive.
fn alive_with(marker: &str) -> bool {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return false;
    };
    rd.flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .map(|c| text(&c).contains(marker))
            .unwrap_or(false)
    })
}

fn unique_sleep() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    // A fractional duration nobody else uses: the marker to look for.
    format!(
        "900.{}{:03}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

#[test]
fn landlock_runs_with_no_new_privs_and_no_capabilities_as_root() {
    let s = Scratch::new("caps");
    let o = jailed(&s.ws(), &[], &["cat", "/proc/self/status"]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(out.contains("NoNewPrivs:\t1"), "{out}");
    for set in ["CapEff", "CapPrm", "CapInh", "CapAmb", "CapBnd"] {
        assert!(
            out.contains(&format!("{set}:\t0000000000000000")),
            "{set} not empty:\n{out}"
        );
    }
    assert!(out.contains("Seccomp:\t2"), "{out}");
}

#[test]
fn landlock_runs_with_no_new_privs_and_no_capabilities_as_nobody() {
    if !scratch::root("switch to uid 65534") {
        return;
    }
    let o = scratch::command_as(
        Path::new("/"),
        true,
        &[
            bin(),
            "--backend",
            "landlock",
            "--",
            "cat",
            "/proc/self/status",
        ],
    )
    .env("HOME", "/nonexistent")
    .output()
    .unwrap();
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(out.contains("Uid:\t65534"), "{out}");
    assert!(out.contains("NoNewPrivs:\t1"), "{out}");
    for set in ["CapEff", "CapPrm", "CapInh", "CapAmb"] {
        assert!(
            out.contains(&format!("{set}:\t0000000000000000")),
            "{set} not empty:\n{out}"
        );
    }
    assert!(out.contains("Seccomp:\t2"), "{out}");
}

#[test]
fn landlock_read_only_write_anywhere_leaves_no_file() {
    let s = Scratch::new("ro");
    let inside = s.ws().join("made");
    let tmp = format!("/tmp/dcjail-ll-ro-{}", std::process::id());
    let script = format!(
        "echo x > '{}'; echo x > '{tmp}'; mkdir '{}.d'; echo x > /dev/null && echo NULL-OK",
        inside.display(),
        inside.display()
    );
    let o = jailed(&s.ws(), &[], &["sh", "-c", &script]);
    assert!(!inside.exists());
    assert!(!Path::new(&format!("{}.d", inside.display())).exists());
    assert!(!Path::new(&tmp).exists());
    assert!(text(&o.stdout).contains("NULL-OK"), "{}", text(&o.stderr));
}

#[test]
fn landlock_workspace_write_writes_inside_and_nowhere_else() {
    let s = Scratch::new("ww");
    let pol = s.write_policy();
    let outside = s.0.join("outside");
    let script = format!(
        "echo in > inside && echo x > '{}'; ln -s /etc/passwd link; mv inside sub 2>/dev/null; true",
        outside.display()
    );
    let o = dcjail(
        &s.ws(),
        &["--policy", pol.to_str().unwrap(), "--", "sh", "-c", &script],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        s.ws().join("sub").exists() || s.ws().join("inside").exists(),
        "write inside the workspace failed: {}",
        text(&o.stderr)
    );
    assert!(!outside.exists(), "wrote outside the workspace");
}

#[test]
fn landlock_deny_read_hides_the_content_but_not_the_siblings() {
    let s = Scratch::new("dr");
    let ws = s.ws();
    std::fs::create_dir_all(ws.join("secrets/deeper")).unwrap();
    std::fs::write(ws.join("secrets/key"), "TOPSECRET-1").unwrap();
    std::fs::write(ws.join("secrets/deeper/key"), "TOPSECRET-2").unwrap();
    std::fs::write(ws.join("plain.txt"), "PLAIN-OK").unwrap();
    std::os::unix::fs::symlink(ws.join("secrets/key"), ws.join("alias")).unwrap();
    let o = jailed(
        &ws,
        &["--deny-read", "secrets"],
        &[
            "sh",
            "-c",
            "cat plain.txt; cat secrets/key; cat secrets/deeper/key; cat alias; \
             cp secrets/key /dev/stdout; grep -r . secrets; true",
        ],
    );
    let out = text(&o.stdout);
    assert!(out.contains("PLAIN-OK"), "{out} {}", text(&o.stderr));
    assert!(!out.contains("TOPSECRET"), "{out}");
}

#[test]
fn landlock_deny_read_glob_hides_matching_files() {
    let s = Scratch::new("drg");
    let ws = s.ws();
    std::fs::write(ws.join("a.pem"), "PEM-SECRET").unwrap();
    std::fs::write(ws.join("a.txt"), "TXT-OK").unwrap();
    let glob = format!("{}/*.pem", ws.display());
    let o = jailed(
        &ws,
        &["--deny-read", &glob],
        &["sh", "-c", "cat a.txt a.pem"],
    );
    let out = text(&o.stdout);
    assert!(out.contains("TXT-OK"), "{out} {}", text(&o.stderr));
    assert!(!out.contains("PEM-SECRET"), "{out}");
}

const TCP_CLIENT: &str = "import socket,sys\n\
try:\n s=socket.create_connection(('127.0.0.1',int(sys.argv[1])),timeout=3); s.sendall(b'PING'); s.close(); print('SENT')\n\
except OSError as e: print('FAILED',e)\n";

fn tcp_attack(net: &str) -> (Output, Option<Vec<u8>>) {
    let s = Scratch::new("tcp");
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port().to_string();
    let o = jailed(
        &s.ws(),
        &["--net", net],
        &[python(), "-c", TCP_CLIENT, &port],
    );
    l.set_nonblocking(true).unwrap();
    let got = match l.accept() {
        Ok((mut c, _)) => {
            c.set_nonblocking(false).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let mut b = Vec::new();
            let _ = c.read_to_end(&mut b);
            Some(b)
        }
        Err(_) => None,
    };
    (o, got)
}

#[test]
fn landlock_net_none_connect_to_loopback_listener_sends_no_byte() {
    let (o, got) = tcp_attack("none");
    assert_eq!(got, None, "a connection arrived: {}", text(&o.stdout));
    assert!(text(&o.stdout).contains("FAILED"), "{}", text(&o.stderr));
    // Control: the same attack under --net full does reach the listener.
    let (_, got) = tcp_attack("full");
    assert_eq!(got.as_deref(), Some(&b"PING"[..]));
}

const UDP_DNS: &str = "import socket,sys\n\
q=b'\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x07example\\x03com\\x00\\x00\\x01\\x00\\x01'\n\
try:\n s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.sendto(q,('127.0.0.1',int(sys.argv[1]))); print('SENT')\n\
except OSError as e: print('FAILED',e)\n";

fn udp_attack(net: &str) -> (Output, Option<Vec<u8>>) {
    let s = Scratch::new("udp");
    let u = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = u.local_addr().unwrap().port().to_string();
    let o = jailed(&s.ws(), &["--net", net], &[python(), "-c", UDP_DNS, &port]);
    u.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut b = [0u8; 512];
    let got = u.recv(&mut b).ok().map(|n| b[..n].to_vec());
    (o, got)
}

#[test]
fn landlock_net_none_udp_dns_query_never_leaves() {
    let (o, got) = udp_attack("none");
    assert_eq!(got, None, "a datagram arrived: {}", text(&o.stdout));
    assert!(text(&o.stdout).contains("FAILED"), "{}", text(&o.stderr));
    let (_, got) = udp_attack("full");
    assert!(got.is_some_and(|b| b.windows(7).any(|w| w == b"example")));
}

#[test]
fn landlock_net_none_refuses_unix_datagram_sockets_but_not_streams_or_socketpair() {
    let s = Scratch::new("unix");
    let script = "import socket\n\
socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); print('UNIX-CREATED')\n\
try:\n socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); print('DGRAM-CREATED')\n\
except OSError as e: print('DGRAM-REFUSED', e.errno)\n\
a,b=socket.socketpair(); a.send(b'x'); print('PAIR', b.recv(1))\n\
try:\n socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0); print('NETLINK-CREATED')\n\
except OSError as e: print('NETLINK-REFUSED')\n";
    let o = py(&s.ws(), &[], script);
    let out = text(&o.stdout);
    assert!(out.contains("UNIX-CREATED"), "{out} {}", text(&o.stderr));
    assert!(out.contains("DGRAM-REFUSED 1"), "{out} {}", text(&o.stderr));
    assert!(out.contains("PAIR b'x'"), "{out}");
    assert!(out.contains("NETLINK-REFUSED"), "{out}");
}

#[test]
fn landlock_cannot_reach_an_abstract_socket_outside() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};
    let s = Scratch::new("abstract");
    let name = format!("dcjail-test-{}", std::process::id());
    let l =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
    l.set_nonblocking(true).unwrap();
    let script = "import socket,sys\n\
s=socket.socket(socket.AF_UNIX)\n\
try:\n s.connect('\\0'+sys.argv[1]); s.send(b'x'); print('REACHED')\n\
except OSError as e: print('BLOCKED', e)\n";
    // --net full: AF_UNIX sockets may be created, and the broker makes the
    // connect; only the scope (the command's, and the broker's own) stops it.
    let o = jailed(
        &s.ws(),
        &["--net", "full"],
        &[python(), "-c", script, &name],
    );
    assert!(
        l.accept().is_err(),
        "the command reached the abstract socket"
    );
    assert!(
        text(&o.stdout).contains("BLOCKED"),
        "{} {}",
        text(&o.stdout),
        text(&o.stderr)
    );
    // Control: unsandboxed, the same script does reach it.
    let c = Command::new(python())
        .args(["-c", script, &name])
        .output()
        .unwrap();
    assert!(text(&c.stdout).contains("REACHED"));
}

#[test]
fn landlock_ptrace_and_process_vm_readv_of_a_sibling_fail() {
    let s = Scratch::new("ptrace");
    let script = "import ctypes,errno,subprocess\n\
libc=ctypes.CDLL(None,use_errno=True)\n\
p=subprocess.Popen(['sleep','30'])\n\
r=libc.ptrace(16,p.pid,0,0)\n\
print('ATTACH', 'OK' if r==0 else errno.errorcode[ctypes.get_errno()])\n\
buf=ctypes.create_string_buffer(8)\n\
class iov(ctypes.Structure): _fields_=[('b',ctypes.c_void_p),('l',ctypes.c_size_t)]\n\
a=iov(ctypes.addressof(buf),8); b=iov(0x400000,8)\n\
r=libc.process_vm_readv(p.pid,ctypes.byref(a),1,ctypes.byref(b),1,0)\n\
print('VMREAD', 'OK' if r>=0 else errno.errorcode[ctypes.get_errno()])\n\
p.kill()\n";
    let o = py(&s.ws(), &[], script);
    let out = text(&o.stdout);
    assert!(out.contains("ATTACH EPERM"), "{out} {}", text(&o.stderr));
    assert!(out.contains("VMREAD EPERM"), "{out}");
}

#[test]
fn landlock_unshare_user_namespace_fails() {
    let s = Scratch::new("unshare");
    for flags in [&["-U"][..], &["-U", "-r"], &["-n"], &["-m"]] {
        let mut argv = vec!["unshare"];
        argv.extend_from_slice(flags);
        argv.extend_from_slice(&["sh", "-c", "echo INSIDE-NS"]);
        let o = jailed(&s.ws(), &[], &argv);
        assert!(!text(&o.stdout).contains("INSIDE-NS"), "{flags:?}");
        assert_ne!(o.status.code(), Some(0), "{flags:?}");
    }
}

#[test]
fn landlock_tiocsti_and_tioclinux_are_refused() {
    let s = Scratch::new("tiocsti");
    // A pty of the test's own as the command's stdin, so the test needs no
    // terminal and the ioctl would otherwise succeed (we are its owner);
    // the high-bits variant checks the comparison is on the low 32 bits.
    let script = "import os,ctypes,errno,termios\n\
libc=ctypes.CDLL(None,use_errno=True)\n\
s=0\n\
c=ctypes.c_char(b'x')\n\
for name,req in (('TIOCSTI',termios.TIOCSTI),('TIOCSTI_HIGH',termios.TIOCSTI|(1<<32)),('TIOCLINUX',0x541C)):\n\
\x20r=libc.ioctl(s,ctypes.c_ulong(req),ctypes.byref(c))\n\
\x20print(name,'OK' if r==0 else errno.errorcode[ctypes.get_errno()])\n";
    // Landlock lets the command open no new pty: it uses its own terminal.
    let (m, sl) = open_pty();
    let o = Command::new(bin())
        .args(["--backend", "landlock", "--", python(), "-c", script])
        .current_dir(s.ws())
        .env_remove("DCJAIL_POLICY")
        .stdin(Stdio::from(sl))
        .output()
        .unwrap();
    drop(m);
    let out = text(&o.stdout);
    assert!(out.contains("TIOCSTI EPERM"), "{out} {}", text(&o.stderr));
    assert!(out.contains("TIOCSTI_HIGH EPERM"), "{out}");
    assert!(out.contains("TIOCLINUX EPERM"), "{out}");
}

#[test]
fn landlock_io_uring_is_refused() {
    let s = Scratch::new("uring");
    let script = "import ctypes,errno\n\
libc=ctypes.CDLL(None,use_errno=True)\n\
p=ctypes.create_string_buffer(120)\n\
r=libc.syscall(425,4,p)\n\
print('URING','OK' if r>=0 else errno.errorcode[ctypes.get_errno()])\n";
    let o = py(&s.ws(), &[], script);
    assert!(
        text(&o.stdout).contains("URING EPERM"),
        "{} {}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let disabled = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .map(|v| v.trim() != "0")
        .unwrap_or(false);
    if scratch::require(
        !disabled,
        "io_uring enabled on this host, for the control run",
        "sysctl -w kernel.io_uring_disabled=0",
    ) {
        let c = Command::new(python())
            .args(["-c", script])
            .output()
            .unwrap();
        assert!(text(&c.stdout).contains("URING OK"), "{}", text(&c.stdout));
    }
}

#[test]
fn landlock_cannot_signal_a_process_outside() {
    let s = Scratch::new("kill");
    let mut victim = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = victim.id().to_string();
    let o = jailed(&s.ws(), &["--net", "full"], &["kill", "-TERM", &pid]);
    std::thread::sleep(Duration::from_millis(100));
    let still = victim.try_wait().unwrap().is_none();
    let _ = victim.kill();
    let _ = victim.wait();
    assert!(still, "the command killed a process outside the sandbox");
    assert_ne!(o.status.code(), Some(0));
}

#[test]
fn landlock_timeout_kills_the_whole_tree_with_124() {
    let s = Scratch::new("timeout");
    let mark = unique_sleep();
    let script = format!("sleep {mark} >/dev/null 2>&1 & sleep {mark}");
    let t = Instant::now();
    let o = jailed(&s.ws(), &["--timeout", "1"], &["sh", "-c", &script]);
    assert_eq!(o.status.code(), Some(124), "{}", text(&o.stderr));
    assert!(t.elapsed() < Duration::from_secs(20));
    assert!(
        !alive_with(&mark),
        "a process of the sandbox outlived dcjail"
    );
}

#[test]
fn landlock_double_forked_daemon_is_gone_when_dcjail_exits() {
    let s = Scratch::new("daemon");
    let mark = unique_sleep();
    let script = format!("(setsid sleep {mark} >/dev/null 2>&1 &); echo started");
    let o = jailed(&s.ws(), &[], &["sh", "-c", &script]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("started"));
    assert!(!alive_with(&mark), "the daemon outlived dcjail");
}

#[test]
fn landlock_exit_status_and_environment_pass_through() {
    let s = Scratch::new("status");
    let o = jailed(
        &s.ws(),
        &[],
        &[
            "sh",
            "-c",
            "echo $DCJAIL:$DCJAIL_BACKEND:$DCJAIL_NETWORK; exit 7",
        ],
    );
    assert_eq!(o.status.code(), Some(7));
    assert_eq!(text(&o.stdout).trim(), "1:landlock:none");
    let o = jailed(&s.ws(), &[], &["sh", "-c", "kill -9 $$"]);
    assert_eq!(o.status.code(), Some(137));
}

#[test]
fn landlock_closes_inherited_descriptors() {
    let s = Scratch::new("fds");
    let o = Command::new("sh")
        .args([
            "-c",
            &format!(
                "exec 7</etc/hostname; '{}' --backend landlock -- ls /proc/self/fd",
                bin()
            ),
        ])
        .current_dir(s.ws())
        .env_remove("DCJAIL_POLICY")
        .output()
        .unwrap();
    let fds: Vec<String> = text(&o.stdout)
        .split_whitespace()
        .map(String::from)
        .collect();
    assert!(!fds.contains(&"7".to_string()), "fd 7 leaked: {fds:?}");
    assert!(
        fds.contains(&"0".to_string()),
        "{fds:?} {}",
        text(&o.stderr)
    );
}

fn open_pty() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;
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
    assert_eq!(r, 0, "openpty failed");
    // SAFETY: fresh descriptors owned here.
    unsafe { (std::fs::File::from_raw_fd(m), std::fs::File::from_raw_fd(s)) }
}

fn refused(o: &Output, words: &[&str]) {
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(122), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("dcjail: sandbox-unavailable: "), "{err}");
    for w in words {
        assert!(err.contains(w), "`{w}` missing from: {err}");
    }
}

#[test]
fn landlock_refuses_protected_paths_inside_the_workspace() {
    let s = Scratch::new("ref-prot");
    let o = jailed(
        &s.ws(),
        &["--sandbox-mode", "workspace-write"],
        &["touch", "ran"],
    );
    refused(&o, &["protected path", "bwrap", "protect_defaults = false"]);
    assert!(!s.ws().join("ran").exists());
}

#[test]
fn landlock_refuses_deny_write_inside_the_workspace() {
    let s = Scratch::new("ref-dw");
    let pol = s.write_policy();
    std::fs::create_dir(s.ws().join("keep")).unwrap();
    let o = dcjail(
        &s.ws(),
        &[
            "--policy",
            pol.to_str().unwrap(),
            "--deny-write",
            "keep",
            "--",
            "touch",
            "ran",
        ],
    );
    refused(&o, &["deny_write", "bwrap"]);
    assert!(!s.ws().join("ran").exists());
}

#[test]
fn landlock_refuses_danger_full_access_that_would_expose_dcjail_itself() {
    let s = Scratch::new("ref-danger");
    let o = jailed(
        &s.ws(),
        &["--sandbox-mode", "danger-full-access"],
        &["touch", "ran"],
    );
    refused(&o, &["bwrap"]);
    assert!(!s.ws().join("ran").exists());
}

#[test]
fn landlock_enforces_an_unanchored_deny_read_glob() {
    // Expanded at launch by the glob walk (tests/globs.rs has the rest).
    let s = Scratch::new("ref-glob");
    let ws = s.ws();
    std::fs::create_dir_all(ws.join("a/b")).unwrap();
    std::fs::write(ws.join("a/b/.env"), "ENV-SECRET").unwrap();
    std::fs::write(ws.join("a/b/ok"), "ENV-SIBLING").unwrap();
    let o = jailed(
        &ws,
        &["--deny-read", "**/.env"],
        &["sh", "-c", "cat a/b/ok a/b/.env"],
    );
    let out = text(&o.stdout);
    assert!(out.contains("ENV-SIBLING"), "{out} {}", text(&o.stderr));
    assert!(!out.contains("ENV-SECRET"), "{out}");
}

#[test]
fn landlock_explain_shows_ruleset_abi_and_seccomp_rules() {
    let s = Scratch::new("explain");
    let o = dcjail(&s.ws(), &["explain", "--backend", "landlock", "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["backend"], "landlock");
    let l = &v["launch"];
    assert_eq!(l["kind"], "landlock");
    assert_eq!(l["landlock_abi"]["required"], 6);
    let rules = l["filesystem"]["rules"].as_array().unwrap();
    assert!(rules.iter().any(|r| r["path"] == "/"));
    let sys: Vec<&str> = l["seccomp"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["syscall"].as_str())
        .collect();
    for n in [
        "ptrace",
        "io_uring_setup",
        "unshare",
        "socket",
        "ioctl",
        "clone3",
    ] {
        assert!(sys.contains(&n), "{n} not in {sys:?}");
    }
}

#[test]
fn landlock_rename_link_or_copy_cannot_launder_a_denied_file() {
    // The denied directory lies outside the writable workspace (inside it
    // landlock refuses, see below): linking, copying or moving it in fails.
    let s = Scratch::new("launder");
    let pol = s.write_policy();
    let ws = s.ws();
    std::fs::create_dir_all(s.0.join("secrets")).unwrap();
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::write(s.0.join("secrets/key"), "LAUNDERED-SECRET").unwrap();
    let script = "ln ../secrets/key sub/hard; cat sub/hard; ln -s ../../secrets/key sub/soft; \
                  cat sub/soft; cp ../secrets/key sub/copy; cat sub/copy; \
                  mv ../secrets sub/moved; cat sub/moved/key; mv ../secrets/key sub/key; \
                  cat sub/key; echo CASE-RAN";
    let control = Command::new("sh")
        .args(["-c", script])
        .current_dir(&ws)
        .output()
        .unwrap();
    assert!(text(&control.stdout).contains("LAUNDERED-SECRET"));
    // Put the tree back: the control moved the secret into the workspace.
    let _ = std::fs::remove_dir_all(ws.join("sub"));
    std::fs::create_dir_all(s.0.join("secrets")).unwrap();
    std::fs::write(s.0.join("secrets/key"), "LAUNDERED-SECRET").unwrap();
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    let o = dcjail(
        &ws,
        &[
            "--policy",
            pol.to_str().unwrap(),
            "--deny-read",
            "../secrets",
            "--",
            "sh",
            "-c",
            script,
        ],
    );
    let out = text(&o.stdout);
    assert!(out.contains("CASE-RAN"), "{out} {}", text(&o.stderr));
    assert!(!out.contains("LAUNDERED-SECRET"), "{out}");
    assert_eq!(
        std::fs::read_to_string(s.0.join("secrets/key")).unwrap(),
        "LAUNDERED-SECRET"
    );
}

#[test]
fn landlock_refuses_deny_read_inside_the_workspace_naming_it() {
    let s = Scratch::new("deny-in-ws");
    let pol = s.write_policy();
    let ws = s.ws();
    std::fs::create_dir_all(ws.join("secrets")).unwrap();
    let o = dcjail(
        &ws,
        &[
            "--policy",
            pol.to_str().unwrap(),
            "--deny-read",
            "secrets",
            "--",
            "touch",
            "ran",
        ],
    );
    let want = format!("`{}`", ws.join("secrets").display());
    refused(&o, &["deny", &want, "writable root", "--backend bwrap"]);
    assert!(!ws.join("ran").exists());
}

#[test]
fn landlock_net_none_makes_unix_sockets_and_refuses_inet_ones() {
    let s = Scratch::new("allowunix");
    let p = s.0.join("unix.toml");
    std::fs::write(
        &p,
        "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
         [sandbox]\nbackend = \"landlock\"\n\
         [sandbox.network]\nmode = \"none\"\n",
    )
    .unwrap();
    let script = "import socket\n\
socket.socket(socket.AF_UNIX); print('UNIX-CREATED')\n\
try:\n socket.socket(socket.AF_INET, socket.SOCK_STREAM); print('INET-CREATED')\n\
except OSError as e: print('INET-REFUSED')\n";
    let o = dcjail(
        &s.ws(),
        &[
            "--policy",
            p.to_str().unwrap(),
            "--",
            python(),
            "-c",
            script,
        ],
    );
    let out = text(&o.stdout);
    assert!(out.contains("UNIX-CREATED"), "{out} {}", text(&o.stderr));
    assert!(out.contains("INET-REFUSED"), "{out}");
}

#[test]
fn landlock_sigterm_to_dcjail_reaches_the_command() {
    let s = Scratch::new("sigterm");
    let mut child = Command::new(bin())
        .args([
            "--backend",
            "landlock",
            "--",
            "sh",
            "-c",
            "trap 'echo GOT-TERM; exit 3' TERM; echo READY; while :; do sleep 0.05; done",
        ])
        .current_dir(s.ws())
        .env_remove("DCJAIL_POLICY")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut buf = [0u8; 6];
    out.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"READY\n");
    // SAFETY: a signal to our own child, by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert!(rest.contains("GOT-TERM"), "{rest}");
    assert_eq!(status.code(), Some(3));
}

#[test]
fn landlock_command_dies_when_dcjail_is_killed() {
    let s = Scratch::new("pdeath");
    let mark = unique_sleep();
    let mut child = Command::new(bin())
        .args(["--backend", "landlock", "--", "sleep", &mark])
        .current_dir(s.ws())
        .env_remove("DCJAIL_POLICY")
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !alive_with(&mark) && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(alive_with(&mark), "the command never started");
    child.kill().unwrap();
    child.wait().unwrap();
    let t = Instant::now();
    while alive_with(&mark) && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive_with(&mark), "the command outlived a killed dcjail");
}
