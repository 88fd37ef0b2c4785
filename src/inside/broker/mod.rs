//! The broker: performs, on behalf of the sandboxed command, the system
//! calls that the seccomp filter hands to it (SECCOMP_RET_USER_NOTIF), so
//! that two checks no kernel layer can make are made without a race:
//! - a protected name that is missing at launch cannot be created (the
//!   program's guards: a name in a directory, known by inode), and nothing
//!   is put on the host to hold its place;
//! - metadata (mode, owner, times, extended attributes) changes only where
//!   the layer grants writing, and never on a device node;
//! - a unix socket's path is reached only when the policy names it or the
//!   command bound it during the run (`unix`);
//! - a hard link between two writable roots, which bwrap mounts apart, is
//!   made through the host's one mount of them, for a file the command
//!   could write and a place it could write in (`hostlink`).
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

mod create;
mod hostlink;
mod meta;
mod observe;
mod resolve;
mod shadow;
mod unix;

use super::stub_format::{Program, ZONE};
use super::sys::{self, digits, nr, Fd};
use create::*;
use meta::*;
use resolve::*;
pub use shadow::Shadows;
use shadow::{perform, perform_waiting, Arg};

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
const EBUSY: i32 = 16;
const EINVAL: i32 = 22;
const E2BIG: i32 = 7;
const EROFS: i32 = 30;
const ENAMETOOLONG: i32 = 36;
const ENOSYS: i32 = 38;
const ELOOP: i32 = 40;
const EOPNOTSUPP: i32 = 95;
const EADDRINUSE: i32 = 98;

use super::stub_format::access as right;

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
    /// The kernel makes the call itself (SECCOMP_USER_NOTIF_FLAG_CONTINUE).
    Continue,
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
    /// The shadow that makes the final call for this command (`shadow`),
    /// or -1: the broker makes it.
    shadow: i32,
    /// The command's umask, once taken for a creation.
    mask: core::cell::Cell<u32>,
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

    fn resolver(&self) -> Resolver {
        Resolver::new(self.req.pid)
    }
}

/// Receives one notification and answers it. `Err` only when the listener
/// itself fails (it is closed, or the sandbox is gone).
pub fn handle_one(listener: i32, prog: &Program<'_>, sh: &mut Shadows) -> Result<(), i32> {
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
    let mut ctx = Ctx {
        listener,
        req,
        prog,
        shadow: -1,
        mask: core::cell::Cell::new(0o022),
    };
    // Also when denials are recorded: a program that restricted itself is
    // held to its own domain whether or not anyone watches.
    if req.data.nr as usize == sys::LANDLOCK_RESTRICT_SELF {
        answer(&ctx, result(shadow::restrict(&ctx, sh)));
        return Ok(());
    }
    match sh.of(req.pid) {
        Ok(s) => ctx.shadow = s,
        Err(e) => {
            answer(&ctx, Reply::Err(e));
            return Ok(());
        }
    }
    if prog.report_fd >= 0 {
        observe::handle(&ctx);
        return Ok(());
    }
    answer(&ctx, dispatch(&ctx));
    Ok(())
}

fn answer(ctx: &Ctx<'_>, reply: Reply) {
    answer_raw(ctx.listener, ctx.req.id, reply);
}

/// Answers notification `id` on `listener` (also from a child that made a
/// waiting open).
fn answer_raw(listener: i32, id: u64, reply: Reply) {
    const FLAG_CONTINUE: u32 = 1;
    let send = |val: i64, err: i32, flags: u32| {
        let r = Resp {
            id,
            val,
            error: -err,
            flags,
        };
        // SAFETY: a complete struct seccomp_notif_resp.
        let _ = unsafe {
            sys::call(
                nr::IOCTL,
                &[listener as usize, IOCTL_SEND, &r as *const Resp as usize],
            )
        };
    };
    match reply {
        Reply::None => {}
        Reply::Continue => send(0, 0, FLAG_CONTINUE),
        Reply::Val(v) => send(v, 0, 0),
        Reply::Err(e) => send(-1, e, 0),
        Reply::Fd(fd, cloexec) => {
            let a = AddFd {
                id,
                flags: ADDFD_FLAG_SEND,
                srcfd: fd.0 as u32,
                newfd: 0,
                newfd_flags: if cloexec { O_CLOEXEC as u32 } else { 0 },
            };
            // SAFETY: a complete struct seccomp_notif_addfd.
            let r = unsafe {
                sys::call(
                    nr::IOCTL,
                    &[listener as usize, IOCTL_ADDFD, &a as *const AddFd as usize],
                )
            };
            match r {
                Ok(_) => {}
                // The command died meanwhile: nobody to answer.
                Err(ENOENT) => {}
                Err(e) => send(-1, e, 0),
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
        nr::BIND => bind(c, a(0), a(1), a(2) as usize),
        nr::CONNECT => unix::connect(c, a(0), a(1), a(2) as usize),
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
