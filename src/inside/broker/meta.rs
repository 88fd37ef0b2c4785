//! The metadata calls: mode, owner, times and extended attributes, changed
//! only where the layer grants writing, never on a device node.

use super::*;

/// What a metadata call acts on.
pub(super) enum Target {
    /// The command's descriptor.
    Fd(u64),
    /// `(dirfd, index of the path argument, follow a final symlink)`.
    Path(u64, usize, bool),
    /// `dirfd` itself (an empty path with AT_EMPTY_PATH).
    Dirfd(u64),
}

/// The target of a `*at` metadata call with `flags`.
pub(super) fn at_target(
    c: &Ctx<'_>,
    dirfd: u64,
    path_arg: usize,
    flags: usize,
) -> Result<Target, i32> {
    if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(EINVAL);
    }
    if flags & AT_EMPTY_PATH != 0 {
        let mut p = Buf::new();
        c.string(path_arg, &mut p)?;
        if p.len == 0 {
            return Ok(Target::Dirfd(dirfd));
        }
    }
    Ok(Target::Path(
        dirfd,
        path_arg,
        flags & AT_SYMLINK_NOFOLLOW == 0,
    ))
}

/// Opens what a metadata call acts on, as an O_PATH descriptor, and checks
/// it may be changed: the layer grants writing there and it is no device.
pub(super) fn meta_target(c: &Ctx<'_>, t: &Target) -> Result<Fd, i32> {
    let r = c.resolver();
    let fd = match *t {
        Target::Fd(fd) | Target::Dirfd(fd) => r.fd_target(fd)?,
        Target::Path(dirfd, i, follow) => {
            let mut p = Buf::new();
            c.string(i, &mut p)?;
            let mut r = c.resolver();
            let at = r.at(dirfd, &p, follow)?;
            let flags = if at.magic { 0 } else { O_NOFOLLOW };
            sys::openat(at.dir.raw(), at.name.c(), O_PATH | O_CLOEXEC | flags, 0)?
        }
    };
    let st = stat_fd(&fd)?;
    if matches!(st.mode & S_IFMT, S_IFCHR | S_IFBLK) {
        return Err(EPERM);
    }
    if rights_of(c.prog, &fd)? & right::WRITE_FILE == 0 {
        return Err(EROFS);
    }
    Ok(fd)
}

/// `/proc/self/fd/N` of our own descriptor, for the calls that take a path.
pub(super) fn self_path(fd: &Fd, out: &mut Buf) -> Result<(), i32> {
    out.set(&[b"/proc/self/fd/", digits(fd.0 as u64, &mut [0; 20])])
}

pub(super) fn chmod(c: &Ctx<'_>, t: Target, mode: u32) -> Result<Reply, i32> {
    if mode & S_ISUID_ISGID != 0 {
        return Err(EPERM);
    }
    let fd = meta_target(c, &t)?;
    if !c.valid() {
        return Ok(Reply::None);
    }
    if stat_fd(&fd)?.mode & S_IFMT == S_IFLNK {
        // Linux has no mode on a symlink.
        return Err(EOPNOTSUPP);
    }
    let mut p = Buf::new();
    self_path(&fd, &mut p)?;
    // SAFETY: a NUL-terminated path.
    unsafe {
        sys::call(
            nr::FCHMODAT,
            &[AT_FDCWD, p.c().as_ptr() as usize, (mode & 0o7777) as usize],
        )
    }?;
    Ok(Reply::Val(0))
}

pub(super) fn chown(c: &Ctx<'_>, t: Target, uid: u64, gid: u64) -> Result<Reply, i32> {
    let fd = meta_target(c, &t)?;
    if !c.valid() {
        return Ok(Reply::None);
    }
    // SAFETY: an empty path with AT_EMPTY_PATH acts on the descriptor.
    unsafe {
        sys::call(
            nr::FCHOWNAT,
            &[
                fd.raw(),
                c"".as_ptr() as usize,
                uid as u32 as usize,
                gid as u32 as usize,
                AT_EMPTY_PATH,
            ],
        )
    }?;
    Ok(Reply::Val(0))
}

/// How a times argument is laid out in the command's memory.
pub(super) enum Times {
    /// struct utimbuf { actime, modtime } (seconds).
    Utimbuf(u64),
    /// struct timeval[2].
    Timeval(u64),
    /// struct timespec[2], with UTIME_NOW / UTIME_OMIT.
    Timespec(u64),
}

pub(super) fn utimes(c: &Ctx<'_>, t: Target, times: Times) -> Result<Reply, i32> {
    let mut ts = [0i64; 4];
    let (addr, null) = match times {
        Times::Utimbuf(a) | Times::Timeval(a) | Times::Timespec(a) => (a, a == 0),
    };
    if !null {
        let mut raw = [0u8; 32];
        let n = if matches!(times, Times::Utimbuf(_)) {
            16
        } else {
            32
        };
        read_exact(c.req.pid, addr, &mut raw[..n])?;
        let w = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&raw[i * 8..i * 8 + 8]);
            i64::from_ne_bytes(b)
        };
        match times {
            Times::Utimbuf(_) => ts = [w(0), 0, w(1), 0],
            Times::Timeval(_) => {
                for i in [1, 3] {
                    if !(0..1_000_000).contains(&w(i)) {
                        return Err(EINVAL);
                    }
                }
                ts = [w(0), w(1) * 1000, w(2), w(3) * 1000];
            }
            Times::Timespec(_) => {
                ts = [w(0), w(1), w(2), w(3)];
                for i in [1, 3] {
                    if !(0..1_000_000_000).contains(&ts[i])
                        && ts[i] != UTIME_NOW
                        && ts[i] != UTIME_OMIT
                    {
                        return Err(EINVAL);
                    }
                }
            }
        }
    }
    let fd = meta_target(c, &t)?;
    if !c.valid() {
        return Ok(Reply::None);
    }
    let tp = if null { 0 } else { ts.as_ptr() as usize };
    // SAFETY: an empty path with AT_EMPTY_PATH acts on the descriptor; a
    // timespec[2] or NULL.
    unsafe {
        sys::call(
            nr::UTIMENSAT,
            &[fd.raw(), c"".as_ptr() as usize, tp, AT_EMPTY_PATH],
        )
    }?;
    Ok(Reply::Val(0))
}

/// The attribute name of argument `i` (at most 255 bytes).
pub(super) fn xattr_name(c: &Ctx<'_>, i: usize, out: &mut Buf) -> Result<(), i32> {
    c.string(i, out)?;
    if out.len == 0 || out.len > 255 {
        return Err(if out.len == 0 { EINVAL } else { ERANGE });
    }
    Ok(())
}
pub(super) const ERANGE: i32 = 34;

pub(super) fn setxattr(c: &Ctx<'_>, t: Target, name_arg: usize) -> Result<Reply, i32> {
    let mut name = Buf::new();
    xattr_name(c, name_arg, &mut name)?;
    let size = c.arg(name_arg + 2) as usize;
    let flags = c.arg(name_arg + 3) as usize;
    if size > 65536 {
        return Err(E2BIG);
    }
    let mut value = [0u8; 65536];
    read_exact(c.req.pid, c.arg(name_arg + 1), &mut value[..size]).or_else(|e| {
        if size == 0 {
            Ok(())
        } else {
            Err(e)
        }
    })?;
    let fd = meta_target(c, &t)?;
    if !c.valid() {
        return Ok(Reply::None);
    }
    if stat_fd(&fd)?.mode & S_IFMT == S_IFLNK {
        // No attribute a user may set lives on a symlink.
        return Err(EPERM);
    }
    let mut p = Buf::new();
    self_path(&fd, &mut p)?;
    // SAFETY: NUL-terminated path and name, a value of `size` bytes.
    unsafe {
        sys::call(
            nr::SETXATTR,
            &[
                p.c().as_ptr() as usize,
                name.c().as_ptr() as usize,
                value.as_ptr() as usize,
                size,
                flags,
            ],
        )
    }?;
    Ok(Reply::Val(0))
}

pub(super) fn removexattr(c: &Ctx<'_>, t: Target, name_arg: usize) -> Result<Reply, i32> {
    let mut name = Buf::new();
    xattr_name(c, name_arg, &mut name)?;
    let fd = meta_target(c, &t)?;
    if !c.valid() {
        return Ok(Reply::None);
    }
    if stat_fd(&fd)?.mode & S_IFMT == S_IFLNK {
        return Err(EPERM);
    }
    let mut p = Buf::new();
    self_path(&fd, &mut p)?;
    // SAFETY: NUL-terminated path and name.
    unsafe {
        sys::call(
            nr::REMOVEXATTR,
            &[p.c().as_ptr() as usize, name.c().as_ptr() as usize],
        )
    }?;
    Ok(Reply::Val(0))
}
