//! Starting bubblewrap and supervising it (Linux): the bwrap argv goes in a
//! memfd (`--args`), the program in a sealed one, the embedded stub in a
//! third; bwrap's stderr is a pipe until stage 2 says it started, so a
//! bwrap that cannot build the sandbox is one refusal line; its
//! `--json-status-fd` reports the command's status before bwrap exits.
//!
//! It runs only what `backend::bwrap` rendered, and never starts the
//! command when the sandbox could not be built.

use crate::backend::bwrap::{BwrapLaunch, STAGE2};
use crate::backend::program::STUB;
use crate::backend::{Kind, Missing, Setup, Unavailable};
use crate::inside::stub_format::{MEMFD_NAME, SHIELDED, STARTED};
use crate::plan::Plan;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

fn cpath(p: &Path) -> Result<std::ffi::CString, String> {
    std::ffi::CString::new(p.as_os_str().as_bytes())
        .map_err(|_| format!("`{}` contains a NUL byte", p.display()))
}

/// `memfd_create` flag (Linux 6.3): executable even where
/// `vm.memfd_noexec` = 1 would seal new memfds non-executable.
const MFD_EXEC: libc::c_uint = 0x10;

/// The embedded stub in a sealed memfd, to be exec'd through
/// /proc/self/fd: nothing on disk can be swapped for it. None where there
/// is no stub or this system forbids executing memfds (`vm.memfd_noexec` =
/// 2, EACCES): dcjail itself is the second stage then, applying the same
/// layer, only slower to start.
fn stub_memfd() -> Result<Option<std::os::fd::OwnedFd>, String> {
    if STUB.is_empty() {
        return Ok(None);
    }
    match memfd(c"dcjail-stub", STUB, true, MFD_EXEC) {
        Ok(fd) => Ok(Some(fd)),
        Err((_, libc::EACCES | libc::EPERM)) => Ok(None),
        // A kernel before 6.3 does not know MFD_EXEC (and has no noexec
        // memfds either).
        Err((_, libc::EINVAL)) => match memfd(c"dcjail-stub", STUB, true, 0) {
            Ok(fd) => Ok(Some(fd)),
            Err((m, _)) => Err(m),
        },
        Err((m, _)) => Err(m),
    }
}

/// A memfd holding `data` (sealed if asked), inherited by bwrap (no
/// CLOEXEC). The error carries the errno of the step that failed.
fn memfd(
    name: &std::ffi::CStr,
    data: &[u8],
    seal: bool,
    flags: libc::c_uint,
) -> Result<std::os::fd::OwnedFd, (String, i32)> {
    use std::os::fd::FromRawFd;
    let err = |what: &str| {
        let e = std::io::Error::last_os_error();
        (format!("{what}: {e}"), e.raw_os_error().unwrap_or(0))
    };
    // SAFETY: valid C string.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_ALLOW_SEALING | flags) };
    if fd < 0 {
        return Err(err("memfd_create"));
    }
    // SAFETY: fresh fd, owned from here.
    let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    let mut off = 0;
    while off < data.len() {
        // SAFETY: valid fd and slice.
        let n = unsafe { libc::write(fd, data[off..].as_ptr().cast(), data.len() - off) };
        if n <= 0 {
            return Err(err("writing the memfd"));
        }
        off += n as usize;
    }
    // SAFETY: valid fd.
    unsafe {
        libc::lseek(fd, 0, libc::SEEK_SET);
        if seal
            && libc::fcntl(
                fd,
                libc::F_ADD_SEALS,
                libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL,
            ) != 0
        {
            return Err(err("sealing the memfd"));
        }
    }
    Ok(owned)
}

/// The command inside: bwrap (our child) → its pid-1 reaper → the command.
fn sandbox_commands(bwrap: libc::pid_t) -> Vec<libc::pid_t> {
    let kids = |p: libc::pid_t| -> Vec<libc::pid_t> {
        std::fs::read_to_string(format!("/proc/{p}/task/{p}/children"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|s| s.parse().ok())
            .collect()
    };
    kids(bwrap).into_iter().flat_map(kids).collect()
}

/// The command inherits descriptors 0-2, and a descriptor names its file
/// by the caller's mount, not by the sandbox's: reopened through
/// `/proc/self/fd/N` (or, for a directory, as the base of a relative
/// path) it reaches the file whatever the sandbox mounts over its name.
/// The landlock layer inside grants the writable roots whole, so the only
/// place that matters is what only the mounts hold: a file kept read-only
/// or masked inside a writable root, or anything below a directory.
fn check_stdio(held: &[std::path::PathBuf]) -> Result<(), String> {
    const NAMES: [&str; 3] = ["standard input", "standard output", "standard error"];
    for (fd, name) in NAMES.iter().enumerate() {
        // SAFETY: an all-zero stat is a valid value of the C struct.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat into a buffer of the right type.
        if unsafe { libc::fstat(fd as i32, &mut st) } != 0 {
            continue;
        }
        let kind = st.st_mode & libc::S_IFMT;
        if kind != libc::S_IFDIR && kind != libc::S_IFREG && kind != libc::S_IFLNK {
            // A pipe, a socket, a terminal or another device: nothing the
            // mounts hold is reached through it.
            continue;
        }
        let path = std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap_or_default();
        if kind == libc::S_IFDIR {
            return Err(format!(
                "{name} is a directory (`{}`): through it the command would reach files by the caller's mount, past what the sandbox masks or keeps read-only; give dcjail a file, a pipe or /dev/null",
                path.display()
            ));
        }
        if let Some(h) = held.iter().find(|h| path.starts_with(h)) {
            return Err(format!(
                "{name} is `{}`, which the sandbox keeps read-only or masks (`{}`): through this descriptor the command could reopen it for writing by the caller's mount; give dcjail another file, a pipe or /dev/null",
                path.display(),
                h.display()
            ));
        }
    }
    Ok(())
}

/// A pipe whose read end stays with dcjail (close-on-exec).
fn pipe() -> Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd), String> {
    use std::os::fd::FromRawFd;
    let mut fds = [0i32; 2];
    // SAFETY: valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("pipe: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: both fds are fresh and ours.
    Ok(unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    })
}

/// Runs bwrap under the supervisor and cleans up after it. `Ok` is the
/// command's status (128+N on a signal, 124 at the timeout); `Err` means
/// the sandbox could not be built and nothing of the command ran.
pub fn launch(
    plan: &Plan,
    l: &BwrapLaunch,
    argv: &[std::ffi::CString],
    envp: &[std::ffi::CString],
    side: Option<super::Side<'_>>,
) -> Result<i32, Unavailable> {
    launch_or_why(plan, l, argv, envp, side)
        .map_err(|s| Unavailable::new(Kind::Bwrap, Missing::Setup(s)))
}

fn launch_or_why(
    plan: &Plan,
    l: &BwrapLaunch,
    argv: &[std::ffi::CString],
    envp: &[std::ffi::CString],
    side: Option<super::Side<'_>>,
) -> Result<i32, Setup> {
    use std::os::fd::AsRawFd;
    check_stdio(&l.rendered.held)?;
    let fds = Fds::open(l)?;
    // bwrap reports the command's exit status here as soon as its init
    // has it, before bwrap itself exits: dcjail returns without waiting for
    // that exit (see `StatusReader`).
    let (status_r, status_w) = pipe()?;
    let bargv = bwrap_argv(l, &fds, status_w.as_raw_fd(), argv)?;
    let bwrap_path = cpath(&l.bwrap)?;
    let mut interrupted: Option<i32> = None;
    let mut forward = |pid: libc::pid_t, sig: libc::c_int, code: libc::c_int| {
        forward_signal(pid, sig, code, &mut interrupted)
    };
    let err_w_raw = fds.err_w.as_raw_fd();
    let status_w_raw = status_w.as_raw_fd();
    let mut reader = StatusReader::new(status_r)?;
    let status_fd = reader.fd();
    let mut ready = || reader.ready();
    let watch = super::Watch {
        fd: status_fd,
        ready: &mut ready,
    };
    // The teardown kills bwrap alone and counts on its children dying with
    // it: never without the option that makes them.
    if !l.rendered.args.iter().any(|a| a == "--die-with-parent") {
        return Err(Setup::Step(
            "the bwrap command line lacks --die-with-parent".into(),
        ));
    }
    let teardown = super::Teardown::PidNamespace;
    let status = super::supervise_with(
        plan.timeout,
        &mut forward,
        teardown,
        Some(watch),
        side,
        || exec_bwrap(&bwrap_path, &bargv, envp, status_w_raw, err_w_raw, &l.bwrap),
    );
    drop(status_w);
    let said = bwrap_said(fds.close());
    outcome(&said, status, interrupted)
}

/// The descriptors bwrap is started with, and dcjail's end of its stderr.
struct Fds {
    args: std::os::fd::OwnedFd,
    exe: std::os::fd::OwnedFd,
    layer: std::os::fd::OwnedFd,
    saved: std::os::fd::OwnedFd,
    err_r: std::os::fd::OwnedFd,
    err_w: std::os::fd::OwnedFd,
    /// The writable roots as the host's mounts hold them, for the broker.
    hosts: Vec<std::os::fd::OwnedFd>,
}

impl Fds {
    fn open(l: &BwrapLaunch) -> Result<Fds, String> {
        use std::os::fd::FromRawFd;
        let mut args_data = Vec::new();
        for a in &l.rendered.args {
            args_data.extend_from_slice(a.as_bytes());
            args_data.push(0);
        }
        let args = memfd(c"dcjail-bwrap-args", &args_data, false, 0).map_err(|(m, _)| m)?;
        // The second stage: the embedded stub, or dcjail itself where a memfd
        // cannot be executed; both read the same program.
        let stub_fd = stub_memfd()?;
        let (program, hosts) = with_host_fds(&l.program)?;
        let layer = memfd(&stage2_name()?, &program, true, 0).map_err(|(m, _)| m)?;
        // bwrap's stderr goes to a pipe until stage 2 runs, so that a bwrap
        // that cannot build the sandbox is one refusal line (or an `auto`
        // fallback), not bwrap's words followed by ours. The caller's stderr
        // travels as a duplicate that stage 2 puts back on fd 2.
        let (err_r, err_w) = pipe()?;
        // SAFETY: dup of our own stderr; owned right after.
        let saved = unsafe { libc::fcntl(2, libc::F_DUPFD, 3) };
        if saved < 0 {
            return Err(format!("dup stderr: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: fresh fd, ours.
        let saved = unsafe { std::os::fd::OwnedFd::from_raw_fd(saved) };
        let exe = match stub_fd {
            Some(fd) => fd,
            None => open_exe(&l.exe)?,
        };
        Ok(Fds {
            args,
            exe,
            layer,
            saved,
            err_r,
            err_w,
            hosts,
        })
    }

    /// Closes every descriptor but the read end of bwrap's stderr, which
    /// is returned: it reaches its end once bwrap and stage 2 are gone.
    fn close(self) -> std::fs::File {
        let Fds {
            args,
            exe,
            layer,
            saved,
            err_r,
            err_w,
            hosts,
        } = self;
        drop(hosts);
        drop(err_w);
        drop(args);
        drop(layer);
        drop(saved);
        drop(exe);
        std::fs::File::from(err_r)
    }
}

/// The program with its host roots' descriptors set: each writable root
/// opened here, in the host's mount namespace, inherited by bwrap (no
/// CLOEXEC) and kept by the broker alone (stage 2 closes it in the command
/// before the exec). A root that cannot be opened as a directory stays -1:
/// no link is made through it, the kernel's EXDEV stands.
fn with_host_fds(program: &[u8]) -> Result<(Vec<u8>, Vec<std::os::fd::OwnedFd>), String> {
    use crate::inside::stub_format::{set_host_fds, Program};
    use std::os::fd::{AsRawFd, FromRawFd};
    use std::os::unix::ffi::OsStrExt;
    let paths: Vec<Vec<u8>> = match Program::parse(program) {
        Ok(p) => p.hosts().map(|(_, path)| path.to_vec()).collect(),
        Err(e) => return Err(format!("the second stage's program: {e}")),
    };
    let mut owned = Vec::with_capacity(paths.len());
    let mut raw = Vec::with_capacity(paths.len());
    for p in paths {
        let c = cpath(Path::new(std::ffi::OsStr::from_bytes(&p)))?;
        // SAFETY: a valid C string; the descriptor is owned right after.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW,
            )
        };
        if fd < 0 {
            raw.push(-1);
            continue;
        }
        // SAFETY: a fresh descriptor of ours.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        raw.push(fd.as_raw_fd());
        owned.push(fd);
    }
    let mut out = program.to_vec();
    set_host_fds(&mut out, &raw);
    Ok((out, owned))
}

/// dcjail's own binary as a descriptor: stage 2 is exec'd through it, so
/// it starts even when the policy hides dcjail's own directory (deny_read
/// of ~, say).
fn open_exe(exe: &Path) -> Result<std::os::fd::OwnedFd, String> {
    use std::os::fd::FromRawFd;
    let exe_c = cpath(exe)?;
    // SAFETY: valid C string; owned right after.
    let fd = unsafe { libc::open(exe_c.as_ptr(), libc::O_PATH) };
    if fd < 0 {
        return Err(format!(
            "cannot open dcjail's own binary `{}`: {}",
            exe.display(),
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: fresh fd, ours.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// Bit N set when `SHIELDED[N]` is ignored now: stage 2 leaves it ignored.
fn shielded_ignored() -> u32 {
    let mut ign = 0u32;
    for (i, s) in SHIELDED.iter().enumerate() {
        // SAFETY: an all-zero sigaction is a valid value of the C struct.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: querying the current disposition only.
        unsafe { libc::sigaction(*s, std::ptr::null(), &mut old) };
        if old.sa_sigaction == libc::SIG_IGN {
            ign |= 1 << i;
        }
    }
    ign
}

/// `bwrap --args FD --json-status-fd FD -- STAGE2 __stage2 FD IGN ERR STD
/// -- COMMAND...`.
fn bwrap_argv(
    l: &BwrapLaunch,
    fds: &Fds,
    status_w: i32,
    argv: &[std::ffi::CString],
) -> Result<Vec<std::ffi::CString>, String> {
    use std::ffi::CString;
    use std::os::fd::AsRawFd;
    let num = |n: i64| CString::new(n.to_string()).map_err(|e| e.to_string());
    let mut bargv: Vec<CString> = vec![
        cpath(&l.bwrap)?,
        CString::from(c"--args"),
        num(fds.args.as_raw_fd().into())?,
        CString::from(c"--json-status-fd"),
        num(status_w.into())?,
        CString::from(c"--"),
        CString::new(format!("/proc/self/fd/{}", fds.exe.as_raw_fd()))
            .map_err(|e| e.to_string())?,
        CString::new(STAGE2).map_err(|e| e.to_string())?,
        num(fds.layer.as_raw_fd().into())?,
        num(shielded_ignored().into())?,
        num(fds.saved.as_raw_fd().into())?,
        // The standard descriptors the caller left closed: bwrap and the
        // second stage run with /dev/null there, the command without.
        num(super::stdfds::closed().into())?,
        CString::from(c"--"),
    ];
    bargv.extend(argv.iter().cloned());
    Ok(bargv)
}

/// The supervisor's forwarding under bwrap: a signal goes to the command
/// inside; before the command exists a shielded one ends the launch.
fn forward_signal(
    pid: libc::pid_t,
    sig: libc::c_int,
    code: libc::c_int,
    interrupted: &mut Option<i32>,
) {
    let cmds = sandbox_commands(pid);
    if cmds.is_empty() {
        if SHIELDED.contains(&sig) {
            // Not started yet: nothing to be graceful with.
            *interrupted = Some(super::status::SIGNAL_BASE + sig);
            // SAFETY: our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        return;
    }
    // The command shares the caller's terminal and process group: a
    // terminal's ^C already reached it.
    if code == libc::SI_KERNEL {
        return;
    }
    for c in cmds {
        // SAFETY: a process of our own sandbox.
        unsafe { libc::kill(c, sig) };
    }
}

/// In the supervised child: shields the signals, keeps the status pipe,
/// puts bwrap's stderr on the pipe and execs bwrap. Returns only on failure.
fn exec_bwrap(
    bwrap_path: &std::ffi::CStr,
    bargv: &[std::ffi::CString],
    envp: &[std::ffi::CString],
    status_w_raw: i32,
    err_w_raw: i32,
    bwrap: &Path,
) -> i32 {
    let argv_p = super::command::pointers(bargv);
    let envp_p = super::command::pointers(envp);
    // SAFETY: NUL-terminated arrays of live CStrings; SIG_IGN survives
    // execve, which is the point.
    unsafe {
        for s in SHIELDED {
            libc::signal(s, libc::SIG_IGN);
        }
        // The status pipe is the one descriptor bwrap must keep (made
        // close-on-exec so that nothing else inherits it).
        libc::fcntl(status_w_raw, libc::F_SETFD, 0);
        libc::dup2(err_w_raw, 2);
        libc::execve(bwrap_path.as_ptr(), argv_p.as_ptr(), envp_p.as_ptr());
    }
    let e = std::io::Error::last_os_error();
    let msg = format!("cannot run {}: {e}", bwrap.display());
    // SAFETY: writing to our stderr (the pipe) before _exit.
    unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
    1
}

/// The launch's result from what bwrap said: once stage 2 started, the
/// command's status (and bwrap's words are passed on); otherwise bwrap
/// could not build the sandbox, unless the run was interrupted or timed
/// out first.
fn outcome(said: &[u8], status: i32, interrupted: Option<i32>) -> Result<i32, Setup> {
    if let Some(i) = said.windows(STARTED.len()).position(|w| w == STARTED) {
        use std::io::Write;
        let mut e = std::io::stderr();
        let _ = e.write_all(&said[..i]);
        let _ = e.write_all(&said[i + STARTED.len()..]);
        // A signal that came while stage 2 was starting but before the
        // command showed in bwrap's tree ended the run by killing bwrap:
        // the caller sees that signal's status, not bwrap's SIGKILL.
        return Ok(interrupted.unwrap_or(status));
    }
    if let Some(code) = interrupted {
        return Ok(code);
    }
    if status == super::TIMEOUT_STATUS {
        return Ok(status);
    }
    let text = String::from_utf8_lossy(said);
    Err(Setup::Bwrap {
        said: text.trim().trim_start_matches("bwrap: ").to_string(),
    })
}

/// Reads bwrap's `--json-status-fd` reports: one JSON object per line, first
/// `child-pid` (the sandbox's init, pinned here as a pidfd), at the end
/// `exit-code`. On the exit code the init gets SIGKILL at once: the state
/// dcjail used to wait for bwrap's exit to reach (bwrap's children die with
/// it), without waiting for bwrap to tear itself down.
struct StatusReader {
    fd: std::os::fd::OwnedFd,
    buf: Vec<u8>,
    init: Option<std::os::fd::OwnedFd>,
}

impl StatusReader {
    fn new(fd: std::os::fd::OwnedFd) -> Result<StatusReader, String> {
        use std::os::fd::AsRawFd;
        let raw = fd.as_raw_fd();
        // SAFETY: fcntl on a descriptor we own.
        let ok = unsafe {
            let fl = libc::fcntl(raw, libc::F_GETFL);
            fl >= 0 && libc::fcntl(raw, libc::F_SETFL, fl | libc::O_NONBLOCK) == 0
        };
        if !ok {
            return Err(format!("status pipe: {}", std::io::Error::last_os_error()));
        }
        Ok(StatusReader {
            fd,
            buf: Vec::new(),
            init: None,
        })
    }

    fn fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.fd.as_raw_fd()
    }

    fn ready(&mut self) -> super::Heard {
        use super::Heard;
        let mut chunk = [0u8; 1024];
        loop {
            // SAFETY: a buffer of chunk.len() bytes.
            let n = unsafe { libc::read(self.fd(), chunk.as_mut_ptr().cast(), chunk.len()) };
            match n {
                0 => return Heard::Closed,
                n if n > 0 => {
                    // Bounded: bwrap writes two short lines.
                    if self.buf.len() < 64 * 1024 {
                        self.buf.extend_from_slice(&chunk[..n as usize]);
                    }
                }
                _ if super::errno() == libc::EINTR => {}
                _ => break,
            }
        }
        while let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=i).collect();
            let Ok(v) = serde_json::from_slice::<serde_json::Value>(&line) else {
                continue;
            };
            if let Some(pid) = v.get("child-pid").and_then(|p| p.as_i64()) {
                self.init = pidfd(pid);
            }
            let code = v.get("exit-code").and_then(|c| c.as_i64());
            let code = code.and_then(|c| u8::try_from(c).ok());
            if let (Some(code), Some(init)) = (code, &self.init) {
                use std::os::fd::AsRawFd;
                // SAFETY: a pidfd we hold; no siginfo.
                unsafe {
                    libc::syscall(
                        libc::SYS_pidfd_send_signal,
                        init.as_raw_fd(),
                        libc::SIGKILL,
                        std::ptr::null::<libc::siginfo_t>(),
                        0u32,
                    )
                };
                return Heard::Status(i32::from(code));
            }
        }
        Heard::Nothing
    }
}

/// A pidfd for `pid`, or None (then the status is taken from bwrap's exit).
fn pidfd(pid: i64) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let pid = libc::pid_t::try_from(pid).ok().filter(|p| *p > 0)?;
    // SAFETY: pidfd_open takes a pid and flags.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0u32) };
    let fd = i32::try_from(fd).ok().filter(|f| *f >= 0)?;
    // SAFETY: a fresh descriptor, ours.
    Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// What bwrap (and stage 2, up to its mark) wrote on the stderr pipe, read
/// once the supervisor is done. Whatever reached the pipe is in it by then;
/// when stage 2's mark is there, what is still to come could only be
/// bwrap's init speaking on its way out, and waiting for the pipe's end
/// would wait for that init to exit, which waits for the teardown of the
/// whole pid namespace (it already has SIGKILL pending). Without the mark
/// bwrap failed: then its last words are waited for.
fn bwrap_said(mut f: std::fs::File) -> Vec<u8> {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let fd = f.as_raw_fd();
    let mut said = Vec::new();
    // SAFETY: fcntl on a descriptor we own.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags >= 0 && unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } == 0 {
        let mut buf = [0u8; 4096];
        loop {
            match f.read(&mut buf) {
                Ok(0) => return said,
                Ok(n) => said.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if said.windows(STARTED.len()).any(|w| w == STARTED) {
            return said;
        }
        // SAFETY: as above.
        unsafe { libc::fcntl(fd, libc::F_SETFL, flags) };
    }
    let _ = f.read_to_end(&mut said);
    said
}

/// The program memfd's name, as stage 2 checks it.
fn stage2_name() -> Result<std::ffi::CString, String> {
    std::ffi::CString::new(MEMFD_NAME).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_reader_takes_the_exit_code_and_kills_the_init_it_pinned() {
        use super::super::Heard;
        use std::io::Write;
        let mut init = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let (r, w) = pipe().unwrap();
        let mut w = std::fs::File::from(w);
        let mut reader = StatusReader::new(r).unwrap();
        assert!(matches!(reader.ready(), Heard::Nothing));
        // Split across writes, with a line that is not JSON in between.
        write!(
            w,
            "{{ \"child-pid\": {}, \"pid-namespace\": 4026",
            init.id()
        )
        .unwrap();
        assert!(matches!(reader.ready(), Heard::Nothing));
        write!(w, "531836 }}\nnot json\n{{ \"exit-code\": 300 }}\n").unwrap();
        // An out-of-range code settles nothing.
        assert!(matches!(reader.ready(), Heard::Nothing));
        assert!(init.try_wait().unwrap().is_none(), "killed too early");
        writeln!(w, "{{ \"exit-code\": 42 }}").unwrap();
        assert!(matches!(reader.ready(), Heard::Status(42)));
        let st = init.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(st.signal(), Some(libc::SIGKILL));
        drop(w);
        assert!(matches!(reader.ready(), Heard::Closed));
    }

    #[test]
    fn a_signal_that_ended_the_run_before_the_command_showed_is_its_status() {
        let mut said = b"".to_vec();
        said.extend_from_slice(STARTED);
        // bwrap was killed (137) because SIGINT came before the command
        // was found in its tree: the caller sees 130.
        assert_eq!(outcome(&said, 137, Some(130)), Ok(130));
        assert_eq!(outcome(&said, 0, None), Ok(0));
        assert_eq!(outcome(b"", 137, Some(130)), Ok(130));
    }

    #[test]
    fn without_a_pinned_init_the_exit_code_is_not_taken() {
        use super::super::Heard;
        use std::io::Write;
        let (r, w) = pipe().unwrap();
        let mut w = std::fs::File::from(w);
        let mut reader = StatusReader::new(r).unwrap();
        writeln!(w, "{{ \"exit-code\": 0 }}").unwrap();
        // bwrap's own exit then brings the status.
        assert!(matches!(reader.ready(), Heard::Nothing));
    }
}
