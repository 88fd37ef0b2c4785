//! `connect` for the command: a unix socket's path is reached only when the
//! policy names it (the socket, or a directory above it) or when the
//! command bound it during this run; the call is made here, on the
//! command's own socket, to the very file that was checked.
//!
//! Why every `connect` comes here and is made here, whatever the family:
//! letting the kernel run a checked call (SECCOMP_USER_NOTIF_FLAG_CONTINUE)
//! would have it read the descriptor number and the address again, and
//! another thread of the command could have put a unix socket or a path
//! there meanwhile. So the broker takes the socket itself (pidfd_getfd),
//! reads the address once, and connects that socket:
//! - a path: resolved as the command would, opened `O_PATH` without
//!   following the last name, checked on that descriptor (a socket; bound
//!   here, by device, inode and birth time, or under a named path by its
//!   canonical name), and connected through `/proc/self/fd/N`, which names
//!   that inode and no other (a rename or a new symlink meanwhile changes
//!   nothing);
//! - TCP where the layer filters it: the port must be one the layer's
//!   rules allow, as landlock would check for the command itself;
//! - anything else (an abstract name, IP where it is open): as given. The
//!   broker stands in a landlock domain that scopes abstract sockets and
//!   holds the command's own (`stage2::scope_broker`), so an abstract name
//!   outside the sandbox stays out of reach here too.
//!
//! A blocking socket may wait (a full backlog, a slow network): a child of
//! the broker then makes the call and answers, as for a FIFO, after a try
//! here that waits one tick at most (`at_once`).

use super::create::{sockopt, their_fd};
use super::{
    answer, is_under, path_of, perform, read_exact, stat_fd, status_of, sys, Arg, Buf, Ctx, Fd,
    Reply, AT_FDCWD, EACCES, EINVAL, O_CLOEXEC, O_NOFOLLOW, O_NONBLOCK, O_PATH, S_IFMT, S_IFSOCK,
};
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

const AF_UNIX: u16 = 1;
const AF_INET: u16 = 2;
const AF_INET6: u16 = 10;
const ECONNREFUSED: i32 = 111;
const SO_DOMAIN: usize = 39;
const F_GETFL: usize = 3;
const LANDLOCK_CONNECT_TCP: u64 = 2;

/// Sockets the command bound, by (dev, ino, birth time): a ring, so that
/// the oldest is forgotten first (a connect to it is then refused, which
/// only narrows). The broker is one thread; its helpers are forked copies
/// that never bind.
const BOUND: usize = 1024;
static TABLE: [AtomicU64; 3 * BOUND] = [const { AtomicU64::new(0) }; 3 * BOUND];
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// Remembers a socket file the broker bound for the command.
pub(super) fn bound(st: &sys::Stat) {
    let i = NEXT.fetch_add(1, Ordering::Relaxed) % BOUND;
    TABLE[3 * i].store(st.dev, Ordering::Relaxed);
    TABLE[3 * i + 1].store(st.ino, Ordering::Relaxed);
    TABLE[3 * i + 2].store(st.btime, Ordering::Relaxed);
}

/// Whether the command bound this socket file during the run. The birth
/// time tells a reused inode number apart where the filesystem keeps one.
fn was_bound(st: &sys::Stat) -> bool {
    let n = NEXT.load(Ordering::Relaxed).min(BOUND);
    (0..n).any(|i| {
        TABLE[3 * i].load(Ordering::Relaxed) == st.dev
            && TABLE[3 * i + 1].load(Ordering::Relaxed) == st.ino
            && TABLE[3 * i + 2].load(Ordering::Relaxed) == st.btime
    })
}

/// connect(sockfd, addr, len) of the command.
pub(super) fn connect(c: &Ctx<'_>, sockfd: u64, addr: u64, len: usize) -> Result<Reply, i32> {
    let (tgid, _) = status_of(c.req.pid)?;
    let sock = their_fd(tgid, sockfd)?;
    let domain = sockopt(&sock, SO_DOMAIN)?;
    // The kernel's own limit (sizeof struct sockaddr_storage).
    let mut sa = [0u8; 128];
    if len > sa.len() {
        return Err(EINVAL);
    }
    read_exact(c.req.pid, addr, &mut sa[..len])?;
    if !c.valid() {
        return Ok(Reply::None);
    }
    let family = if len >= 2 {
        u16::from_ne_bytes([sa[0], sa[1]])
    } else {
        0
    };
    if domain == i32::from(AF_UNIX) && family == AF_UNIX && len > 2 && sa[2] != 0 {
        let pin = reachable(c, &sa[2..len])?;
        let mut local = [0u8; 110];
        let n = proc_fd_addr(&pin, &mut local);
        return connect_as(c, sock, &local[..n], Some(pin));
    }
    if (domain == i32::from(AF_INET) || domain == i32::from(AF_INET6))
        && (family == AF_INET || family == AF_INET6)
        && c.prog.handled_net & LANDLOCK_CONNECT_TCP != 0
    {
        let port = if len >= 4 {
            u16::from_be_bytes([sa[2], sa[3]])
        } else {
            return Err(EINVAL);
        };
        if !c.prog.ports().any(|p| p == port) {
            return Err(EACCES);
        }
    }
    connect_as(c, sock, &sa[..len], None)
}

/// The socket file a unix address names, opened `O_PATH` and checked: a
/// socket, bound by the command or under a named path.
fn reachable(c: &Ctx<'_>, sun_path: &[u8]) -> Result<Fd, i32> {
    let end = sun_path
        .iter()
        .position(|b| *b == 0)
        .unwrap_or(sun_path.len());
    let mut p = Buf::new();
    p.set(&[&sun_path[..end]])?;
    let mut r = c.resolver();
    let at = r.at(AT_FDCWD as u64, &p, true)?;
    if at.magic {
        // A descriptor's link of /proc: not a place the policy can name.
        return Err(EACCES);
    }
    let pin = sys::openat(
        at.dir.raw(),
        at.name.c(),
        O_PATH | O_NOFOLLOW | O_CLOEXEC,
        0,
    )?;
    let st = stat_fd(&pin)?;
    if st.mode & S_IFMT != S_IFSOCK {
        return Err(ECONNREFUSED);
    }
    if was_bound(&st) || named(c, &pin)? {
        Ok(pin)
    } else {
        Err(EACCES)
    }
}

/// Whether the file `pin` lies at or under a path the policy names.
fn named(c: &Ctx<'_>, pin: &Fd) -> Result<bool, i32> {
    if c.prog.sockets().next().is_none() {
        return Ok(false);
    }
    let mut path = Buf::new();
    path_of(pin, &mut path)?;
    Ok(c.prog.sockets().any(|n| is_under(path.bytes(), n)))
}

/// `sockaddr_un` naming `/proc/self/fd/N` for `pin`; its length.
fn proc_fd_addr(pin: &Fd, out: &mut [u8; 110]) -> usize {
    out[..2].copy_from_slice(&AF_UNIX.to_ne_bytes());
    let head = b"/proc/self/fd/";
    out[2..2 + head.len()].copy_from_slice(head);
    let mut d = [0u8; 20];
    let digits = super::digits(pin.raw() as u64, &mut d);
    let at = 2 + head.len();
    out[at..at + digits.len()].copy_from_slice(digits);
    at + digits.len() + 1
}

/// Connects the command's socket (`sock`, taken from it) to `sa`: here when
/// the socket does not block, else in a child that answers for it.
fn connect_as(c: &Ctx<'_>, sock: Fd, sa: &[u8], pin: Option<Fd>) -> Result<Reply, i32> {
    if !c.valid() {
        return Ok(Reply::None);
    }
    // SAFETY: F_GETFL takes no argument.
    let fl = unsafe { sys::call(sys::nr::FCNTL, &[sock.raw(), F_GETFL]) }?;
    if fl & O_NONBLOCK != 0 {
        return raw_connect(c, &sock, sa);
    }
    // A datagram socket's connect only records the peer: it never waits,
    // and its send timeout may be in use by another thread.
    const SO_TYPE: usize = 3;
    const SOCK_DGRAM: i32 = 2;
    if sockopt(&sock, SO_TYPE)? == SOCK_DGRAM {
        return raw_connect(c, &sock, sa);
    }
    if let Some(r) = at_once(c, &sock, sa) {
        return r;
    }
    if c.shadow >= 0 {
        // A command that restricted itself: its shadow makes the call, and
        // the broker waits for it (a shadow serves one call at a time).
        return raw_connect(c, &sock, sa);
    }
    const SIGCHLD: usize = 17;
    // SAFETY: a plain fork (clone with SIGCHLD only); the child only makes
    // system calls on values it owns and exits.
    let pid = unsafe { sys::call(sys::nr::CLONE, &[SIGCHLD, 0, 0, 0, 0]) }?;
    if pid == 0 {
        let reply = match raw_connect(c, &sock, sa) {
            Ok(r) => r,
            Err(e) => Reply::Err(e),
        };
        answer(c, reply);
        drop(pin);
        sys::exit(0);
    }
    Ok(Reply::None)
}

/// A blocking connect, tried here with a send timeout of one tick (the
/// timeout a connect waits by), the socket's own put back after: a unix
/// connect waits only for a full backlog, a TCP one for its handshake,
/// which on loopback or a near network ends within the tick. `None` when
/// it would wait longer (EAGAIN; EINPROGRESS, the handshake going on): a
/// child then makes the call, which for TCP waits for that same handshake.
/// The socket is not connected yet, so nothing but this call reads the
/// timeout meanwhile.
fn at_once(c: &Ctx<'_>, sock: &Fd, sa: &[u8]) -> Option<Result<Reply, i32>> {
    const SOL_SOCKET: usize = 1;
    const SO_SNDTIMEO: usize = 21;
    const EAGAIN: i32 = 11;
    const EINPROGRESS: i32 = 115;
    let mut old = [0u64; 2];
    let mut len: u32 = 16;
    // SAFETY: a struct timeval of 16 bytes and its length.
    unsafe {
        sys::call(
            sys::nr::GETSOCKOPT,
            &[
                sock.raw(),
                SOL_SOCKET,
                SO_SNDTIMEO,
                old.as_mut_ptr() as usize,
                &mut len as *mut u32 as usize,
            ],
        )
    }
    .ok()?;
    let set = |tv: &[u64; 2]| {
        // SAFETY: a struct timeval of 16 bytes.
        unsafe {
            sys::call(
                sys::nr::SETSOCKOPT,
                &[
                    sock.raw(),
                    SOL_SOCKET,
                    SO_SNDTIMEO,
                    tv.as_ptr() as usize,
                    16,
                ],
            )
        }
    };
    set(&[0, 1]).ok()?;
    let r = raw_connect(c, sock, sa);
    let _ = set(&old);
    match r {
        Err(EAGAIN) | Err(EINPROGRESS) => None,
        r => Some(r),
    }
}

/// The connect itself: here, or by the shadow of a command that added a
/// landlock domain of its own, so that the kernel checks that domain too
/// (its TCP rules, its abstract-socket scope).
fn raw_connect(c: &Ctx<'_>, sock: &Fd, sa: &[u8]) -> Result<Reply, i32> {
    let args = [Arg::N(sock.raw()), Arg::B(sa), Arg::N(sa.len())];
    perform(c, sys::nr::CONNECT, &args, None)?;
    Ok(Reply::Val(0))
}
