//! The bwrap half of the proxy session (Linux): the socketpair that carries
//! the listening socket out of the sandbox's network namespace.

use super::{with_signals_blocked, Session};
use crate::net::conn::Listener;
use crate::plan::Plan;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

impl Session {
    /// `bwrap`: returns the session and stage 2's end of the socketpair
    /// (not close-on-exec: it must survive into bwrap and stage 2).
    pub fn start_netns(
        plan: &Plan,
        port: u16,
        creds: Option<std::sync::Arc<crate::net::creds::Injector>>,
    ) -> Result<(Session, OwnedFd), String> {
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
        let s = Session::new(plan, format!("127.0.0.1:{port}"), creds)?;
        let proxy = s.proxy.clone();
        with_signals_blocked(|| {
            std::thread::Builder::new()
                .name("dcjail-proxy-rx".into())
                .stack_size(crate::net::conn::THREAD_STACK)
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
}

fn recv_listener(sock: &UnixStream) -> Result<TcpListener, String> {
    // The second stage's own descriptor passing (`send_fd_tagged` below).
    let fd = crate::inside::stage2::recv_fd(sock.as_raw_fd())
        .map_err(|e| {
            format!(
                "receiving the proxy socket: {}",
                std::io::Error::from_raw_os_error(e)
            )
        })?
        .ok_or("no socket received from the sandbox")?;
    // SAFETY: the kernel just installed this descriptor for us.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
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
/// applied: listen on 127.0.0.1:`port` and hand the socket
/// to the proxy outside over `fd`, then close both here.
pub fn send_listener(fd: RawFd, port: u16) -> Result<(), String> {
    let is_unix_stream = {
        // SAFETY: an all-zero stat is a valid value of the C struct.
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
    let l = TcpListener::bind(("127.0.0.1", port))
        .map_err(|e| format!("cannot listen on 127.0.0.1:{port} inside: {e}"))?;
    crate::inside::stage2::send_fd_tagged(chan.as_raw_fd(), l.as_raw_fd(), b"L").map_err(|e| {
        format!(
            "handing the proxy socket out: {}",
            std::io::Error::from_raw_os_error(e)
        )
    })?;
    Ok(())
}
