//! Attacks on what the filesystem guarantees beyond plain writes: metadata
//! (mode, times, extended attributes, inode flags) outside the writable
//! roots, setuid/setgid files anywhere, missing protected names, traces on
//! the host, another user's files in /tmp, and a dcjail killed with
//! SIGKILL. Each case runs once without the sandbox, where the effect must
//! happen (so the case can fail), then under each backend that accepts the
//! policy, as root and as uid 65534, where the command must run to its end
//! and the effect must not happen.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The dcjail the tests run: `scratch::exe` keeps it runnable wherever the
/// checkout lives (landlock refuses a dcjail inside a writable root).
use scratch::exe as bin;

use scratch::bwrap_works;

/// A scratch tree: `ws` (the workspace) and `out` (readable, never
/// writable), owned by the user the case runs as.
struct T {
    root: PathBuf,
    ws: PathBuf,
    out: PathBuf,
    nobody: bool,
}

impl T {
    fn new(tag: &str, nobody: bool) -> T {
        static N: AtomicU32 = AtomicU32::new(0);
        let root = scratch::fresh(&format!(
            "fsx-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let ws = root.join("ws");
        let out = root.join("out");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        T {
            root,
            ws,
            out,
            nobody,
        }
    }

    /// Gives the tree to uid 65534 when the case runs as that user.
    fn own(&self) {
        if self.nobody {
            let ok = Command::new("chown")
                .args(["-R", "65534:65534"])
                .arg(&self.root)
                .status()
                .unwrap()
                .success();
            assert!(ok);
        }
    }

    /// A policy file outside the workspace: approved, the mode given, no
    /// built-in protected paths when `protect` is false (landlock refuses
    /// them inside a writable root).
    fn policy(&self, mode: &str, protect: bool) -> PathBuf {
        let p = self.root.join(format!("policy-{mode}-{protect}.toml"));
        std::fs::write(
            &p,
            format!(
                "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
                 [sandbox]\nmode = \"{mode}\"\n\
                 [sandbox.filesystem]\nprotect_defaults = {protect}\n"
            ),
        )
        .unwrap();
        p
    }

    /// Runs `script` with `sh -c` in the workspace: unsandboxed when
    /// `backend` is None, else under it with `policy`.
    fn run(&self, backend: Option<&str>, policy: &Path, script: &str) -> Output {
        self.run_with(backend, policy, script, Stdio::null())
    }

    /// `run` with the command's standard input given by the caller.
    fn run_with(&self, backend: Option<&str>, policy: &Path, script: &str, stdin: Stdio) -> Output {
        let mut c = scratch::user_command(self.nobody, bin());
        c.arg("--policy").arg(policy);
        match backend {
            Some(b) => c.args(["--backend", b]),
            None => c.arg("--no-sandbox"),
        };
        c.args(["--", "sh", "-c", script])
            .current_dir(&self.ws)
            // Beside the workspace, not it: a workspace at the home
            // directory would be held read-only by class.
            .env("HOME", self.root.join("home"))
            .env("TMPDIR", self.root.join("tmpdir"))
            .env_remove("DCJAIL_POLICY")
            .stdin(stdin);
        for d in ["tmpdir", "home"] {
            let _ = std::fs::create_dir_all(self.root.join(d));
            if self.nobody {
                let _ = Command::new("chown")
                    .args(["65534:65534"])
                    .arg(self.root.join(d))
                    .status();
            }
        }
        c.output().unwrap()
    }
}

impl Drop for T {
    fn drop(&mut self) {
        scratch::remove(&self.root);
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Everything about a file that a metadata change could touch.
#[derive(Debug, PartialEq, Eq)]
struct Meta {
    mode: u32,
    uid: u32,
    gid: u32,
    mtime: (i64, i64),
    atime: i64,
    xattrs: String,
    flags: String,
}

fn meta(p: &Path) -> Meta {
    let m = std::fs::symlink_metadata(p).unwrap();
    let xattrs = Command::new("getfattr")
        .args(["-d", "-m", "-", "--absolute-names"])
        .arg(p)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let flags = Command::new("lsattr")
        .arg("-d")
        .arg(p)
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_string()
        })
        .unwrap_or_default();
    Meta {
        mode: m.mode(),
        uid: m.uid(),
        gid: m.gid(),
        mtime: (m.mtime(), m.mtime_nsec()),
        atime: m.atime(),
        xattrs,
        flags,
    }
}

/// The backends that run `mode`: bwrap (when it can build namespaces here)
/// and landlock.
fn backends() -> Vec<&'static str> {
    let mut v = Vec::new();
    if bwrap_works() {
        v.push("bwrap");
    }
    v.push("landlock");
    v
}

/// One metadata attack on `out/victim`: the script, with `V` for the path.
const META_ATTACKS: &[&str] = &[
    "chmod 600 V",
    "chmod 4755 V",
    "touch -m -d @1000000000 V",
    "touch -a -d @1000000000 V",
    "setfattr -n user.dcjail -v 1 V",
    "chattr +A V",
    "python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.fchmod(fd, 0o600)' V",
    "python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.utime(fd, (5, 5))' V",
    "python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.setxattr(fd, \"user.x\", b\"1\")' V",
    "exec 3<V; chmod 600 /proc/self/fd/3",
    "ln -s V link && chmod 600 link",
];

#[test]
fn metadata_outside_the_writable_roots_never_changes() {
    for &nobody in scratch::users() {
        for attack in META_ATTACKS {
            let t = T::new("meta", nobody);
            let victim = t.out.join("victim");
            std::fs::write(&victim, "x").unwrap();
            std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
            t.own();
            let script = format!(
                "{}; echo RAN-META",
                attack.replace('V', victim.to_str().unwrap())
            );
            // The control: without the sandbox the change happens (or the
            // file system cannot hold it, and the attack proves nothing).
            let before = meta(&victim);
            let ro = t.policy("read-only", false);
            let o = t.run(None, &ro, &script);
            let after = meta(&victim);
            if !scratch::require(
                before != after,
                &format!(
                    "`{attack}` to change the file without dcjail (the control; {})",
                    text(&o).trim()
                ),
                "a scratch file system with user xattrs and inode flags (ext4, xfs, btrfs) under target/",
            ) {
                continue;
            }
            for mode in ["read-only", "workspace-write"] {
                let policy = t.policy(mode, false);
                for b in backends() {
                    let _ = std::fs::remove_file(t.ws.join("link"));
                    std::fs::write(&victim, "x").unwrap();
                    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644))
                        .unwrap();
                    let _ = Command::new("setfattr")
                        .args(["-x", "user.dcjail"])
                        .arg(&victim)
                        .status();
                    let _ = Command::new("setfattr")
                        .args(["-x", "user.x"])
                        .arg(&victim)
                        .status();
                    let _ = Command::new("chattr").arg("-A").arg(&victim).status();
                    t.own();
                    let before = meta(&victim);
                    let o = t.run(Some(b), &policy, &script);
                    assert!(
                        String::from_utf8_lossy(&o.stdout).contains("RAN-META"),
                        "{b} {mode} nobody={nobody} `{attack}` did not run: {}",
                        text(&o)
                    );
                    assert_eq!(
                        meta(&victim),
                        before,
                        "{b} {mode} nobody={nobody}: `{attack}` changed the file outside: {}",
                        text(&o)
                    );
                }
            }
        }
    }
}

/// One truncation of `V`, by each call that can do it.
const TRUNCATE_ATTACKS: &[&str] = &[
    "truncate -s 0 V",
    "( : > V )",
    "python3 -c 'import os,sys; os.truncate(sys.argv[1], 0)' V",
    "python3 -c 'import os,sys; os.close(os.open(sys.argv[1], os.O_RDONLY | os.O_TRUNC))' V",
    "python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDWR); os.ftruncate(fd, 0)' V",
];

/// Truncation is a write: outside the writable roots, and (bwrap) on a
/// protected file inside one, the content stays whole, by every call; also
/// through the caller's own descriptor (standard input redirected from the
/// file outside dcjail), whose magic link reaches the file by the caller's
/// mount, not the sandbox's read-only one.
#[test]
fn nothing_outside_the_writable_roots_or_protected_is_truncated() {
    for &nobody in scratch::users() {
        let t = T::new("trunc", nobody);
        let victim = t.out.join("by-stdin");
        let script = "python3 -c 'import os; os.truncate(\"/proc/self/fd/0\", 0)'; \
                      python3 -c 'import os; os.close(os.open(\"/proc/self/fd/0\", os.O_RDONLY | os.O_TRUNC))'; \
                      echo RAN-TRUNC";
        let stdin = || -> Stdio {
            std::fs::write(&victim, "whole\n").unwrap();
            t.own();
            std::fs::File::open(&victim).unwrap().into()
        };
        let o = t.run_with(None, &t.policy("read-only", false), script, stdin());
        assert_eq!(
            std::fs::read(&victim).unwrap(),
            b"",
            "control: {}",
            text(&o)
        );
        stays_whole_in_every_sandbox(
            &t,
            script,
            &victim,
            "truncated through the caller's descriptor",
            &stdin,
        );
        let outside = t.out.join("victim");
        let protected = t.ws.join(".bashrc");
        for attack in TRUNCATE_ATTACKS {
            for (victim, backends, protect) in [
                (&outside, backends(), false),
                (
                    &protected,
                    backends().into_iter().filter(|b| *b == "bwrap").collect(),
                    true,
                ),
            ] {
                let reset = || {
                    std::fs::write(victim, "whole\n").unwrap();
                    std::fs::set_permissions(victim, std::fs::Permissions::from_mode(0o666))
                        .unwrap();
                    t.own();
                };
                let script = format!(
                    "{}; echo RAN-TRUNC",
                    attack.replace('V', victim.to_str().unwrap())
                );
                // The control: without the sandbox the file is emptied.
                reset();
                let o = t.run(None, &t.policy("read-only", protect), &script);
                assert_eq!(
                    std::fs::read(victim).unwrap(),
                    b"",
                    "control `{attack}`: {}",
                    text(&o)
                );
                for mode in ["read-only", "workspace-write"] {
                    let policy = t.policy(mode, protect);
                    for b in &backends {
                        reset();
                        let o = t.run(Some(b), &policy, &script);
                        assert!(
                            String::from_utf8_lossy(&o.stdout).contains("RAN-TRUNC"),
                            "{b} {mode} nobody={nobody} `{attack}` did not run: {}",
                            text(&o)
                        );
                        assert_eq!(
                            std::fs::read(victim).unwrap(),
                            b"whole\n",
                            "{b} {mode} nobody={nobody}: `{attack}` truncated {}: {}",
                            victim.display(),
                            text(&o)
                        );
                    }
                }
            }
        }
    }
}

/// Runs `script` under each backend in read-only and workspace-write, with
/// the standard input `stdin` makes (it also resets `victim`), and checks
/// that the command ran (it prints RAN-TRUNC) and `victim` stayed whole.
fn stays_whole_in_every_sandbox(
    t: &T,
    script: &str,
    victim: &Path,
    what: &str,
    stdin: &dyn Fn() -> Stdio,
) {
    let nobody = t.nobody;
    for mode in ["read-only", "workspace-write"] {
        for b in backends() {
            let o = t.run_with(Some(b), &t.policy(mode, false), script, stdin());
            assert!(
                String::from_utf8_lossy(&o.stdout).contains("RAN-TRUNC"),
                "{b} {mode} nobody={nobody}: did not run: {}",
                text(&o)
            );
            assert_eq!(
                std::fs::read(victim).unwrap(),
                b"whole\n",
                "{b} {mode} nobody={nobody}: {what}: {}",
                text(&o)
            );
        }
    }
}

/// Sends `fd` over `sock` with one byte (SCM_RIGHTS), as a host process
/// would hand a descriptor to the command.
fn send_fd(sock: &std::os::unix::net::UnixStream, fd: i32) {
    use std::os::fd::AsRawFd;
    let mut byte = [b'F'];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // SAFETY: CMSG_SPACE of one int, and a msghdr pointing at live buffers.
    unsafe {
        let space = libc::CMSG_SPACE(std::mem::size_of::<i32>() as u32) as usize;
        let mut cbuf = vec![0u8; space];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<i32>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<i32>(), fd);
        assert_eq!(libc::sendmsg(sock.as_raw_fd(), &msg, 0), 1);
    }
}

/// Truncation through a descriptor that reaches the command after it
/// started: a read-only descriptor of a host file outside the writable
/// roots, sent over a unix socket (the command's standard input, or one it
/// connects to with unix sockets allowed). Its magic link names the file by
/// the sender's mount, past the sandbox's read-only one, so under bwrap the
/// layer keeps landlock's truncate right for such runs (it leaves it to the
/// mounts only when no descriptor can reach past them). The control
/// empties the file; every sandboxed run leaves it whole.
#[test]
fn a_descriptor_handed_in_over_a_socket_truncates_nothing() {
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::os::unix::net::{UnixListener, UnixStream};
    const TAKE: &str = r#"
_, fds, _, _ = socket.recv_fds(s, 16, 4)
n = fds[0]
for what, f in [("truncate", lambda: os.truncate(f"/proc/self/fd/{n}", 0)),
                ("open", lambda: os.close(os.open(f"/proc/self/fd/{n}", os.O_RDONLY | os.O_TRUNC)))]:
    try:
        f(); print(what, "done")
    except OSError as e:
        print(what, "refused", e.errno)
print("RAN-TRUNC")
"#;
    for &nobody in scratch::users() {
        let t = T::new("trunc-fd", nobody);
        let victim = t.out.join("handed");
        let reset = || {
            std::fs::write(&victim, "whole\n").unwrap();
            t.own();
        };
        // Over the command's standard input.
        let py = t.root.join("on-stdin.py");
        std::fs::write(
            &py,
            format!("import os, socket\ns = socket.socket(fileno=0)\n{TAKE}"),
        )
        .unwrap();
        let on_stdin = format!("python3 {}", py.display());
        let socket_stdin = || -> Stdio {
            let (mine, theirs) = UnixStream::pair().unwrap();
            let f = std::fs::File::open(&victim).unwrap();
            send_fd(&mine, f.as_raw_fd());
            Stdio::from(OwnedFd::from(theirs))
        };
        let plain = t.policy("workspace-write", false);
        reset();
        let o = t.run_with(None, &plain, &on_stdin, socket_stdin());
        assert_eq!(
            std::fs::read(&victim).unwrap(),
            b"",
            "control: {}",
            text(&o)
        );
        stays_whole_in_every_sandbox(
            &t,
            &on_stdin,
            &victim,
            "truncated through a descriptor sent on stdin",
            &|| {
                reset();
                socket_stdin()
            },
        );
        // From a host server the command connects to.
        let sock = t.out.join("srv.sock");
        let unix = t.root.join("policy-unix.toml");
        std::fs::write(
            &unix,
            format!(
                "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
                 [sandbox]\nmode = \"workspace-write\"\n\
                 [sandbox.filesystem]\nprotect_defaults = false\n\
                 [sandbox.network]\nmode = \"full\"\nallow_unix_sockets = [{:?}]\n",
                sock.to_str().unwrap()
            ),
        )
        .unwrap();
        let py = t.root.join("connected.py");
        std::fs::write(
            &py,
            format!(
                "import os, socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({:?})\n{TAKE}",
                sock.to_str().unwrap()
            ),
        )
        .unwrap();
        let connected = format!("python3 {}", py.display());
        for b in [None].into_iter().chain(backends().into_iter().map(Some)) {
            reset();
            let _ = std::fs::remove_file(&sock);
            let l = UnixListener::bind(&sock).unwrap();
            std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o777)).unwrap();
            let handed = victim.clone();
            let server = std::thread::spawn(move || {
                if let Ok((c, _)) = l.accept() {
                    let f = std::fs::File::open(&handed).unwrap();
                    send_fd(&c, f.as_raw_fd());
                }
            });
            let o = t.run(b, &unix, &connected);
            let want: &[u8] = if b.is_none() { b"" } else { b"whole\n" };
            assert!(
                String::from_utf8_lossy(&o.stdout).contains("RAN-TRUNC"),
                "{b:?} nobody={nobody}: did not run: {}",
                text(&o)
            );
            assert_eq!(
                std::fs::read(&victim).unwrap(),
                want,
                "{b:?} nobody={nobody}: a descriptor from a host server: {}",
                text(&o)
            );
            server.join().unwrap();
        }
    }
}

/// A descriptor the caller opens names its file by the caller's mount:
/// standard input on the workspace directory, or on a protected file, would
/// let the command write the protected file and read a masked one by
/// `/proc/self/fd/0`, past bwrap's mounts. bwrap refuses such a launch
/// (and `auto` finds no backend for this policy); an ordinary file still
/// runs.
#[test]
fn the_callers_descriptors_reach_nothing_the_mounts_hold() {
    if !bwrap_works() {
        return;
    }
    for &nobody in scratch::users() {
        let t = T::new("stdio", nobody);
        let policy = t.root.join("policy-stdio.toml");
        std::fs::write(
            &policy,
            "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
             [sandbox]\nmode = \"workspace-write\"\n\
             [sandbox.filesystem]\ndeny_read = [\"**/.env\"]\n",
        )
        .unwrap();
        let bashrc = t.ws.join(".bashrc");
        let env = t.ws.join(".env");
        let input = t.ws.join("in.txt");
        let reset = || {
            std::fs::write(&bashrc, "# rc\n").unwrap();
            std::fs::write(&env, "SECRET=1\n").unwrap();
            std::fs::write(&input, "plain input\n").unwrap();
            t.own();
        };
        let open = |p: &Path| -> Stdio { std::fs::File::open(p).unwrap().into() };
        let by_dir = "echo pwned >> /proc/self/fd/0/.bashrc; cat /proc/self/fd/0/.env; echo RAN";
        let by_file = "echo pwned >> /proc/self/fd/0; echo RAN";
        // The controls: without the sandbox both attacks land.
        reset();
        let o = t.run_with(None, &policy, by_dir, open(&t.ws));
        assert!(text(&o).contains("SECRET=1"), "control: {}", text(&o));
        assert!(std::fs::read_to_string(&bashrc).unwrap().contains("pwned"));
        reset();
        t.run_with(None, &policy, by_file, open(&bashrc));
        assert!(std::fs::read_to_string(&bashrc).unwrap().contains("pwned"));
        for b in ["bwrap", "auto"] {
            for (script, stdin) in [(by_dir, &t.ws), (by_file, &bashrc)] {
                reset();
                let o = t.run_with(Some(b), &policy, script, open(stdin));
                assert_eq!(
                    o.status.code(),
                    Some(122),
                    "{b} nobody={nobody}: {}",
                    text(&o)
                );
                assert!(
                    !text(&o).contains("RAN"),
                    "{b}: the command ran: {}",
                    text(&o)
                );
                assert!(!text(&o).contains("SECRET"), "{b}: {}", text(&o));
                assert_eq!(std::fs::read_to_string(&bashrc).unwrap(), "# rc\n", "{b}");
            }
        }
        // Real work: an ordinary file on standard input is read as usual.
        reset();
        let o = t.run_with(Some("bwrap"), &policy, "cat; echo RAN", open(&input));
        assert!(
            text(&o).contains("plain input\nRAN"),
            "nobody={nobody}: {}",
            text(&o)
        );
    }
}

/// A protected or `deny_write` file is read-only under bwrap by a mount over
/// its name: a second name (a hard link made before the run) elsewhere in
/// the workspace is the same file. Every such name is held too: the command
/// runs, and writing, truncating, chmod-ing or re-linking the file by any
/// of its names changes nothing. The control writes the file through the
/// link. Landlock cannot subtract a write inside a writable root at all and
/// refuses these policies (122), naming bwrap.
#[test]
fn every_name_of_a_protected_file_is_held_read_only() {
    if !bwrap_works() {
        return;
    }
    for &nobody in scratch::users() {
        let t = T::new("hlink", nobody);
        let policy = t.root.join("policy-hlink.toml");
        let kept = t.ws.join("kept.cfg");
        std::fs::write(
            &policy,
            format!(
                "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
                 [sandbox]\nmode = \"workspace-write\"\n\
                 [sandbox.filesystem]\ndeny_write = [\"{}\"]\n",
                kept.display()
            ),
        )
        .unwrap();
        let hooks = t.ws.join(".git/hooks");
        std::fs::create_dir_all(&hooks).unwrap();
        std::fs::create_dir_all(t.ws.join("deep/er")).unwrap();
        // (the held file, its second name): beside it, deep in the
        // workspace, below a held directory, and a deny_write entry.
        let cases = [
            (t.ws.join(".bashrc"), t.ws.join("alias")),
            (hooks.join("pre-commit"), t.ws.join("deep/er/hook-alias")),
            (kept.clone(), t.ws.join("deep/kept-alias")),
        ];
        let reset = || {
            for (held, alias) in &cases {
                let _ = std::fs::remove_file(alias);
                let _ = std::fs::remove_file(t.ws.join("relinked"));
                std::fs::write(held, "# kept\n").unwrap();
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(held, std::fs::Permissions::from_mode(0o644)).unwrap();
                std::fs::hard_link(held, alias).unwrap();
            }
            t.own();
        };
        let attack = |alias: &Path| {
            format!(
                "a={}; echo pwned >> $a; truncate -s 0 $a; chmod 777 $a; \
                 ln $a relinked && echo pwned >> relinked; echo RAN",
                alias.display()
            )
        };
        for (held, alias) in &cases {
            reset();
            let o = t.run(None, &policy, &attack(alias));
            assert_ne!(
                std::fs::read_to_string(held).unwrap(),
                "# kept\n",
                "control: {}",
                text(&o)
            );
            for b in ["bwrap", "auto"] {
                reset();
                let o = t.run(Some(b), &policy, &attack(alias));
                assert!(
                    text(&o).contains("RAN"),
                    "{b} nobody={nobody}: {}",
                    text(&o)
                );
                assert_eq!(
                    std::fs::read_to_string(held).unwrap(),
                    "# kept\n",
                    "{b} nobody={nobody} {}: {}",
                    alias.display(),
                    text(&o)
                );
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(held).unwrap().permissions().mode();
                assert_eq!(mode & 0o777, 0o644, "{b}: {}", text(&o));
            }
            reset();
            let o = t.run(Some("landlock"), &policy, &attack(alias));
            assert_eq!(o.status.code(), Some(122), "landlock: {}", text(&o));
            assert!(!text(&o).contains("RAN"), "landlock ran: {}", text(&o));
        }
        // Real work beside them: the rest of the workspace is written.
        reset();
        let o = t.run(
            Some("bwrap"),
            &policy,
            "echo new > deep/new && cat deep/new",
        );
        assert!(text(&o).contains("new"), "nobody={nobody}: {}", text(&o));
    }
}

/// bind() of a unix socket makes a name: a socket file at a missing
/// protected name (`.bashrc`, `.vscode`) would be left on the host. It is
/// refused there (EROFS), by any path to it, while sockets elsewhere in the
/// workspace, abstract ones and TCP servers bind and serve as usual. The
/// control leaves the socket files.
#[test]
fn a_unix_socket_is_never_bound_at_a_missing_protected_name() {
    if !bwrap_works() {
        return;
    }
    for &nobody in scratch::users() {
        let t = T::new("sockname", nobody);
        std::fs::create_dir_all(t.ws.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(t.ws.join("sub")).unwrap();
        let policy = t.root.join("policy-sock.toml");
        std::fs::write(
            &policy,
            "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
             [sandbox]\nmode = \"workspace-write\"\n\
             [sandbox.network]\nmode = \"full\"\n",
        )
        .unwrap();
        let script = r#"python3 - <<'EOF'
import socket, os
for n in [".bashrc", ".vscode", ".git/hooks/pre-commit", "sub/../.zshrc", "/proc/self/cwd/.envrc"]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(n); print("BOUND", n)
    except OSError as e:
        print("refused", n, e.errno)
srv = socket.socket(socket.AF_UNIX); srv.bind("sub/srv.sock"); srv.listen(1)
c = socket.socket(socket.AF_UNIX); c.connect("sub/srv.sock")
a, _ = srv.accept(); c.send(b"hi"); print("unix", a.recv(2).decode())
s = socket.socket(socket.AF_UNIX); s.bind("\0dcjail-abstract"); print("abstract ok")
t = socket.socket(); t.bind(("127.0.0.1", 0)); t.listen(1); print("tcp ok")
print("mode", oct(os.stat("sub/srv.sock").st_mode & 0o777))
EOF
echo RAN"#;
        let names = [
            ".bashrc",
            ".vscode",
            ".git/hooks/pre-commit",
            ".zshrc",
            ".envrc",
        ];
        let clean = || {
            for n in names.iter().copied().chain(["sub/srv.sock"]) {
                let _ = std::fs::remove_file(t.ws.join(n));
            }
            t.own();
        };
        clean();
        let o = t.run(None, &policy, script);
        assert!(
            text(&o).matches("BOUND").count() == names.len()
                && names.iter().all(|n| t.ws.join(n).exists()),
            "control: {}",
            text(&o)
        );
        let control_mode = text(&o)
            .lines()
            .find(|l| l.starts_with("mode "))
            .map(str::to_string);
        for b in ["bwrap", "auto"] {
            clean();
            let o = t.run(Some(b), &policy, script);
            let out = text(&o);
            assert!(
                out.contains("RAN") && out.contains("unix hi"),
                "{b} nobody={nobody}: {out}"
            );
            assert!(
                out.contains("abstract ok") && out.contains("tcp ok"),
                "{b}: {out}"
            );
            assert!(!out.contains("BOUND"), "{b} nobody={nobody}: {out}");
            assert_eq!(out.matches("refused").count(), names.len(), "{b}: {out}");
            for n in names {
                assert!(!t.ws.join(n).exists(), "{b}: {n} was made: {out}");
            }
            assert_eq!(
                out.lines()
                    .find(|l| l.starts_with("mode "))
                    .map(str::to_string),
                control_mode,
                "{b}: the socket's mode differs from the run without dcjail"
            );
        }
    }
}

/// A bind mount made by root on the host, undone when dropped (before the
/// scratch tree is removed: nothing is ever deleted through it).
struct Bind(PathBuf);
impl Bind {
    fn new(from: &Path, at: &Path) -> Option<Bind> {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .arg("--bind")
            .arg(from)
            .arg(at)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Bind(at.to_path_buf()))
    }
}
impl Drop for Bind {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A bind mount shows a directory at a second path: a file kept read-only
/// or masked by a mount over its first path is, at the second, the same
/// file without it. Every such path is kept or masked too: the command
/// runs, and neither the write nor the read lands. The controls do both.
#[test]
fn a_second_path_through_a_bind_mount_is_held_and_masked_too() {
    if !scratch::root("mount --bind") || !bwrap_works() {
        return;
    }
    for &nobody in scratch::users() {
        let t = T::new("bindalias", nobody);
        let hooks = t.ws.join(".git/hooks");
        std::fs::create_dir_all(&hooks).unwrap();
        let sec = t.out.join("sec");
        std::fs::create_dir_all(&sec).unwrap();
        let reset = || {
            std::fs::write(t.ws.join(".bashrc"), "# kept\n").unwrap();
            std::fs::write(hooks.join("pre-commit"), "# hook\n").unwrap();
            std::fs::write(sec.join("key"), "SECRET=1\n").unwrap();
            t.own();
        };
        reset();
        let tmpdir = t.root.join("tmpdir");
        let _ws_alias = Bind::new(&t.ws, &tmpdir.join("alias")).expect("mount --bind");
        let _sec_alias = Bind::new(&sec, &t.root.join("sa")).expect("mount --bind");
        let a = tmpdir.join("alias");
        let write = format!(
            "echo pwned >> {a}/.bashrc; echo pwned >> {a}/.git/hooks/pre-commit; echo RAN",
            a = a.display()
        );
        let protect = t.policy("workspace-write", true);
        let o = t.run(None, &protect, &write);
        assert!(
            std::fs::read_to_string(t.ws.join(".bashrc"))
                .unwrap()
                .contains("pwned"),
            "control: {}",
            text(&o)
        );
        for b in ["bwrap", "auto"] {
            reset();
            let o = t.run(Some(b), &protect, &write);
            assert!(
                text(&o).contains("RAN"),
                "{b} nobody={nobody}: {}",
                text(&o)
            );
            assert_eq!(
                std::fs::read_to_string(t.ws.join(".bashrc")).unwrap(),
                "# kept\n",
                "{b} nobody={nobody}: {}",
                text(&o)
            );
            assert_eq!(
                std::fs::read_to_string(hooks.join("pre-commit")).unwrap(),
                "# hook\n",
                "{b}: {}",
                text(&o)
            );
        }
        // A deny_write directory, bind-mounted into a writable root.
        let vendor = t.ws.join("vendor");
        std::fs::create_dir_all(&vendor).unwrap();
        std::fs::write(vendor.join("lib.rs"), "// kept\n").unwrap();
        t.own();
        let _vendor_alias = Bind::new(&vendor, &tmpdir.join("valias")).expect("mount --bind");
        let dw = t.root.join("policy-bind-dw.toml");
        std::fs::write(
            &dw,
            format!(
                "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
                 [sandbox]\nmode = \"workspace-write\"\n\
                 [sandbox.filesystem]\nprotect_defaults = false\ndeny_write = [\"{}\"]\n",
                vendor.display()
            ),
        )
        .unwrap();
        let via = format!(
            "echo pwned >> {v}/lib.rs; echo new > {v}/new.rs; echo RAN",
            v = tmpdir.join("valias").display()
        );
        let o = t.run(None, &dw, &via);
        assert!(
            std::fs::read_to_string(vendor.join("lib.rs"))
                .unwrap()
                .contains("pwned"),
            "control: {}",
            text(&o)
        );
        for b in ["bwrap", "auto"] {
            std::fs::write(vendor.join("lib.rs"), "// kept\n").unwrap();
            let _ = std::fs::remove_file(vendor.join("new.rs"));
            t.own();
            let o = t.run(Some(b), &dw, &via);
            assert!(
                text(&o).contains("RAN"),
                "{b} nobody={nobody}: {}",
                text(&o)
            );
            assert_eq!(
                std::fs::read_to_string(vendor.join("lib.rs")).unwrap(),
                "// kept\n",
                "{b} nobody={nobody}: {}",
                text(&o)
            );
            assert!(!vendor.join("new.rs").exists(), "{b}: {}", text(&o));
        }
        let deny = t.root.join("policy-bind-deny.toml");
        std::fs::write(
            &deny,
            format!(
                "[permission]\noutcome = \"allow\"\napproval = \"granted\"\n\
                 [sandbox]\nmode = \"workspace-write\"\n\
                 [sandbox.filesystem]\nprotect_defaults = false\ndeny_read = [\"{}\"]\n",
                sec.join("key").display()
            ),
        )
        .unwrap();
        let read = format!("cat {}/sa/key; echo RAN", t.root.display());
        reset();
        let o = t.run(None, &deny, &read);
        assert!(text(&o).contains("SECRET=1"), "control: {}", text(&o));
        for b in ["bwrap", "landlock", "auto"] {
            let o = t.run(Some(b), &deny, &read);
            assert!(
                text(&o).contains("RAN"),
                "{b} nobody={nobody}: {}",
                text(&o)
            );
            assert!(
                !text(&o).contains("SECRET"),
                "{b} nobody={nobody}: {}",
                text(&o)
            );
        }
    }
}

#[test]
fn metadata_inside_the_workspace_still_changes() {
    // chmod, touch, xattrs and cp -p are real work: they work where
    // writing does.
    for &nobody in scratch::users() {
        let t = T::new("metain", nobody);
        t.own();
        let policy = t.policy("workspace-write", false);
        for b in backends() {
            let o = t.run(
                Some(b),
                &policy,
                "echo x > f && chmod 600 f && touch -m -d @1000000000 f && \
                 setfattr -n user.k -v v f && cp -p f g && stat -c '%a %Y' f g && \
                 getfattr --only-values -n user.k f; echo; echo RAN",
            );
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(out.contains("RAN"), "{b}: {}", text(&o));
            assert!(
                out.contains("600 1000000000\n600 1000000000\nv"),
                "{b} nobody={nobody}: {}",
                text(&o)
            );
        }
    }
}

#[test]
fn device_nodes_keep_their_metadata_even_for_root() {
    if !scratch::root("change a device node's metadata") {
        return;
    }
    let t = T::new("dev", false);
    let script = "touch -m -d @1500000000 /dev/null; echo RAN";
    let before = std::fs::metadata("/dev/null").unwrap().mtime();
    let o = t.run(None, &t.policy("read-only", false), script);
    assert!(text(&o).contains("RAN"));
    let changed = std::fs::metadata("/dev/null").unwrap().mtime();
    // Put the host's /dev/null back to a recent time.
    let _ = Command::new("touch").args(["-m", "/dev/null"]).status();
    assert_ne!(before, changed, "the control could not change /dev/null");
    for mode in ["read-only", "workspace-write"] {
        let policy = t.policy(mode, false);
        for b in backends() {
            let before = std::fs::metadata("/dev/null").unwrap().mtime();
            let o = t.run(Some(b), &policy, script);
            assert!(text(&o).contains("RAN"), "{b} {mode}: {}", text(&o));
            assert_eq!(
                std::fs::metadata("/dev/null").unwrap().mtime(),
                before,
                "{b} {mode}: /dev/null's time changed"
            );
        }
    }
}

/// Every way to leave a setuid or setgid file behind in the workspace.
const SETID_ATTACKS: &[&str] = &[
    "cp /usr/bin/id id2 && chmod 4755 id2",
    "cp /usr/bin/id id2 && chmod u+s id2",
    "cp /usr/bin/id id2 && chmod g+s id2",
    "install -m 4755 /usr/bin/id id2",
    "cp -p /usr/bin/passwd p2",
    "python3 -c 'import os; os.close(os.open(\"s1\", os.O_CREAT|os.O_WRONLY, 0o4755))'",
    "python3 -c 'import os, stat; os.mknod(\"s2\", stat.S_IFREG|0o6755)'",
    "python3 -c 'import os; fd=os.open(\"s3\", os.O_CREAT|os.O_WRONLY, 0o755); os.fchmod(fd, 0o4755)'",
    "python3 -c 'import ctypes, os; l=ctypes.CDLL(None, use_errno=True); fd=os.open(\".\", os.O_TMPFILE|os.O_WRONLY, 0o4755); l.linkat(-100, b\"/proc/self/fd/%d\" % fd, -100, b\"s4\", 0x400)'",
    "tar -xpf ../setid.tar",
    // A file capability (cap_setuid, permitted and effective) is as good as
    // a setuid bit to whoever runs the file.
    "cp /usr/bin/id c1 && python3 -c 'import os; os.setxattr(\"c1\", \"security.capability\", bytes.fromhex(\"0100000280000000000000000000000000000000\"))'",
    "cp /usr/bin/id c2 && python3 -c 'import os; fd=os.open(\"c2\", os.O_RDONLY); os.setxattr(fd, \"security.capability\", bytes.fromhex(\"0100000280000000000000000000000000000000\"))'",
];

/// Files under `dir` with setuid or setgid or a file capability
/// (directories aside: a directory's setgid bit is its group inheritance,
/// not a privilege).
fn setid_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let m = e.metadata().unwrap();
        if m.is_dir() {
            out.extend(setid_files(&e.path()));
        } else if m.mode() & 0o6000 != 0 || has_file_caps(&e.path()) {
            out.push(e.path());
        }
    }
    out
}

fn has_file_caps(p: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    let mut buf = [0u8; 64];
    // SAFETY: NUL-terminated path and name, a buffer of its length.
    let n = unsafe {
        libc::lgetxattr(
            c.as_ptr(),
            c"security.capability".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    n > 0
}

fn make_setid_tar(t: &T) {
    let ok = Command::new("python3")
        .arg("-c")
        .arg(
            "import tarfile, io, sys\n\
             t = tarfile.open(sys.argv[1], 'w')\n\
             i = tarfile.TarInfo('tarred'); i.mode = 0o4755; d = b'#!/bin/sh\\n'; i.size = len(d)\n\
             t.addfile(i, io.BytesIO(d)); t.close()",
        )
        .arg(t.root.join("setid.tar"))
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

#[test]
fn no_setuid_or_setgid_file_is_left_in_the_workspace() {
    for &nobody in scratch::users() {
        for attack in SETID_ATTACKS {
            let t = T::new("setid", nobody);
            make_setid_tar(&t);
            t.own();
            let script = format!("{attack}; echo RAN-SETID");
            let ww = t.policy("workspace-write", false);
            t.run(None, &ww, &script);
            if setid_files(&t.ws).is_empty() {
                // e.g. cp -p of a root file as another user drops the bit.
                continue;
            }
            for b in backends() {
                for f in std::fs::read_dir(&t.ws).unwrap().flatten() {
                    scratch::remove(&f.path());
                }
                let o = t.run(Some(b), &ww, &script);
                assert!(
                    String::from_utf8_lossy(&o.stdout).contains("RAN-SETID"),
                    "{b}: {}",
                    text(&o)
                );
                assert_eq!(
                    setid_files(&t.ws),
                    Vec::<PathBuf>::new(),
                    "{b} nobody={nobody}: `{attack}` left a setuid/setgid file: {}",
                    text(&o)
                );
            }
        }
    }
}

/// A git repository whose protected names are missing: no hooks dir, no
/// .bashrc, .mcp.json, .vscode, .gitmodules, .claude.
fn bare_project(t: &T) {
    let ok = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&t.ws)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let _ = std::fs::remove_dir_all(t.ws.join(".git/hooks"));
    std::fs::write(t.ws.join("a"), "A").unwrap();
    std::fs::create_dir(t.ws.join("sub")).unwrap();
}

const GUARDED: &[&str] = &[
    ".bashrc",
    ".mcp.json",
    ".vscode",
    ".gitmodules",
    ".claude",
    ".git/hooks",
];

/// Every system call and every path trick that creates a name.
const CREATE_ATTACKS: &[&str] = &[
    "echo x > .bashrc",
    "mkdir .vscode",
    "mkdir .git/hooks",
    "cd .git && mkdir hooks",
    "mkdir -p .claude/commands",
    "ln -s .bashrc s && echo x > s",
    "ln -s ../.mcp.json sub/s && echo x > sub/s",
    "echo x > /proc/self/cwd/.bashrc",
    "echo x > sub/../.bashrc",
    "echo x > \"$PWD/.mcp.json\"",
    "exec 3<.; echo x > /dev/fd/3/.bashrc",
    "exec 3<.; echo x > /proc/self/fd/3/.gitmodules",
    "python3 -c 'import os; os.close(os.open(\".bashrc\", os.O_CREAT|os.O_EXCL|os.O_WRONLY))'",
    "python3 -c 'import os, stat; os.mknod(\".gitmodules\", stat.S_IFIFO|0o644)'",
    "python3 -c 'import os; os.symlink(\"/etc/passwd\", \".mcp.json\")'",
    "python3 -c 'import os; os.link(\"a\", \".gitmodules\")'",
    "python3 -c 'import os; os.rename(\"a\", \".bashrc\")'",
    "python3 -c 'import os; os.rename(\"sub\", \".vscode\")'",
    "python3 -c 'import os; d=os.open(\".git\", os.O_RDONLY); os.mkdir(\"hooks\", dir_fd=d)'",
    "python3 -c 'import ctypes, os; l=ctypes.CDLL(None, use_errno=True); fd=os.open(\".\", os.O_TMPFILE|os.O_WRONLY, 0o644); l.linkat(-100, b\"/proc/self/fd/%d\" % fd, -100, b\".bashrc\", 0x400)'",
    "python3 -c 'import ctypes, os; l=ctypes.CDLL(None, use_errno=True); l.renameat2(-100, b\"a\", -100, b\".mcp.json\", 1)'",
];

#[test]
fn a_missing_protected_name_cannot_be_created_by_any_call() {
    if !bwrap_works() {
        return;
    }
    for &nobody in scratch::users() {
        for attack in CREATE_ATTACKS {
            let t = T::new("create", nobody);
            bare_project(&t);
            t.own();
            let policy = t.policy("workspace-write", true);
            let script = format!("{attack}; echo RAN-CREATE");
            let made = |t: &T| -> Vec<&str> {
                GUARDED
                    .iter()
                    .copied()
                    .filter(|g| std::fs::symlink_metadata(t.ws.join(g)).is_ok())
                    .collect()
            };
            t.run(None, &policy, &script);
            assert!(
                !made(&t).is_empty(),
                "the control of `{attack}` created nothing"
            );
            let t = T::new("create", nobody);
            bare_project(&t);
            t.own();
            let policy = t.policy("workspace-write", true);
            let o = t.run(Some("bwrap"), &policy, &script);
            assert!(
                String::from_utf8_lossy(&o.stdout).contains("RAN-CREATE"),
                "nobody={nobody} `{attack}`: {}",
                text(&o)
            );
            assert_eq!(
                made(&t),
                Vec::<&str>::new(),
                "nobody={nobody}: `{attack}` created a protected name: {}",
                text(&o)
            );
        }
    }
}

#[test]
fn racing_the_path_string_or_a_symlink_never_creates_a_protected_name() {
    if !bwrap_works() {
        return;
    }
    // One thread flips the bytes of the path while another opens it with
    // O_CREAT; a second pair flips a symlink between a harmless target and
    // the protected name. Bounded: two seconds each.
    let racer = r#"
import ctypes, os, threading, time
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(64)
names = [b"sub/harmless", b".bashrc\0\0\0\0\0"]
stop = time.time() + 2
def flip():
    i = 0
    while time.time() < stop:
        ctypes.memmove(buf, names[i % 2], len(names[i % 2]) + 1)
        i += 1
threading.Thread(target=flip, daemon=True).start()
n = 0
while time.time() < stop:
    fd = libc.open(buf, os.O_CREAT | os.O_WRONLY, 0o644)
    if fd >= 0:
        os.close(fd)
    n += 1
def swap():
    while time.time() < stop + 2:
        try:
            os.symlink("sub/other", "ln.tmp"); os.replace("ln.tmp", "ln")
            os.symlink(".mcp.json", "ln.tmp"); os.replace("ln.tmp", "ln")
        except OSError:
            pass
threading.Thread(target=swap, daemon=True).start()
while time.time() < stop + 2:
    try:
        os.close(os.open("ln", os.O_CREAT | os.O_WRONLY, 0o644))
    except OSError:
        pass
print("RAN-RACE", n)
"#;
    for &nobody in scratch::users() {
        let t = T::new("race", nobody);
        bare_project(&t);
        std::fs::write(t.root.join("racer.py"), racer).unwrap();
        t.own();
        let policy = t.policy("workspace-write", true);
        let cmd = format!("python3 {}", t.root.join("racer.py").display());
        let o = t.run(Some("bwrap"), &policy, &cmd);
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("RAN-RACE"),
            "{}",
            text(&o)
        );
        for g in [".bashrc", ".mcp.json"] {
            assert!(
                std::fs::symlink_metadata(t.ws.join(g)).is_err(),
                "nobody={nobody}: the race created {g}"
            );
        }
        assert!(
            t.ws.join("sub/harmless").exists(),
            "the racer never opened its harmless name"
        );
    }
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|r| {
            r.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn the_command_sees_exactly_the_users_files_and_nothing_is_left_behind() {
    if !bwrap_works() {
        return;
    }
    for &nobody in scratch::users() {
        let t = T::new("invisible", nobody);
        bare_project(&t);
        t.own();
        let policy = t.policy("workspace-write", true);
        let tmpdir = t.root.join("tmpdir");
        std::fs::create_dir_all(&tmpdir).unwrap();
        t.own();
        let script = "ls -A; echo ---; git status --porcelain --untracked-files=all; echo ---; ls -A \"$TMPDIR\"";
        let plain = t.run(None, &policy, script);
        let o = t.run(Some("bwrap"), &policy, script);
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&plain.stdout),
            "nobody={nobody}: inside the sandbox the workspace looks different: {}",
            text(&o)
        );
        assert_eq!(listing(&t.ws), vec![".git", "a", "sub"]);
        assert_eq!(listing(&tmpdir), Vec::<String>::new());
    }
}

#[test]
fn nothing_is_made_in_tmp_whose_protected_names_stay_uncreatable() {
    if !scratch::root("make a mount namespace with a /tmp of its own") || !bwrap_works() {
        return;
    }
    // A /tmp of its own (a private mount namespace), so that nothing else
    // on the machine writes there meanwhile: after a run that tried to
    // create the protected names in /tmp, /tmp is exactly as it was.
    let t = T::new("tmpclean", false);
    let run = |sandbox: &str| {
        let script = format!(
            r#"mount -t tmpfs -o mode=1777 none /tmp && touch /tmp/before &&
{bin} {sandbox} --sandbox-mode workspace-write -- sh -c 'for n in .bashrc .profile .mcp.json .gitmodules; do echo x > /tmp/$n; done; mkdir /tmp/.git /tmp/.vscode; echo ran' &&
setpriv --reuid=65534 --regid=65534 --clear-groups {bin} {sandbox} --sandbox-mode workspace-write -- sh -c 'echo x > /tmp/.zshrc; echo ran' &&
ls -A /tmp | tr '\n' ' '"#,
            bin = bin()
        );
        Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c", &script])
            .current_dir(&t.ws)
            .env_remove("TMPDIR")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let control = run("--no-sandbox");
    assert_eq!(
        String::from_utf8_lossy(&control.stdout),
        "ran\nran\n.bashrc .git .gitmodules .mcp.json .profile .vscode .zshrc before ",
        "{}",
        text(&control)
    );
    let o = run("--backend bwrap");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "ran\nran\nbefore ",
        "{}",
        text(&o)
    );
}

#[test]
fn another_users_tmp_git_neither_redirects_nor_refuses_roots_runs() {
    if !scratch::root("make a mount namespace with a /tmp of its own") || !bwrap_works() {
        return;
    }
    // In a private mount namespace with its own /tmp, uid 65534 owns
    // /tmp/.git and swaps it with a symlink to a root-owned directory in a
    // bounded loop, while root runs dcjail in workspace-write: every run
    // succeeds and the victim directory is untouched.
    let t = T::new("tmpgit", false);
    let victim = t.root.join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("config"), "[core]\n").unwrap();
    let script = format!(
        r#"set -u
mount -t tmpfs -o mode=1777 none /tmp
setpriv --reuid=65534 --regid=65534 --clear-groups sh -c '
  end=$(( $(date +%s) + 4 ))
  while [ $(date +%s) -lt $end ]; do
    rm -rf /tmp/.git; mkdir /tmp/.git; touch /tmp/.git/x
    rm -rf /tmp/.git; ln -s {victim} /tmp/.git
  done' &
ok=0; bad=0
i=0; while [ $i -lt 20 ]; do
  if {bin} --sandbox-mode workspace-write -- true; then ok=$((ok+1)); else bad=$((bad+1)); fi
  i=$((i+1))
done
wait
echo "RAN ok=$ok bad=$bad"
"#,
        victim = victim.display(),
        bin = bin()
    );
    let o = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .current_dir(&t.ws)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let out = text(&o);
    assert!(out.contains("RAN ok=20 bad=0"), "{out}");
    assert_eq!(listing(&victim), vec!["config"], "{out}");
    assert_eq!(
        std::fs::read_to_string(victim.join("config")).unwrap(),
        "[core]\n"
    );
}

/// The processes whose command line carries `tag`.
fn tagged(tag: &str) -> Vec<i32> {
    let o = Command::new("pgrep").arg("-f").arg(tag).output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// `pid` and every process below it, parents first.
fn with_descendants(pid: i32, out: &mut Vec<i32>) {
    if out.contains(&pid) || out.len() > 10_000 {
        return;
    }
    out.push(pid);
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return;
    };
    for t in tasks.flatten() {
        let kids = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
        for k in kids.split_whitespace().filter_map(|k| k.parse().ok()) {
            with_descendants(k, out);
        }
    }
}

/// Kills the tagged processes and what they started (the `sleep 300` of a
/// control run carries no tag, and would be orphaned by killing its shell).
fn kill_tagged(tag: &str) {
    let mut all = Vec::new();
    for p in tagged(tag) {
        with_descendants(p, &mut all);
    }
    for p in all {
        // SAFETY: plain kill of a process.
        unsafe { libc::kill(p, libc::SIGKILL) };
    }
}

#[test]
fn a_sigkilled_dcjail_leaves_no_process_behind() {
    for &nobody in scratch::users() {
        let t = T::new("sigkill", nobody);
        t.own();
        let policy = t.policy("read-only", false);
        let mut runs: Vec<Option<&str>> = vec![None];
        runs.extend(backends().into_iter().map(Some));
        for b in runs {
            let tag = format!(
                "dcjail-sigkill-{}-{nobody}-{}",
                std::process::id(),
                b.unwrap_or("control")
            );
            // A child, a setsid daemon, and a double fork, each carrying the
            // tag in its own command line.
            let script = format!(
                "sh -c 'sleep 300; : {tag}' & setsid sh -c 'sleep 300; : {tag}' & \
                 (sh -c 'sleep 300; : {tag}' &) ; echo started; wait"
            );
            let mut c = if nobody {
                let mut c = Command::new("setpriv");
                c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                    .arg(bin());
                c
            } else {
                Command::new(bin())
            };
            c.arg("--policy").arg(&policy);
            match b {
                Some(b) => c.args(["--backend", b]),
                // With a timeout dcjail supervises even unsandboxed: the
                // control shows what a supervisor alone cannot hold.
                None => c.args(["--no-sandbox", "--timeout", "600"]),
            };
            let mut child = c
                .args(["--", "sh", "-c", &script])
                .current_dir(&t.ws)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            // The three inner shells themselves (the outer script and
            // dcjail's own command line carry the tag too).
            let inner = format!("^sh -c sleep 300; : {tag}$");
            let t0 = Instant::now();
            while tagged(&inner).len() < 3 && t0.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let started = tagged(&inner).len();
            // SAFETY: SIGKILL to the dcjail we spawned (setpriv execs it).
            unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
            let _ = child.wait();
            // The watcher (or the pid namespace's end) kills the tree a
            // moment after dcjail's death: looked for until it is gone, at
            // most 5 s (a loaded machine); the control's stay for 300 s.
            let t1 = Instant::now();
            let mut left = tagged(&tag);
            while b.is_some() && !left.is_empty() && t1.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(50));
                left = tagged(&tag);
            }
            if b.is_none() {
                std::thread::sleep(Duration::from_millis(500));
                left = tagged(&tag);
            }
            kill_tagged(&tag);
            assert!(
                started >= 3,
                "{b:?}: the command did not start its processes"
            );
            match b {
                None => assert!(
                    !left.is_empty(),
                    "the control left nothing: the test cannot fail"
                ),
                Some(b) => assert!(
                    left.is_empty(),
                    "{b} nobody={nobody}: {} processes outlived a SIGKILLed dcjail",
                    left.len()
                ),
            }
        }
    }
}
