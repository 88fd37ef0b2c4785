//! The supervisor: starts the command in a child, forwards signals, kills
//! the whole tree at the timeout or when the command is done, and maps the
//! exit status. What differs between platforms is `os`'s.

use super::os::{
    become_subreaper, die_with_parent, each_descendant, no_children, spawn, wait_signal, SignalFd,
    SI_KERNEL,
};
use super::status;
use super::TIMEOUT_STATUS;
use std::time::{Duration, Instant};

/// The status dcjail reports for a wait status: the code, or 128+N.
pub fn status_of(ws: libc::c_int) -> i32 {
    if libc::WIFEXITED(ws) {
        libc::WEXITSTATUS(ws)
    } else if libc::WIFSIGNALED(ws) {
        status::SIGNAL_BASE + libc::WTERMSIG(ws)
    } else {
        1
    }
}

/// Signals a supervisor passes on to the command.
pub(super) const FORWARDED: &[libc::c_int] = &[
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGWINCH,
    libc::SIGCONT,
];

pub(super) fn supervisor_mask() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data initialized by sigemptyset.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in FORWARDED
            .iter()
            .chain([libc::SIGCHLD, libc::SIGALRM].iter())
        {
            libc::sigaddset(&mut set, *s);
        }
        set
    }
}

/// Runs `child` in a forked process and supervises it: dcjail becomes a
/// subreaper so every descendant (double-forked daemons included) stays its
/// child; signals sent to dcjail are forwarded; at the timeout or when the
/// command exits, every remaining descendant is killed, so nothing outlives
/// dcjail. `child` must exec or `_exit`; it runs with the original signal mask.
pub fn supervise<F: FnOnce() -> i32>(timeout: Option<Duration>, child: F) -> i32 {
    supervise_with(
        timeout,
        &mut |pid, sig, code| {
            // Terminal-generated signals already reached the command's group.
            if code != SI_KERNEL {
                // SAFETY: plain kill of our own child.
                unsafe { libc::kill(pid, sig) };
            }
        },
        Teardown::Reap,
        None,
        None,
        child,
    )
}

/// How the supervisor ends the tree once the command is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Teardown {
    /// Kill and reap until no descendant is left (a process killed while
    /// forking may leave a child that is reparented to us later).
    Reap,
    /// The child is bubblewrap: every process of the sandbox lives in its
    /// pid namespace, and its child, that namespace's init, has SIGKILL as
    /// parent-death signal (`--die-with-parent`). Killing the child thus
    /// kills the whole tree, with no /proc walk. dcjail is a subreaper, so
    /// the init, orphaned when bwrap exits first, becomes its child: both
    /// are then reaped before dcjail returns (left to the system's init,
    /// their zombies could outlive dcjail by seconds). That wait is bounded
    /// by `TEARDOWN_LIMIT`, past which dcjail returns all the same.
    PidNamespace,
}

/// What a watched descriptor said when it became readable.
pub enum Heard {
    /// Nothing that settles anything yet.
    Nothing,
    /// Its end: stop watching it.
    Closed,
    /// The command's status is known; the child is still on its way out.
    Status(i32),
}

/// A descriptor the supervisor listens on besides signals (Linux): bwrap
/// reports the command's exit status on one before it exits itself.
pub struct Watch<'a> {
    pub fd: libc::c_int,
    /// Called when `fd` is readable or at its end.
    pub ready: &'a mut dyn FnMut() -> Heard,
}

/// A descriptor served while the command runs that settles nothing about
/// it (Linux): the denial records, streamed to `--events` as they come, by
/// the supervisor's own thread instead of one started for them.
pub struct Side<'a> {
    pub fd: libc::c_int,
    /// Called when `fd` is readable; false when it is no longer to be
    /// polled (its end).
    pub ready: &'a mut dyn FnMut() -> bool,
}

/// `supervise` with the forwarding and the teardown decided by the caller:
/// `forward(child, signal, si_code)` is called for every forwarded signal
/// dcjail receives (a backend whose command is not the direct child finds
/// it there). With `watch` (Linux; ignored elsewhere), a status heard there
/// ends the supervision before the child has exited; the teardown then
/// kills the child, which is the only way this differs from its exit.
pub fn supervise_with<F: FnOnce() -> i32>(
    timeout: Option<Duration>,
    forward: &mut dyn FnMut(libc::pid_t, libc::c_int, libc::c_int),
    teardown: Teardown,
    mut watch: Option<Watch<'_>>,
    mut side: Option<Side<'_>>,
    child: F,
) -> i32 {
    let end = |pid: libc::pid_t, reaped: bool| match teardown {
        Teardown::Reap => kill_tree(),
        Teardown::PidNamespace => {
            if !reaped {
                // SAFETY: plain kill of our own, not yet reaped, child.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            reap_all(TEARDOWN_LIMIT);
        }
    };
    let mask = supervisor_mask();
    // SAFETY: an all-zero sigset_t is a valid (empty) set.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    become_subreaper();
    // SAFETY: plain libc call on valid pointers; dcjail is single-threaded here.
    unsafe {
        libc::sigprocmask(libc::SIG_BLOCK, &mask, &mut old);
    }
    let pid = spawn(&old, child);
    if pid < 0 {
        eprintln!("dcjail: cannot fork: {}", std::io::Error::last_os_error());
        return status::cannot_start();
    }
    // Policy validation bounds the timeout; an overflow still means "none".
    let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
    let mut status: Option<i32> = None;
    let mut timed_out = false;
    let mut heard = false;
    let mut more = false;
    // Signals and the watched descriptor are waited for together through
    // a signalfd; without one (it cannot be made) only signals are, which
    // is slower to notice the status, never wrong.
    let sfd = (watch.is_some() || side.is_some())
        .then(|| SignalFd::new(&mask))
        .flatten();
    while status.is_none() {
        let wait = match deadline {
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    end(pid, false);
                    timed_out = true;
                    status = Some(TIMEOUT_STATUS);
                    break;
                }
                Some(d - now)
            }
            None => None,
        };
        // Children still to reap: look, do not wait.
        let wait = if more { Some(Duration::ZERO) } else { wait };
        let woke = match &sfd {
            Some(s) => s.wait(
                watch.as_ref().map_or(-1, |w| w.fd),
                side.as_ref().map_or(-1, |d| d.fd),
                wait,
            ),
            None => match wait_signal(&mask, wait) {
                Some((sig, code)) => Woke::Signal(sig, code),
                None => Woke::Nothing,
            },
        };
        match woke {
            Woke::Nothing if !more => {}
            Woke::Nothing | Woke::Signal(libc::SIGCHLD, _) => Reaped { status, more } = reap(pid),
            Woke::Signal(libc::SIGALRM, _) => {}
            Woke::Signal(sig, code) => forward(pid, sig, code),
            Woke::Fd => match watch.as_mut().map(|w| (w.ready)()) {
                Some(Heard::Status(s)) => {
                    heard = true;
                    status = Some(s);
                }
                Some(Heard::Closed) | None => watch = None,
                Some(Heard::Nothing) => {}
            },
            Woke::Side => {
                if !side.as_mut().is_some_and(|d| (d.ready)()) {
                    side = None;
                }
            }
        }
    }
    // Reaped means the child's status came from `reap`; at the timeout, or
    // when the status was heard first, it was not, so its pid is still
    // ours to kill.
    end(pid, !timed_out && !heard);
    // SAFETY: restoring the mask saved above.
    unsafe { libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    status.unwrap_or(1)
}

/// What the child of `spawn` runs before `child`.
pub(super) struct Start<'a, F> {
    pub(super) child: Option<F>,
    pub(super) parent: libc::pid_t,
    pub(super) mask: &'a libc::sigset_t,
}

/// In the new process: dies with dcjail (Linux), restores the signal mask,
/// runs `child` (which execs) and exits with its status. Never returns.
pub(super) fn start<F: FnOnce() -> i32>(st: &mut Start<'_, F>) -> ! {
    // SAFETY: plain calls on values the parent keeps alive until we exec.
    unsafe {
        die_with_parent();
        if libc::getppid() != st.parent {
            libc::_exit(status::cannot_start());
        }
        libc::sigprocmask(libc::SIG_SETMASK, st.mask, std::ptr::null_mut());
    }
    let code = st.child.take().map_or_else(status::cannot_start, |f| f());
    // SAFETY: leaving the child without running the parent's destructors.
    unsafe { libc::_exit(code) }
}

/// At most this many children are reaped per call of `reap`: a chain of
/// processes that each fork a successor and exit leaves a new orphan to
/// reap as fast as one is reaped, and a loop until none is left would
/// never return to look at the timeout or at dcjail's death.
const REAP_BATCH: usize = 64;

/// What `reap` found.
pub(super) struct Reaped {
    /// The main child's status, once it exited.
    pub(super) status: Option<i32>,
    /// The batch was full: more may be waiting, with no new SIGCHLD to say
    /// so (it is one pending signal however many children exited).
    pub(super) more: bool,
}

/// Reaps exited children, the main one first and at most `REAP_BATCH`.
pub(super) fn reap(main: libc::pid_t) -> Reaped {
    let mut out = Reaped {
        status: None,
        more: false,
    };
    let mut ws = 0;
    // SAFETY: plain waitpid.
    if unsafe { libc::waitpid(main, &mut ws, libc::WNOHANG) } == main {
        out.status = Some(status_of(ws));
    }
    for _ in 0..REAP_BATCH {
        // SAFETY: plain waitpid.
        if unsafe { libc::waitpid(-1, &mut ws, libc::WNOHANG) } <= 0 {
            return out;
        }
    }
    out.more = true;
    out
}

/// How long the teardown of a killed pid namespace is waited for: only a
/// process stuck in the kernel (uninterruptible I/O) takes longer.
pub(super) const TEARDOWN_LIMIT: Duration = Duration::from_secs(2);

/// Reaps children until none is left, or `limit` has passed: the killed
/// child, and what was orphaned to us (we are the subreaper) as it died.
/// SIGCHLD is blocked: it is waited for, never handled.
pub(super) fn reap_all(limit: Duration) {
    let deadline = Instant::now() + limit;
    // SAFETY: sigset_t is plain data initialized by sigemptyset.
    let chld = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        // Bounds the wait on macOS (see `wait_signal`).
        libc::sigaddset(&mut set, libc::SIGALRM);
        set
    };
    loop {
        let mut ws = 0;
        // SAFETY: plain waitpid.
        let r = unsafe { libc::waitpid(-1, &mut ws, libc::WNOHANG | WALL) };
        if r > 0 {
            continue;
        }
        if r < 0 && super::errno() != libc::EINTR {
            return;
        }
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        wait_signal(&chld, Some(deadline - now));
    }
}

/// Children of every kind (`__WALL`), where the flag exists.
#[cfg(target_os = "linux")]
const WALL: libc::c_int = libc::__WALL;
#[cfg(not(target_os = "linux"))]
const WALL: libc::c_int = 0;

/// Kills every descendant (we are their subreaper) until none is left.
///
/// Each process is killed as soon as the walk reads it, before its own
/// children are read, and the walk is repeated with no cap on the rounds:
/// once SIGKILL is pending the kernel refuses that process any further
/// fork, so all that can survive a round is a child forked in the moment
/// between reading its parent and killing it, and the next round finds it
/// (its parent's child, or ours once the parent is gone). A chain of
/// processes that each fork a successor and exit can win some rounds but
/// not wait out the loop. What ends it besides an empty tree: processes
/// already killed that stay (stuck in the kernel) with no new one seen for
/// `TEARDOWN_LIMIT`. This walk is all there is unsandboxed and on macOS;
/// under landlock the watcher's one kill of the whole sandbox comes first
/// (`watch`), and the walk only reaps.
pub fn kill_tree() {
    if no_children() {
        return;
    }
    // Pids killed and not yet reaped by us: a pid is only reused once
    // reaped, and the ones reaped by a parent inside the tree are killed
    // again when a later round finds them reused.
    let mut killed = std::collections::HashSet::new();
    let mut last_new = Instant::now();
    loop {
        let (mut seen, mut fresh) = (0usize, 0usize);
        each_descendant(&mut |pid| {
            // SAFETY: plain kill of a descendant (we are its subreaper).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            seen += 1;
            if killed.insert(pid) {
                fresh += 1;
            }
        });
        for pid in reap_exited() {
            killed.remove(&pid);
        }
        if seen == 0 && no_children() {
            return;
        }
        if fresh > 0 {
            last_new = Instant::now();
        } else if last_new.elapsed() >= TEARDOWN_LIMIT {
            return;
        } else {
            // Only killed processes on their way out: give them the CPU.
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Reaps every child that has exited, without waiting; returns their pids.
pub(super) fn reap_exited() -> Vec<libc::pid_t> {
    let mut out = Vec::new();
    loop {
        let mut ws = 0;
        // SAFETY: plain waitpid.
        let r = unsafe { libc::waitpid(-1, &mut ws, libc::WNOHANG | WALL) };
        if r <= 0 {
            return out;
        }
        out.push(r);
    }
}

/// What woke the supervisor.
pub(super) enum Woke {
    Signal(libc::c_int, libc::c_int),
    /// The watched descriptor (only polled on Linux).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Fd,
    /// The side descriptor (only polled on Linux).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Side,
    Nothing,
}
