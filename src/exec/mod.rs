//! The one place with side effects on the launch path: environment, cwd,
//! `execve`, and — when a timeout, a proxy or a backend needs a parent — a
//! supervisor that forwards signals, kills the whole tree and maps the exit
//! status (128+N on signal death, 124 at the timeout).
//!
//! Supervision is built on Linux facilities (a child subreaper, a parent
//! death signal, `sigtimedwait`, `/proc/PID/task/*/children`). On macOS it
//! degrades to what the platform offers; see [`supervise_with`] for what is
//! weaker there. It must never leave the command running unsupervised where
//! a supervisor was asked for.

mod watch;
pub use watch::{supervise_watched, Start as WatchedStart};

use crate::backend::Choice;
use crate::plan::Plan;
use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::time::{Duration, Instant};

/// Exit status when the timeout killed the command.
pub const TIMEOUT_STATUS: i32 = 124;

/// The command's environment: dcjail's own plus `DCJAIL*` (SPEC §5).
pub fn environment(plan: &Plan, choice: &Choice, extra: &[(OsString, OsString)]) -> Vec<CString> {
    let mut set: Vec<(OsString, OsString)> = vec![
        ("DCJAIL".into(), "1".into()),
        ("DCJAIL_BACKEND".into(), choice.backend_name().into()),
        ("DCJAIL_NETWORK".into(), plan.effective_net().word().into()),
    ];
    set.extend(extra.iter().cloned());
    let mut out: Vec<CString> = std::env::vars_os()
        .filter(|(k, _)| !set.iter().any(|(s, _)| s == k))
        .filter_map(|(k, v)| env_entry(&k, &v))
        .collect();
    out.extend(set.iter().filter_map(|(k, v)| env_entry(k, v)));
    out
}

fn env_entry(k: &OsStr, v: &OsStr) -> Option<CString> {
    let mut b = k.as_bytes().to_vec();
    b.push(b'=');
    b.extend_from_slice(v.as_bytes());
    CString::new(b).ok()
}

/// Byte-exact argv; a NUL byte cannot reach execve and is a usage error.
pub fn c_argv(argv: &[OsString]) -> Result<Vec<CString>, String> {
    argv.iter()
        .map(|a| {
            CString::new(a.clone().into_vec())
                .map_err(|_| format!("argument `{}` contains a NUL byte", a.to_string_lossy()))
        })
        .collect()
}

/// `execvp` semantics with an explicit environment: a name with a `/` is
/// executed as it is, otherwise each PATH entry is tried in order; a file
/// that is not a binary (ENOEXEC) goes to /bin/sh. Returns only on failure,
/// with the exit status to report (126 found but not executable, 127 not found).
pub fn exec_command(argv: &[CString], envp: &[CString], path_var: Option<&OsStr>) -> i32 {
    let Some(cmd) = argv.first() else {
        return 127;
    };
    // Rust starts with SIGPIPE ignored, and an ignored signal survives
    // execve: without this, `yes | head -1` inside would complain of EPIPE.
    // SAFETY: resetting one signal disposition before exec.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let name = cmd.as_bytes();
    let display = String::from_utf8_lossy(name).into_owned();
    if name.is_empty() {
        eprintln!("dcjail: empty command name");
        return 127;
    }
    let mut saw_eacces = false;
    let mut last_err = libc::ENOENT;
    if name.contains(&b'/') {
        let e = try_exec(cmd, argv, envp);
        last_err = e;
        saw_eacces = e == libc::EACCES;
    } else {
        let path = path_var
            .map(|p| p.as_bytes().to_vec())
            .unwrap_or_else(|| b"/usr/local/bin:/usr/bin:/bin".to_vec());
        for dir in path.split(|b| *b == b':') {
            let mut full = if dir.is_empty() {
                b".".to_vec()
            } else {
                dir.to_vec()
            };
            full.push(b'/');
            full.extend_from_slice(name);
            let Ok(full) = CString::new(full) else {
                continue;
            };
            let e = try_exec(&full, argv, envp);
            match e {
                libc::EACCES => saw_eacces = true,
                libc::ENOENT | libc::ENOTDIR | libc::ENAMETOOLONG | libc::ELOOP => {}
                other => {
                    // A real failure of a file that exists: report it, as execvp does.
                    last_err = other;
                    break;
                }
            }
        }
    }
    let err = std::io::Error::from_raw_os_error(if saw_eacces { libc::EACCES } else { last_err });
    if saw_eacces || (last_err != libc::ENOENT && last_err != libc::ENOTDIR) {
        eprintln!(
            "dcjail: {}: {}",
            crate::error::one_line(&display),
            crate::policy::io_words(&err)
        );
        126
    } else {
        eprintln!(
            "dcjail: {}: command not found",
            crate::error::one_line(&display)
        );
        127
    }
}

/// One execve; ENOEXEC retries through /bin/sh like execvp. Returns errno.
fn try_exec(path: &CString, argv: &[CString], envp: &[CString]) -> i32 {
    let argv_p: Vec<*const libc::c_char> = argv
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let envp_p: Vec<*const libc::c_char> = envp
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    // SAFETY: both arrays are NUL-terminated and point into CStrings alive here.
    unsafe { libc::execve(path.as_ptr(), argv_p.as_ptr(), envp_p.as_ptr()) };
    let e = errno();
    if e == libc::ENOEXEC {
        let sh = c"/bin/sh";
        let mut args: Vec<*const libc::c_char> = vec![sh.as_ptr(), path.as_ptr()];
        args.extend(argv.iter().skip(1).map(|a| a.as_ptr()));
        args.push(std::ptr::null());
        // SAFETY: as above.
        unsafe { libc::execve(sh.as_ptr(), args.as_ptr(), envp_p.as_ptr()) };
        return errno();
    }
    e
}

pub fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// Changes into the plan's cwd; a failure is reported, not ignored.
pub fn enter_cwd(dir: &Path) -> Result<(), String> {
    std::env::set_current_dir(dir).map_err(|e| {
        format!(
            "cannot enter `{}`: {}",
            dir.display(),
            crate::policy::io_words(&e)
        )
    })
}

/// The status dcjail reports for a wait status: the code, or 128+N.
pub fn status_of(ws: libc::c_int) -> i32 {
    if libc::WIFEXITED(ws) {
        libc::WEXITSTATUS(ws)
    } else if libc::WIFSIGNALED(ws) {
        128 + libc::WTERMSIG(ws)
    } else {
        1
    }
}

/// The `si_code` of a signal the kernel itself sent (a terminal's ^C).
#[cfg(target_os = "linux")]
const SI_KERNEL: libc::c_int = libc::SI_KERNEL;
/// macOS reports no `si_code` to `sigwait`: `wait_signal` says
/// `SI_KERNEL` for a signal a terminal also sent to the command's group.
#[cfg(not(target_os = "linux"))]
const SI_KERNEL: libc::c_int = 0x80;

/// Signals a supervisor passes on to the command.
const FORWARDED: &[libc::c_int] = &[
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGWINCH,
    libc::SIGCONT,
];

fn supervisor_mask() -> libc::sigset_t {
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
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    become_subreaper();
    // SAFETY: plain libc call on valid pointers; dcjail is single-threaded here.
    unsafe {
        libc::sigprocmask(libc::SIG_BLOCK, &mask, &mut old);
    }
    let pid = spawn(&old, child);
    if pid < 0 {
        eprintln!("dcjail: cannot fork: {}", std::io::Error::last_os_error());
        return 125;
    }
    // Policy validation bounds the timeout; an overflow still means "none".
    let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
    let mut status: Option<i32> = None;
    let mut timed_out = false;
    let mut heard = false;
    // Signals and the watched descriptor are waited for together through
    // a signalfd; without one (it cannot be made) only signals are, which
    // is slower to notice the status, never wrong.
    let sfd = watch.as_ref().and_then(|_| SignalFd::new(&mask));
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
        let woke = match (&sfd, &watch) {
            (Some(s), Some(w)) => s.wait(w.fd, wait),
            _ => match wait_signal(&mask, wait) {
                Some((sig, code)) => Woke::Signal(sig, code),
                None => Woke::Nothing,
            },
        };
        match woke {
            Woke::Nothing => {}
            Woke::Signal(libc::SIGCHLD, _) => status = reap(pid),
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
struct Start<'a, F> {
    child: Option<F>,
    parent: libc::pid_t,
    mask: &'a libc::sigset_t,
}

/// In the new process: dies with dcjail (Linux), restores the signal mask,
/// runs `child` (which execs) and exits with its status. Never returns.
fn start<F: FnOnce() -> i32>(st: &mut Start<'_, F>) -> ! {
    // SAFETY: plain calls on values the parent keeps alive until we exec.
    unsafe {
        die_with_parent();
        if libc::getppid() != st.parent {
            libc::_exit(125);
        }
        libc::sigprocmask(libc::SIG_SETMASK, st.mask, std::ptr::null_mut());
    }
    let code = st.child.take().map_or(125, |f| f());
    // SAFETY: leaving the child without running the parent's destructors.
    unsafe { libc::_exit(code) }
}

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
#[cfg(target_os = "linux")]
fn spawn<F: FnOnce() -> i32>(mask: &libc::sigset_t, child: F) -> libc::pid_t {
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

/// Elsewhere a plain fork (macOS's vfork forbids what `child` does).
#[cfg(not(target_os = "linux"))]
fn spawn<F: FnOnce() -> i32>(mask: &libc::sigset_t, child: F) -> libc::pid_t {
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

/// Reaps every exited child; returns the main child's status once it exited.
fn reap(main: libc::pid_t) -> Option<i32> {
    let mut out = None;
    loop {
        let mut ws = 0;
        // SAFETY: plain waitpid.
        let r = unsafe { libc::waitpid(-1, &mut ws, libc::WNOHANG) };
        if r <= 0 {
            return out;
        }
        if r == main {
            out = Some(status_of(ws));
        }
    }
}

/// How long the teardown of a killed pid namespace is waited for: only a
/// process stuck in the kernel (uninterruptible I/O) takes longer.
const TEARDOWN_LIMIT: Duration = Duration::from_secs(2);

/// Reaps children until none is left, or `limit` has passed: the killed
/// child, and what was orphaned to us (we are the subreaper) as it died.
/// SIGCHLD is blocked: it is waited for, never handled.
fn reap_all(limit: Duration) {
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
        if r < 0 && errno() != libc::EINTR {
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

/// Whether dcjail has no child at all, alive or zombie. Linux: we are the
/// subreaper, so an orphaned descendant becomes our child and a live one
/// has a live or zombie parent among them: no child means no descendant,
/// known with one syscall instead of a walk of /proc (the usual case when
/// the command has exited and left nothing behind).
#[cfg(target_os = "linux")]
fn no_children() -> bool {
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

/// Without a subreaper an orphan is not our child: always walk.
#[cfg(not(target_os = "linux"))]
fn no_children() -> bool {
    false
}

/// Kills every descendant (we are their subreaper) until none is left.
pub fn kill_tree() {
    if no_children() {
        return;
    }
    for _ in 0..1000 {
        let kids = descendants();
        for k in &kids {
            // SAFETY: plain kill.
            unsafe { libc::kill(*k, libc::SIGKILL) };
        }
        loop {
            let mut ws = 0;
            // SAFETY: plain waitpid.
            let r = unsafe { libc::waitpid(-1, &mut ws, libc::WNOHANG) };
            if r <= 0 {
                break;
            }
        }
        if kids.is_empty() {
            let mut ws = 0;
            // Blocking wait for stragglers reparented to us mid-kill.
            // SAFETY: plain waitpid.
            let r = unsafe { libc::waitpid(-1, &mut ws, libc::WNOHANG) };
            if r <= 0 && descendants().is_empty() {
                return;
            }
        }
    }
}

/// Linux: makes orphaned descendants (a double-forked daemon) our children,
/// so `kill_tree` finds them.
#[cfg(target_os = "linux")]
fn become_subreaper() {
    // SAFETY: plain prctl.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
}

/// macOS has no subreaper: an orphan is reparented to launchd and is out of
/// `kill_tree`'s reach.
#[cfg(not(target_os = "linux"))]
fn become_subreaper() {}

/// In the forked child: SIGKILL when dcjail dies (Linux). Async-signal-safe.
#[cfg(target_os = "linux")]
unsafe fn die_with_parent() {
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
}

/// macOS has no parent death signal: a dcjail killed with SIGKILL leaves the
/// command running (any other death goes through the supervisor's teardown).
#[cfg(not(target_os = "linux"))]
unsafe fn die_with_parent() {}

/// What woke the supervisor.
enum Woke {
    Signal(libc::c_int, libc::c_int),
    /// The watched descriptor (only polled on Linux).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Fd,
    Nothing,
}

/// The supervisor's blocked signals as a descriptor, to be polled together
/// with a watched one.
#[cfg(target_os = "linux")]
struct SignalFd(std::os::fd::OwnedFd);
/// Elsewhere there is no signalfd: only signals are waited for.
#[cfg(not(target_os = "linux"))]
struct SignalFd;

impl SignalFd {
    #[cfg(target_os = "linux")]
    fn new(mask: &libc::sigset_t) -> Option<SignalFd> {
        use std::os::fd::FromRawFd;
        // SAFETY: a valid, initialized signal set.
        let fd = unsafe { libc::signalfd(-1, mask, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) };
        // SAFETY: a fresh descriptor, ours.
        (fd >= 0).then(|| SignalFd(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }))
    }

    #[cfg(not(target_os = "linux"))]
    fn new(_mask: &libc::sigset_t) -> Option<SignalFd> {
        None
    }

    #[cfg(target_os = "linux")]
    fn raw(&self) -> libc::c_int {
        use std::os::fd::AsRawFd;
        self.0.as_raw_fd()
    }

    /// One pending signal, without waiting (the descriptor is non-blocking).
    #[cfg(target_os = "linux")]
    fn take(&self) -> Option<libc::c_int> {
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
    #[cfg(target_os = "linux")]
    fn wait(&self, fd: libc::c_int, wait: Option<Duration>) -> Woke {
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
        ];
        let ts = wait.map(timespec);
        let tsp = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: two valid pollfds; a valid or null timeout; no mask change.
        if unsafe { libc::ppoll(fds.as_mut_ptr(), 2, tsp, std::ptr::null()) } <= 0 {
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
        Woke::Nothing
    }

    #[cfg(not(target_os = "linux"))]
    fn wait(&self, _fd: libc::c_int, _wait: Option<Duration>) -> Woke {
        Woke::Nothing
    }
}

#[cfg(target_os = "linux")]
fn timespec(d: Duration) -> libc::timespec {
    libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    }
}

/// Waits for one signal of `mask` (all blocked), at most `wait`; returns the
/// signal and its `si_code`, or None on timeout or interruption.
#[cfg(target_os = "linux")]
fn wait_signal(
    mask: &libc::sigset_t,
    wait: Option<Duration>,
) -> Option<(libc::c_int, libc::c_int)> {
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

/// macOS: no `sigtimedwait`; `sigwait` with a one-shot interval timer
/// (SIGALRM is in the mask) bounds the wait. `sigwait` reports no sender,
/// so a signal is taken as terminal-sent (`SI_KERNEL`, not forwarded) when
/// dcjail is in its terminal's foreground process group and the signal is
/// one a terminal sends to that whole group; a `kill -INT` aimed at dcjail
/// alone while it runs in the foreground is then not passed on.
#[cfg(not(target_os = "linux"))]
fn wait_signal(
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

/// Our descendants, read from /proc (children lists of every thread).
#[cfg(target_os = "linux")]
fn descendants() -> Vec<libc::pid_t> {
    let mut out = Vec::new();
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
                if !out.contains(&c) {
                    out.push(c);
                    stack.push(c);
                }
            }
        }
    }
    out
}

/// macOS: our descendants through `proc_listchildpids`, which sees only
/// processes whose parent is still in the tree (no subreaper: orphans have
/// gone to launchd).
#[cfg(target_os = "macos")]
fn descendants() -> Vec<libc::pid_t> {
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
                stack.push(c);
            }
        }
    }
    out
}

/// Elsewhere no way to list descendants is known: only the direct child is
/// killed (through `supervise_with`'s own kill on teardown).
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn descendants() -> Vec<libc::pid_t> {
    Vec::new()
}
