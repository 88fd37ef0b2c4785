//! The standard descriptors the caller left closed. At start-up each closed
//! fd 0, 1 or 2 gets /dev/null, so that nothing dcjail opens lands there
//! (a policy file opened as fd 1 would otherwise become the command's
//! stdout); the set is remembered, and those numbers are closed again just
//! before the command's `execve`, so the command starts with what the
//! caller gave it: `dcjail -- echo hi >&-` fails as `echo hi >&-` does.
//! Under bwrap the set travels to the second stage, which closes them there.

use std::sync::atomic::{AtomicU8, Ordering};

/// Bit N: fd N was closed when dcjail started.
static CLOSED: AtomicU8 = AtomicU8::new(0);

/// Gives each closed standard descriptor /dev/null and remembers which they
/// were. Called once, first thing in `main`, before anything is opened.
pub fn guard() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: a valid array of three pollfd.
    if unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) } < 0 {
        // poll itself failed (EINTR, ENOMEM): check each fd the slow way.
        for f in &mut fds {
            // SAFETY: fcntl on an fd number.
            if unsafe { libc::fcntl(f.fd, libc::F_GETFD) } == -1 {
                f.revents = libc::POLLNVAL;
            }
        }
    }
    let mut closed = 0u8;
    for f in fds {
        if f.revents & libc::POLLNVAL != 0 {
            // SAFETY: plain open of a constant path; the lowest free fd is
            // the closed one. If even that fails, abort rather than run
            // with a standard fd that any open could take.
            if unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) } != f.fd {
                std::process::abort();
            }
            closed |= 1 << f.fd;
        }
    }
    CLOSED.store(closed, Ordering::Relaxed);
}

/// The standard descriptors the caller left closed (bit N: fd N).
pub fn closed() -> u8 {
    CLOSED.load(Ordering::Relaxed)
}

/// Adds to the set: the second stage learns it from the first.
pub fn note_closed(mask: u8) {
    CLOSED.fetch_or(mask & 0b111, Ordering::Relaxed);
}

/// Closes the remembered descriptors; called right before the command's
/// `execve`, with nothing opened after it. Async-signal-safe.
pub fn close_for_exec() {
    let mask = closed();
    for fd in 0..3 {
        if mask & (1 << fd) != 0 {
            // SAFETY: closing a descriptor number that holds our /dev/null.
            unsafe { libc::close(fd) };
        }
    }
}
