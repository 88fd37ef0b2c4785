//! Resolving a path in the command's place: its memory read through
//! /proc/<tid>/mem, its root, working directory and descriptors, each
//! symlink followed here, down to a directory descriptor and a name.

use super::*;

/// Reads `buf.len()` bytes (or fewer, at an unmapped page) of the command's
/// memory at `addr`.
pub(super) fn read_mem(tid: u32, addr: u64, buf: &mut [u8]) -> Result<usize, i32> {
    if buf.is_empty() {
        return Ok(0);
    }
    if addr == 0 {
        return Err(EFAULT);
    }
    let local = [buf.as_mut_ptr() as usize, buf.len()];
    let remote = [addr as usize, buf.len()];
    // SAFETY: one local iovec over `buf`, one remote one; no flags.
    let r = unsafe {
        sys::call(
            nr::PROCESS_VM_READV,
            &[
                tid as usize,
                local.as_ptr() as usize,
                1,
                remote.as_ptr() as usize,
                1,
                0,
            ],
        )
    };
    match r {
        Ok(n) => Ok(n),
        // A seccomp filter above dcjail may refuse process_vm_readv
        // (Codex's sandbox does, EPERM): the same bytes through
        // /proc/<tid>/mem, which the kernel grants on the same ptrace check.
        Err(EPERM) => read_mem_file(tid, addr, buf),
        Err(_) => Err(EFAULT),
    }
}

/// `read_mem` through /proc/<tid>/mem.
fn read_mem_file(tid: u32, addr: u64, buf: &mut [u8]) -> Result<usize, i32> {
    let mut p = Buf::new();
    proc_path(&mut p, tid, b"mem")?;
    let fd = sys::openat(AT_FDCWD, p.c(), O_CLOEXEC, 0).map_err(|_| EFAULT)?;
    // SAFETY: reading into `buf`, at most its length.
    unsafe {
        sys::call(
            nr::PREAD64,
            &[
                fd.raw(),
                buf.as_mut_ptr() as usize,
                buf.len(),
                addr as usize,
            ],
        )
    }
    .map_err(|_| EFAULT)
}

/// Reads exactly `buf.len()` bytes of the command's memory.
pub(super) fn read_exact(tid: u32, addr: u64, buf: &mut [u8]) -> Result<(), i32> {
    match read_mem(tid, addr, buf)? {
        n if n == buf.len() => Ok(()),
        _ => Err(EFAULT),
    }
}

/// Reads a NUL-terminated string (a path: at most 4095 bytes) of the
/// command's memory, a page at a time so that a string ending just before
/// an unmapped page is read whole.
pub(super) fn read_str(tid: u32, addr: u64, out: &mut Buf) -> Result<(), i32> {
    if addr == 0 {
        return Err(EFAULT);
    }
    let mut got = 0usize;
    while got < 4096 {
        let at = addr.wrapping_add(got as u64);
        let to_page = 4096 - (at % 4096) as usize;
        let want = to_page.min(4096 - got);
        let n = read_mem(tid, at, &mut out.b[got..got + want])?;
        if n == 0 {
            return Err(EFAULT);
        }
        if let Some(i) = out.b[got..got + n].iter().position(|c| *c == 0) {
            out.len = got + i;
            return Ok(());
        }
        got += n;
    }
    Err(ENAMETOOLONG)
}

/// `/proc/<tid>/<rest>` in `buf`.
pub(super) fn proc_path(buf: &mut Buf, tid: u32, rest: &[u8]) -> Result<(), i32> {
    buf.set(&[b"/proc/", digits(u64::from(tid), &mut [0; 20]), b"/", rest])
}

/// The command's thread group id and umask, from /proc/<tid>/status.
pub(super) fn status_of(tid: u32) -> Result<(u32, u32), i32> {
    let mut p = Buf::new();
    proc_path(&mut p, tid, b"status")?;
    let fd = sys::openat(AT_FDCWD, p.c(), O_CLOEXEC, 0)?;
    let mut text = [0u8; 4096];
    let mut len = 0;
    while len < text.len() {
        // SAFETY: a buffer of text.len() - len bytes.
        match unsafe {
            sys::call_retry(
                nr::READ,
                &[
                    fd.raw(),
                    text[len..].as_mut_ptr() as usize,
                    text.len() - len,
                ],
            )
        } {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) => return Err(e),
        }
    }
    let text = &text[..len];
    let field = |key: &[u8], radix: u32| -> Option<u32> {
        let start = text.windows(key.len()).position(|w| w == key)? + key.len();
        let mut v: u32 = 0;
        let mut seen = false;
        for &c in &text[start..] {
            match c {
                b'\t' | b' ' if !seen => {}
                b'0'..=b'9' => {
                    v = v.checked_mul(radix)?.checked_add(u32::from(c - b'0'))?;
                    seen = true;
                }
                _ => break,
            }
        }
        seen.then_some(v)
    };
    match (field(b"\nTgid:", 10), field(b"\nUmask:", 8)) {
        (Some(t), Some(u)) => Ok((t, u)),
        // Without the fields the status file is not what this expects:
        // refuse rather than guess.
        _ => Err(EPERM),
    }
}

pub(super) fn on_proc(fd: &Fd) -> bool {
    let mut st = [0u64; 16];
    // SAFETY: struct statfs is 120 bytes on both architectures; 128 given.
    match unsafe { sys::call(nr::FSTATFS, &[fd.raw(), st.as_mut_ptr() as usize]) } {
        Ok(_) => st[0] == PROC_SUPER_MAGIC,
        Err(_) => false,
    }
}

pub(super) fn stat_fd(fd: &Fd) -> Result<sys::Stat, i32> {
    sys::stat(fd.raw(), b"\0", AT_EMPTY_PATH)
}

pub(super) fn stat_at(dir: &Fd, name: &Buf) -> Result<sys::Stat, i32> {
    sys::stat(dir.raw(), name.c(), AT_SYMLINK_NOFOLLOW)
}

pub(super) fn readlink_at(dir: usize, name: &[u8], out: &mut Buf) -> Result<(), i32> {
    // SAFETY: a NUL-terminated name and a buffer of 4096 bytes.
    let n = unsafe {
        sys::call(
            nr::READLINKAT,
            &[
                dir,
                name.as_ptr() as usize,
                out.b.as_mut_ptr() as usize,
                4096,
            ],
        )
    }?;
    if n >= 4096 {
        return Err(ENAMETOOLONG);
    }
    out.len = n;
    out.b[n] = 0;
    Ok(())
}

/// The path of what `fd` refers to, as this process's /proc says it; a file
/// with no name left ends in " (deleted)", which is stripped when the file
/// has no link (so it is held to where it was).
pub(super) fn path_of(fd: &Fd, out: &mut Buf) -> Result<(), i32> {
    let mut p = Buf::new();
    p.set(&[b"/proc/self/fd/", digits(fd.0 as u64, &mut [0; 20])])?;
    readlink_at(AT_FDCWD, p.c(), out)?;
    if !out.bytes().starts_with(b"/") {
        // A pipe, a socket, an anonymous inode: not a place in any tree.
        return Err(EACCES);
    }
    const DELETED: &[u8] = b" (deleted)";
    if out.bytes().ends_with(DELETED) && stat_fd(fd).is_ok_and(|s| s.nlink == 0) {
        out.len -= DELETED.len();
        out.b[out.len] = 0;
    }
    Ok(())
}

pub(super) fn is_under(path: &[u8], root: &[u8]) -> bool {
    root == b"/"
        || path == root
        || (path.len() > root.len() && path.starts_with(root) && path[root.len()] == b'/')
}

/// The landlock rights the layer grants at `path` (a directory's or file's
/// canonical path): every rule on it or on a directory above it, plus what
/// the ruleset does not handle.
pub(super) fn rights_at(p: &Program<'_>, path: &[u8]) -> u64 {
    let mut r = !p.handled_fs;
    for (rule, access) in p.fs_rules() {
        if is_under(path, rule) {
            r |= access;
        }
    }
    r
}

pub(super) fn rights_of(p: &Program<'_>, fd: &Fd) -> Result<u64, i32> {
    let mut path = Buf::new();
    path_of(fd, &mut path)?;
    Ok(rights_at(p, path.bytes()))
}

/// Whether `name` in directory `dir` is one of the program's guards.
pub(super) fn guarded(p: &Program<'_>, dir: &Fd, name: &[u8]) -> Result<bool, i32> {
    let st = stat_fd(dir)?;
    Ok(p.guards()
        .any(|(dev, ino, g)| g != ZONE && dev == st.dev && ino == st.ino && g == name))
}

/// Whether `dir` is, or lies below, a directory marked `ZONE`: walked up
/// by `..` in the command's own view (the marks are by inode, so a bind
/// mount of the same directory is the same). Past the deepest path the
/// kernel can name, it counts as inside (the caller then refuses).
pub(super) fn in_zone(p: &Program<'_>, dir: &Fd) -> Result<bool, i32> {
    if p.zones().next().is_none() {
        return Ok(false);
    }
    let mut st = stat_fd(dir)?;
    let mut cur: Option<Fd> = None;
    for _ in 0..2048 {
        if p.zones().any(|(d, i)| d == st.dev && i == st.ino) {
            return Ok(true);
        }
        let here = cur.as_ref().map_or(dir.raw(), Fd::raw);
        let up = sys::openat(here, b"..\0", O_PATH | O_DIRECTORY | O_CLOEXEC, 0)?;
        let ust = stat_fd(&up)?;
        if (ust.dev, ust.ino) == (st.dev, st.ino) {
            return Ok(false);
        }
        st = ust;
        cur = Some(up);
    }
    Ok(true)
}

/// How a path is resolved for one system call.
pub(super) struct Resolver {
    pub(super) tid: u32,
    pub(super) tgid: u32,
    /// Symlinks left to follow (the kernel's limit is 40).
    pub(super) budget: u32,
}

/// A directory and a name in it: where an operation takes place.
pub(super) struct At {
    pub(super) dir: Fd,
    pub(super) name: Buf,
    /// The name is a link of /proc that only the kernel can follow (a
    /// descriptor, a working directory): the operation must follow it.
    pub(super) magic: bool,
}

impl Resolver {
    pub(super) fn new(tid: u32) -> Resolver {
        Resolver {
            tid,
            tgid: 0,
            budget: 40,
        }
    }

    pub(super) fn tgid(&mut self) -> Result<u32, i32> {
        if self.tgid == 0 {
            self.tgid = status_of(self.tid)?.0;
        }
        Ok(self.tgid)
    }

    pub(super) fn root(&self) -> Result<Fd, i32> {
        sys::openat(AT_FDCWD, b"/\0", O_PATH | O_DIRECTORY | O_CLOEXEC, 0)
    }

    /// The directory a path given with `dirfd` is relative to.
    pub(super) fn base(&self, dirfd: u64, path: &[u8]) -> Result<Fd, i32> {
        if path.first() == Some(&b'/') {
            return self.root();
        }
        let mut p = Buf::new();
        if dirfd as i32 == AT_FDCWD as i32 {
            proc_path(&mut p, self.tid, b"cwd")?;
        } else {
            let fd = dirfd as i32;
            if fd < 0 {
                return Err(EBADF);
            }
            let mut d = [0u8; 20];
            proc_path(&mut p, self.tid, b"fd/")?;
            let len = p.len;
            let tail = digits(fd as u64, &mut d);
            let mut q = Buf::new();
            q.set(&[&p.b[..len], tail])?;
            p = q;
        }
        sys::openat(AT_FDCWD, p.c(), O_PATH | O_CLOEXEC, 0).map_err(|e| {
            if e == ENOENT {
                EBADF
            } else {
                e
            }
        })
    }

    /// Splits `path` into the directory part, resolved to a descriptor, and
    /// the last component (trailing slashes kept on it, so the operation
    /// sees them as the command's would).
    pub(super) fn split(&mut self, base: Fd, path: &[u8]) -> Result<At, i32> {
        if path.is_empty() {
            return Err(ENOENT);
        }
        let mut end = path.len();
        while end > 1 && path[end - 1] == b'/' {
            end -= 1;
        }
        let cut = path[..end].iter().rposition(|c| *c == b'/');
        let (dir, last) = match cut {
            Some(0) => (&b"/"[..], &path[1..]),
            Some(i) => (&path[..i], &path[i + 1..]),
            None => (&b""[..], path),
        };
        let dir_fd = if dir.is_empty() {
            base
        } else {
            self.resolve_dir(base, dir)?
        };
        let mut name = Buf::new();
        name.set(&[if last.is_empty() { b"." } else { last }])?;
        Ok(At {
            dir: dir_fd,
            name,
            magic: false,
        })
    }

    /// A directory path relative to `base`, as the command's kernel walk
    /// would reach it. The kernel walks it (fast) unless the walk touches
    /// /proc, whose `self` and descriptor links would mean this process.
    pub(super) fn resolve_dir(&mut self, base: Fd, dir: &[u8]) -> Result<Fd, i32> {
        let mut c = Buf::new();
        c.set(&[dir])?;
        if !on_proc(&base) {
            #[repr(C)]
            struct How {
                flags: u64,
                mode: u64,
                resolve: u64,
            }
            let how = How {
                flags: (O_PATH | O_DIRECTORY | O_CLOEXEC) as u64,
                mode: 0,
                resolve: RESOLVE_NO_MAGICLINKS,
            };
            // SAFETY: a NUL-terminated path and an open_how of the size given.
            let r = unsafe {
                sys::call(
                    sys::OPENAT2,
                    &[
                        base.raw(),
                        c.c().as_ptr() as usize,
                        &how as *const How as usize,
                        core::mem::size_of::<How>(),
                    ],
                )
            };
            match r {
                Ok(fd) => {
                    let fd = Fd(fd as i32);
                    if !on_proc(&fd) {
                        return Ok(fd);
                    }
                }
                // Only a magic link (or no openat2) needs the slow walk;
                // every other answer is the kernel's own.
                Err(ELOOP) | Err(EXDEV) | Err(ENOSYS) | Err(EINVAL) => {}
                Err(e) => return Err(e),
            }
        }
        self.walk(base, &c)
    }

    /// The slow walk, one component at a time, with /proc's `self` and
    /// `thread-self` meaning the command.
    pub(super) fn walk(&mut self, base: Fd, path: &Buf) -> Result<Fd, i32> {
        // What is left to walk; a symlink's target is put in front of it.
        let mut rest = [0u8; 8192];
        let mut len = path.len;
        rest[..len].copy_from_slice(path.bytes());
        let mut cur = if path.bytes().first() == Some(&b'/') {
            self.root()?
        } else {
            base
        };
        loop {
            let mut start = 0;
            while start < len && rest[start] == b'/' {
                start += 1;
            }
            if start == len {
                return Ok(cur);
            }
            let mut stop = start;
            while stop < len && rest[stop] != b'/' {
                stop += 1;
            }
            let mut comp = Buf::new();
            comp.set(&[&rest[start..stop]])?;
            rest.copy_within(stop..len, 0);
            len -= stop;
            if comp.bytes() == b"." {
                continue;
            }
            if on_proc(&cur) && (comp.bytes() == b"self" || comp.bytes() == b"thread-self") {
                let tgid = self.tgid()?;
                let mut sub = Buf::new();
                if comp.bytes() == b"self" {
                    sub.set(&[digits(u64::from(tgid), &mut [0; 20])])?;
                } else {
                    sub.set(&[
                        digits(u64::from(tgid), &mut [0; 20]),
                        b"/task/",
                        digits(u64::from(self.tid), &mut [0; 20]),
                    ])?;
                }
                len = prepend(&mut rest, len, sub.bytes())?;
                continue;
            }
            let st = stat_at(&cur, &comp)?;
            if st.mode & S_IFMT == S_IFLNK {
                self.budget = self.budget.checked_sub(1).ok_or(ELOOP)?;
                let mut target = Buf::new();
                readlink_at(cur.raw(), comp.c(), &mut target)?;
                if on_proc(&cur) && !is_proc_text_link(target.bytes()) {
                    // A descriptor or working-directory link: only the
                    // kernel can follow it, to what the command holds.
                    not_ours(&cur)?;
                    cur = sys::openat(cur.raw(), comp.c(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0)?;
                    continue;
                }
                if target.bytes().first() == Some(&b'/') {
                    cur = self.root()?;
                }
                len = prepend(&mut rest, len, target.bytes())?;
                continue;
            }
            cur = sys::openat(
                cur.raw(),
                comp.c(),
                O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
                0,
            )?;
        }
    }

    /// Follows the last component while it is a symlink (as the system
    /// call would when it follows); a link only the kernel can follow is
    /// marked so that the operation follows it.
    pub(super) fn follow(&mut self, mut at: At) -> Result<At, i32> {
        loop {
            let st = match stat_at(&at.dir, &at.name) {
                Ok(st) => st,
                Err(_) => return Ok(at),
            };
            if st.mode & S_IFMT != S_IFLNK {
                return Ok(at);
            }
            self.budget = self.budget.checked_sub(1).ok_or(ELOOP)?;
            let mut target = Buf::new();
            readlink_at(at.dir.raw(), at.name.c(), &mut target)?;
            if on_proc(&at.dir) && !is_proc_text_link(target.bytes()) {
                not_ours(&at.dir)?;
                at.magic = true;
                return Ok(at);
            }
            if on_proc(&at.dir) && at.name.bytes() == b"self" {
                // /proc/self itself as the last component.
                let tgid = self.tgid()?;
                at.name.set(&[digits(u64::from(tgid), &mut [0; 20])])?;
                continue;
            }
            let base = if target.bytes().first() == Some(&b'/') {
                self.root()?
            } else {
                at.dir
            };
            at = self.split(base, target.bytes())?;
        }
    }

    /// `(dirfd, path)` of the command, resolved to where its last component
    /// is, following a final symlink when `follow`.
    pub(super) fn at(&mut self, dirfd: u64, path: &Buf, follow: bool) -> Result<At, i32> {
        let base = self.base(dirfd, path.bytes())?;
        let at = self.split(base, path.bytes())?;
        if follow {
            self.follow(at)
        } else {
            Ok(at)
        }
    }

    /// What the command's descriptor `fd` refers to, as an O_PATH descriptor.
    pub(super) fn fd_target(&self, fd: u64) -> Result<Fd, i32> {
        let fd = fd as i32;
        if fd < 0 {
            return Err(EBADF);
        }
        let mut p = Buf::new();
        let mut d = [0u8; 20];
        let tail = digits(fd as u64, &mut d);
        let mut head = Buf::new();
        proc_path(&mut head, self.tid, b"fd/")?;
        p.set(&[head.bytes(), tail])?;
        sys::openat(AT_FDCWD, p.c(), O_PATH | O_CLOEXEC, 0).map_err(|e| {
            if e == ENOENT {
                EBADF
            } else {
                e
            }
        })
    }
}

/// Refuses (EACCES) to follow a magic link of /proc that belongs to the
/// broker itself: the kernel lets a process follow its own descriptor and
/// working-directory links, so `/proc/<broker>/fd/N` named by the command
/// would be followed here with the broker's access, not the command's (the
/// command itself is refused: the broker is another process, not dumpable
/// when it holds the roots' host descriptors). Shadows and the broker's
/// children are other processes: the kernel refuses the broker there too.
pub(super) fn not_ours(dir: &Fd) -> Result<(), i32> {
    let mut p = Buf::new();
    path_of(dir, &mut p)?;
    let rest = p.bytes().strip_prefix(b"/proc/").ok_or(EACCES)?;
    let end = rest.iter().position(|c| *c == b'/').unwrap_or(rest.len());
    let mut pid: u64 = 0;
    for &c in &rest[..end] {
        if !c.is_ascii_digit() {
            // /proc itself or a file of the whole system: no process's link.
            return Ok(());
        }
        pid = pid.saturating_mul(10).saturating_add(u64::from(c - b'0'));
    }
    // SAFETY: getpid takes nothing and cannot fail.
    let me = unsafe { sys::call(nr::GETPID, &[]) }.unwrap_or(0) as u64;
    if end == 0 || pid == me {
        return Err(EACCES);
    }
    Ok(())
}

/// The text links of /proc (`self`, `thread-self`, `mounts` -> `self/mounts`,
/// `net` -> `self/net`): followed here by their text. Every other link there
/// is the kernel's own kind (a descriptor, a working directory, an exe).
pub(super) fn is_proc_text_link(target: &[u8]) -> bool {
    target == b"self"
        || target.starts_with(b"self/")
        || target == b"thread-self"
        || target.starts_with(b"thread-self/")
        || (!target.is_empty() && target.iter().all(|c| c.is_ascii_digit() || *c == b'/'))
}

/// Puts `front` and a `/` before the first `len` bytes of `rest`.
pub(super) fn prepend(rest: &mut [u8; 8192], len: usize, front: &[u8]) -> Result<usize, i32> {
    let total = front.len() + 1 + len;
    if total > rest.len() {
        return Err(ENAMETOOLONG);
    }
    rest.copy_within(0..len, front.len() + 1);
    rest[..front.len()].copy_from_slice(front);
    rest[front.len()] = b'/';
    Ok(total)
}
