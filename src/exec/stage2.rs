//! dcjail itself as the second stage, where the embedded stub cannot run
//! (no stub for this architecture, or `vm.memfd_noexec` = 2): the same
//! program read from the same sealed memfd and applied by the same sequence
//! (`inside::stage2`) as the stub does.

use crate::inside::stub_format::{MEMFD_NAME, PROXY_FD_VAR, SHIELDED, STARTED};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

/// Reads the layer from `fd` only if it is the sealed memfd the first stage
/// made: nothing a caller can pass through argv or stdin qualifies.
fn read_sealed(fd: i32) -> Result<Vec<u8>, String> {
    let link = std::fs::read_link(format!("/proc/self/fd/{fd}"))
        .map_err(|e| format!("descriptor {fd}: {e}"))?;
    let want = format!("/memfd:{MEMFD_NAME}");
    if !link.as_os_str().as_bytes().starts_with(want.as_bytes()) {
        return Err(format!("descriptor {fd} is not dcjail's layer"));
    }
    let all = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL;
    // SAFETY: plain fcntl on an fd number.
    let seals = unsafe { libc::fcntl(fd, libc::F_GET_SEALS) };
    if seals < 0 || seals & all != all {
        return Err(format!("descriptor {fd} is not sealed"));
    }
    // SAFETY: an all-zero stat is a valid value of the C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid buffer.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(format!(
            "descriptor {fd}: {}",
            std::io::Error::last_os_error()
        ));
    }
    let size = usize::try_from(st.st_size).map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; size];
    let mut off = 0;
    while off < size {
        // SAFETY: valid fd and buffer range.
        let n = unsafe {
            libc::pread(
                fd,
                buf[off..].as_mut_ptr().cast(),
                size - off,
                off as libc::off_t,
            )
        };
        if n <= 0 {
            return Err(format!(
                "reading the layer: {}",
                std::io::Error::last_os_error()
            ));
        }
        off += n as usize;
    }
    // SAFETY: the fd is not used again.
    unsafe { libc::close(fd) };
    Ok(buf)
}

/// `dcjail __stage2 FD IGN ERR STD -- COMMAND...`, run by bwrap inside the
/// sandbox: reads the layer from the sealed memfd FD, puts the caller's
/// stderr (ERR) back on fd 2, restores the signal dispositions bwrap was
/// shielded from (IGN: those that were ignored before), applies the layer
/// and execs COMMAND with the standard descriptors the caller left closed
/// (STD: bit N for fd N) closed again. It can only add restrictions to its
/// caller.
pub fn main(args: &[OsString]) -> i32 {
    use crate::error::Refusal;
    use crate::inside::stub_format::{parse_fd, Prologue, PrologueError, COMMAND_AT};
    let fail = |m: String| {
        let r = Refusal::unavailable(format!("second stage: {m}"));
        eprintln!("{}", r.line());
        r.exit_code()
    };
    let p = match Prologue::parse(args.len(), |i| args[i].as_bytes()) {
        Ok(p) => p,
        Err(PrologueError::Usage) => {
            let r = Refusal::usage(PrologueError::Usage.text());
            eprintln!("{}", r.line());
            return r.exit_code();
        }
        Err(e) => return fail(e.text().to_string()),
    };
    let bytes = match read_sealed(p.fd) {
        Ok(b) => b,
        Err(e) => return fail(e),
    };
    for (i, s) in SHIELDED.iter().enumerate() {
        if p.ignored & (1 << i) == 0 {
            // SAFETY: restoring the default disposition.
            unsafe { libc::signal(*s, libc::SIG_DFL) };
        }
    }
    // From here on the caller's stderr is fd 2 again; bwrap's pipe hears
    // only that we started.
    // SAFETY: plain writes and dup2 on fd numbers given by the first stage.
    unsafe {
        libc::write(2, STARTED.as_ptr().cast(), STARTED.len());
        if p.err > 2 && libc::dup2(p.err, 2) == 2 {
            libc::close(p.err);
        }
    }
    // exec_command closes them right before the command's execve.
    super::stdfds::note_closed(p.closed);
    let argv = match super::c_argv(&args[COMMAND_AT..]) {
        Ok(a) => a,
        Err(e) => return fail(e),
    };
    let proxy_fd = std::env::var_os(PROXY_FD_VAR);
    let envp: Vec<std::ffi::CString> = std::env::vars_os()
        .filter(|(k, _)| k != PROXY_FD_VAR)
        .filter_map(|(k, v)| {
            let mut b = k.as_bytes().to_vec();
            b.push(b'=');
            b.extend_from_slice(v.as_bytes());
            std::ffi::CString::new(b).ok()
        })
        .collect();
    let path_var = std::env::var_os("PATH");
    if let Some(v) = proxy_fd {
        // Network allowlist: the proxy outside accepts on a socket bound
        // in this namespace; it must exist before the command starts.
        let sent = parse_fd(v.as_bytes())
            .ok_or_else(|| "bad proxy channel".to_string())
            .and_then(|fd| {
                crate::net::session::send_listener(fd, crate::backend::bwrap::SANDBOX_PROXY_PORT)
            });
        if let Err(e) = sent {
            return fail(e);
        }
    }
    let program = match crate::inside::stub_format::Program::parse(&bytes) {
        Ok(p) => p,
        Err(e) => return fail(e.to_string()),
    };
    // The stub's own sequence (stage2.rs), so that this second stage applies
    // the very same layer and brokers the same calls.
    let mut exec = || super::exec_command(&argv, &envp, path_var.as_deref());
    match crate::inside::stage2::run(&program, &mut exec) {
        Ok(code) => code,
        Err(f) => fail(fail_text(&f)),
    }
}

/// A step of the second stage's sequence that failed, as one line.
pub fn fail_text(f: &crate::inside::stage2::Fail<'_>) -> String {
    let mut m = String::from_utf8_lossy(f.what).into_owned();
    if let Some(p) = f.path {
        m.push_str(&String::from_utf8_lossy(p));
    }
    if let Some(e) = f.errno {
        m.push_str(&format!(": {}", std::io::Error::from_raw_os_error(e)));
    }
    m
}
