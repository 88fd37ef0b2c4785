//! Supervision elsewhere (macOS): what the platform offers. A plain fork,
//! no subreaper (an orphan goes to launchd), no parent-death signal,
//! `sigwait` with an interval timer, and descendants only through their
//! parents (`proc_listchildpids`).

use super::supervise::{start, Start, Woke};
use std::time::Duration;

/// macOS reports no `si_code` to `sigwait`: `wait_signal` says
/// `SI_KERNEL` for a signal a terminal also sent to the command's group.
pub(super) const SI_KERNEL: libc::c_int = 0x80;

/// Elsewhere a plain fork (macOS's vfork forbids what `child` does).
pub(super) fn spawn<F: FnOnce() -> i32>(mask: &libc::sigset_t, child: F) -> libc::pid_t {
    let mut st = Start {
        child: Some(child),
        // SAFETY: getpid never fails.
        parent: unsafe { libc::getpid() },
        mask,
    };
    // SAFETY: dcjail is single-threaded here; the child only execs or exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        start(&mut st);
    }
    pid
}

/// Without a subreaper an orphan is not our child: always walk.
pub(super) fn no_children() -> bool {
    false
}

/// macOS has no subreaper: an orphan is reparented to launchd and is out of
/// `kill_tree`'s reach.
pub(super) fn become_subreaper() {}

/// macOS has no parent death signal: a dcjail killed with SIGKILL leaves the
/// command running (any other death goes through the supervisor's teardown).
pub(super) unsafe fn die_with_parent() {}

/// Elsewhere there is no signalfd: only signals are waited for.
pub(super) struct SignalFd;

/// macOS: no `sigtimedwait`; `sigwait` with a one-shot interval timer
/// (SIGALRM is in the mask) bounds the wait. `sigwait` reports no sender,
/// so a signal is taken as terminal-sent (`SI_KERNEL`, not forwarded) when
/// dcjail is in its terminal's foreground process group and the signal is
/// one a terminal sends to that whole group; a `kill -INT` aimed at dcjail
/// alone while it runs in the foreground is then not passed on.
pub(super) fn wait_signal(
    mask: &libc::sigset_t,
    wait: Option<Duration>,
) -> Option<(libc::c_int, libc::c_int)> {
    let timer = |d: Duration| {
        let it = libc::itimerval {
            it_interval: libc::timeval {
                tv_sec: 0,
                tv_usec: 0,
            },
            it_value: libc::timeval {
                tv_sec: d.as_secs() as libc::time_t,
                tv_usec: d.subsec_micros() as libc::suseconds_t,
            },
        };
        // SAFETY: valid pointer to a stack value.
        unsafe { libc::setitimer(libc::ITIMER_REAL, &it, std::ptr::null_mut()) };
    };
    if let Some(w) = wait {
        // A zero value would disarm the timer instead of firing at once.
        timer(w.max(Duration::from_micros(1)));
    }
    let mut sig: libc::c_int = 0;
    // SAFETY: valid pointers to stack values.
    let r = unsafe { libc::sigwait(mask, &mut sig) };
    if wait.is_some() {
        timer(Duration::ZERO);
    }
    if r != 0 {
        return None;
    }
    let from_terminal = [libc::SIGINT, libc::SIGQUIT, libc::SIGWINCH].contains(&sig)
        && (0..3).any(|fd| {
            // SAFETY: plain queries on fd numbers.
            unsafe { libc::isatty(fd) == 1 && libc::tcgetpgrp(fd) == libc::getpgrp() }
        });
    Some((sig, if from_terminal { SI_KERNEL } else { 0 }))
}

/// macOS: our descendants through `proc_listchildpids`, which sees only
/// processes whose parent is still in the tree (no subreaper: orphans have
/// gone to launchd).
#[cfg(target_os = "macos")]
pub(super) fn each_descendant(found: &mut dyn FnMut(libc::pid_t)) {
    let mut out = Vec::new();
    // SAFETY: getpid never fails.
    let mut stack = vec![unsafe { libc::getpid() }];
    while let Some(p) = stack.pop() {
        let mut buf: Vec<libc::pid_t> = vec![0; 256];
        loop {
            let bytes = (buf.len() * std::mem::size_of::<libc::pid_t>()) as libc::c_int;
            // SAFETY: the buffer holds `bytes` bytes.
            let n = unsafe { libc::proc_listchildpids(p, buf.as_mut_ptr().cast(), bytes) };
            if n <= 0 {
                buf.clear();
                break;
            }
            // The count is in pids; a full buffer may have been cut short.
            let n = n as usize;
            if n < buf.len() || buf.len() >= 1 << 16 {
                buf.truncate(n.min(buf.len()));
                break;
            }
            buf.resize(buf.len() * 4, 0);
        }
        for c in buf {
            if c > 0 && !out.contains(&c) {
                out.push(c);
                found(c);
                stack.push(c);
            }
        }
    }
}

/// Elsewhere no way to list descendants is known: only the direct child is
/// killed (through `supervise_with`'s own kill on teardown).
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub(super) fn each_descendant(_found: &mut dyn FnMut(libc::pid_t)) {}

impl SignalFd {
    pub(super) fn new(_mask: &libc::sigset_t) -> Option<SignalFd> {
        None
    }

    pub(super) fn wait(
        &self,
        _fd: libc::c_int,
        _side: libc::c_int,
        _wait: Option<Duration>,
    ) -> Woke {
        Woke::Nothing
    }
}
