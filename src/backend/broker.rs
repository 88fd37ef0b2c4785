//! The broker: performs, on behalf of the sandboxed command, the system
//! calls that the seccomp filter hands to it (SECCOMP_RET_USER_NOTIF), so
//! that two checks no kernel layer can make are made without a race:
//! - a protected name that is missing at launch cannot be created (the
//!   program's guards: a name in a directory, known by inode), and nothing
//!   is put on the host to hold its place;
//! - metadata (mode, owner, times, extended attributes) changes only where
//!   the layer grants writing, and never on a device node.
//!
//! Everything else it does is what the layer's landlock rules would let
//! the command do itself: the broker runs outside that layer, so it
//! computes the same rights from the same rules (the program's `fs_rules`)
//! and refuses what they refuse. Whatever else holds the command (bwrap's
//! mounts, an outer sandbox) holds the broker too: it runs beside it.
//!
//! Race-free by construction: the path is read once from the command's
//! memory, resolved here to a directory descriptor, checked on that
//! descriptor, and the operation is made relative to it, with O_NOFOLLOW
//! for the last component: nothing the command changes afterwards (the
//! string, a symlink, a rename) can redirect it. The command's syscall then
//! returns the operation's own result; a new descriptor is installed in the
//! command with SECCOMP_IOCTL_NOTIF_ADDFD.
//!
//! Paths are resolved in the command's place: the same root and mount
//! namespace, its working directory and descriptors through /proc/<tid>,
//! and `/proc/self` — also when reached through a symlink such as
//! /dev/stdout — as the command's own.
//!
//! It never allocates (the embedded second stage has no allocator) and never
//! blocks on what the command controls, but for opening a FIFO, which a
//! short-lived child of its own waits for.
//!
//! Compiled into the stub and into dcjail: `core` only.
#![allow(dead_code)]

use super::stub_format::Program;
use super::sys::{self, nr, Fd};

#[path = "broker_observe.rs"]
mod observe;

#[cfg(target_arch = "x86_64")]
mod o {
    pub const DIRECTORY: usize = 0o200000;
    pub const NOFOLLOW: usize = 0o400000;
}
#[cfg(target_arch = "aarch64")]
mod o {
    pub const DIRECTORY: usize = 0o40000;
    pub const NOFOLLOW: usize = 0o100000;
}
pub const O_DIRECTORY: usize = o::DIRECTORY;
pub const O_NOFOLLOW: usize = o::NOFOLLOW;
pub const O_ACCMODE: usize = 3;
pub const O_WRONLY: usize = 1;
pub const O_RDWR: usize = 2;
pub const O_CREAT: usize = 0o100;
pub const O_EXCL: usize = 0o200;
pub const O_TRUNC: usize = 0o1000;
pub const O_NONBLOCK: usize = 0o4000;
pub const O_CLOEXEC: usize = 0o2000000;
pub const O_PATH: usize = 0o10000000;
pub const O_TMPFILE_BIT: usize = 0o20000000;

const AT_FDCWD: usize = -100isize as usize;
const AT_SYMLINK_NOFOLLOW: usize = 0x100;
const AT_SYMLINK_FOLLOW: usize = 0x400;
const AT_EMPTY_PATH: usize = 0x1000;
const RENAME_NOREPLACE: usize = 1;
const RENAME_EXCHANGE: usize = 2;
const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
const PROC_SUPER_MAGIC: u64 = 0x9fa0;
const UTIME_NOW: i64 = (1 << 30) - 1;
const UTIME_OMIT: i64 = (1 << 30) - 2;

pub const S_IFMT: u32 = 0o170000;
pub const S_IFDIR: u32 = 0o040000;
pub const S_IFREG: u32 = 0o100000;
pub const S_IFLNK: u32 = 0o120000;
pub const S_IFCHR: u32 = 0o020000;
pub const S_IFBLK: u32 = 0o060000;
pub const S_IFIFO: u32 = 0o010000;
pub const S_IFSOCK: u32 = 0o140000;
/// setuid and setgid: never set by the command (the seccomp filter refuses
/// such modes before they reach here; checked again).
pub const S_ISUID_ISGID: u32 = 0o6000;

const EPERM: i32 = 1;
const ENOENT: i32 = 2;
const EBADF: i32 = 9;
const EACCES: i32 = 13;
const EFAULT: i32 = 14;
const EEXIST: i32 = 17;
const EXDEV: i32 = 18;
const ENOTDIR: i32 = 20;
const EINVAL: i32 = 22;
const E2BIG: i32 = 7;
const EROFS: i32 = 30;
const ENAMETOOLONG: i32 = 36;
const ENOSYS: i32 = 38;
const ELOOP: i32 = 40;
const EOPNOTSUPP: i32 = 95;

/// Landlock filesystem rights (landlock::access), as the rules carry them.
mod right {
    pub const EXECUTE: u64 = 1 << 0;
    pub const WRITE_FILE: u64 = 1 << 1;
    pub const READ_FILE: u64 = 1 << 2;
    pub const READ_DIR: u64 = 1 << 3;
    pub const REMOVE_DIR: u64 = 1 << 4;
    pub const REMOVE_FILE: u64 = 1 << 5;
    pub const MAKE_CHAR: u64 = 1 << 6;
    pub const MAKE_DIR: u64 = 1 << 7;
    pub const MAKE_REG: u64 = 1 << 8;
    pub const MAKE_SOCK: u64 = 1 << 9;
    pub const MAKE_FIFO: u64 = 1 << 10;
    pub const MAKE_BLOCK: u64 = 1 << 11;
    pub const MAKE_SYM: u64 = 1 << 12;
    pub const REFER: u64 = 1 << 13;
    pub const TRUNCATE: u64 = 1 << 14;
}

// The seccomp user-notification interface (include/uapi/linux/seccomp.h).
pub const IOCTL_RECV: usize = 0xc050_2100;
pub const IOCTL_SEND: usize = 0xc018_2101;
pub const IOCTL_ID_VALID: usize = 0x4008_2102;
pub const IOCTL_ADDFD: usize = 0x4018_2103;
const ADDFD_FLAG_SEND: u32 = 2;

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct SeccompData {
    pub nr: i32,
    pub arch: u32,
    pub ip: u64,
    pub args: [u64; 6],
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct Notif {
    pub id: u64,
    pub pid: u32,
    pub flags: u32,
    pub data: SeccompData,
}

#[repr(C)]
struct Resp {
    id: u64,
    val: i64,
    error: i32,
    flags: u32,
}

#[repr(C)]
struct AddFd {
    id: u64,
    flags: u32,
    srcfd: u32,
    newfd: u32,
    newfd_flags: u32,
}

/// What the command's system call returns.
enum Reply {
    Val(i64),
    Err(i32),
    /// A descriptor to install in the command; `true`: close-on-exec.
    Fd(Fd, bool),
    /// Nothing: the command is gone, or a child of ours answers.
    None,
}

/// A path or name as read or built here, NUL-terminated in place.
struct Buf {
    b: [u8; 4097],
    len: usize,
}

impl Buf {
    fn new() -> Buf {
        Buf {
            b: [0; 4097],
            len: 0,
        }
    }
    fn bytes(&self) -> &[u8] {
        &self.b[..self.len]
    }
    /// The bytes with their terminating NUL, for a system call.
    fn c(&self) -> &[u8] {
        &self.b[..=self.len]
    }
    fn set(&mut self, parts: &[&[u8]]) -> Result<(), i32> {
        let mut n = 0;
        for p in parts {
            if n + p.len() >= self.b.len() {
                return Err(ENAMETOOLONG);
            }
            self.b[n..n + p.len()].copy_from_slice(p);
            n += p.len();
        }
        self.b[n] = 0;
        self.len = n;
        Ok(())
    }
}

fn digits(mut v: u64, d: &mut [u8; 20]) -> &[u8] {
    let mut i = d.len();
    loop {
        i -= 1;
        d[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    &d[i..]
}

/// Reads `buf.len()` bytes (or fewer, at an unmapped page) of the command's
/// memory at `addr`.
fn read_mem(tid: u32, addr: u64, buf: &mut [u8]) -> Result<usize, i32> {
    if buf.is_empty() {
        return Ok(0);
    }
    if addr == 0 {
        return Err(EFAULT);
    }
    let local = [buf.as_mut_ptr() as usize, buf.len()];
    let remote = [addr as usize, buf.len()];
    // SAFETY: one local iovec over `buf`, one remote one; no flags.
    let n = unsafe {
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
    }
    .map_err(|_| EFAULT)?;
    Ok(n)
}

/// Reads exactly `buf.len()` bytes of the command's memory.
fn read_exact(tid: u32, addr: u64, buf: &mut [u8]) -> Result<(), i32> {
    match read_mem(tid, addr, buf)? {
        n if n == buf.len() => Ok(()),
        _ => Err(EFAULT),
    }
}

/// Reads a NUL-terminated string (a path: at most 4095 bytes) of the
/// command's memory, a page at a time so that a string ending just before
/// an unmapped page is read whole.
fn read_str(tid: u32, addr: u64, out: &mut Buf) -> Result<(), i32> {
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
fn proc_path(buf: &mut Buf, tid: u32, rest: &[u8]) -> Result<(), i32> {
    buf.set(&[b"/proc/", digits(u64::from(tid), &mut [0; 20]), b"/", rest])
}

/// The command's thread group id and umask, from /proc/<tid>/status.
fn status_of(tid: u32) -> Result<(u32, u32), i32> {
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

fn on_proc(fd: &Fd) -> bool {
    let mut st = [0u64; 16];
    // SAFETY: struct statfs is 120 bytes on both architectures; 128 given.
    match unsafe { sys::call(nr::FSTATFS, &[fd.raw(), st.as_mut_ptr() as usize]) } {
        Ok(_) => st[0] == PROC_SUPER_MAGIC,
        Err(_) => false,
    }
}

fn stat_fd(fd: &Fd) -> Result<sys::Stat, i32> {
    sys::stat(fd.raw(), b"\0", AT_EMPTY_PATH)
}

fn stat_at(dir: &Fd, name: &Buf) -> Result<sys::Stat, i32> {
    sys::stat(dir.raw(), name.c(), AT_SYMLINK_NOFOLLOW)
}

fn readlink_at(dir: usize, name: &[u8], out: &mut Buf) -> Result<(), i32> {
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
fn path_of(fd: &Fd, out: &mut Buf) -> Result<(), i32> {
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

fn is_under(path: &[u8], root: &[u8]) -> bool {
    root == b"/"
        || path == root
        || (path.len() > root.len() && path.starts_with(root) && path[root.len()] == b'/')
}

/// The landlock rights the layer grants at `path` (a directory's or file's
/// canonical path): every rule on it or on a directory above it, plus what
/// the ruleset does not handle.
fn rights_at(p: &Program<'_>, path: &[u8]) -> u64 {
    let mut r = !p.handled_fs;
    for (rule, access) in p.fs_rules() {
        if is_under(path, rule) {
            r |= access;
        }
    }
    r
}

fn rights_of(p: &Program<'_>, fd: &Fd) -> Result<u64, i32> {
    let mut path = Buf::new();
    path_of(fd, &mut path)?;
    Ok(rights_at(p, path.bytes()))
}

/// Whether `name` in directory `dir` is one of the program's guards.
fn guarded(p: &Program<'_>, dir: &Fd, name: &[u8]) -> Result<bool, i32> {
    let st = stat_fd(dir)?;
    Ok(p.guards()
        .any(|(dev, ino, g)| dev == st.dev && ino == st.ino && g == name))
}

/// How a path is resolved for one system call.
struct Resolver<'p> {
    tid: u32,
    tgid: u32,
    /// Symlinks left to follow (the kernel's limit is 40).
    budget: u32,
    prog: &'p Program<'p>,
}

/// A directory and a name in it: where an operation takes place.
struct At {
    dir: Fd,
    name: Buf,
    /// The name is a link of /proc that only the kernel can follow (a
    /// descriptor, a working directory): the operation must follow it.
    magic: bool,
}

impl<'p> Resolver<'p> {
    fn new(tid: u32, prog: &'p Program<'p>) -> Resolver<'p> {
        Resolver {
            tid,
            tgid: 0,
            budget: 40,
            prog,
        }
    }

    fn tgid(&mut self) -> Result<u32, i32> {
        if self.tgid == 0 {
            self.tgid = status_of(self.tid)?.0;
        }
        Ok(self.tgid)
    }

    fn root(&self) -> Result<Fd, i32> {
        sys::openat(AT_FDCWD, b"/\0", O_PATH | O_DIRECTORY | O_CLOEXEC, 0)
    }

    /// The directory a path given with `dirfd` is relative to.
    fn base(&self, dirfd: u64, path: &[u8]) -> Result<Fd, i32> {
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
    fn split(&mut self, base: Fd, path: &[u8]) -> Result<At, i32> {
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
    fn resolve_dir(&mut self, base: Fd, dir: &[u8]) -> Result<Fd, i32> {
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
    fn walk(&mut self, base: Fd, path: &Buf) -> Result<Fd, i32> {
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
    fn follow(&mut self, mut at: At) -> Result<At, i32> {
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
    fn at(&mut self, dirfd: u64, path: &Buf, follow: bool) -> Result<At, i32> {
        let base = self.base(dirfd, path.bytes())?;
        let at = self.split(base, path.bytes())?;
        if follow {
            self.follow(at)
        } else {
            Ok(at)
        }
    }

    /// What the command's descriptor `fd` refers to, as an O_PATH descriptor.
    fn fd_target(&self, fd: u64) -> Result<Fd, i32> {
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

/// The text links of /proc (`self`, `thread-self`, `mounts` -> `self/mounts`,
/// `net` -> `self/net`): followed here by their text. Every other link there
/// is the kernel's own kind (a descriptor, a working directory, an exe).
fn is_proc_text_link(target: &[u8]) -> bool {
    target == b"self"
        || target.starts_with(b"self/")
        || target == b"thread-self"
        || target.starts_with(b"thread-self/")
        || (!target.is_empty() && target.iter().all(|c| c.is_ascii_digit() || *c == b'/'))
}

/// Puts `front` and a `/` before the first `len` bytes of `rest`.
fn prepend(rest: &mut [u8; 8192], len: usize, front: &[u8]) -> Result<usize, i32> {
    let total = front.len() + 1 + len;
    if total > rest.len() {
        return Err(ENAMETOOLONG);
    }
    rest.copy_within(0..len, front.len() + 1);
    rest[..front.len()].copy_from_slice(front);
    rest[front.len()] = b'/';
    Ok(total)
}

fn umask(mask: u32) {
    #[cfg(target_arch = "x86_64")]
    let n = nr::UMASK;
    #[cfg(target_arch = "aarch64")]
    let n = nr::UMASK;
    // SAFETY: umask takes an integer and cannot fail.
    let _ = unsafe { sys::call(n, &[mask as usize]) };
}

/// The rights a new entry of mode `mode` needs in its directory.
fn make_right(mode: u32) -> u64 {
    match mode & S_IFMT {
        S_IFDIR => right::MAKE_DIR,
        S_IFLNK => right::MAKE_SYM,
        S_IFCHR => right::MAKE_CHAR,
        S_IFBLK => right::MAKE_BLOCK,
        S_IFIFO => right::MAKE_FIFO,
        S_IFSOCK => right::MAKE_SOCK,
        _ => right::MAKE_REG,
    }
}

fn remove_right(mode: u32) -> u64 {
    if mode & S_IFMT == S_IFDIR {
        right::REMOVE_DIR
    } else {
        right::REMOVE_FILE
    }
}

/// The broker's view of one notification.
pub struct Ctx<'p> {
    listener: i32,
    req: Notif,
    prog: &'p Program<'p>,
}

impl<'p> Ctx<'p> {
    fn arg(&self, i: usize) -> u64 {
        self.req.data.args[i]
    }

    /// Still the same blocked system call of a live command: checked after
    /// everything was read of it and before anything is done for it.
    fn valid(&self) -> bool {
        // SAFETY: the ioctl reads one u64.
        unsafe {
            sys::call(
                nr::IOCTL,
                &[
                    self.listener as usize,
                    IOCTL_ID_VALID,
                    &self.req.id as *const u64 as usize,
                ],
            )
        }
        .is_ok()
    }

    fn string(&self, i: usize, out: &mut Buf) -> Result<(), i32> {
        read_str(self.req.pid, self.arg(i), out)
    }

    fn resolver(&self) -> Resolver<'p> {
        Resolver::new(self.req.pid, self.prog)
    }
}

/// Receives one notification and answers it. `Err` only when the listener
/// itself fails (it is closed, or the sandbox is gone).
pub fn handle_one(listener: i32, prog: &Program<'_>) -> Result<(), i32> {
    let mut req = Notif::default();
    // SAFETY: a zeroed struct seccomp_notif of the size the ioctl encodes.
    match unsafe {
        sys::call(
            nr::IOCTL,
            &[
                listener as usize,
                IOCTL_RECV,
                &mut req as *mut Notif as usize,
            ],
        )
    } {
        Ok(_) => {}
        // The command was interrupted or died while waiting: nothing to do.
        Err(4) | Err(ENOENT) => return Ok(()),
        Err(e) => return Err(e),
    }
    let ctx = Ctx {
        listener,
        req,
        prog,
    };
    if prog.report_fd >= 0 {
        observe::handle(&ctx);
        return Ok(());
    }
    let reply = dispatch(&ctx);
    answer(&ctx, reply);
    Ok(())
}

fn answer(ctx: &Ctx<'_>, reply: Reply) {
    let send = |val: i64, err: i32| {
        let r = Resp {
            id: ctx.req.id,
            val,
            error: -err,
            flags: 0,
        };
        // SAFETY: a complete struct seccomp_notif_resp.
        let _ = unsafe {
            sys::call(
                nr::IOCTL,
                &[
                    ctx.listener as usize,
                    IOCTL_SEND,
                    &r as *const Resp as usize,
                ],
            )
        };
    };
    match reply {
        Reply::None => {}
        Reply::Val(v) => send(v, 0),
        Reply::Err(e) => send(-1, e),
        Reply::Fd(fd, cloexec) => {
            let a = AddFd {
                id: ctx.req.id,
                flags: ADDFD_FLAG_SEND,
                srcfd: fd.0 as u32,
                newfd: 0,
                newfd_flags: if cloexec { O_CLOEXEC as u32 } else { 0 },
            };
            // SAFETY: a complete struct seccomp_notif_addfd.
            let r = unsafe {
                sys::call(
                    nr::IOCTL,
                    &[
                        ctx.listener as usize,
                        IOCTL_ADDFD,
                        &a as *const AddFd as usize,
                    ],
                )
            };
            match r {
                Ok(_) => {}
                // The command died meanwhile: nobody to answer.
                Err(ENOENT) => {}
                Err(e) => send(-1, e),
            }
        }
    }
}

fn result(r: Result<Reply, i32>) -> Reply {
    match r {
        Ok(v) => v,
        Err(e) => Reply::Err(e),
    }
}

fn dispatch(c: &Ctx<'_>) -> Reply {
    let n = c.req.data.nr as usize;
    let a = |i| c.arg(i);
    #[cfg(target_arch = "x86_64")]
    {
        let r = match n {
            nr::OPEN => Some(open(c, AT_FDCWD as u64, 0, a(1) as usize, a(2) as u32)),
            nr::CREAT => Some(open(
                c,
                AT_FDCWD as u64,
                0,
                O_CREAT | O_WRONLY | O_TRUNC,
                a(1) as u32,
            )),
            nr::MKDIR => Some(mknod(
                c,
                AT_FDCWD as u64,
                0,
                S_IFDIR | (a(1) as u32 & 0o7777),
                0,
            )),
            nr::MKNOD => Some(mknod(c, AT_FDCWD as u64, 0, a(1) as u32, a(2))),
            nr::SYMLINK => Some(symlink(c, 0, AT_FDCWD as u64, 1)),
            nr::LINK => Some(link(c, AT_FDCWD as u64, 0, AT_FDCWD as u64, 1, 0)),
            nr::RENAME => Some(rename(c, AT_FDCWD as u64, 0, AT_FDCWD as u64, 1, 0)),
            nr::RENAMEAT => Some(rename(c, a(0), 1, a(2), 3, 0)),
            nr::CHMOD => Some(chmod(
                c,
                Target::Path(AT_FDCWD as u64, 0, true),
                a(1) as u32,
            )),
            nr::CHOWN => Some(chown(c, Target::Path(AT_FDCWD as u64, 0, true), a(1), a(2))),
            nr::LCHOWN => Some(chown(
                c,
                Target::Path(AT_FDCWD as u64, 0, false),
                a(1),
                a(2),
            )),
            nr::UTIME => Some(utimes(
                c,
                Target::Path(AT_FDCWD as u64, 0, true),
                Times::Utimbuf(a(1)),
            )),
            nr::UTIMES => Some(utimes(
                c,
                Target::Path(AT_FDCWD as u64, 0, true),
                Times::Timeval(a(1)),
            )),
            nr::FUTIMESAT => Some(utimes(c, Target::Path(a(0), 1, true), Times::Timeval(a(2)))),
            _ => None,
        };
        if let Some(r) = r {
            return result(r);
        }
    }
    let r = match n {
        nr::OPENAT => open(c, a(0), 1, a(2) as usize, a(3) as u32),
        nr::MKDIRAT => mknod(c, a(0), 1, S_IFDIR | (a(2) as u32 & 0o7777), 0),
        nr::MKNODAT => mknod(c, a(0), 1, a(2) as u32, a(3)),
        nr::SYMLINKAT => symlink(c, 0, a(1), 2),
        nr::LINKAT => link(c, a(0), 1, a(2), 3, a(4) as usize),
        nr::RENAMEAT2 => rename(c, a(0), 1, a(2), 3, a(4) as usize),
        nr::FCHMOD => chmod(c, Target::Fd(a(0)), a(1) as u32),
        nr::FCHMODAT => chmod(c, Target::Path(a(0), 1, true), a(2) as u32),
        sys::FCHMODAT2 => match at_target(c, a(0), 1, a(3) as usize) {
            Ok(t) => chmod(c, t, a(2) as u32),
            Err(e) => Err(e),
        },
        nr::FCHOWN => chown(c, Target::Fd(a(0)), a(1), a(2)),
        nr::FCHOWNAT => match at_target(c, a(0), 1, a(4) as usize) {
            Ok(t) => chown(c, t, a(2), a(3)),
            Err(e) => Err(e),
        },
        nr::UTIMENSAT => {
            let flags = a(3) as usize;
            let t = if a(1) == 0 {
                // A NULL path: the descriptor itself (futimens).
                Ok(Target::Fd(a(0)))
            } else {
                at_target(c, a(0), 1, flags)
            };
            match t {
                Ok(t) => utimes(c, t, Times::Timespec(a(2))),
                Err(e) => Err(e),
            }
        }
        nr::SETXATTR => setxattr(c, Target::Path(AT_FDCWD as u64, 0, true), 1),
        nr::LSETXATTR => setxattr(c, Target::Path(AT_FDCWD as u64, 0, false), 1),
        nr::FSETXATTR => setxattr(c, Target::Fd(a(0)), 1),
        nr::REMOVEXATTR => removexattr(c, Target::Path(AT_FDCWD as u64, 0, true), 1),
        nr::LREMOVEXATTR => removexattr(c, Target::Path(AT_FDCWD as u64, 0, false), 1),
        nr::FREMOVEXATTR => removexattr(c, Target::Fd(a(0)), 1),
        // Anything else the filter might hand over is not the broker's.
        _ => Err(EPERM),
    };
    result(r)
}

/// What a metadata call acts on.
enum Target {
    /// The command's descriptor.
    Fd(u64),
    /// `(dirfd, index of the path argument, follow a final symlink)`.
    Path(u64, usize, bool),
    /// `dirfd` itself (an empty path with AT_EMPTY_PATH).
    Dirfd(u64),
}

/// The target of a `*at` metadata call with `flags`.
fn at_target(c: &Ctx<'_>, dirfd: u64, path_arg: usize, flags: usize) -> Result<Target, i32> {
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
fn meta_target(c: &Ctx<'_>, t: &Target) -> Result<Fd, i32> {
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
fn self_path(fd: &Fd, out: &mut Buf) -> Result<(), i32> {
    out.set(&[b"/proc/self/fd/", digits(fd.0 as u64, &mut [0; 20])])
}

fn chmod(c: &Ctx<'_>, t: Target, mode: u32) -> Result<Reply, i32> {
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

fn chown(c: &Ctx<'_>, t: Target, uid: u64, gid: u64) -> Result<Reply, i32> {
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
enum Times {
    /// struct utimbuf { actime, modtime } (seconds).
    Utimbuf(u64),
    /// struct timeval[2].
    Timeval(u64),
    /// struct timespec[2], with UTIME_NOW / UTIME_OMIT.
    Timespec(u64),
}

fn utimes(c: &Ctx<'_>, t: Target, times: Times) -> Result<Reply, i32> {
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
fn xattr_name(c: &Ctx<'_>, i: usize, out: &mut Buf) -> Result<(), i32> {
    c.string(i, out)?;
    if out.len == 0 || out.len > 255 {
        return Err(if out.len == 0 { EINVAL } else { ERANGE });
    }
    Ok(())
}
const ERANGE: i32 = 34;

fn setxattr(c: &Ctx<'_>, t: Target, name_arg: usize) -> Result<Reply, i32> {
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

fn removexattr(c: &Ctx<'_>, t: Target, name_arg: usize) -> Result<Reply, i32> {
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

/// Sets the command's umask on this process for one creation.
fn take_umask(c: &Ctx<'_>) -> Result<(), i32> {
    let (_, mask) = status_of(c.req.pid)?;
    umask(mask);
    Ok(())
}

/// A name that is there already cannot be made: EEXIST, which the kernel
/// says before any permission (a read-only or guarded place included).
fn absent(at: &At) -> Result<(), i32> {
    match stat_at(&at.dir, &at.name) {
        Ok(_) => Err(EEXIST),
        Err(ENOENT) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Refuses to create the missing name `at.name` in `at.dir` where a guard
/// forbids it or the layer grants no `need` there.
fn may_create(c: &Ctx<'_>, at: &At, need: u64) -> Result<(), i32> {
    if guarded(c.prog, &at.dir, at.name.bytes().trim_end_slash())? {
        return Err(EROFS);
    }
    may_make(c, at, need)
}

/// The layer's rights for making an entry in `at.dir`.
fn may_make(c: &Ctx<'_>, at: &At, need: u64) -> Result<(), i32> {
    if rights_of(c.prog, &at.dir)? & need != need {
        return Err(EACCES);
    }
    Ok(())
}

trait TrimSlash {
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
fn open(c: &Ctx<'_>, dirfd: u64, path_arg: usize, flags: usize, mode: u32) -> Result<Reply, i32> {
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
        match sys::openat(at.dir.raw(), at.name.c(), oflags, (mode & 0o7777) as usize) {
            Ok(fd) => return Ok(Reply::Fd(fd, flags & O_CLOEXEC != 0)),
            Err(ELOOP) if nofollow != 0 && follow => continue,
            Err(e) => return Err(e),
        }
    }
    Err(ELOOP)
}

/// A FIFO's open waits for its other end, which may come from the command
/// itself: a child of the broker waits and answers, the broker goes on.
fn open_fifo(c: &Ctx<'_>, at: &At, flags: usize, mode: u32, cloexec: bool) -> Result<Reply, i32> {
    const SIGCHLD: usize = 17;
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
fn mknod(c: &Ctx<'_>, dirfd: u64, path_arg: usize, mode: u32, dev: u64) -> Result<Reply, i32> {
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
    if mode & S_IFMT == S_IFDIR {
        // SAFETY: a NUL-terminated name.
        unsafe {
            sys::call(
                nr::MKDIRAT,
                &[
                    at.dir.raw(),
                    at.name.c().as_ptr() as usize,
                    (mode & 0o7777) as usize,
                ],
            )
        }?;
    } else {
        // SAFETY: a NUL-terminated name.
        unsafe {
            sys::call(
                nr::MKNODAT,
                &[
                    at.dir.raw(),
                    at.name.c().as_ptr() as usize,
                    mode as usize,
                    dev as usize,
                ],
            )
        }?;
    }
    Ok(Reply::Val(0))
}

fn symlink(c: &Ctx<'_>, target_arg: usize, dirfd: u64, path_arg: usize) -> Result<Reply, i32> {
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
    // SAFETY: NUL-terminated target and name.
    unsafe {
        sys::call(
            nr::SYMLINKAT,
            &[
                target.c().as_ptr() as usize,
                at.dir.raw(),
                at.name.c().as_ptr() as usize,
            ],
        )
    }?;
    Ok(Reply::Val(0))
}

/// Landlock's refer rule, for a link or a move from `from` to `to`: both
/// need REFER when they differ, and nothing may gain a right by moving.
fn may_refer(c: &Ctx<'_>, from: &Fd, to: &Fd) -> Result<(), i32> {
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

fn link(
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
    // SAFETY: NUL-terminated paths; following our own descriptor's magic
    // link links the very inode resolved above.
    unsafe {
        sys::call(
            nr::LINKAT,
            &[
                AT_FDCWD,
                p.c().as_ptr() as usize,
                to.dir.raw(),
                to.name.c().as_ptr() as usize,
                AT_SYMLINK_FOLLOW,
            ],
        )
    }?;
    Ok(Reply::Val(0))
}

fn rename(
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
    if flags & RENAME_NOREPLACE != 0 && dst.is_ok() {
        return Err(EEXIST);
    }
    if !c.valid() {
        return Ok(Reply::None);
    }
    // SAFETY: NUL-terminated names.
    unsafe {
        sys::call(
            nr::RENAMEAT2,
            &[
                from.dir.raw(),
                from.name.c().as_ptr() as usize,
                to.dir.raw(),
                to.name.c().as_ptr() as usize,
                flags,
            ],
        )
    }?;
    Ok(Reply::Val(0))
}
