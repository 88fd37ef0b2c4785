//! Shadows: the broker's hands for a command that restricted itself.
//!
//! A program inside the sandbox may add a landlock domain of its own (a
//! nested dcjail, a tool that sandboxes itself). What the broker does for
//! such a program must pass that domain too, but a domain can be neither
//! read nor copied. So the filter hands `landlock_restrict_self` to the
//! broker, which takes the caller's ruleset (pidfd_getfd) and at once has a
//! shadow apply it: a process of the broker's that shares its descriptor
//! table and stacks every ruleset the command has applied so far, in order.
//! The caller is marked by lowering its hard RLIMIT_RTTIME, which children
//! inherit exactly as they inherit the domain and which nothing without
//! CAP_SYS_RESOURCE raises again. For a marked caller the broker makes all
//! of its own checks as before, then has the shadow of that mark make the
//! final system call, so that the kernel checks the command's own domains
//! as well: the broker never does more than the caller could.
//!
//! A mark means "at least rulesets 1..=j": shadow j carries them all, so a
//! process that carries fewer of them, or lowers its own limit further, is
//! held to more than its own domain, never to less. Landlock stacks at most
//! 16 layers; at most `MAX` rulesets are taken in one run, and another
//! `landlock_restrict_self` then fails with E2BIG, as the kernel's own limit
//! does. The ruleset is taken when the call is made: a second thread of the
//! caller that swaps the descriptor meanwhile only changes what the caller
//! itself is held to, which is the caller's own choice.
//!
//! Compiled into the stub and into dcjail: `core` only.

use super::*;

/// Rulesets taken at most in one run (landlock stacks 16 layers, and two
/// are dcjail's: the broker's abstract-socket scope and the command's
/// layer).
pub const MAX: usize = 14;
/// Hard RLIMIT_RTTIME of a process marked with shadow j: `BASE - j`. Any
/// limit at or above it is no mark (the usual limit is infinity).
const BASE: u64 = 1 << 62;
const RLIMIT_RTTIME: usize = 15;
const CLONE_FILES: usize = 0x400;
const SIGCHLD: usize = 17;
const SIGKILL: usize = 9;
const PR_SET_PDEATHSIG: usize = 1;
const PR_SET_NO_NEW_PRIVS: usize = 38;
const AF_UNIX_: usize = 1;
const SOCK_SEQPACKET: usize = 5;
const SOCK_CLOEXEC: usize = 0o2000000;
/// The job that makes a new shadow.
const SPAWN: u64 = u64::MAX;
const BUF: usize = 4608;

#[cfg(target_arch = "x86_64")]
const PRLIMIT64: usize = 302;
#[cfg(target_arch = "aarch64")]
const PRLIMIT64: usize = 261;

/// The shadows of one run: the broker's end of each one's socket.
pub struct Shadows {
    n: usize,
    sock: [i32; MAX],
}

impl Default for Shadows {
    fn default() -> Shadows {
        Shadows {
            n: 0,
            sock: [-1; MAX],
        }
    }
}

impl Shadows {
    /// The socket of the shadow that must act for thread `tid`, or -1 when
    /// the broker acts itself (no mark).
    pub(super) fn of(&self, tid: u32) -> Result<i32, i32> {
        if self.n == 0 {
            return Ok(-1);
        }
        let (_, max) = rlimit(tid)?;
        if max >= BASE {
            return Ok(-1);
        }
        let j = usize::try_from(BASE - max)
            .unwrap_or(usize::MAX)
            .min(self.n);
        Ok(self.sock[j - 1])
    }
}

fn rlimit(tid: u32) -> Result<(u64, u64), i32> {
    let mut r = [0u64; 2];
    // SAFETY: prlimit64 reads nothing (NULL new limit) and writes 16 bytes.
    unsafe {
        sys::call(
            PRLIMIT64,
            &[tid as usize, RLIMIT_RTTIME, 0, r.as_mut_ptr() as usize],
        )
    }?;
    Ok((r[0], r[1]))
}

/// Lowers the caller's hard limit to the mark of shadow `j` (never raises
/// it: a lower limit already is a stronger mark).
fn mark(tid: u32, j: usize) -> Result<(), i32> {
    let v = BASE - j as u64;
    let (cur, max) = rlimit(tid)?;
    if max <= v {
        return Ok(());
    }
    let new = [cur.min(v), v];
    // SAFETY: prlimit64 reads 16 bytes and writes none (NULL old limit).
    unsafe {
        sys::call(
            PRLIMIT64,
            &[tid as usize, RLIMIT_RTTIME, new.as_ptr() as usize, 0],
        )
    }?;
    Ok(())
}

/// `landlock_restrict_self(ruleset_fd, flags)` by the command: take the
/// ruleset into a new shadow, mark the caller, and let the kernel make the
/// call. Any failure refuses the call, so the caller is then unrestricted
/// and no shadow is needed for it.
pub(super) fn restrict(c: &Ctx<'_>, sh: &mut Shadows) -> Result<Reply, i32> {
    let fd = c.arg(0) as u32 as i32;
    let flags = c.arg(1) as usize;
    if fd == -1 {
        // No domain is made (only logging flags change): nothing to carry.
        return Ok(Reply::Continue);
    }
    if sh.n == MAX {
        return Err(E2BIG);
    }
    let (tgid, _) = status_of(c.req.pid)?;
    let ruleset = their_fd(tgid, fd as u64)?;
    if !c.valid() {
        return Ok(Reply::None);
    }
    // Marked before the shadow exists: a mark with no shadow yet is held to
    // the last shadow there is, which carries every ruleset the caller had.
    mark(c.req.pid, sh.n + 1).map_err(|_| EPERM)?;
    let (mine, theirs) = seqpacket()?;
    let spawned = if sh.n == 0 {
        spawn_here(ruleset.0, flags, theirs)
    } else {
        let mut job = Job::new(SPAWN);
        job.args[..3].copy_from_slice(&[ruleset.0 as u64, flags as u64, theirs as u64]);
        ask(sh.sock[sh.n - 1], &job).map(|_| ())
    };
    let applied = spawned.and_then(|()| reply_of(mine));
    if let Err(e) = applied {
        // The shadow is gone or never was; its socket is shared with no one.
        sys::close(mine);
        sys::close(theirs);
        return Err(e);
    }
    sh.sock[sh.n] = mine;
    sh.n += 1;
    Ok(Reply::Continue)
}

fn seqpacket() -> Result<(i32, i32), i32> {
    let mut fds = [0i32; 2];
    // SAFETY: socketpair writes two ints.
    unsafe {
        sys::call(
            nr::SOCKETPAIR,
            &[
                AF_UNIX_,
                SOCK_SEQPACKET | SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr() as usize,
            ],
        )
    }?;
    Ok((fds[0], fds[1]))
}

/// One final system call for a shadow to make.
#[repr(C)]
struct Job {
    nr: u64,
    args: [u64; 6],
    /// Bit i: `args[i]` is an offset into `buf`, passed as a pointer.
    ptrs: u32,
    umask: u32,
    /// A directory to make the call from (a relative name), or -1.
    chdir: i32,
    /// For an open that waits (a FIFO): a child of the shadow makes it and
    /// answers notification `id` on `listener` itself; -1 otherwise.
    listener: i32,
    id: u64,
    cloexec: u32,
    used: u32,
    buf: [u8; BUF],
}

impl Job {
    fn new(nr: u64) -> Job {
        Job {
            nr,
            args: [0; 6],
            ptrs: 0,
            umask: 0o022,
            chdir: -1,
            listener: -1,
            id: 0,
            cloexec: 0,
            used: 0,
            buf: [0; BUF],
        }
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: a repr(C) struct of plain integers, read as its bytes.
        unsafe {
            core::slice::from_raw_parts(
                self as *const Job as *const u8,
                core::mem::size_of::<Job>(),
            )
        }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above; every byte pattern is a valid Job.
        unsafe {
            core::slice::from_raw_parts_mut(
                self as *mut Job as *mut u8,
                core::mem::size_of::<Job>(),
            )
        }
    }
}

/// One argument of a final call.
pub(super) enum Arg<'a> {
    N(usize),
    /// Bytes the call reads through a pointer (a NUL-terminated name, an
    /// address).
    B(&'a [u8]),
}

/// The final system call of an operation the broker checked: made here, or
/// for a marked command by its shadow. `chdir`: made from that directory.
pub(super) fn perform(
    c: &Ctx<'_>,
    n: usize,
    args: &[Arg<'_>],
    chdir: Option<&Fd>,
) -> Result<usize, i32> {
    if c.shadow < 0 {
        return here(n, args, chdir);
    }
    let mut job = Job::new(n as u64);
    fill(&mut job, args)?;
    job.umask = c.mask.get();
    job.chdir = chdir.map_or(-1, |d| d.0);
    ask(c.shadow, &job)
}

/// An open that waits for its other end, for a marked command: a child of
/// the shadow makes it and answers the command itself.
pub(super) fn perform_waiting(c: &Ctx<'_>, args: &[Arg<'_>], cloexec: bool) -> Result<Reply, i32> {
    let mut job = Job::new(nr::OPENAT as u64);
    fill(&mut job, args)?;
    job.umask = c.mask.get();
    job.listener = c.listener;
    job.id = c.req.id;
    job.cloexec = u32::from(cloexec);
    ask(c.shadow, &job)?;
    Ok(Reply::None)
}

fn fill(job: &mut Job, args: &[Arg<'_>]) -> Result<(), i32> {
    for (i, a) in args.iter().enumerate().take(6) {
        job.args[i] = match a {
            Arg::N(v) => *v as u64,
            Arg::B(b) => {
                let at = job.used as usize;
                if at + b.len() > BUF {
                    return Err(ENAMETOOLONG);
                }
                job.buf[at..at + b.len()].copy_from_slice(b);
                job.used += b.len() as u32;
                job.ptrs |= 1 << i;
                at as u64
            }
        };
    }
    Ok(())
}

fn here(n: usize, args: &[Arg<'_>], chdir: Option<&Fd>) -> Result<usize, i32> {
    let mut a = [0usize; 6];
    for (i, x) in args.iter().enumerate().take(6) {
        a[i] = match x {
            Arg::N(v) => *v,
            Arg::B(b) => b.as_ptr() as usize,
        };
    }
    let Some(dir) = chdir else {
        // SAFETY: the broker's own call, with the arguments it built.
        return unsafe { sys::call(n, &a[..args.len()]) };
    };
    // The broker's own working directory is `dir` for this one call.
    let back = sys::openat(AT_FDCWD, b".\0", O_PATH | O_CLOEXEC, 0)?;
    // SAFETY: fchdir takes a descriptor.
    unsafe { sys::call(nr::FCHDIR, &[dir.raw()]) }?;
    // SAFETY: as above.
    let r = unsafe { sys::call(n, &a[..args.len()]) };
    // SAFETY: as above.
    let _ = unsafe { sys::call(nr::FCHDIR, &[back.raw()]) };
    r
}

/// Sends `job` to a shadow and returns its answer.
fn ask(sock: i32, job: &Job) -> Result<usize, i32> {
    let b = job.bytes();
    // SAFETY: a buffer of b.len() bytes.
    match unsafe { sys::call_retry(nr::WRITE, &[sock as usize, b.as_ptr() as usize, b.len()]) } {
        Ok(n) if n == b.len() => reply_of(sock).map(|v| v as usize),
        Ok(_) => Err(EFAULT),
        Err(e) => Err(e),
    }
}

/// A shadow's answer: the call's result, or minus its errno. A shadow
/// that is gone answers EACCES: nothing is done for its command.
fn reply_of(sock: i32) -> Result<u64, i32> {
    let mut v = [0u8; 8];
    // SAFETY: a buffer of 8 bytes.
    match unsafe { sys::call_retry(nr::READ, &[sock as usize, v.as_mut_ptr() as usize, 8]) } {
        Ok(8) => {}
        _ => return Err(EACCES),
    }
    let v = i64::from_ne_bytes(v);
    if v < 0 {
        Err(i32::try_from(-v).unwrap_or(EACCES))
    } else {
        Ok(v as u64)
    }
}

/// Starts a shadow from this process, which carries every ruleset before
/// this one: it shares this descriptor table, dies with this process, and
/// stacks `ruleset` on what it inherited. Its first answer on `sock` is
/// the result of that.
fn spawn_here(ruleset: i32, flags: usize, sock: i32) -> Result<(), i32> {
    // SAFETY: clone with CLONE_FILES and no new stack behaves as fork (the
    // child runs on its own copy of this stack) but for the shared table;
    // the child only makes system calls on values it owns.
    let pid = unsafe { sys::call(nr::CLONE, &[CLONE_FILES | SIGCHLD, 0, 0, 0, 0]) }?;
    if pid != 0 {
        return Ok(());
    }
    // SAFETY: prctl with integer arguments.
    let _ = unsafe { sys::call(nr::PRCTL, &[PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0]) };
    // SAFETY: as above.
    let nnp = unsafe { sys::call(nr::PRCTL, &[PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0]) };
    let r = nnp.and_then(|_| {
        // SAFETY: landlock_restrict_self takes a descriptor and flags.
        unsafe { sys::call(sys::LANDLOCK_RESTRICT_SELF, &[ruleset as usize, flags]) }
    });
    send(sock, r);
    if r.is_err() {
        sys::exit(0);
    }
    serve(sock)
}

fn send(sock: i32, r: Result<usize, i32>) {
    let v: i64 = match r {
        Ok(v) => v as i64,
        Err(e) => -i64::from(e),
    };
    sys::write_all(sock, &v.to_ne_bytes());
}

/// A shadow's loop: one job, one answer, until the broker is gone.
fn serve(sock: i32) -> ! {
    let mut job = Job::new(0);
    loop {
        let want = core::mem::size_of::<Job>();
        let b = job.bytes_mut();
        // SAFETY: a buffer of b.len() bytes.
        match unsafe { sys::call_retry(nr::READ, &[sock as usize, b.as_mut_ptr() as usize, want]) }
        {
            Ok(n) if n == want => {}
            _ => sys::exit(0),
        }
        let r = run(&job);
        send(sock, r);
        reap();
    }
}

/// The calls a shadow makes: those that make a name, and the spawn.
fn run(job: &Job) -> Result<usize, i32> {
    if job.nr == SPAWN {
        return spawn_here(job.args[0] as i32, job.args[1] as usize, job.args[2] as i32)
            .map(|()| 0);
    }
    let n = job.nr as usize;
    let known = [
        nr::OPENAT,
        nr::MKDIRAT,
        nr::MKNODAT,
        nr::SYMLINKAT,
        nr::LINKAT,
        nr::RENAMEAT2,
        nr::BIND,
    ];
    if !known.contains(&n) || job.used as usize > BUF {
        return Err(ENOSYS);
    }
    let mut a = [0usize; 6];
    for (i, v) in job.args.iter().enumerate() {
        a[i] = if job.ptrs & (1 << i) != 0 {
            let at = *v as usize;
            if at >= job.used as usize {
                return Err(EFAULT);
            }
            job.buf[at..].as_ptr() as usize
        } else {
            *v as usize
        };
    }
    umask(job.umask);
    if job.chdir >= 0 {
        // SAFETY: fchdir takes a descriptor (shared with the broker).
        unsafe { sys::call(nr::FCHDIR, &[job.chdir as usize]) }?;
    }
    if job.listener < 0 {
        // SAFETY: a call of the list above, its names in `job.buf`.
        return unsafe { sys::call(n, &a) };
    }
    // SAFETY: a plain fork; the child only makes system calls and exits.
    let pid = unsafe { sys::call(nr::CLONE, &[SIGCHLD, 0, 0, 0, 0]) }?;
    if pid == 0 {
        // SAFETY: as above.
        let reply = match unsafe { sys::call(n, &a) } {
            Ok(fd) => Reply::Fd(Fd(fd as i32), job.cloexec != 0),
            Err(e) => Reply::Err(e),
        };
        answer_raw(job.listener, job.id, reply);
        sys::exit(0);
    }
    Ok(0)
}

/// Reaps the children that answered a FIFO's open.
fn reap() {
    const WNOHANG: usize = 1;
    let mut ws = 0i32;
    // SAFETY: wait4 on any child, non-blocking.
    while let Ok(p) = unsafe {
        sys::call(
            nr::WAIT4,
            &[usize::MAX, &mut ws as *mut i32 as usize, WNOHANG, 0],
        )
    } {
        if p == 0 {
            break;
        }
    }
}
