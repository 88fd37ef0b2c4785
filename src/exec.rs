//! The one place with side effects on the launch path: environment, cwd,
//! `execve`, and — when a timeout, a proxy or a backend needs a parent — a
//! supervisor that forwards signals, kills the whole tree and maps the exit
//! status (128+N on signal death, 124 at the timeout).

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
            if code != libc::SI_KERNEL {
                // SAFETY: plain kill of our own child.
                unsafe { libc::kill(pid, sig) };
            }
        },
        Teardown::Reap,
        child,
    )
}

/// How the supervisor ends the tree once the command is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Teardown {
    /// Kill and reap until no descendant is left (a process killed while
    /// forking may leave a child that is reparented to us later).
    Reap,
    /// The child owns a pid namespace whose init is among the descendants:
    /// once each of them has SIGKILL pending the kernel kills the rest of
    /// the namespace, so nothing can run again and nothing is waited for
    /// (the namespace's teardown takes milliseconds).
    PidNamespace,
}

/// `supervise` with the forwarding and the teardown decided by the caller:
/// `forward(child, signal, si_code)` is called for every forwarded signal
/// dcjail receives (a backend whose command is not the direct child finds
/// it there).
pub fn supervise_with<F: FnOnce() -> i32>(
    timeout: Option<Duration>,
    forward: &mut dyn FnMut(libc::pid_t, libc::c_int, libc::c_int),
    teardown: Teardown,
    child: F,
) -> i32 {
    let end = || match teardown {
        Teardown::Reap => kill_tree(),
        Teardown::PidNamespace => {
            for k in descendants() {
                // SAFETY: plain kill of our own descendants.
                unsafe { libc::kill(k, libc::SIGKILL) };
            }
        }
    };
    let mask = supervisor_mask();
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: plain libc calls on valid pointers; dcjail is single-threaded here.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        libc::sigprocmask(libc::SIG_BLOCK, &mask, &mut old);
    }
    let parent = unsafe { libc::getpid() };
    // SAFETY: single-threaded; the child only execs or exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        eprintln!("dcjail: cannot fork: {}", std::io::Error::last_os_error());
        return 125;
    }
    if pid == 0 {
        // SAFETY: async-signal-safe calls only until `child` execs.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            if libc::getppid() != parent {
                libc::_exit(125);
            }
            libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        }
        let code = child();
        // SAFETY: leaving the forked child without running parent destructors.
        unsafe { libc::_exit(code) };
    }
    // Policy validation bounds the timeout; an overflow still means "none".
    let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
    let mut status: Option<i32> = None;
    while status.is_none() {
        let wait = match deadline {
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    end();
                    status = Some(TIMEOUT_STATUS);
                    break;
                }
                Some(d - now)
            }
            None => None,
        };
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let sig = match wait {
            Some(w) => {
                let ts = libc::timespec {
                    tv_sec: w.as_secs() as libc::time_t,
                    tv_nsec: w.subsec_nanos() as libc::c_long,
                };
                // SAFETY: valid pointers to stack values.
                unsafe { libc::sigtimedwait(&mask, &mut info, &ts) }
            }
            // SAFETY: valid pointers to stack values.
            None => unsafe { libc::sigwaitinfo(&mask, &mut info) },
        };
        if sig < 0 {
            continue;
        }
        if sig == libc::SIGCHLD {
            status = reap(pid);
        } else if sig != libc::SIGALRM {
            forward(pid, sig, info.si_code);
        }
    }
    end();
    // SAFETY: restoring the mask saved above.
    unsafe { libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    status.unwrap_or(1)
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

/// Kills every descendant (we are their subreaper) until none is left.
pub fn kill_tree() {
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

/// Our descendants, read from /proc (children lists of every thread).
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
