//! The broker when denials are recorded (the program has a report
//! descriptor): it learns what the filter meant for the call from the tag
//! in the filter's answer (`denial_wire::TAG_*`), and
//! - performs a brokered call as always, recording a refusal it answers;
//! - answers a call the filter refuses with the filter's own errno, and
//!   records it;
//! - for a call the filter allows, predicts from the layer's rules (and a
//!   read-only mount) whether the kernel will refuse it, records that
//!   prediction, and lets the kernel run the call
//!   (SECCOMP_USER_NOTIF_FLAG_CONTINUE): the kernel's layers decide, so a
//!   wrong prediction (a path changed meanwhile) makes a record wrong,
//!   never a call allowed.
//!
//! The tag is read by running the installed filter here on the call's
//! `seccomp_data`: a program the interpreter does not understand is
//! treated as tag 0 (brokered), which performs nothing the broker's own
//! checks refuse.
//!
//! Records go to a non-blocking pipe; one that does not fit is counted and
//! the count travels with the next record that does. `core` only.

use super::super::denial_wire::{
    self as wire, Fact, INET, LEXICAL, SOURCE_BROKER, SOURCE_FILTER, SOURCE_PREDICTED, TAG_BROKER,
    TAG_CONTINUE, TAG_ERRNO,
};
use super::{
    answer, dispatch, make_right, path_of, proc_path, right, rights_of, stat_at, sys, Buf, Ctx, Fd,
    Reply, Resp, SeccompData, AT_FDCWD, EACCES, EBUSY, EPERM, EROFS, EXDEV, IOCTL_SEND, O_ACCMODE,
    O_CLOEXEC, O_CREAT, O_NOFOLLOW, O_PATH, O_RDWR, O_TMPFILE_BIT, O_TRUNC, O_WRONLY, S_IFDIR,
    S_IFMT,
};
use core::sync::atomic::{AtomicU32, Ordering};

static DROPPED: AtomicU32 = AtomicU32::new(0);

const RET_ACTION_FULL: u32 = 0xffff_0000;
const RET_USER_NOTIF: u32 = 0x7fc0_0000;
const USER_NOTIF_FLAG_CONTINUE: u32 = 1;
const AT_REMOVEDIR: u64 = 0x200;
const ST_RDONLY: u64 = 1;
const ENETUNREACH: i32 = 101;
const ECONNREFUSED: i32 = 111;
const EHOSTUNREACH: i32 = 113;
const SO_TYPE: usize = 3;
const EINPROGRESS: i32 = 115;

/// Calls observed here that the broker's own table does not name.
#[cfg(target_arch = "x86_64")]
mod more {
    pub const UNLINK: usize = 87;
    pub const RMDIR: usize = 84;
    pub const TRUNCATE: usize = 76;
    pub const UNLINKAT: usize = 263;
}
#[cfg(target_arch = "aarch64")]
mod more {
    pub const UNLINK: usize = usize::MAX - 1;
    pub const RMDIR: usize = usize::MAX - 2;
    pub const TRUNCATE: usize = 45;
    pub const UNLINKAT: usize = 35;
}

/// Answers one notification of a program that records denials.
pub(super) fn handle(c: &Ctx<'_>) {
    let tag = tag_of(c.prog, &c.req.data).unwrap_or(TAG_BROKER);
    if tag & TAG_CONTINUE != 0 {
        if let Some(e) = predict(c) {
            record(c, SOURCE_PREDICTED, e);
        }
        let r = Resp {
            id: c.req.id,
            val: 0,
            error: 0,
            flags: USER_NOTIF_FLAG_CONTINUE,
        };
        // SAFETY: a complete struct seccomp_notif_resp.
        let _ = unsafe {
            sys::call(
                sys::nr::IOCTL,
                &[c.listener as usize, IOCTL_SEND, &r as *const Resp as usize],
            )
        };
        return;
    }
    if tag & TAG_ERRNO != 0 {
        let e = i32::from(tag & 0x0fff);
        record(c, SOURCE_FILTER, e);
        answer(c, Reply::Err(e));
        return;
    }
    let reply = dispatch(c);
    if let Reply::Err(e) = &reply {
        // EBUSY: a rename or link onto a name a read-only mount keeps (a
        // protected file: `git config` renames its lock file onto
        // .git/config). Inside the sandbox every mount point is dcjail's.
        // EXDEV on a link: a hard link between two writable roots (each
        // its own mount here) that the broker did not make for the
        // command (a kept file, one from outside, a program restricted by
        // itself); without dcjail, on one filesystem, the link is made.
        if matches!(*e, EACCES | EPERM | EROFS | EBUSY)
            || unreached(c, *e)
            || (*e == EXDEV && is_link(c))
        {
            record(c, SOURCE_BROKER, *e);
        } else if *e == EINPROGRESS && refused_at_once(c) {
            record(c, SOURCE_BROKER, ECONNREFUSED);
        }
    }
    answer(c, reply);
}

/// `link` or `linkat`.
fn is_link(c: &Ctx<'_>) -> bool {
    let n = c.req.data.nr as usize;
    #[cfg(target_arch = "x86_64")]
    if n == sys::nr::LINK {
        return true;
    }
    n == sys::nr::LINKAT
}

/// A connect that failed because the command's network is a namespace of
/// dcjail's, where loopback is the only interface: no route out (a
/// `git://` fetch, ssh, a name lookup of a program that does not use the
/// proxy), or nothing listening on loopback (which `denials::network`
/// keeps only when the host's loopback has a listener there).
fn unreached(c: &Ctx<'_>, e: i32) -> bool {
    c.req.data.nr as usize == sys::nr::CONNECT
        && c.prog.own_network()
        && matches!(e, ENETUNREACH | EHOSTUNREACH | ECONNREFUSED)
}

/// A non-blocking connect (most clients with a timeout: Go, node,
/// Python's `settimeout`) answers EINPROGRESS and learns its end later.
/// On the command's own loopback the handshake, or the reset of a port
/// nothing listens on, is over by now: the socket polls as failed
/// (POLLERR). `poll` reads that without taking the error the command will
/// read (SO_ERROR would clear it). A socket still connecting is not
/// recorded.
fn refused_at_once(c: &Ctx<'_>) -> bool {
    const POLLOUT: i16 = 4;
    const POLLERR: i16 = 8;
    if c.req.data.nr as usize != sys::nr::CONNECT || !c.prog.own_network() {
        return false;
    }
    let Ok((tgid, _)) = super::status_of(c.req.pid) else {
        return false;
    };
    let Ok(sock) = super::create::their_fd(tgid, c.arg(0)) else {
        return false;
    };
    #[repr(C)]
    struct PollFd {
        fd: i32,
        events: i16,
        revents: i16,
    }
    let mut p = PollFd {
        fd: sock.raw() as i32,
        events: POLLOUT,
        revents: 0,
    };
    let zero = [0u64; 2];
    // SAFETY: one struct pollfd and a zero timespec (no wait).
    let n = unsafe {
        sys::call(
            sys::nr::PPOLL,
            &[
                &mut p as *mut PollFd as usize,
                1,
                zero.as_ptr() as usize,
                0,
                0,
            ],
        )
    };
    n == Ok(1) && p.revents & POLLERR != 0
}

/// Runs the last installed filter (the one with the listener) on `d` and
/// returns the tag of a user-notification answer. Only the instructions
/// `seccomp::compile` emits are understood.
fn tag_of(p: &super::Program<'_>, d: &SeccompData) -> Option<u16> {
    let (len, insns) = p.filters().last()?;
    let word = |k: u32| -> Option<u32> {
        let k = k as usize;
        let v = match k {
            0 => d.nr as u32,
            4 => d.arch,
            8 => d.ip as u32,
            12 => (d.ip >> 32) as u32,
            16..=63 if k.is_multiple_of(4) => {
                let a = d.args[(k - 16) / 8];
                if k.is_multiple_of(8) {
                    a as u32
                } else {
                    (a >> 32) as u32
                }
            }
            _ => return None,
        };
        Some(v)
    };
    let (mut acc, mut pc) = (0u32, 0usize);
    // Jumps go forward only, so a program ends within `len` steps.
    for _ in 0..=len {
        let i = insns.get(pc * 8..pc * 8 + 8)?;
        let code = u16::from_ne_bytes([i[0], i[1]]);
        let (jt, jf) = (i[2] as usize, i[3] as usize);
        let k = u32::from_ne_bytes([i[4], i[5], i[6], i[7]]);
        pc += 1;
        match code {
            0x20 => acc = word(k)?,
            0x54 => acc &= k,
            0x05 => pc += k as usize,
            0x15 => pc += if acc == k { jt } else { jf },
            0x35 => pc += if acc >= k { jt } else { jf },
            0x25 => pc += if acc > k { jt } else { jf },
            0x45 => pc += if acc & k != 0 { jt } else { jf },
            0x06 if k & RET_ACTION_FULL == RET_USER_NOTIF => return Some(k as u16),
            0x06 => return None,
            _ => return None,
        }
    }
    None
}

/// `(dirfd argument, path argument)` of the call, or the descriptor it
/// acts on (`None` for the path).
fn path_args(c: &Ctx<'_>) -> Option<(u64, Option<usize>)> {
    use sys::nr;
    let n = c.req.data.nr as usize;
    let fdcwd = AT_FDCWD as u64;
    #[cfg(target_arch = "x86_64")]
    {
        let r = match n {
            nr::OPEN
            | nr::CREAT
            | nr::MKDIR
            | nr::MKNOD
            | nr::CHMOD
            | nr::CHOWN
            | nr::LCHOWN
            | nr::UTIME
            | nr::UTIMES
            | nr::SETXATTR
            | nr::LSETXATTR
            | nr::REMOVEXATTR
            | nr::LREMOVEXATTR => Some((fdcwd, Some(0))),
            more::UNLINK | more::RMDIR | more::TRUNCATE => Some((fdcwd, Some(0))),
            nr::SYMLINK | nr::LINK | nr::RENAME => Some((fdcwd, Some(1))),
            nr::FUTIMESAT => Some((c.arg(0), Some(1))),
            _ => None,
        };
        if r.is_some() {
            return r;
        }
    }
    match n {
        nr::OPENAT
        | nr::MKDIRAT
        | nr::MKNODAT
        | nr::FCHMODAT
        | nr::FCHOWNAT
        | more::UNLINKAT
        | sys::FCHMODAT2 => Some((c.arg(0), Some(1))),
        nr::UTIMENSAT if c.arg(1) != 0 => Some((c.arg(0), Some(1))),
        nr::UTIMENSAT | nr::FCHMOD | nr::FCHOWN | nr::FSETXATTR | nr::FREMOVEXATTR => {
            Some((c.arg(0), None))
        }
        nr::SYMLINKAT => Some((c.arg(1), Some(2))),
        nr::LINKAT | nr::RENAMEAT2 => Some((c.arg(2), Some(3))),
        #[cfg(target_arch = "x86_64")]
        nr::RENAMEAT => Some((c.arg(2), Some(3))),
        _ => None,
    }
}

/// The argument the rule depends on: open flags, a mode, a socket family.
fn rule_arg(c: &Ctx<'_>) -> u64 {
    use sys::nr;
    let n = c.req.data.nr as usize;
    #[cfg(target_arch = "x86_64")]
    if matches!(n, nr::OPEN | nr::CHMOD | nr::MKNOD | nr::CREAT | nr::MKDIR) {
        return c.arg(1);
    }
    match n {
        nr::OPENAT | nr::FCHMODAT | sys::FCHMODAT2 | nr::MKNODAT | nr::MKDIRAT => c.arg(2),
        nr::FCHMOD => c.arg(1),
        nr::SOCKET => c.arg(0) | (c.arg(1) << 32),
        _ => 0,
    }
}

/// Sends one record; counts it when the pipe is full.
fn record(c: &Ctx<'_>, source: u8, errno: i32) {
    let mut named = Buf::new();
    let mut resolved = Buf::new();
    let mut flags = 0u8;
    let mut arg = rule_arg(c);
    let n = c.req.data.nr as usize;
    if n == sys::nr::CONNECT || n == sys::nr::BIND {
        flags = socket_for_record(c, &mut named, &mut resolved, &mut arg);
    } else if let Some((dirfd, arg)) = path_args(c) {
        flags = resolve_for_record(c, dirfd, arg, &mut named, &mut resolved);
    }
    let mut program = [0u8; wire::MAX_PROGRAM];
    let plen = argv0(c.req.pid, &mut program);
    let dropped = DROPPED.swap(0, Ordering::Relaxed);
    let fact = Fact {
        source,
        flags,
        nr: c.req.data.nr,
        errno,
        pid: c.req.pid,
        arg,
        dropped,
        named: named.bytes(),
        resolved: resolved.bytes(),
        program: &program[..plen],
    };
    let mut out = [0u8; wire::MAX_RECORD];
    let n = wire::encode(&fact, &mut out);
    // SAFETY: a buffer of n bytes; the descriptor is the program's own.
    let sent = unsafe {
        sys::call(
            sys::nr::WRITE,
            &[c.prog.report_fd as usize, out.as_ptr() as usize, n],
        )
    };
    if sent != Ok(n) {
        DROPPED.fetch_add(dropped.saturating_add(1), Ordering::Relaxed);
    }
}

/// The path of a unix socket's address (connect, bind), as named and as
/// it resolves (the socket file itself for connect, which follows a final
/// symlink); an internet address as its raw bytes (`INET`, the socket's
/// type in `arg`: datagram for a name lookup); nothing for another.
fn socket_for_record(c: &Ctx<'_>, named: &mut Buf, resolved: &mut Buf, arg: &mut u64) -> u8 {
    let len = (c.arg(2) as usize).min(110);
    let mut sa = [0u8; 110];
    if len <= 2 || super::read_exact(c.req.pid, c.arg(1), &mut sa[..len]).is_err() {
        return 0;
    }
    let family = u16::from_ne_bytes([sa[0], sa[1]]);
    if family == 2 || family == 10 {
        if named.set(&[&sa[..len]]).is_err() {
            return 0;
        }
        if let Ok((tgid, _)) = super::status_of(c.req.pid) {
            if let Ok(sock) = super::create::their_fd(tgid, c.arg(0)) {
                *arg = super::create::sockopt(&sock, SO_TYPE).map_or(0, |t| t as u64);
            }
        }
        return INET;
    }
    if family != 1 || sa[2] == 0 {
        return 0;
    }
    let path = &sa[2..len];
    let end = path.iter().position(|b| *b == 0).unwrap_or(path.len());
    if named.set(&[&path[..end]]).is_err() {
        return 0;
    }
    let follow = c.req.data.nr as usize == sys::nr::CONNECT;
    if let Ok(at) = c.resolver().at(AT_FDCWD as u64, named, follow) {
        let mut dir = Buf::new();
        if path_of(&at.dir, &mut dir).is_ok() {
            let sep: &[u8] = if dir.bytes() == b"/" { b"" } else { b"/" };
            if resolved.set(&[dir.bytes(), sep, at.name.bytes()]).is_ok() {
                return 0;
            }
        }
    }
    if named.bytes().first() == Some(&b'/') {
        let _ = resolved.set(&[named.bytes()]);
    }
    LEXICAL
}

/// Reads the path as named and resolves it for the record; the flags.
fn resolve_for_record(
    c: &Ctx<'_>,
    dirfd: u64,
    arg: Option<usize>,
    named: &mut Buf,
    resolved: &mut Buf,
) -> u8 {
    let Some(i) = arg else {
        // A descriptor: where it points.
        if let Ok(fd) = c.resolver().fd_target(dirfd) {
            let _ = path_of(&fd, resolved);
        }
        return 0;
    };
    if c.string(i, named).is_err() {
        return 0;
    }
    let mut r = c.resolver();
    if let Ok(at) = r.at(dirfd, named, false) {
        let mut dir = Buf::new();
        if path_of(&at.dir, &mut dir).is_ok() {
            let sep: &[u8] = if dir.bytes() == b"/" { b"" } else { b"/" };
            if resolved.set(&[dir.bytes(), sep, at.name.bytes()]).is_ok() {
                return 0;
            }
        }
    }
    // Not resolvable now (a missing directory): the name joined to where it
    // is relative to, as far as it can be said.
    if named.bytes().first() == Some(&b'/') {
        let _ = resolved.set(&[named.bytes()]);
        return LEXICAL;
    }
    let mut base = Buf::new();
    let ok = if dirfd as i32 == AT_FDCWD as i32 {
        let mut p = Buf::new();
        proc_path(&mut p, c.req.pid, b"cwd").is_ok()
            && super::readlink_at(AT_FDCWD, p.c(), &mut base).is_ok()
    } else {
        c.resolver()
            .fd_target(dirfd)
            .is_ok_and(|fd| path_of(&fd, &mut base).is_ok())
    };
    if ok {
        let _ = resolved.set(&[base.bytes(), b"/", named.bytes()]);
    }
    LEXICAL
}

/// The command's argv[0], from /proc/<pid>/cmdline.
fn argv0(pid: u32, out: &mut [u8; wire::MAX_PROGRAM]) -> usize {
    let mut p = Buf::new();
    if proc_path(&mut p, pid, b"cmdline").is_err() {
        return 0;
    }
    let Ok(fd) = sys::openat(AT_FDCWD, p.c(), O_CLOEXEC, 0) else {
        return 0;
    };
    // SAFETY: a buffer of out.len() bytes.
    let n = unsafe {
        sys::call(
            sys::nr::READ,
            &[fd.raw(), out.as_mut_ptr() as usize, out.len()],
        )
    }
    .unwrap_or(0);
    out[..n].iter().position(|b| *b == 0).unwrap_or(n)
}

/// Whether the mount holding `fd` is read-only.
fn read_only_mount(fd: &Fd) -> bool {
    let mut st = [0u64; 16];
    // SAFETY: struct statfs is 120 bytes on both architectures; 128 given.
    match unsafe { sys::call(sys::nr::FSTATFS, &[fd.raw(), st.as_mut_ptr() as usize]) } {
        Ok(_) => st[10] & ST_RDONLY != 0,
        Err(_) => false,
    }
}

/// What a continued call needs where it acts.
enum Need {
    /// An entry made (`true`) or removed in the directory the path is in.
    Entry(u64, bool),
    /// The file the path names, opened or truncated; `true`: an O_CREAT
    /// that makes it when missing.
    File(u64, bool),
}

fn need_of(c: &Ctx<'_>) -> Option<(u64, usize, Need)> {
    use sys::nr;
    let n = c.req.data.nr as usize;
    let open = |dirfd: u64, arg: usize, flags: usize| {
        if flags & O_TMPFILE_BIT == O_TMPFILE_BIT {
            return None;
        }
        let mut need = match flags & O_ACCMODE {
            O_WRONLY => right::WRITE_FILE,
            O_RDWR => right::WRITE_FILE | right::READ_FILE,
            _ => 0,
        };
        if flags & O_TRUNC != 0 {
            need |= right::TRUNCATE;
        }
        Some((dirfd, arg, Need::File(need, flags & O_CREAT != 0)))
    };
    let fdcwd = AT_FDCWD as u64;
    #[cfg(target_arch = "x86_64")]
    {
        let r = match n {
            nr::OPEN => return open(fdcwd, 0, c.arg(1) as usize),
            nr::CREAT => return open(fdcwd, 0, O_CREAT | O_WRONLY | O_TRUNC),
            nr::MKDIR => Some((fdcwd, 0, Need::Entry(right::MAKE_DIR, true))),
            nr::MKNOD => Some((fdcwd, 0, Need::Entry(make_right(c.arg(1) as u32), true))),
            nr::SYMLINK => Some((fdcwd, 1, Need::Entry(right::MAKE_SYM, true))),
            nr::LINK | nr::RENAME => Some((fdcwd, 1, Need::Entry(right::MAKE_REG, true))),
            more::UNLINK => Some((fdcwd, 0, Need::Entry(right::REMOVE_FILE, false))),
            more::RMDIR => Some((fdcwd, 0, Need::Entry(right::REMOVE_DIR, false))),
            more::TRUNCATE => Some((fdcwd, 0, Need::File(right::TRUNCATE, false))),
            nr::RENAMEAT => Some((c.arg(2), 3, Need::Entry(right::MAKE_REG, true))),
            _ => None,
        };
        if r.is_some() {
            return r;
        }
    }
    match n {
        nr::OPENAT => open(c.arg(0), 1, c.arg(2) as usize),
        nr::MKDIRAT => Some((c.arg(0), 1, Need::Entry(right::MAKE_DIR, true))),
        nr::MKNODAT => Some((c.arg(0), 1, Need::Entry(make_right(c.arg(2) as u32), true))),
        nr::SYMLINKAT => Some((c.arg(1), 2, Need::Entry(right::MAKE_SYM, true))),
        nr::LINKAT | nr::RENAMEAT2 => Some((c.arg(2), 3, Need::Entry(right::MAKE_REG, true))),
        more::UNLINKAT if c.arg(2) & AT_REMOVEDIR != 0 => {
            Some((c.arg(0), 1, Need::Entry(right::REMOVE_DIR, false)))
        }
        more::UNLINKAT => Some((c.arg(0), 1, Need::Entry(right::REMOVE_FILE, false))),
        more::TRUNCATE => Some((AT_FDCWD as u64, 0, Need::File(right::TRUNCATE, false))),
        _ => None,
    }
}

/// The errno the kernel's layers will answer for a continued call, as far
/// as the rules say; `None` when it will run (or fail for another reason).
fn predict(c: &Ctx<'_>) -> Option<i32> {
    let (dirfd, arg, need) = need_of(c)?;
    let mut path = Buf::new();
    c.string(arg, &mut path).ok()?;
    let mut r = c.resolver();
    // An open follows a final symlink (/dev/stdout); an entry is the name.
    let at = r.at(dirfd, &path, matches!(need, Need::File(..))).ok()?;
    let exists = stat_at(&at.dir, &at.name).ok();
    let (fd, need) = match need {
        // EEXIST and ENOENT come before any permission.
        Need::Entry(n, true) if exists.is_none() => (None, n),
        Need::Entry(n, false) if exists.is_some() => (None, n),
        Need::Entry(..) => return None,
        Need::File(_, true) if exists.is_none() => (None, right::MAKE_REG),
        Need::File(n, _) => {
            let st = exists?;
            let nofollow = if at.magic { 0 } else { O_NOFOLLOW };
            let fd =
                sys::openat(at.dir.raw(), at.name.c(), O_PATH | O_CLOEXEC | nofollow, 0).ok()?;
            // A directory opened for writing fails with EISDIR first.
            if st.mode & S_IFMT == S_IFDIR {
                return None;
            }
            (Some(fd), n)
        }
    };
    let place = fd.as_ref().unwrap_or(&at.dir);
    // A pipe or socket reached through /proc has no place in any tree.
    let rights = rights_of(c.prog, place).ok()?;
    // The kernel asks the mount before the LSM.
    if read_only_mount(place) {
        return Some(EROFS);
    }
    if rights & need != need {
        return Some(EACCES);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_observed_filter_tags_write_intent_and_leaves_plain_reads_to_itself() {
        use crate::backend::seccomp::{compile, FsRules, Inet, Meta, SocketRules, Unix};
        let sockets = SocketRules {
            unix: Unix::Refuse,
            inet: Inet::Deny,
        };
        let fs = FsRules {
            meta: Meta::Refuse,
            create: false,
            observe: true,
        };
        let raw = compile(sockets, fs).unwrap().raw();
        let mut b = crate::inside::stub_format::MAGIC.to_vec();
        for v in [0u64, 0, 0] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&[0; 12]); // no rules, ports, fds
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&((raw[0].len() / 8) as u32).to_le_bytes());
        b.extend_from_slice(&raw[0]);
        b.extend_from_slice(&1u32.to_le_bytes()); // BROKER
        b.extend_from_slice(&0u32.to_le_bytes()); // no guards
        b.extend_from_slice(&0u32.to_le_bytes()); // no named sockets
        b.extend_from_slice(&0u32.to_le_bytes()); // no host roots
        b.extend_from_slice(&(-1i32).to_le_bytes());
        let p = super::super::Program::parse(&b).unwrap();
        let arch = if cfg!(target_arch = "x86_64") {
            0xc000_003e
        } else {
            0xc000_00b7
        };
        let call = |nr: i64, args: [u64; 6]| {
            tag_of(
                &p,
                &SeccompData {
                    nr: nr as i32,
                    arch,
                    ip: 0,
                    args,
                },
            )
        };
        let at = libc::AT_FDCWD as u64;
        assert_eq!(call(libc::SYS_openat, [at, 0, 0, 0, 0, 0]), None);
        let wr = libc::O_WRONLY as u64;
        assert_eq!(
            call(libc::SYS_openat, [at, 0, wr, 0, 0, 0]),
            Some(TAG_CONTINUE)
        );
        let creat = (libc::O_CREAT | libc::O_WRONLY) as u64;
        assert_eq!(
            call(libc::SYS_openat, [at, 0, creat, 0o4755, 0, 0]),
            Some(TAG_ERRNO | libc::EPERM as u16)
        );
        assert_eq!(
            call(libc::SYS_mkdirat, [at, 0, 0o755, 0, 0, 0]),
            Some(TAG_CONTINUE)
        );
        assert_eq!(
            call(libc::SYS_unlinkat, [at, 0, 0, 0, 0, 0]),
            Some(TAG_CONTINUE)
        );
        assert_eq!(
            call(libc::SYS_fchmodat, [at, 0, 0o644, 0, 0, 0]),
            Some(TAG_ERRNO | libc::EROFS as u16)
        );
        assert_eq!(
            call(libc::SYS_socket, [libc::AF_UNIX as u64, 1, 0, 0, 0, 0]),
            Some(TAG_ERRNO | libc::EPERM as u16)
        );
        assert_eq!(call(libc::SYS_read, [0; 6]), None);
        assert_eq!(call(libc::SYS_ptrace, [0; 6]), None);
    }
}
