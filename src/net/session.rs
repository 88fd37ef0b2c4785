//! The proxy for one run of an allowlisted command: started by the
//! supervising dcjail before the command, alive until dcjail exits, and
//! asked at the end which destinations it refused.
//!
//! Two ways in, one per backend:
//! - `landlock`: the proxy listens on 127.0.0.1:PORT in dcjail's own network
//!   namespace; the command may connect to that port only.
//! - `bwrap`: the command's network namespace has only loopback. The second
//!   stage binds 127.0.0.1:[`SANDBOX_PROXY_PORT`] *inside* it and hands the
//!   listening socket out over a socketpair ([`send_listener`]); the proxy
//!   outside accepts on it. No process of dcjail stays inside, no socket
//!   file is mounted in, and nothing outside the sandbox can reach it.
//!
//! Proxy threads never receive the signals the supervisor forwards: they are
//! started with every signal blocked.

use super::conn::Listener;
use super::proxy::{Config, Denial, Proxy, Upstream};
use crate::domain::Rules;
use crate::plan::Plan;
use std::ffi::OsString;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// The proxy's port inside a bwrap network namespace, where every port is free.
pub const SANDBOX_PROXY_PORT: u16 = 3128;
/// Environment variable naming stage 2's end of the socketpair.
pub const STAGE2_PROXY_FD: &str = super::STAGE2_VAR;

/// A proxy serving one run.
pub struct Session {
    proxy: Proxy,
    secret: String,
    /// `127.0.0.1:PORT` as the command reaches it.
    endpoint: String,
}

impl Session {
    fn new(plan: &Plan, endpoint: String) -> Result<Session, String> {
        let secret = super::new_secret()?;
        let rules = Rules {
            allow: plan.net.allow.clone(),
            deny: plan.net.deny.clone(),
        };
        let mut config = Config::new(rules, Some(secret.clone()));
        config.upstream = match Upstream::from_env(|k| std::env::var(k).ok()) {
            Ok(u) => u,
            Err(e) => {
                // Going direct only narrows what works; the rules still hold.
                eprintln!("dcjail: warning: not using the upstream proxy: {e}");
                None
            }
        };
        Ok(Session {
            proxy: Proxy::new(config),
            secret,
            endpoint,
        })
    }

    /// `landlock`: a proxy on an ephemeral loopback port of this namespace.
    /// Returns the session and the port the command may connect to.
    pub fn start_tcp(plan: &Plan) -> Result<(Session, u16), String> {
        let l = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| format!("cannot start the allowlist proxy: {e}"))?;
        let port = l
            .local_addr()
            .map_err(|e| format!("cannot start the allowlist proxy: {e}"))?
            .port();
        let s = Session::new(plan, format!("127.0.0.1:{port}"))?;
        let proxy = s.proxy.clone();
        with_signals_blocked(|| proxy.spawn(Listener::Tcp(l)))
            .map_err(|e| format!("cannot start the allowlist proxy: {e}"))?;
        Ok((s, port))
    }

    /// `bwrap`: returns the session and stage 2's end of the socketpair
    /// (not close-on-exec: it must survive into bwrap and stage 2).
    pub fn start_netns(plan: &Plan) -> Result<(Session, OwnedFd), String> {
        let (ours, theirs) =
            UnixStream::pair().map_err(|e| format!("cannot start the allowlist proxy: {e}"))?;
        let theirs = OwnedFd::from(theirs);
        // SAFETY: clearing FD_CLOEXEC on a descriptor we own.
        if unsafe { libc::fcntl(theirs.as_raw_fd(), libc::F_SETFD, 0) } != 0 {
            return Err(format!(
                "cannot start the allowlist proxy: {}",
                std::io::Error::last_os_error()
            ));
        }
        let s = Session::new(plan, format!("127.0.0.1:{SANDBOX_PROXY_PORT}"))?;
        let proxy = s.proxy.clone();
        with_signals_blocked(|| {
            std::thread::Builder::new()
                .name("dcjail-proxy-rx".into())
                .stack_size(super::conn::THREAD_STACK)
                .spawn(move || {
                    // Stage 2 sends the listener once; nothing sent means the
                    // sandbox never started, and there is nothing to serve.
                    if let Ok(l) = recv_listener(&ours) {
                        proxy.serve(Listener::Tcp(l));
                    }
                })
        })
        .map_err(|e| format!("cannot start the allowlist proxy: {e}"))?;
        Ok((s, theirs))
    }

    /// The proxy variables for the command's environment.
    pub fn env(&self) -> Vec<(OsString, OsString)> {
        super::proxy_env(&self.endpoint, &self.secret)
    }

    /// Refused destinations so far, once each.
    pub fn denied(&self) -> Vec<Denial> {
        self.proxy.denied()
    }

    /// The exit report on stderr: one `dcjail: network-denied: HOST:PORT
    /// (WHY)` line each; returns the same entries for `--report`.
    pub fn report(&self) -> Vec<String> {
        let d: Vec<String> = self.denied().iter().map(|d| d.to_string()).collect();
        for line in super::denied_lines(&d) {
            eprintln!("{line}");
        }
        d
    }
}

/// Runs `f` with every signal blocked in this thread, so threads it spawns
/// start (and stay) blocked: process-directed signals then reach only the
/// supervisor, which forwards them to the command.
fn with_signals_blocked<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: sigset_t is plain data; pthread_sigmask with valid pointers.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old);
        let out = f();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        out
    }
}

fn recv_listener(sock: &UnixStream) -> Result<TcpListener, String> {
    use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags};
    let mut byte = [0u8; 1];
    let mut iov = [std::io::IoSliceMut::new(&mut byte)];
    let mut space = nix::cmsg_space!([RawFd; 1]);
    let msg = recvmsg::<()>(
        sock.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    )
    .map_err(|e| format!("receiving the proxy socket: {e}"))?;
    let mut got: Option<OwnedFd> = None;
    for c in msg.cmsgs().map_err(|e| e.to_string())? {
        if let ControlMessageOwned::ScmRights(fds) = c {
            for fd in fds {
                // SAFETY: the kernel just installed this descriptor for us.
                let owned = unsafe { OwnedFd::from_raw_fd(fd) };
                if got.is_none() {
                    got = Some(owned);
                }
            }
        }
    }
    let fd = got.ok_or("no socket received from the sandbox")?;
    if !is_listening_tcp(fd.as_raw_fd()) {
        return Err("the sandbox sent something other than a listening TCP socket".into());
    }
    Ok(TcpListener::from(fd))
}

fn is_listening_tcp(fd: RawFd) -> bool {
    let get = |opt: libc::c_int| -> Option<libc::c_int> {
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: valid buffer and length for an int option.
        let r = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                (&mut v as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        (r == 0).then_some(v)
    };
    get(libc::SO_ACCEPTCONN) == Some(1)
        && get(libc::SO_TYPE) == Some(libc::SOCK_STREAM)
        && matches!(
            get(libc::SO_DOMAIN),
            Some(libc::AF_INET) | Some(libc::AF_INET6)
        )
}

/// Stage 2, inside the sandbox's network namespace and before the layer is
/// applied: listen on 127.0.0.1:[`SANDBOX_PROXY_PORT`] and hand the socket
/// to the proxy outside over `fd`, then close both here.
pub fn send_listener(fd: RawFd) -> Result<(), String> {
    use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};
    let is_unix_stream = {
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: valid buffer.
        let r = unsafe { libc::fstat(fd, &mut st) };
        r == 0 && (st.st_mode & libc::S_IFMT) == libc::S_IFSOCK
    };
    if !is_unix_stream {
        return Err(format!("descriptor {fd} is not dcjail's proxy channel"));
    }
    // SAFETY: stage 2 was handed this descriptor to own and close.
    let chan = unsafe { OwnedFd::from_raw_fd(fd) };
    let l = TcpListener::bind(("127.0.0.1", SANDBOX_PROXY_PORT))
        .map_err(|e| format!("cannot listen on 127.0.0.1:{SANDBOX_PROXY_PORT} inside: {e}"))?;
    let fds = [l.as_raw_fd()];
    let cmsg = [ControlMessage::ScmRights(&fds)];
    let iov = [std::io::IoSlice::new(b"L")];
    sendmsg::<()>(chan.as_raw_fd(), &iov, &cmsg, MsgFlags::empty(), None)
        .map_err(|e| format!("handing the proxy socket out: {e}"))?;
    Ok(())
}
