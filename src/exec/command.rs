//! The command's own start: its environment, its argv, its cwd, and
//! `execve` with `execvp`'s search.

use super::{status, stdfds};
use crate::plan::Plan;
use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

/// The command's environment: dcjail's own, minus what `[sandbox.env]`
/// removes, plus `DCJAIL*`; `backend` is the chosen backend's name
/// (`Choice::backend_name`).
pub fn environment(plan: &Plan, backend: &str, extra: &[(OsString, OsString)]) -> Vec<CString> {
    let mut set: Vec<(OsString, OsString)> = vec![
        ("DCJAIL".into(), "1".into()),
        ("DCJAIL_BACKEND".into(), backend.into()),
        ("DCJAIL_NETWORK".into(), plan.effective_net().word().into()),
    ];
    if let Some(c) = &plan.fs.caches {
        // A cache the caller already put where the command may write (in
        // the workspace) stays; one elsewhere (the host's) is replaced.
        let kept = |k: &str| {
            std::env::var_os(k)
                .map(std::path::PathBuf::from)
                .is_some_and(|v| v.is_absolute() && plan.writable(&v))
        };
        set.extend(
            crate::exec::caches::env_here(c, |k| plan.env.removes(k).is_some())
                .into_iter()
                .filter(|(k, _)| !kept(k))
                .map(|(k, v)| (k.into(), v)),
        );
    }
    set.extend(extra.iter().cloned());
    let mut out: Vec<CString> = std::env::vars_os()
        .filter(|(k, _)| !set.iter().any(|(s, _)| s == k))
        .filter(|(k, _)| plan.env.removes(&k.to_string_lossy()).is_none())
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
/// that is not a binary (ENOEXEC) goes to /bin/sh. The standard descriptors
/// the caller left closed are closed first (`stdfds`). Returns only on
/// failure, with the exit status to report (126 found but not executable,
/// 127 not found).
pub fn exec_command(argv: &[CString], envp: &[CString], path_var: Option<&OsStr>) -> i32 {
    let Some(cmd) = argv.first() else {
        return status::NOT_FOUND;
    };
    // Rust starts with SIGPIPE ignored, and an ignored signal survives
    // execve: without this, `yes | head -1` inside would complain of EPIPE.
    // SAFETY: resetting one signal disposition before exec.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let name = cmd.as_bytes();
    let display = String::from_utf8_lossy(name).into_owned();
    if name.is_empty() {
        eprintln!("dcjail: empty command name");
        return status::NOT_FOUND;
    }
    let mut saw_eacces = false;
    let mut last_err = libc::ENOENT;
    stdfds::close_for_exec();
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
        status::NOT_EXECUTABLE
    } else {
        eprintln!(
            "dcjail: {}: command not found",
            crate::error::one_line(&display)
        );
        status::NOT_FOUND
    }
}

/// The NULL-terminated pointer array execve takes; valid while `v` lives.
pub(super) fn pointers(v: &[CString]) -> Vec<*const libc::c_char> {
    v.iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// One execve; ENOEXEC retries through /bin/sh like execvp. Returns errno.
fn try_exec(path: &CString, argv: &[CString], envp: &[CString]) -> i32 {
    let argv_p = pointers(argv);
    let envp_p = pointers(envp);
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
