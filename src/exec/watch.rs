//! Supervision for the landlock backend, where no pid namespace holds the
//! command's tree: a watcher process stands between dcjail and the command
//! so that "it dies with dcjail, and nothing is left" holds even when dcjail
//! itself is SIGKILLed.
//!
//! dcjail (the process the caller started) forks the watcher; the watcher
//! becomes a child subreaper in a process group of its own and starts the
//! command, which joins dcjail's process group again (so that a terminal's
//! and the caller's signals reach it as they would without dcjail). Every
//! descendant of the command, double-forked daemons included, is then a
//! descendant of the watcher. When the command exits, at the timeout, or
//! when dcjail's end of a pipe closes because dcjail died, the watcher
//! kills that whole tree: with one `kill(-1, SIGKILL)` from a landlock
//! domain that scopes signals only and holds the command's domain nested
//! (`landlock::fence_signals`), which reaches the sandbox's processes and
//! nothing else, and which a chain of processes that each fork a successor
//! and exit cannot outrun; then by a walk of its descendants, which reaps.
//! The command cannot signal or trace the watcher: it is outside the
//! command's landlock domain (signal scoping) and ptrace is refused. When
//! the filter hands calls to a broker, the watcher is that broker, with
//! every capability dropped so that it can do no more than the command.
//!
//! What this cannot hold: the watcher itself killed by someone outside the
//! sandbox at the same moment as dcjail (then the command still dies with
//! the watcher, but a daemon it double-forked is reparented to init).

use super::{become_subreaper, kill_tree, spawn, status_of, supervisor_mask, SignalFd, Woke};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// A message from the watcher: the command's pid, then its status.
const PID: u8 = b'P';
const STATUS: u8 = b'S';

fn pipe() -> Option<(OwnedFd, OwnedFd)> {
    let mut fds = [0i32; 2];
    // SAFETY: an array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return None;
    }
    // SAFETY: two fresh descriptors, ours.
    Some(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn socketpair() -> Option<(OwnedFd, OwnedFd)> {
    let mut fds = [0i32; 2];
    // SAFETY: an array of two ints.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    } != 0
    {
        return None;
    }
    // SAFETY: two fresh descriptors, ours.
    Some(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn send(fd: &OwnedFd, tag: u8, v: i32) {
    let mut m = [0u8; 5];
    m[0] = tag;
    m[1..].copy_from_slice(&v.to_ne_bytes());
    // SAFETY: a 5-byte buffer; a pipe write of this size is atomic.
    unsafe { libc::write(fd.as_raw_fd(), m.as_ptr().cast(), m.len()) };
}

/// What the command's child side does before exec: join `pgid`, apply the
/// layer, hand the broker's listener to the watcher over `chan`.
pub struct Start<'a> {
    /// The layer scopes signals: the watcher fences itself and ends the
    /// tree with one kill (see the module's comment). Without it only the
    /// walk ends the tree.
    pub fence: bool,
    /// Applies the layer, keeping the descriptor given open (the channel
    /// the listener it returns travels on).
    pub apply: &'a dyn Fn(Option<i32>) -> Result<Option<OwnedFd>, String>,
    pub exec: &'a dyn Fn() -> i32,
}

/// Runs the command under a watcher and returns its exit status (128+N on
/// signal N, 124 at the timeout). `program` is the broker's program when
/// the filter hands calls to one.
pub fn supervise_watched(
    timeout: Option<Duration>,
    start: Start<'_>,
    program: Option<&[u8]>,
    side: Option<super::supervise::Side<'_>>,
) -> i32 {
    let (Some((msg_r, msg_w)), Some((life_r, life_w))) = (pipe(), pipe()) else {
        eprintln!(
            "dcjail: cannot make the watcher's pipes: {}",
            std::io::Error::last_os_error()
        );
        return super::status::cannot_start();
    };
    let mask = supervisor_mask();
    // SAFETY: an all-zero sigset_t is a valid (empty) set.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: blocking the supervisor's signals before the fork, so that
    // none is lost between the fork and the watcher's own loop.
    unsafe { libc::sigprocmask(libc::SIG_BLOCK, &mask, &mut old) };
    // dcjail is a subreaper too: should the watcher be killed, the tree it
    // held comes here and is killed at the end.
    become_subreaper();
    // SAFETY: getpgrp never fails.
    let pgid = unsafe { libc::getpgrp() };
    // SAFETY: dcjail is single-threaded here (the landlock backend starts
    // no proxy, and the denial records are read by this thread); the child
    // runs `watcher` and exits.
    let w = unsafe { libc::fork() };
    if w < 0 {
        // SAFETY: restoring the mask saved above.
        unsafe { libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
        eprintln!("dcjail: cannot fork: {}", std::io::Error::last_os_error());
        return super::status::cannot_start();
    }
    if w == 0 {
        drop(msg_r);
        drop(life_w);
        let ends = Ends {
            msg: &msg_w,
            life: &life_r,
        };
        let code = watcher(&old, &mask, pgid, start, program, ends);
        // SAFETY: leaving the watcher without running dcjail's destructors.
        unsafe { libc::_exit(code) }
    }
    drop(msg_w);
    drop(life_r);
    let mut life_w = Some(life_w);
    let status = wait_for(w, timeout, &mask, &msg_r, side, &mut life_w);
    drop(life_w);
    kill_tree();
    // SAFETY: restoring the mask saved above.
    unsafe { libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    status
}

/// dcjail's side: forwards the signals it gets to the command, ends the run
/// at the timeout, and takes the status the watcher reports.
fn wait_for(
    w: libc::pid_t,
    timeout: Option<Duration>,
    mask: &libc::sigset_t,
    msg: &OwnedFd,
    mut side: Option<super::supervise::Side<'_>>,
    life: &mut Option<OwnedFd>,
) -> i32 {
    let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
    let sfd = SignalFd::new(mask);
    let mut cmd: libc::pid_t = 0;
    let mut status: Option<i32> = None;
    let mut buf = Vec::new();
    // Reads what the watcher said; false at the pipe's end.
    let mut read_msgs = |cmd: &mut libc::pid_t, status: &mut Option<i32>| -> bool {
        let mut chunk = [0u8; 64];
        // SAFETY: a buffer of 64 bytes.
        let n = unsafe { libc::read(msg.as_raw_fd(), chunk.as_mut_ptr().cast(), 64) };
        if n <= 0 {
            return false;
        }
        buf.extend_from_slice(&chunk[..n as usize]);
        while buf.len() >= 5 {
            let v = i32::from_ne_bytes([buf[1], buf[2], buf[3], buf[4]]);
            match buf[0] {
                PID => *cmd = v,
                STATUS => *status = Some(v),
                _ => {}
            }
            buf.drain(..5);
        }
        true
    };
    // The command's pid comes first, as soon as it has started: waited for
    // here so that a signal sent to dcjail right after the command's first
    // output is passed on, not lost (they stay blocked meanwhile).
    while cmd == 0 && status.is_none() && read_msgs(&mut cmd, &mut status) {}
    if let Some(s) = status {
        reap_watcher(w);
        return s;
    }
    loop {
        let wait = match deadline {
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    // The end of this pipe tells the watcher to end the
                    // tree, as when dcjail dies.
                    drop(life.take());
                    end_watcher(w);
                    return super::TIMEOUT_STATUS;
                }
                Some(d - now)
            }
            None => None,
        };
        let woke = match &sfd {
            Some(s) => s.wait(msg.as_raw_fd(), side.as_ref().map_or(-1, |d| d.fd), wait),
            None => Woke::Fd,
        };
        match woke {
            Woke::Nothing | Woke::Signal(libc::SIGALRM, _) => {}
            Woke::Side => {
                if !side.as_mut().is_some_and(|d| (d.ready)()) {
                    side = None;
                }
            }
            Woke::Signal(libc::SIGCHLD, _) => {
                if let Some(ws) = reaped(w) {
                    // What it said before it went is still in the pipe.
                    while status.is_none() && read_msgs(&mut cmd, &mut status) {}
                    return status.unwrap_or_else(|| lost(ws));
                }
            }
            Woke::Signal(sig, code) => {
                // A terminal's signals already reached the command's group.
                if code != libc::SI_KERNEL && cmd > 0 {
                    // SAFETY: a signal to the command dcjail started.
                    unsafe { libc::kill(cmd, sig) };
                }
            }
            Woke::Fd => {
                if !read_msgs(&mut cmd, &mut status) {
                    let ws = reap_watcher(w);
                    return status.unwrap_or_else(|| lost(ws));
                }
                if let Some(s) = status {
                    reap_watcher(w);
                    return s;
                }
            }
        }
    }
}

/// The watcher ended without a status: it was killed from outside.
fn lost(ws: libc::c_int) -> i32 {
    eprintln!("dcjail: the watcher of the sandbox ended before the command");
    status_of(ws).max(1)
}

fn reaped(w: libc::pid_t) -> Option<libc::c_int> {
    let mut ws = 0;
    // SAFETY: plain waitpid.
    (unsafe { libc::waitpid(w, &mut ws, libc::WNOHANG) } == w).then_some(ws)
}

/// How long the watcher is given to end the tree and exit once told to.
const WATCHER_LIMIT: Duration = Duration::from_secs(2);

/// Waits for the watcher told to end the tree; kills it past
/// `WATCHER_LIMIT` (then its death kills the command, its parent death
/// signal, and the rest of the tree comes to dcjail's own walk).
fn end_watcher(w: libc::pid_t) {
    let t = Instant::now();
    while reaped(w).is_none() {
        if t.elapsed() >= WATCHER_LIMIT {
            // SAFETY: plain kill of our child.
            unsafe { libc::kill(w, libc::SIGKILL) };
            reap_watcher(w);
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn reap_watcher(w: libc::pid_t) -> libc::c_int {
    let mut ws = 0;
    // SAFETY: plain waitpid of our child.
    while unsafe { libc::waitpid(w, &mut ws, 0) } < 0 && super::errno() == libc::EINTR {}
    ws
}

/// The watcher's ends of its pipes to dcjail.
struct Ends<'a> {
    /// The messages it sends.
    msg: &'a OwnedFd,
    /// Its end: dcjail died, or the timeout passed.
    life: &'a OwnedFd,
}

/// Kills whatever is left of the command's tree and reaps it: first at
/// once when the watcher is fenced, then by the walk.
fn end_tree(fenced: bool) {
    if fenced {
        // SAFETY: `fenced` is only true once `fence_signals` has checked
        // that the watcher's signals reach nothing outside its domain:
        // this kill reaches exactly the sandbox's processes.
        unsafe { libc::kill(-1, libc::SIGKILL) };
        // Everything is dying and comes to us (the subreaper) to be
        // reaped: one wait each, instead of walks over thousands of
        // zombies a chain may have left.
        super::supervise::reap_all(super::supervise::TEARDOWN_LIMIT);
    }
    kill_tree();
}

/// The watcher: starts the command, serves its broker, and kills the tree
/// when the command exits or dcjail dies. Returns its own exit code.
fn watcher(
    old: &libc::sigset_t,
    mask: &libc::sigset_t,
    pgid: libc::pid_t,
    start: Start<'_>,
    program: Option<&[u8]>,
    ends: Ends<'_>,
) -> i32 {
    let Ends { msg, life } = ends;
    // SAFETY: plain process-group and prctl calls on ourselves.
    unsafe {
        libc::setpgid(0, 0);
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    let fenced = start.fence;
    if fenced {
        if let Err(e) = super::landlock::fence_signals() {
            eprintln!("{}", crate::error::Refusal::unavailable(e).line());
            send(
                msg,
                STATUS,
                crate::error::Reason::SandboxUnavailable.exit_code(),
            );
            return 0;
        }
    }
    let chan = match program.map(|_| socketpair()) {
        None => None,
        Some(Some(p)) => Some(p),
        Some(None) => {
            eprintln!("dcjail: sandbox-unavailable: cannot make the broker's channel");
            send(msg, STATUS, 122);
            return 0;
        }
    };
    let child_chan = chan.as_ref().map(|(_, c)| c.as_raw_fd());
    // Made before the command starts, so that none of it is left to do once
    // the command runs: on two cores the watcher woken by the hand-over
    // often waits for the command's CPU until the command exits.
    let sfd = SignalFd::new(mask);
    let parsed = program.and_then(|p| crate::inside::stub_format::Program::parse(p).ok());
    let cmd = spawn(old, || {
        // Back in dcjail's process group: the caller's job.
        // SAFETY: plain setpgid on ourselves.
        unsafe { libc::setpgid(0, pgid) };
        match (start.apply)(child_chan) {
            Ok(listener) => {
                if let (Some(l), Some(c)) = (listener, child_chan) {
                    if crate::inside::stage2::send_fd(c, l.as_raw_fd()).is_err() {
                        eprintln!(
                            "dcjail: sandbox-unavailable: cannot hand the listener to the broker"
                        );
                        return crate::inside::stub_format::UNAVAILABLE_STATUS;
                    }
                }
            }
            Err(e) => {
                eprintln!("{}", crate::error::Refusal::unavailable(e).line());
                return crate::error::Reason::SandboxUnavailable.exit_code();
            }
        }
        (start.exec)()
    });
    if cmd < 0 {
        eprintln!("dcjail: cannot fork: {}", std::io::Error::last_os_error());
        send(msg, STATUS, 125);
        return 0;
    }
    send(msg, PID, cmd);
    let listener = chan.and_then(|(mine, theirs)| {
        drop(theirs);
        match crate::inside::stage2::recv_fd(mine.as_raw_fd()) {
            // SAFETY: a descriptor just received, ours.
            Ok(Some(fd)) => Some(unsafe { OwnedFd::from_raw_fd(fd) }),
            _ => None,
        }
    });
    if listener.is_some() && crate::inside::stage2::drop_capabilities().is_err() {
        // A broker with more rights than the command would be a way out.
        // SAFETY: plain kill of our child.
        unsafe { libc::kill(cmd, libc::SIGKILL) };
        eprintln!("dcjail: sandbox-unavailable: the broker cannot drop its capabilities");
        end_tree(fenced);
        send(msg, STATUS, 122);
        return 0;
    }
    let status = serve(cmd, sfd.as_ref(), listener.as_ref(), parsed.as_ref(), life);
    end_tree(fenced);
    send(msg, STATUS, status);
    0
}

/// The watcher's loop; returns the command's exit status.
fn serve(
    cmd: libc::pid_t,
    sfd: Option<&SignalFd>,
    listener: Option<&OwnedFd>,
    program: Option<&crate::inside::stub_format::Program<'_>>,
    life: &OwnedFd,
) -> i32 {
    let mut listening = listener.is_some();
    let mut shadows = crate::inside::broker::Shadows::default();
    let mut more = false;
    loop {
        let mut fds = [
            libc::pollfd {
                fd: sfd.map_or(-1, |s| s.raw()),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: life.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: if listening {
                    listener.map_or(-1, |l| l.as_raw_fd())
                } else {
                    -1
                },
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // Without a signalfd the command's exit is looked for every 10 ms;
        // with children still to reap, at once.
        let ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: if more { 0 } else { 10_000_000 },
        };
        let tsp = if sfd.is_some() && !more {
            std::ptr::null()
        } else {
            &ts as *const libc::timespec
        };
        // SAFETY: three valid pollfds; a valid or null timeout.
        unsafe { libc::ppoll(fds.as_mut_ptr(), 3, tsp, std::ptr::null()) };
        if fds[1].revents != 0 {
            // dcjail died: the tree goes with it.
            // SAFETY: plain kill of our child.
            unsafe { libc::kill(cmd, libc::SIGKILL) };
            return 137;
        }
        if fds[2].revents & libc::POLLIN != 0 {
            if let (Some(l), Some(p)) = (listener, program) {
                if crate::inside::broker::handle_one(l.as_raw_fd(), p, &mut shadows).is_err() {
                    listening = false;
                }
            }
        } else if fds[2].revents != 0 {
            listening = false;
        }
        let mut chld = sfd.is_none() || more;
        if let Some(s) = sfd {
            while let Some(sig) = s.take() {
                chld |= sig == libc::SIGCHLD;
            }
        }
        if chld {
            let r = super::supervise::reap(cmd);
            if let Some(st) = r.status {
                return st;
            }
            more = r.more;
        }
    }
}
