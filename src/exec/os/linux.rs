//! Supervision on Linux: `clone(CLONE_VM | CLONE_VFORK)` to start the
//! child, a child subreaper, a parent-death signal, `sigtimedwait`, a
//! signalfd to wait for signals and a descriptor together, and
//! `/proc/PID/task/*/children` to find every descendant.

use super::errno;
use super::supervise::{start, Start, Woke};
use std::time::Duration;

/// The `si_code` of a signal the kernel itself sent (a terminal's ^C).
pub(super) const SI_KERNEL: libc::c_int = libc::SI_KERNEL;

/// Starts `child` in a new process with signal mask `mask`; returns its
/// pid, or -1 with errno set.
///
/// Linux: `clone(CLONE_VM | CLONE_VFORK)` on a stack of its own, as
/// `posix_spawn` does: the child borrows dcjail's memory instead of copying
/// its page tables, and dcjail's thread waits until the child has exec'd or
/// exited (then the borrowed stack is free again). Creating and then
/// tearing down a copy of the address space was a measurable part of every
/// launch. The child's credentials, seccomp filter, landlock domain and fd
/// table are still its own (no CLONE_THREAD, CLONE_FILES, CLONE_SIGHAND), so
/// what `child` applies to itself does not touch dcjail. Since memory is
/// shared until exec, `child` may allocate (dcjail's thread is stopped, and
/// malloc is thread-safe against any other thread) but must exec or return.
pub(super) fn spawn<F: FnOnce() -> i32>(mask: &libc::sigset_t, child: F) -> libc::pid_t {
    extern "C" fn entry<F: FnOnce() -> i32>(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the `Start` on the stack of the dcjail thread,
        // which stays suspended (CLONE_VFORK) while this runs.
        let st = unsafe { &mut *arg.cast::<Start<'_, F>>() };
        start(st)
    }
    // Room for the landlock ruleset and seccomp compilation; pages are only
    // backed once touched. The lowest page is a guard.
    const STACK: usize = 1 << 20;
    const GUARD: usize = 1 << 16;
    // SAFETY: a fresh private anonymous mapping, never unmapped (see below).
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return -1;
    }
    let mut st = Start {
        child: Some(child),
        // SAFETY: getpid never fails.
        parent: unsafe { libc::getpid() },
        mask,
    };
    // SAFETY: the guard lies inside the mapping; the stack top is its end
    // (16-byte aligned); `st` outlives the child's use of it because
    // CLONE_VFORK returns only once the child has exec'd or exited.
    let pid = unsafe {
        libc::mprotect(base, GUARD, libc::PROT_NONE);
        libc::clone(
            entry::<F>,
            base.cast::<u8>().add(STACK).cast(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&mut st as *mut Start<'_, F>).cast(),
        )
    };
    // The stack stays mapped: unmapping it costs a TLB shootdown on the CPU
    // the child ran on, and dcjail only waits for the command and exits
    // (at most one more launch, an `auto` fallback, maps another).
    pid
}

/// Whether dcjail has no child at all, alive or zombie. Linux: we are the
/// subreaper, so an orphaned descendant becomes our child and a live one
/// has a live or zombie parent among them: no child means no descendant,
/// known with one syscall instead of a walk of /proc (the usual case when
/// the command has exited and left nothing behind).
pub(super) fn no_children() -> bool {
    // SAFETY: an all-zero siginfo_t is a valid value of the C struct.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid with WNOWAIT reaps nothing; valid pointer.
    let r = unsafe {
        libc::waitid(
            libc::P_ALL,
            0,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT | libc::__WALL,
        )
    };
    r == -1 && errno() == libc::ECHILD
}

/// Linux: makes orphaned descendants (a double-forked daemon) our children,
/// so `kill_tree` finds them.
pub(super) fn become_subreaper() {
    // SAFETY: plain prctl.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
}

/// In the forked child: SIGKILL when dcjail dies (Linux). Async-signal-safe.
pub(super) unsafe fn die_with_parent() {
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
}

/// The supervisor's blocked signals as a descriptor, to be polled together
/// with a watched one.
pub(super) struct SignalFd(std::os::fd::OwnedFd);

pub(super) fn timespec(d: Duration) -> libc::timespec {
    libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    }
}

/// Waits for one signal of `mask` (all blocked), at most `wait`; returns the
/// signal and its `si_code`, or None on timeout or interruption.
pub(super) fn wait_signal(
    mask: &libc::sigset_t,
    wait: Option<Duration>,
) -> Option<(libc::c_int, libc::c_int)> {
    // SAFETY: an all-zero siginfo_t is a valid value of the C struct.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let sig = match wait {
        Some(w) => {
            let ts = timespec(w);
            // SAFETY: valid pointers to stack values.
            unsafe { libc::sigtimedwait(mask, &mut info, &ts) }
        }
        // SAFETY: valid pointers to stack values.
        None => unsafe { libc::sigwaitinfo(mask, &mut info) },
    };
    (sig >= 0).then_some((sig, info.si_code))
}

/// Calls `found` on each of our descendants, read from /proc (the
/// children lists of every thread), as soon as it is read and before its
/// own children are: a caller that kills it there leaves it no time to fork
/// a child that the walk would miss.
pub(super) fn each_descendant(found: &mut dyn FnMut(libc::pid_t)) {
    let mut seen = std::collections::HashSet::new();
    // SAFETY: getpid never fails.
    let mut stack = vec![unsafe { libc::getpid() }];
    while let Some(p) = stack.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Ok(text) = std::fs::read_to_string(t.path().join("children")) else {
                continue;
            };
            for c in text
                .split_whitespace()
                .filter_map(|s| s.parse::<libc::pid_t>().ok())
            {
                if seen.insert(c) {
                    found(c);
                    stack.push(c);
                }
            }
        }
    }
}

impl SignalFd {
    pub(super) fn new(mask: &libc::sigset_t) -> Option<SignalFd> {
        use std::os::fd::FromRawFd;
        // SAFETY: a valid, initialized signal set.
        let fd = unsafe { libc::signalfd(-1, mask, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) };
        // SAFETY: a fresh descriptor, ours.
        (fd >= 0).then(|| SignalFd(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }))
    }

    pub(super) fn raw(&self) -> libc::c_int {
        use std::os::fd::AsRawFd;
        self.0.as_raw_fd()
    }

    /// One pending signal, without waiting (the descriptor is non-blocking).
    pub(super) fn take(&self) -> Option<libc::c_int> {
        // SAFETY: signalfd_siginfo is plain data; read fills it whole or fails.
        let mut si: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::signalfd_siginfo>();
        // SAFETY: a buffer of `size` bytes.
        let n = unsafe {
            libc::read(
                self.raw(),
                (&mut si as *mut libc::signalfd_siginfo).cast(),
                size,
            )
        };
        (usize::try_from(n) == Ok(size)).then_some(si.ssi_signo as libc::c_int)
    }

    /// Waits at most `wait` for a signal (preferred when both are ready)
    /// or for `fd` to become readable or closed.
    /// Waits for a signal, `fd` or `side` (a negative one is not polled).
    pub(super) fn wait(&self, fd: libc::c_int, side: libc::c_int, wait: Option<Duration>) -> Woke {
        use std::os::fd::AsRawFd;
        let sfd = self.0.as_raw_fd();
        let mut fds = [
            libc::pollfd {
                fd: sfd,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: side,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let ts = wait.map(timespec);
        let tsp = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: three valid pollfds; a valid or null timeout; no mask change.
        if unsafe { libc::ppoll(fds.as_mut_ptr(), 3, tsp, std::ptr::null()) } <= 0 {
            return Woke::Nothing;
        }
        if fds[0].revents & libc::POLLIN != 0 {
            // SAFETY: signalfd_siginfo is plain data; read fills it whole or fails.
            let mut si: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
            let size = std::mem::size_of::<libc::signalfd_siginfo>();
            // SAFETY: a buffer of `size` bytes.
            let n =
                unsafe { libc::read(sfd, (&mut si as *mut libc::signalfd_siginfo).cast(), size) };
            if usize::try_from(n) == Ok(size) {
                return Woke::Signal(si.ssi_signo as libc::c_int, si.ssi_code);
            }
        }
        if fds[1].revents != 0 {
            return Woke::Fd;
        }
        if fds[2].revents != 0 {
            return Woke::Side;
        }
        Woke::Nothing
    }
}
