//! The calls that create a name (open with O_CREAT, mknod, symlink, link,
//! rename): a guarded name is never created, nor anything the layer's
//! rules would refuse.

use super::*;

/// Sets the command's umask on this process for one creation.
pub(super) fn take_umask(c: &Ctx<'_>) -> Result<(), i32> {
    let (_, mask) = status_of(c.req.pid)?;
    umask(mask);
    c.mask.set(mask);
    Ok(())
}

/// A name that is there already cannot be made: EEXIST, which the kernel
/// says before any permission (a read-only or guarded place included).
pub(super) fn absent(at: &At) -> Result<(), i32> {
    match stat_at(&at.dir, &at.name) {
        Ok(_) => Err(EEXIST),
        Err(ENOENT) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Refuses to create the missing name `at.name` in `at.dir` where a guard
/// forbids it or the layer grants no `need` there.
pub(super) fn may_create(c: &Ctx<'_>, at: &At, need: u64) -> Result<(), i32> {
    let name = at.name.bytes().trim_end_slash();
    // Any case: on a case-folding directory `.GIT` is found as `.git`.
    let dotgit = name.eq_ignore_ascii_case(b".git");
    if guarded(c.prog, &at.dir, name)? || (dotgit && in_zone(c.prog, &at.dir)?) {
        return Err(EROFS);
    }
    may_make(c, at, need)
}

/// A directory moved from outside every repository's worktree into one
/// could carry a `.git` made outside: such a move is refused with EXDEV,
/// which `mv` and the like answer by copying, name by name, through
/// `may_create`. `moved` is the mode of what enters `to`.
fn may_move_in(c: &Ctx<'_>, from: &Fd, to: &Fd, moved: u32) -> Result<(), i32> {
    if moved & S_IFMT == S_IFDIR && in_zone(c.prog, to)? && !in_zone(c.prog, from)? {
        return Err(EXDEV);
    }
    Ok(())
}

/// The layer's rights for making an entry in `at.dir`.
pub(super) fn may_make(c: &Ctx<'_>, at: &At, need: u64) -> Result<(), i32> {
    if rights_of(c.prog, &at.dir)? & need != need {
        return Err(EACCES);
    }
    Ok(())
}

pub(super) trait TrimSlash {
    fn trim_end_slash(&self) -> &[u8];
}

impl TrimSlash for [u8] {
    fn trim_end_slash(&self) -> &[u8] {
        let mut n = self.len();
        while n > 1 && self[n - 1] == b'/' {
            n -= 1;
        }
        &self[..n]
    }
}

/// open/openat/creat with O_CREAT.
pub(super) fn open(
    c: &Ctx<'_>,
    dirfd: u64,
    path_arg: usize,
    flags: usize,
    mode: u32,
) -> Result<Reply, i32> {
    if mode & S_ISUID_ISGID != 0 && flags & (O_CREAT | O_TMPFILE_BIT) != 0 {
        return Err(EPERM);
    }
    let mut path = Buf::new();
    c.string(path_arg, &mut path)?;
    let follow = flags & (O_EXCL | O_NOFOLLOW) == 0;
    // A final symlink that goes away between the check and the open makes
    // the open fail with ELOOP (O_NOFOLLOW): resolve again, a few times.
    for _ in 0..8 {
        let mut r = c.resolver();
        let at = r.at(dirfd, &path, follow)?;
        // A guard keeps a missing name from being made (`may_create`); what
        // is there is held by its read-only mount, and the kernel answers.
        let exists = stat_at(&at.dir, &at.name);
        // What the layer would check: creating in the directory, or opening
        // what is there.
        let target_rights = match &exists {
            Ok(st) if at.magic || st.mode & S_IFMT != S_IFLNK => {
                let fd = sys::openat(
                    at.dir.raw(),
                    at.name.c(),
                    O_PATH | O_CLOEXEC | if at.magic { 0 } else { O_NOFOLLOW },
                    0,
                )?;
                Some((
                    rights_of(c.prog, &fd).or_else(|e| {
                        // A pipe or socket reached through /proc has no place;
                        // opening it needs no right of the tree.
                        if e == EACCES {
                            Ok(u64::MAX)
                        } else {
                            Err(e)
                        }
                    })?,
                    stat_fd(&fd)?.mode,
                ))
            }
            _ => None,
        };
        let need_open = match flags & O_ACCMODE {
            O_WRONLY => right::WRITE_FILE,
            O_RDWR => right::WRITE_FILE | right::READ_FILE,
            _ => right::READ_FILE,
        } | if flags & O_TRUNC != 0 {
            right::TRUNCATE
        } else {
            0
        };
        match target_rights {
            Some((rights, st_mode)) => {
                let need = if st_mode & S_IFMT == S_IFDIR && flags & O_ACCMODE == 0 {
                    right::READ_DIR
                } else {
                    need_open
                };
                if rights & need != need {
                    return Err(EACCES);
                }
            }
            None => may_create(c, &at, right::MAKE_REG | need_open)?,
        }
        let fifo = target_rights.is_some_and(|(_, m)| m & S_IFMT == S_IFIFO);
        if !c.valid() {
            return Ok(Reply::None);
        }
        take_umask(c)?;
        let nofollow = if at.magic { 0 } else { O_NOFOLLOW };
        let oflags = (flags & !O_CLOEXEC) | nofollow | O_CLOEXEC;
        if fifo && flags & O_NONBLOCK == 0 {
            return open_fifo(c, &at, oflags, mode, flags & O_CLOEXEC != 0);
        }
        match final_open(c, &at, oflags, mode) {
            Ok(fd) => return Ok(Reply::Fd(fd, flags & O_CLOEXEC != 0)),
            Err(ELOOP) if nofollow != 0 && follow => continue,
            Err(e) => return Err(e),
        }
    }
    Err(ELOOP)
}

/// The open itself, made where the command's own domains hold (`perform`).
/// A magic link of /proc is followed here, where the command may be
/// reached, into a descriptor of ours: a shadow reopens that one, through
/// its own /proc/self, so that its domains check the file itself.
fn final_open(c: &Ctx<'_>, at: &At, flags: usize, mode: u32) -> Result<Fd, i32> {
    let mode = (mode & 0o7777) as usize;
    if c.shadow < 0 {
        return sys::openat(at.dir.raw(), at.name.c(), flags, mode);
    }
    let (mut p, mut held) = (Buf::new(), None);
    let (dir, name) = shadow_place(at, &mut p, &mut held)?;
    let args = [Arg::N(dir), Arg::B(name), Arg::N(flags), Arg::N(mode)];
    perform(c, nr::OPENAT, &args, None).map(|fd| Fd(fd as i32))
}

/// Where a shadow opens `at`: its directory and name, or for a magic link
/// of /proc (which a shadow may not follow: the command is outside its
/// domains) a descriptor of ours for what it names, through /proc/self;
/// `held` keeps that descriptor open.
fn shadow_place<'b>(
    at: &'b At,
    p: &'b mut Buf,
    held: &mut Option<Fd>,
) -> Result<(usize, &'b [u8]), i32> {
    if !at.magic {
        return Ok((at.dir.raw(), at.name.c()));
    }
    let fd = sys::openat(at.dir.raw(), at.name.c(), O_PATH | O_CLOEXEC, 0)?;
    self_path(&fd, p)?;
    *held = Some(fd);
    Ok((AT_FDCWD, p.c()))
}

/// A FIFO's open waits for its other end, which may come from the command
/// itself: a child of the broker waits and answers, the broker goes on.
pub(super) fn open_fifo(
    c: &Ctx<'_>,
    at: &At,
    flags: usize,
    mode: u32,
    cloexec: bool,
) -> Result<Reply, i32> {
    const SIGCHLD: usize = 17;
    if c.shadow >= 0 {
        let (mut p, mut held) = (Buf::new(), None);
        let (dir, name) = shadow_place(at, &mut p, &mut held)?;
        let mode = (mode & 0o7777) as usize;
        let args = [Arg::N(dir), Arg::B(name), Arg::N(flags), Arg::N(mode)];
        return perform_waiting(c, &args, cloexec);
    }
    // SAFETY: a plain fork (clone with SIGCHLD only); the child only makes
    // system calls on values it owns and exits.
    let pid = unsafe { sys::call(nr::CLONE, &[SIGCHLD, 0, 0, 0, 0]) }?;
    if pid == 0 {
        let reply = match sys::openat(at.dir.raw(), at.name.c(), flags, (mode & 0o7777) as usize) {
            Ok(fd) => Reply::Fd(fd, cloexec),
            Err(e) => Reply::Err(e),
        };
        answer(c, reply);
        sys::exit(0);
    }
    Ok(Reply::None)
}

/// mkdir/mkdirat/mknod/mknodat (`mode` carries the type).
pub(super) fn mknod(
    c: &Ctx<'_>,
    dirfd: u64,
    path_arg: usize,
    mode: u32,
    dev: u64,
) -> Result<Reply, i32> {
    if mode & S_ISUID_ISGID != 0 && mode & S_IFMT != S_IFDIR {
        return Err(EPERM);
    }
    let mut path = Buf::new();
    c.string(path_arg, &mut path)?;
    let mut r = c.resolver();
    let at = r.at(dirfd, &path, false)?;
    let kind = if mode & S_IFMT == 0 {
        S_IFREG
    } else {
        mode & S_IFMT
    };
    absent(&at)?;
    may_create(c, &at, make_right(kind))?;
    if !c.valid() {
        return Ok(Reply::None);
    }
    take_umask(c)?;
    let (dir, name) = (Arg::N(at.dir.raw()), Arg::B(at.name.c()));
    if mode & S_IFMT == S_IFDIR {
        let m = Arg::N((mode & 0o7777) as usize);
        perform(c, nr::MKDIRAT, &[dir, name, m], None)?;
    } else {
        let (m, d) = (Arg::N(mode as usize), Arg::N(dev as usize));
        perform(c, nr::MKNODAT, &[dir, name, m, d], None)?;
    }
    Ok(Reply::Val(0))
}

pub(super) fn symlink(
    c: &Ctx<'_>,
    target_arg: usize,
    dirfd: u64,
    path_arg: usize,
) -> Result<Reply, i32> {
    let mut target = Buf::new();
    c.string(target_arg, &mut target)?;
    let mut path = Buf::new();
    c.string(path_arg, &mut path)?;
    let mut r = c.resolver();
    let at = r.at(dirfd, &path, false)?;
    absent(&at)?;
    may_create(c, &at, right::MAKE_SYM)?;
    if !c.valid() {
        return Ok(Reply::None);
    }
    let args = [
        Arg::B(target.c()),
        Arg::N(at.dir.raw()),
        Arg::B(at.name.c()),
    ];
    perform(c, nr::SYMLINKAT, &args, None)?;
    Ok(Reply::Val(0))
}

/// Landlock's refer rule, for a link or a move from `from` to `to`: both
/// need REFER when they differ, and nothing may gain a right by moving.
pub(super) fn may_refer(c: &Ctx<'_>, from: &Fd, to: &Fd) -> Result<(), i32> {
    let (a, b) = (stat_fd(from)?, stat_fd(to)?);
    if (a.dev, a.ino) == (b.dev, b.ino) {
        return Ok(());
    }
    let (ra, rb) = (rights_of(c.prog, from)?, rights_of(c.prog, to)?);
    let handled = c.prog.handled_fs;
    if ra & rb & right::REFER == 0 || (rb & !ra & handled) != 0 {
        return Err(EXDEV);
    }
    Ok(())
}

pub(super) fn link(
    c: &Ctx<'_>,
    olddirfd: u64,
    old_arg: usize,
    newdirfd: u64,
    new_arg: usize,
    flags: usize,
) -> Result<Reply, i32> {
    if flags & !(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(EINVAL);
    }
    let mut old = Buf::new();
    let mut new = Buf::new();
    c.string(new_arg, &mut new)?;
    let mut r = c.resolver();
    let to = r.at(newdirfd, &new, false)?;
    // The source: the descriptor itself (AT_EMPTY_PATH with an empty path),
    // or a name, its last symlink followed with AT_SYMLINK_FOLLOW.
    let empty = flags & AT_EMPTY_PATH != 0 && {
        c.string(old_arg, &mut old)?;
        old.len == 0
    };
    let src = if empty {
        r.fd_target(olddirfd)?
    } else {
        c.string(old_arg, &mut old)?;
        let from = r.at(olddirfd, &old, flags & AT_SYMLINK_FOLLOW != 0)?;
        let f = if from.magic { 0 } else { O_NOFOLLOW };
        let fd = sys::openat(from.dir.raw(), from.name.c(), O_PATH | O_CLOEXEC | f, 0)?;
        may_refer(c, &from.dir, &to.dir)?;
        fd
    };
    let kind = stat_fd(&src)?.mode;
    absent(&to)?;
    may_create(c, &to, make_right(kind))?;
    if !c.valid() {
        return Ok(Reply::None);
    }
    let mut p = Buf::new();
    self_path(&src, &mut p)?;
    // Following our own descriptor's magic link links the very inode
    // resolved above (a shadow shares the descriptor and reads its own
    // /proc/self).
    let args = [
        Arg::N(AT_FDCWD),
        Arg::B(p.c()),
        Arg::N(to.dir.raw()),
        Arg::B(to.name.c()),
        Arg::N(AT_SYMLINK_FOLLOW),
    ];
    match perform(c, nr::LINKAT, &args, None) {
        Ok(_) => Ok(Reply::Val(0)),
        // Two roots, two mounts: the host's one mount may take it.
        Err(EXDEV) => super::hostlink::link(c, &src, &to),
        Err(e) => Err(e),
    }
}

pub(super) fn rename(
    c: &Ctx<'_>,
    olddirfd: u64,
    old_arg: usize,
    newdirfd: u64,
    new_arg: usize,
    flags: usize,
) -> Result<Reply, i32> {
    let mut old = Buf::new();
    let mut new = Buf::new();
    c.string(old_arg, &mut old)?;
    c.string(new_arg, &mut new)?;
    let mut r = c.resolver();
    let from = r.at(olddirfd, &old, false)?;
    let to = r.at(newdirfd, &new, false)?;
    let src = stat_at(&from.dir, &from.name)?;
    let dst = stat_at(&to.dir, &to.name);
    // Landlock's checks for a move: remove from the old directory, make in
    // the new one, remove what is replaced; an exchange both ways.
    let rf = rights_of(c.prog, &from.dir)?;
    if rf & remove_right(src.mode) == 0 {
        return Err(EACCES);
    }
    // Onto a name that is there, the kernel answers for it (a read-only
    // mount point: EBUSY); a missing one must not be a guard.
    if dst.is_ok() {
        may_make(c, &to, make_right(src.mode))?;
    } else {
        may_create(c, &to, make_right(src.mode))?;
    }
    if let Ok(d) = &dst {
        if rights_of(c.prog, &to.dir)? & remove_right(d.mode) == 0 {
            return Err(EACCES);
        }
        if flags & RENAME_EXCHANGE != 0 {
            may_create(c, &from, make_right(d.mode))?;
        }
    }
    may_refer(c, &from.dir, &to.dir)?;
    may_move_in(c, &from.dir, &to.dir, src.mode)?;
    if let (Ok(d), true) = (&dst, flags & RENAME_EXCHANGE != 0) {
        may_move_in(c, &to.dir, &from.dir, d.mode)?;
    }
    if flags & RENAME_NOREPLACE != 0 && dst.is_ok() {
        return Err(EEXIST);
    }
    if !c.valid() {
        return Ok(Reply::None);
    }
    let args = [
        Arg::N(from.dir.raw()),
        Arg::B(from.name.c()),
        Arg::N(to.dir.raw()),
        Arg::B(to.name.c()),
        Arg::N(flags),
    ];
    match perform(c, nr::RENAMEAT2, &args, None) {
        Ok(_) => Ok(Reply::Val(0)),
        // Onto a file a read-only mount keeps (a protected `.git/config`),
        // a rewrite that changes nothing — git before 2.45 rewrites its
        // config to drop the section of a deleted branch even when there
        // is none — is done by removing the new copy: the kept file holds
        // those very bytes already. Anything else stays EBUSY.
        Err(EBUSY)
            if flags == 0
                && src.mode & S_IFMT == S_IFREG
                && dst.as_ref().is_ok_and(|d| d.mode & S_IFMT == S_IFREG)
                && same_bytes(&from, &to) =>
        {
            let args = [Arg::N(from.dir.raw()), Arg::B(from.name.c()), Arg::N(0)];
            perform(c, nr::UNLINKAT, &args, None)?;
            Ok(Reply::Val(0))
        }
        Err(e) => Err(e),
    }
}

/// Whether two regular files hold the same bytes (at most 1 MiB each, a
/// configuration file's size): read here, without following a last
/// symlink.
fn same_bytes(a: &At, b: &At) -> bool {
    const MAX: usize = 1 << 20;
    let open = |at: &At| {
        sys::openat(
            at.dir.raw(),
            at.name.c(),
            O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK,
            0,
        )
    };
    let (Ok(fa), Ok(fb)) = (open(a), open(b)) else {
        return false;
    };
    let mut ba = [0u8; 4096];
    let mut bb = [0u8; 4096];
    let mut total = 0;
    loop {
        let (Ok(na), Ok(nb)) = (read_full(&fa, &mut ba), read_full(&fb, &mut bb)) else {
            return false;
        };
        if na != nb || ba[..na] != bb[..nb] {
            return false;
        }
        if na < ba.len() {
            return true;
        }
        total += na;
        if total >= MAX {
            return false;
        }
    }
}

/// Reads until `buf` is full or the file ends; the bytes read.
fn read_full(fd: &Fd, buf: &mut [u8]) -> Result<usize, i32> {
    let mut got = 0;
    while got < buf.len() {
        let rest = &mut buf[got..];
        // SAFETY: a buffer of rest.len() bytes that outlives the call.
        let n = unsafe {
            sys::call(
                nr::READ,
                &[fd.raw(), rest.as_mut_ptr() as usize, rest.len()],
            )
        }?;
        if n == 0 {
            break;
        }
        got += n;
    }
    Ok(got)
}

/// bind: on a unix socket with a path it makes a name (a socket file), so
/// a guarded name could be made by it. The broker binds the command's own
/// socket (a duplicate taken with pidfd_getfd: the socket it checked, not
/// whatever the descriptor number names later) to the address it read
/// once, a path relative to the directory it resolved and checked. Other
/// families make no name; they are bound here too, with the same copy of
/// the address, but for TCP where the layer denies binding. A socket file
/// bound here is remembered: the command may connect to it.
pub(super) fn bind(c: &Ctx<'_>, sockfd: u64, addr: u64, len: usize) -> Result<Reply, i32> {
    const AF_UNIX: u16 = 1;
    const AF_INET: i32 = 2;
    const AF_INET6: i32 = 10;
    const SOCK_STREAM: i32 = 1;
    const LANDLOCK_BIND_TCP: u64 = 1;
    let (tgid, _) = status_of(c.req.pid)?;
    let sock = their_fd(tgid, sockfd)?;
    if !c.valid() {
        return Ok(Reply::None);
    }
    let domain = sockopt(&sock, 39)?; // SO_DOMAIN
    let mut sa = [0u8; 128];
    if len > sa.len() && domain == i32::from(AF_UNIX) {
        return Err(EINVAL);
    }
    let n = len.min(sa.len());
    read_exact(c.req.pid, addr, &mut sa[..n])?;
    if domain != i32::from(AF_UNIX) {
        if (domain == AF_INET || domain == AF_INET6)
            && sockopt(&sock, 3)? == SOCK_STREAM // SO_TYPE
            && c.prog.handled_net & LANDLOCK_BIND_TCP != 0
        {
            return Err(EACCES);
        }
        return raw_bind(c, &sock, &sa[..n], None);
    }
    if n < 2 || u16::from_ne_bytes([sa[0], sa[1]]) != AF_UNIX {
        return Err(EINVAL);
    }
    let path = &sa[2..n];
    let end = path.iter().position(|b| *b == 0).unwrap_or(path.len());
    if end == 0 {
        // Autobind or an abstract name: nothing on a filesystem.
        return raw_bind(c, &sock, &sa[..n], None);
    }
    let mut p = Buf::new();
    p.set(&[&path[..end]])?;
    let mut r = c.resolver();
    let at = r.at(AT_FDCWD as u64, &p, false)?;
    if at.magic {
        return Err(EADDRINUSE);
    }
    absent(&at).map_err(|e| if e == EEXIST { EADDRINUSE } else { e })?;
    may_create(c, &at, right::MAKE_SOCK)?;
    if !c.valid() {
        return Ok(Reply::None);
    }
    take_umask(c)?;
    let name = at.name.bytes();
    let mut local = [0u8; 110];
    if 2 + name.len() >= local.len() {
        return Err(ENAMETOOLONG);
    }
    local[..2].copy_from_slice(&AF_UNIX.to_ne_bytes());
    local[2..2 + name.len()].copy_from_slice(name);
    // The name is made relative to the directory checked: the working
    // directory of whoever binds is that directory for this one call.
    let r = raw_bind(c, &sock, &local[..2 + name.len() + 1], Some(&at.dir));
    if r.is_ok() {
        // The command may connect to what it bound (`unix::connect`).
        if let Ok(st) = stat_at(&at.dir, &at.name) {
            super::unix::bound(&st);
        }
    }
    r
}

/// The command's descriptor `fd`, duplicated here.
pub(super) fn their_fd(tgid: u32, fd: u64) -> Result<Fd, i32> {
    // SAFETY: pidfd_open takes a pid and flags.
    let pidfd = Fd(unsafe { sys::call(sys::PIDFD_OPEN, &[tgid as usize, 0]) }? as i32);
    // SAFETY: pidfd_getfd takes two descriptors and flags.
    let dup = unsafe { sys::call(sys::PIDFD_GETFD, &[pidfd.raw(), fd as usize, 0]) }?;
    Ok(Fd(dup as i32))
}

/// An integer socket option at SOL_SOCKET.
pub(super) fn sockopt(sock: &Fd, name: usize) -> Result<i32, i32> {
    let mut v: i32 = 0;
    let mut len: u32 = 4;
    // SAFETY: a 4-byte value and its length.
    unsafe {
        sys::call(
            nr::GETSOCKOPT,
            &[
                sock.raw(),
                1, // SOL_SOCKET
                name,
                &mut v as *mut i32 as usize,
                &mut len as *mut u32 as usize,
            ],
        )
    }?;
    Ok(v)
}

fn raw_bind(c: &Ctx<'_>, sock: &Fd, sa: &[u8], from: Option<&Fd>) -> Result<Reply, i32> {
    let args = [Arg::N(sock.raw()), Arg::B(sa), Arg::N(sa.len())];
    perform(c, nr::BIND, &args, from)?;
    Ok(Reply::Val(0))
}
