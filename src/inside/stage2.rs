//! The second stage's sequence, written once: build the landlock ruleset,
//! then irreversibly no_new_privs, capabilities, landlock, seccomp (with a
//! listener for the broker), descriptors; and, when the program asks for a
//! broker, the fork that leaves this process serving the command's
//! notifications while its child becomes the command. Run by the embedded
//! stub inside bubblewrap and by dcjail itself where memfds cannot be
//! executed, so both apply the very same layer. `core` only.

use super::stub_format::{Program, MAX_PATH};
use super::sys::{self, nr};

/// Why the layer could not be applied: the refusal names `what` (and the
/// rule path, when one is concerned) and the errno.
pub struct Fail<'a> {
    pub what: &'static [u8],
    pub path: Option<&'a [u8]>,
    pub errno: Option<i32>,
}

fn fail<'a>(what: &'static [u8], errno: Option<i32>) -> Fail<'a> {
    Fail {
        what,
        path: None,
        errno,
    }
}

const AT_FDCWD: usize = -100isize as usize;
const O_CLOEXEC: usize = 0o2000000;
const O_PATH: usize = 0o10000000;
const O_RDWR: usize = 2;
const AT_EMPTY_PATH: usize = 0x1000;
const AT_SYMLINK_NOFOLLOW: usize = 0x100;
const S_IFMT: u32 = 0o170000;
const S_IFDIR: u32 = 0o040000;
const EPERM: i32 = 1;
const EINVAL: i32 = 22;

/// `parts` joined, with a NUL, in `buf`; None when it does not fit.
pub fn c_path<'b>(buf: &'b mut [u8], parts: &[&[u8]]) -> Option<&'b [u8]> {
    let mut n = 0;
    for p in parts {
        if n + p.len() >= buf.len() {
            return None;
        }
        buf[n..n + p.len()].copy_from_slice(p);
        n += p.len();
    }
    buf[n] = 0;
    Some(&buf[..=n])
}

/// The landlock ruleset with every rule added; nothing applied yet.
#[repr(C, packed)]
struct PathBeneath {
    allowed: u64,
    parent: i32,
}

pub fn build_ruleset<'a>(p: &Program<'a>) -> Result<i32, Fail<'a>> {
    #[repr(C)]
    struct Attr {
        fs: u64,
        net: u64,
        scoped: u64,
    }
    #[repr(C)]
    struct NetPort {
        allowed: u64,
        port: u64,
    }
    const CONNECT_TCP: u64 = 1 << 1;
    let attr = Attr {
        fs: p.handled_fs,
        net: p.handled_net,
        scoped: p.scoped,
    };
    // SAFETY: a valid attribute struct of the size given.
    let rs = match unsafe {
        sys::call(
            sys::LANDLOCK_CREATE_RULESET,
            &[&attr as *const Attr as usize, core::mem::size_of::<Attr>()],
        )
    } {
        Ok(fd) => fd as i32,
        Err(e) => return Err(fail(b"landlock: cannot create the ruleset", Some(e))),
    };
    let mut buf = [0u8; MAX_PATH + 1];
    for (path, access) in p.fs_rules() {
        if let Err(f) = add_path_rule(rs, path, access, &mut buf) {
            sys::close(rs);
            return Err(f);
        }
    }
    for port in p.ports() {
        let rule = NetPort {
            allowed: CONNECT_TCP,
            port: u64::from(port),
        };
        // SAFETY: a valid rule of type LANDLOCK_RULE_NET_PORT.
        if let Err(e) = unsafe {
            sys::call(
                sys::LANDLOCK_ADD_RULE,
                &[rs as usize, 2, &rule as *const NetPort as usize],
            )
        } {
            sys::close(rs);
            return Err(fail(b"landlock: cannot add a port rule", Some(e)));
        }
    }
    Ok(rs)
}

/// One path-beneath rule of the ruleset `rs`; a path that is gone is
/// skipped (a grant on it only narrows the sandbox).
fn add_path_rule<'a>(
    rs: i32,
    path: &'a [u8],
    access: u64,
    buf: &mut [u8; MAX_PATH + 1],
) -> Result<(), Fail<'a>> {
    let Some(c) = c_path(buf, &[path]) else {
        return Err(fail(b"landlock: rule path too long", None));
    };
    let fd = match sys::openat(AT_FDCWD, c, O_PATH | O_CLOEXEC, 0) {
        Ok(fd) => fd,
        Err(_) if sys::stat(AT_FDCWD, c, AT_SYMLINK_NOFOLLOW).is_err() => return Ok(()),
        Err(e) => {
            return Err(Fail {
                what: b"landlock: cannot open ",
                path: Some(path),
                errno: Some(e),
            })
        }
    };
    let add = |bits: u64| {
        let rule = PathBeneath {
            allowed: bits,
            parent: fd.0,
        };
        // SAFETY: a valid rule of type LANDLOCK_RULE_PATH_BENEATH.
        unsafe {
            sys::call(
                sys::LANDLOCK_ADD_RULE,
                &[rs as usize, 1, &rule as *const PathBeneath as usize],
            )
        }
    };
    // Rights that only mean something on a directory are dropped for a
    // non-directory; the kernel says when they do not fit (EINVAL), so
    // only then is the file looked at.
    let added = match add(access) {
        Err(EINVAL)
            if access & !super::stub_format::access::FILE != 0
                && sys::stat(fd.raw(), b"\0", AT_EMPTY_PATH).map(|s| s.mode & S_IFMT)
                    != Ok(S_IFDIR) =>
        {
            match access & super::stub_format::access::FILE {
                0 => Ok(0),
                bits => add(bits),
            }
        }
        r => r,
    };
    added.map(|_| ()).map_err(|e| Fail {
        what: b"landlock: cannot add the rule for ",
        path: Some(path),
        errno: Some(e),
    })
}

fn prctl(op: usize, a: usize) -> Result<usize, i32> {
    // SAFETY: the prctl operations used here take integers only.
    unsafe { sys::call(nr::PRCTL, &[op, a]) }
}

/// Empties every capability set (landlock.rs drop_capabilities): the
/// bounding set only where the caller may shrink it.
pub fn drop_capabilities<'a>() -> Result<(), Fail<'a>> {
    const PR_CAPBSET_DROP: usize = 24;
    const PR_CAP_AMBIENT: usize = 47;
    const PR_CAP_AMBIENT_CLEAR_ALL: usize = 4;
    // Dropping a capability the set lacks succeeds, so none is read first;
    // EINVAL marks the kernel's last capability, EPERM a caller without
    // CAP_SETPCAP (bwrap's `--cap-drop ALL`), for whom no drop can succeed.
    for cap in 0..64 {
        match prctl(PR_CAPBSET_DROP, cap) {
            Ok(_) => {}
            Err(EINVAL) | Err(EPERM) => break,
            Err(e) => {
                return Err(fail(
                    b"cannot drop a capability from the bounding set",
                    Some(e),
                ))
            }
        }
    }
    // SAFETY: integer arguments only.
    if let Err(e) = unsafe { sys::call(nr::PRCTL, &[PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL]) } {
        return Err(fail(b"cannot clear the ambient capabilities", Some(e)));
    }
    const V3: u32 = 0x2008_0522;
    let hdr = [V3, 0u32];
    let data = [0u32; 6];
    // SAFETY: capset reads the header and two data structs (version 3).
    let set = unsafe { sys::call(nr::CAPSET, &[hdr.as_ptr() as usize, data.as_ptr() as usize]) };
    if let Err(e) = set {
        return Err(fail(b"cannot drop the capabilities", Some(e)));
    }
    let hdr = [V3, 0u32];
    let mut got = [u32::MAX; 6];
    // SAFETY: capget writes two data structs (version 3).
    if let Err(e) = unsafe {
        sys::call(
            nr::CAPGET,
            &[hdr.as_ptr() as usize, got.as_mut_ptr() as usize],
        )
    } {
        return Err(fail(b"cannot read the capabilities back", Some(e)));
    }
    if got.iter().any(|v| *v != 0) {
        return Err(fail(
            b"capabilities are still held after dropping them",
            None,
        ));
    }
    Ok(())
}

/// Closes every descriptor above 2 but those the program keeps.
pub fn close_fds<'a>(p: &Program<'a>) -> Result<(), Fail<'a>> {
    close_fds_but(p, &[])
}

/// `close_fds`, keeping `also` too (the landlock backend's channel to its
/// broker and the listener it sends there before exec).
pub fn close_fds_but<'a>(p: &Program<'a>, also: &[i32]) -> Result<(), Fail<'a>> {
    let mut lo: u32 = 3;
    loop {
        // The smallest kept descriptor at or above `lo`.
        let next = p
            .keep_fds()
            .chain(also.iter().copied())
            .filter(|k| *k >= 0)
            .map(|k| k as u32)
            .filter(|k| *k >= lo)
            .min();
        let hi = match next {
            Some(k) if k == lo => {
                lo = k.saturating_add(1);
                continue;
            }
            Some(k) => k - 1,
            None => u32::MAX,
        };
        // SAFETY: close_range only closes descriptors.
        if let Err(e) = unsafe { sys::call(sys::CLOSE_RANGE, &[lo as usize, hi as usize]) } {
            return Err(fail(b"cannot close inherited file descriptors", Some(e)));
        }
        match next {
            Some(k) => lo = k.saturating_add(1),
            None => return Ok(()),
        }
    }
}

/// The broker's own landlock domain, taken before the fork so that the
/// command's lies inside it: abstract unix sockets scoped, nothing else.
/// The broker connects sockets for the command (`broker::unix`); in this
/// domain it reaches the abstract sockets made in the sandbox and none
/// outside it, as the command itself would.
pub fn scope_broker<'a>(p: &Program<'a>) -> Result<(), Fail<'a>> {
    const ABSTRACT_UNIX_SOCKET: u64 = 1;
    if p.scoped & ABSTRACT_UNIX_SOCKET == 0 {
        return Ok(());
    }
    scope_only(ABSTRACT_UNIX_SOCKET, Some(p))
}

/// Puts the calling process in a landlock domain that restricts nothing
/// but the `scoped` kinds (abstract unix sockets, signals): no_new_privs,
/// then the layer. Every landlock layer denies a rename or link across
/// directories (REFER) unless a rule grants it, even one that handles no
/// file access: granted beneath `/`, so this layer scopes and nothing else
/// (and beneath the host roots a broker's program holds, `hosts`).
pub fn scope_only<'a>(scoped: u64, hosts: Option<&Program<'a>>) -> Result<(), Fail<'a>> {
    #[repr(C)]
    struct Attr {
        fs: u64,
        net: u64,
        scoped: u64,
    }
    let attr = Attr {
        fs: super::stub_format::access::REFER,
        net: 0,
        scoped,
    };
    const PR_SET_NO_NEW_PRIVS: usize = 38;
    if let Err(e) = prctl(PR_SET_NO_NEW_PRIVS, 1) {
        return Err(fail(b"cannot set no_new_privs", Some(e)));
    }
    // SAFETY: a valid attribute struct of the size given.
    let rs = match unsafe {
        sys::call(
            sys::LANDLOCK_CREATE_RULESET,
            &[&attr as *const Attr as usize, core::mem::size_of::<Attr>()],
        )
    } {
        Ok(fd) => fd as i32,
        Err(e) => {
            return Err(fail(
                b"landlock: cannot create a scope-only ruleset",
                Some(e),
            ))
        }
    };
    let mut buf = [0u8; MAX_PATH + 1];
    if let Err(f) = add_path_rule(rs, b"/", super::stub_format::access::REFER, &mut buf) {
        sys::close(rs);
        return Err(f);
    }
    // The broker links between two writable roots through the host's
    // mount of them (`broker::hostlink`), whose paths lie outside the
    // sandbox's `/`: the same grant, on the roots themselves.
    for (fd, _) in hosts
        .into_iter()
        .flat_map(|p| p.hosts())
        .filter(|(fd, _)| *fd >= 0)
    {
        let rule = PathBeneath {
            allowed: super::stub_format::access::REFER,
            parent: fd,
        };
        // SAFETY: a valid rule of type LANDLOCK_RULE_PATH_BENEATH.
        let r = unsafe {
            sys::call(
                sys::LANDLOCK_ADD_RULE,
                &[rs as usize, 1, &rule as *const PathBeneath as usize],
            )
        };
        if let Err(e) = r {
            sys::close(rs);
            return Err(fail(
                b"landlock: cannot add the broker's rule for a root",
                Some(e),
            ));
        }
    }
    // SAFETY: a ruleset descriptor and no flags.
    let r = unsafe { sys::call(sys::LANDLOCK_RESTRICT_SELF, &[rs as usize]) };
    sys::close(rs);
    match r {
        Ok(_) => Ok(()),
        Err(e) => Err(fail(b"landlock restrict_self failed (scope only)", Some(e))),
    }
}

/// `SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV`:
/// the last filter hands notifications to the broker, and once the broker
/// has taken one, only a fatal signal interrupts the waiting command (so an
/// operation done for it is never done twice by a restarted call).
pub const LISTENER_FLAGS: usize = (1 << 3) | (1 << 5);

/// Applies the layer in landlock.rs's order: no_new_privs, capabilities,
/// landlock, seccomp. Everything that can fail on bad input (the ruleset)
/// is built before the first irreversible step. Descriptors are closed by
/// `close_fds` afterwards. Returns the broker's listener when `listener`.
pub fn apply<'a>(p: &Program<'a>, listener: bool) -> Result<Option<i32>, Fail<'a>> {
    // Without landlock (`NO_LANDLOCK`) the mounts around hold what it
    // would; the first stage refused every policy that needs it.
    let rs = if p.no_landlock() {
        None
    } else {
        Some(build_ruleset(p)?)
    };
    const PR_SET_NO_NEW_PRIVS: usize = 38;
    if let Err(e) = prctl(PR_SET_NO_NEW_PRIVS, 1) {
        return Err(fail(b"cannot set no_new_privs", Some(e)));
    }
    drop_capabilities()?;
    if let Some(rs) = rs {
        // SAFETY: a ruleset descriptor and no flags.
        if let Err(e) = unsafe { sys::call(sys::LANDLOCK_RESTRICT_SELF, &[rs as usize]) } {
            return Err(fail(b"landlock restrict_self failed", Some(e)));
        }
        sys::close(rs);
    }
    #[repr(C)]
    struct Fprog {
        len: u16,
        filter: *const u8,
    }
    const SECCOMP_SET_MODE_FILTER: usize = 1;
    let count = p.filters().count();
    let mut got = None;
    for (i, (len, insns)) in p.filters().enumerate() {
        let prog = Fprog {
            len,
            filter: insns.as_ptr(),
        };
        let flags = if listener && i + 1 == count {
            LISTENER_FLAGS
        } else {
            0
        };
        // SAFETY: a sock_fprog pointing at `len` instructions.
        match unsafe {
            sys::call(
                nr::SECCOMP,
                &[SECCOMP_SET_MODE_FILTER, flags, &prog as *const Fprog as usize],
            )
        } {
            Ok(fd) if flags != 0 => got = Some(fd as i32),
            Ok(_) => {}
            // EBUSY: a filter above (an outer sandbox's) has a listener
            // already, and the kernel allows one per chain.
            Err(16) => {
                return Err(fail(
                    b"cannot install the seccomp filter: this sandbox runs inside another one that already brokers its system calls",
                    None,
                ))
            }
            Err(e) => return Err(fail(b"cannot install the seccomp filter", Some(e))),
        }
    }
    if listener && got.is_none() {
        return Err(fail(b"the broker's seccomp filter is missing", None));
    }
    Ok(got)
}

/// Sends descriptor `fd` over the unix socket `chan` (SCM_RIGHTS).
pub fn send_fd(chan: i32, fd: i32) -> Result<(), i32> {
    send_fd_tagged(chan, fd, b"F")
}

/// `send_fd`, with the one data byte the message carries.
pub fn send_fd_tagged(chan: i32, fd: i32, byte: &[u8; 1]) -> Result<(), i32> {
    #[repr(C)]
    struct Cmsg {
        len: usize,
        level: i32,
        kind: i32,
        fd: i32,
        pad: i32,
    }
    #[repr(C)]
    struct Msghdr {
        name: usize,
        namelen: u32,
        iov: *const [usize; 2],
        iovlen: usize,
        control: *const Cmsg,
        controllen: usize,
        flags: i32,
    }
    let cm = Cmsg {
        len: core::mem::size_of::<usize>() + 8 + 4,
        level: 1, // SOL_SOCKET
        kind: 1,  // SCM_RIGHTS
        fd,
        pad: 0,
    };
    let iov = [byte.as_ptr() as usize, 1];
    let msg = Msghdr {
        name: 0,
        namelen: 0,
        iov: &iov,
        iovlen: 1,
        control: &cm,
        controllen: core::mem::size_of::<Cmsg>(),
        flags: 0,
    };
    // SAFETY: a complete msghdr whose pointers live on this frame.
    unsafe {
        sys::call_retry(
            nr::SENDMSG,
            &[chan as usize, &msg as *const Msghdr as usize, 0],
        )
    }
    .map(|_| ())
}

/// Receives one descriptor sent by `send_fd`; None at the end of the stream.
pub fn recv_fd(chan: i32) -> Result<Option<i32>, i32> {
    #[repr(C)]
    struct Msghdr {
        name: usize,
        namelen: u32,
        iov: *const [usize; 2],
        iovlen: usize,
        control: *mut u8,
        controllen: usize,
        flags: i32,
    }
    let mut byte = [0u8; 1];
    let iov = [byte.as_mut_ptr() as usize, 1];
    let mut control = [0u8; 64];
    let mut msg = Msghdr {
        name: 0,
        namelen: 0,
        iov: &iov,
        iovlen: 1,
        control: control.as_mut_ptr(),
        controllen: control.len(),
        flags: 0,
    };
    const MSG_CMSG_CLOEXEC: usize = 0x4000_0000;
    // SAFETY: a complete msghdr whose buffers live on this frame.
    let n = unsafe {
        sys::call_retry(
            nr::RECVMSG,
            &[
                chan as usize,
                &mut msg as *mut Msghdr as usize,
                MSG_CMSG_CLOEXEC,
            ],
        )
    }?;
    if n == 0 {
        return Ok(None);
    }
    // One cmsghdr: len (usize), level (i32), type (i32), then the fd.
    let hdr = core::mem::size_of::<usize>() + 8;
    if msg.controllen < hdr + 4 {
        return Ok(None);
    }
    let level = i32::from_ne_bytes([control[8], control[9], control[10], control[11]]);
    let kind = i32::from_ne_bytes([control[12], control[13], control[14], control[15]]);
    if level != 1 || kind != 1 {
        return Ok(None);
    }
    let fd = i32::from_ne_bytes([
        control[hdr],
        control[hdr + 1],
        control[hdr + 2],
        control[hdr + 3],
    ]);
    Ok(Some(fd))
}

/// The signals the broker passes on to the command when they were sent to
/// it (a terminal's reach the command's group directly).
pub const PASSED_ON: [usize; 6] = [1, 2, 3, 10, 12, 15];
const SIGCHLD: usize = 17;
const SIGTSTP: usize = 20;
const SIGTTIN: usize = 21;
const SIGTTOU: usize = 22;
const SIGWINCH: usize = 28;
const SI_KERNEL: i32 = 0x80;

fn sigset(sigs: &[usize]) -> u64 {
    sigs.iter().fold(0u64, |m, s| m | 1 << (s - 1))
}

fn ignore(sig: usize) {
    // struct sigaction as the kernel takes it: handler SIG_IGN (1), no
    // flags, no restorer, empty mask.
    let act = [1usize, 0, 0, 0];
    // SAFETY: a valid sigaction and the kernel's sigset size.
    let _ = unsafe { sys::call(nr::RT_SIGACTION, &[sig, act.as_ptr() as usize, 0, 8]) };
}

/// Makes fds 0–2 /dev/null: the broker holds nothing of the command's, so
/// a pipe the command closes is closed.
fn detach_stdio() {
    if let Ok(null) = sys::openat(AT_FDCWD, b"/dev/null\0", O_RDWR | O_CLOEXEC, 0) {
        for fd in 0..3usize {
            // SAFETY: dup3 onto a standard descriptor number.
            let _ = unsafe { sys::call(nr::DUP3, &[null.raw(), fd, 0]) };
        }
    }
}

/// The wait status as an exit status: the code, or 128+N.
pub fn exit_status(ws: i32) -> i32 {
    if ws & 0x7f == 0 {
        (ws >> 8) & 0xff
    } else {
        super::stub_format::SIGNAL_STATUS_BASE + (ws & 0x7f)
    }
}

/// Runs the layer and the command. Without a broker: applies, closes
/// descriptors and calls `exec`, whose status (exec failed) is returned.
/// With one: forks; the child applies, sends its listener here and execs;
/// this process serves the notifications until the child exits and
/// returns its exit status. A `Fail` in the child is returned by the child.
pub fn run<'a>(p: &Program<'a>, exec: &mut dyn FnMut() -> i32) -> Result<i32, Fail<'a>> {
    if !p.broker() && !p.no_landlock() {
        apply(p, false)?;
        close_fds(p)?;
        return Ok(exec());
    }
    scope_broker(p)?;
    if p.hosts().any(|(fd, _)| fd >= 0) || p.no_landlock() {
        // The broker holds the writable roots as the host's mounts hold
        // them, past every read-only mount inside: not dumpable, so that no
        // process of the sandbox (same user, no capability) can take one
        // through /proc/<broker>/fd, whether or not landlock is there. Set
        // before the fork: the command's exec makes it dumpable again.
        // Without landlock, whose domain keeps the command from every
        // process outside it, this process is the sandbox's init (bwrap
        // runs with --as-pid-1) and the only other process there: with no
        // filter of its own it must not be reachable through /proc/1/mem.
        const PR_SET_DUMPABLE: usize = 4;
        if let Err(e) = prctl(PR_SET_DUMPABLE, 0) {
            return Err(fail(b"cannot make the broker undumpable", Some(e)));
        }
    }
    if !p.broker() {
        return supervise(p, exec);
    }
    let mut pair = [0i32; 2];
    const AF_UNIX: usize = 1;
    const SOCK_STREAM_CLOEXEC: usize = 1 | 0o2000000;
    // SAFETY: an array of two ints.
    if let Err(e) = unsafe {
        sys::call(
            nr::SOCKETPAIR,
            &[AF_UNIX, SOCK_STREAM_CLOEXEC, 0, pair.as_mut_ptr() as usize],
        )
    } {
        return Err(fail(b"cannot make the broker's channel", Some(e)));
    }
    // The broker's signals are blocked before the fork, so that none (the
    // command's exit above all) comes before its loop listens.
    let pid = fork_blocked(b"cannot fork the broker")?;
    if pid == 0 {
        sys::close(pair[0]);
        let l = apply(p, true)?.unwrap_or(-1);
        if let Err(e) = send_fd(pair[1], l) {
            return Err(fail(b"cannot hand the listener to the broker", Some(e)));
        }
        sys::close(l);
        sys::close(pair[1]);
        close_fds(p)?;
        return Ok(exec());
    }
    sys::close(pair[1]);
    // The child's status is what this process ends with: refusals and exec
    // failures alike, said by the child.
    let listener = match recv_fd(pair[0]) {
        Ok(Some(fd)) => fd,
        _ => return Ok(wait_child(pid)),
    };
    sys::close(pair[0]);
    Ok(serve(listener, pid, p))
}

/// Without landlock and without a broker: this process stays as the
/// sandbox's init, undumpable, passing signals on and reaping, while its
/// child applies the layer and becomes the command.
fn supervise<'a>(p: &Program<'a>, exec: &mut dyn FnMut() -> i32) -> Result<i32, Fail<'a>> {
    let pid = fork_blocked(b"cannot fork the supervisor")?;
    if pid == 0 {
        apply(p, false)?;
        close_fds(p)?;
        return Ok(exec());
    }
    Ok(serve(-1, pid, p))
}

/// Forks with the signals this process passes on (and SIGCHLD) blocked,
/// so that none comes before the parent's loop listens; the child gets
/// the caller's mask back. The child's pid, 0 in the child.
fn fork_blocked<'a>(what: &'static [u8]) -> Result<i32, Fail<'a>> {
    let mask = sigset(&PASSED_ON) | sigset(&[SIGCHLD]);
    let mut old = 0u64;
    // SAFETY: SIG_BLOCK with sigsets of 8 bytes.
    let _ = unsafe {
        sys::call(
            nr::RT_SIGPROCMASK,
            &[
                0,
                &mask as *const u64 as usize,
                &mut old as *mut u64 as usize,
                8,
            ],
        )
    };
    // SAFETY: a plain fork (clone with SIGCHLD only).
    let pid = match unsafe { sys::call(nr::CLONE, &[SIGCHLD, 0, 0, 0, 0]) } {
        Ok(pid) => pid as i32,
        Err(e) => return Err(fail(what, Some(e))),
    };
    if pid == 0 {
        // SAFETY: SIG_SETMASK with a sigset of 8 bytes.
        let _ = unsafe { sys::call(nr::RT_SIGPROCMASK, &[2, &old as *const u64 as usize, 0, 8]) };
    }
    Ok(pid)
}

fn wait_child(pid: i32) -> i32 {
    let mut ws = 0i32;
    loop {
        // SAFETY: wait4 on our child with a valid status pointer.
        match unsafe {
            sys::call(
                nr::WAIT4,
                &[pid as usize, &mut ws as *mut i32 as usize, 0, 0],
            )
        } {
            Ok(_) => return exit_status(ws),
            Err(4) => {}
            Err(_) => return super::stub_format::UNAVAILABLE_STATUS,
        }
    }
}

/// The broker's loop: notifications, the command's exit, and the signals it
/// passes on. Returns the command's exit status.
fn serve(listener: i32, child: i32, p: &Program<'_>) -> i32 {
    detach_stdio();
    for s in [SIGTSTP, SIGTTIN, SIGTTOU, SIGWINCH] {
        ignore(s);
    }
    // Blocked since before the fork (`run`).
    let mask = sigset(&PASSED_ON) | sigset(&[SIGCHLD]);
    const SFD_CLOEXEC: usize = 0o2000000;
    // SAFETY: a new signalfd for `mask`.
    let sfd = match unsafe {
        sys::call(
            nr::SIGNALFD4,
            &[usize::MAX, &mask as *const u64 as usize, 8, SFD_CLOEXEC],
        )
    } {
        Ok(fd) => fd as i32,
        Err(_) => {
            // Without it the command cannot be supervised here: end it.
            // SAFETY: plain kill of our child.
            let _ = unsafe { sys::call(nr::KILL, &[child as usize, 9]) };
            return wait_child(child);
        }
    };
    // A command that exited before the signalfd existed is reaped now.
    if let Some(status) = reap(child) {
        return status;
    }
    let mut listening = listener >= 0;
    let mut shadows = super::broker::Shadows::default();
    loop {
        #[repr(C)]
        struct PollFd {
            fd: i32,
            events: i16,
            revents: i16,
        }
        const POLLIN: i16 = 1;
        let mut fds = [
            PollFd {
                fd: sfd,
                events: POLLIN,
                revents: 0,
            },
            PollFd {
                fd: if listening { listener } else { -1 },
                events: POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two valid pollfds, no timeout, no mask change.
        match unsafe { sys::call(nr::PPOLL, &[fds.as_mut_ptr() as usize, 2, 0, 0, 8]) } {
            Ok(_) | Err(4) => {}
            Err(_) => return stop(child),
        }
        const POLLERR_HUP: i16 = 0x8 | 0x10;
        if fds[1].revents & POLLIN != 0 {
            if super::broker::handle_one(listener, p, &mut shadows).is_err() {
                // The listener failed: every brokered call now fails
                // (ENOSYS), which is safe; keep supervising.
                listening = false;
            }
        } else if fds[1].revents & POLLERR_HUP != 0 {
            // No process uses the filter any more.
            listening = false;
        }
        if fds[0].revents & POLLIN != 0 {
            // struct signalfd_siginfo: 128 bytes, ssi_signo u32 @0, ssi_code i32 @8.
            let mut si = [0u8; 128];
            // SAFETY: a buffer of 128 bytes.
            let got =
                unsafe { sys::call(nr::READ, &[sfd as usize, si.as_mut_ptr() as usize, 128]) };
            if let Ok(128) = got {
                let signo = u32::from_ne_bytes([si[0], si[1], si[2], si[3]]) as usize;
                let code = i32::from_ne_bytes([si[8], si[9], si[10], si[11]]);
                if signo == SIGCHLD {
                    if let Some(status) = reap(child) {
                        return status;
                    }
                } else if code != SI_KERNEL {
                    // SAFETY: a signal to our own child.
                    let _ = unsafe { sys::call(nr::KILL, &[child as usize, signo]) };
                }
            }
        }
    }
}

/// Reaps every exited child (the command, and helpers that waited on a
/// FIFO); the command's exit status once it exited.
fn reap(child: i32) -> Option<i32> {
    let mut out = None;
    loop {
        let mut ws = 0i32;
        const WNOHANG: usize = 1;
        // SAFETY: wait4 on any child, non-blocking.
        match unsafe {
            sys::call(
                nr::WAIT4,
                &[usize::MAX, &mut ws as *mut i32 as usize, WNOHANG, 0],
            )
        } {
            Ok(0) | Err(_) => return out,
            Ok(pid) if pid as i32 == child => out = Some(exit_status(ws)),
            Ok(_) => {}
        }
    }
}

fn stop(child: i32) -> i32 {
    // SAFETY: plain kill of our child.
    let _ = unsafe { sys::call(nr::KILL, &[child as usize, 9]) };
    wait_child(child)
}
