//! Raw Linux system calls for x86_64 and aarch64, without libc. Compiled
//! into the embedded second stage (`stub/main.rs`, which has no libc at
//! all) and into dcjail, so that the code both run — the layer's apply
//! sequence and the broker — is one source. `core` only.

#[cfg(target_arch = "x86_64")]
pub mod nr {
    pub const READ: usize = 0;
    pub const WRITE: usize = 1;
    pub const OPEN: usize = 2;
    pub const CLOSE: usize = 3;
    pub const MMAP: usize = 9;
    pub const RT_SIGACTION: usize = 13;
    pub const RT_SIGPROCMASK: usize = 14;
    pub const IOCTL: usize = 16;
    pub const PREAD64: usize = 17;
    pub const GETPID: usize = 39;
    pub const SOCKET: usize = 41;
    pub const SENDMSG: usize = 46;
    pub const RECVMSG: usize = 47;
    pub const BIND: usize = 49;
    pub const CONNECT: usize = 42;
    pub const GETSOCKOPT: usize = 55;
    pub const FCHDIR: usize = 81;
    pub const LISTEN: usize = 50;
    pub const SOCKETPAIR: usize = 53;
    pub const SETSOCKOPT: usize = 54;
    pub const CLONE: usize = 56;
    pub const EXECVE: usize = 59;
    pub const WAIT4: usize = 61;
    pub const KILL: usize = 62;
    pub const FCNTL: usize = 72;
    pub const RENAME: usize = 82;
    pub const MKDIR: usize = 83;
    pub const CREAT: usize = 85;
    pub const LINK: usize = 86;
    pub const SYMLINK: usize = 88;
    pub const CHMOD: usize = 90;
    pub const FCHMOD: usize = 91;
    pub const CHOWN: usize = 92;
    pub const FCHOWN: usize = 93;
    pub const LCHOWN: usize = 94;
    pub const UMASK: usize = 95;
    pub const CAPGET: usize = 125;
    pub const CAPSET: usize = 126;
    pub const UTIME: usize = 132;
    pub const MKNOD: usize = 133;
    pub const FSTATFS: usize = 138;
    pub const PRCTL: usize = 157;
    pub const SETXATTR: usize = 188;
    pub const LSETXATTR: usize = 189;
    pub const FSETXATTR: usize = 190;
    pub const REMOVEXATTR: usize = 197;
    pub const LREMOVEXATTR: usize = 198;
    pub const FREMOVEXATTR: usize = 199;
    pub const EXIT_GROUP: usize = 231;
    pub const UTIMES: usize = 235;
    pub const OPENAT: usize = 257;
    pub const MKDIRAT: usize = 258;
    pub const MKNODAT: usize = 259;
    pub const FCHOWNAT: usize = 260;
    pub const FUTIMESAT: usize = 261;
    pub const UNLINKAT: usize = 263;
    pub const RENAMEAT: usize = 264;
    pub const LINKAT: usize = 265;
    pub const SYMLINKAT: usize = 266;
    pub const READLINKAT: usize = 267;
    pub const FCHMODAT: usize = 268;
    pub const PPOLL: usize = 271;
    pub const UTIMENSAT: usize = 280;
    pub const SIGNALFD4: usize = 289;
    pub const DUP3: usize = 292;
    pub const PROCESS_VM_READV: usize = 310;
    pub const RENAMEAT2: usize = 316;
    pub const SECCOMP: usize = 317;
    pub const STATX: usize = 332;
}

#[cfg(target_arch = "aarch64")]
pub mod nr {
    pub const READ: usize = 63;
    pub const WRITE: usize = 64;
    pub const CLOSE: usize = 57;
    pub const MMAP: usize = 222;
    pub const RT_SIGACTION: usize = 134;
    pub const RT_SIGPROCMASK: usize = 135;
    pub const IOCTL: usize = 29;
    pub const PREAD64: usize = 67;
    pub const GETPID: usize = 172;
    pub const SOCKET: usize = 198;
    pub const SENDMSG: usize = 211;
    pub const RECVMSG: usize = 212;
    pub const BIND: usize = 200;
    pub const CONNECT: usize = 203;
    pub const GETSOCKOPT: usize = 209;
    pub const FCHDIR: usize = 50;
    pub const LISTEN: usize = 201;
    pub const SOCKETPAIR: usize = 199;
    pub const SETSOCKOPT: usize = 208;
    pub const CLONE: usize = 220;
    pub const EXECVE: usize = 221;
    pub const WAIT4: usize = 260;
    pub const KILL: usize = 129;
    pub const FCNTL: usize = 25;
    pub const FCHMOD: usize = 52;
    pub const FCHOWN: usize = 55;
    pub const UMASK: usize = 166;
    pub const CAPGET: usize = 90;
    pub const CAPSET: usize = 91;
    pub const FSTATFS: usize = 44;
    pub const PRCTL: usize = 167;
    pub const SETXATTR: usize = 5;
    pub const LSETXATTR: usize = 6;
    pub const FSETXATTR: usize = 7;
    pub const REMOVEXATTR: usize = 14;
    pub const LREMOVEXATTR: usize = 15;
    pub const FREMOVEXATTR: usize = 16;
    pub const EXIT_GROUP: usize = 94;
    pub const OPENAT: usize = 56;
    pub const MKDIRAT: usize = 34;
    pub const MKNODAT: usize = 33;
    pub const FCHOWNAT: usize = 54;
    pub const UNLINKAT: usize = 35;
    pub const LINKAT: usize = 37;
    pub const SYMLINKAT: usize = 36;
    pub const READLINKAT: usize = 78;
    pub const FCHMODAT: usize = 53;
    pub const PPOLL: usize = 73;
    pub const UTIMENSAT: usize = 88;
    pub const SIGNALFD4: usize = 74;
    pub const DUP3: usize = 24;
    pub const PROCESS_VM_READV: usize = 270;
    pub const RENAMEAT2: usize = 276;
    pub const SECCOMP: usize = 277;
    pub const STATX: usize = 291;
}

// Numbered alike on every architecture (the unified table, 424 and up).
pub const PIDFD_OPEN: usize = 434;
pub const CLOSE_RANGE: usize = 436;
pub const OPENAT2: usize = 437;
pub const FACCESSAT2: usize = 439;
pub const PIDFD_GETFD: usize = 438;
pub const LANDLOCK_CREATE_RULESET: usize = 444;
pub const LANDLOCK_ADD_RULE: usize = 445;
pub const LANDLOCK_RESTRICT_SELF: usize = 446;
pub const FCHMODAT2: usize = 452;

/// One system call; `Err(errno)` on failure.
///
/// # Safety
/// The arguments must be valid for system call `n`.
#[cfg(target_arch = "x86_64")]
pub unsafe fn call(n: usize, args: &[usize]) -> Result<usize, i32> {
    let mut a = [0usize; 6];
    a[..args.len()].copy_from_slice(args);
    let r: isize;
    // SAFETY: the caller vouches for the arguments; `syscall` clobbers
    // rcx and r11 only.
    unsafe {
        core::arch::asm!(
            "syscall",
            inlateout("rax") n as isize => r,
            in("rdi") a[0], in("rsi") a[1], in("rdx") a[2],
            in("r10") a[3], in("r8") a[4], in("r9") a[5],
            lateout("rcx") _, lateout("r11") _,
            options(nostack),
        );
    }
    if (-4095..0).contains(&r) {
        Err(-r as i32)
    } else {
        Ok(r as usize)
    }
}

/// One system call; `Err(errno)` on failure.
///
/// # Safety
/// The arguments must be valid for system call `n`.
#[cfg(target_arch = "aarch64")]
pub unsafe fn call(n: usize, args: &[usize]) -> Result<usize, i32> {
    let mut a = [0usize; 6];
    a[..args.len()].copy_from_slice(args);
    let r: isize;
    // SAFETY: the caller vouches for the arguments.
    unsafe {
        core::arch::asm!(
            "svc 0",
            in("x8") n,
            inlateout("x0") a[0] as isize => r,
            in("x1") a[1], in("x2") a[2], in("x3") a[3], in("x4") a[4], in("x5") a[5],
            options(nostack),
        );
    }
    if (-4095..0).contains(&r) {
        Err(-r as i32)
    } else {
        Ok(r as usize)
    }
}

/// A system call retried while it is interrupted by a signal.
///
/// # Safety
/// As for `call`.
pub unsafe fn call_retry(n: usize, args: &[usize]) -> Result<usize, i32> {
    loop {
        // SAFETY: as the caller vouches.
        match unsafe { call(n, args) } {
            Err(4) => {} // EINTR
            r => return r,
        }
    }
}

pub fn exit(code: i32) -> ! {
    loop {
        // SAFETY: exit_group takes a plain integer and does not return.
        let _ = unsafe { call(nr::EXIT_GROUP, &[code as usize]) };
    }
}

pub fn write_all(fd: i32, mut b: &[u8]) {
    while !b.is_empty() {
        // SAFETY: a valid buffer of b.len() bytes.
        match unsafe { call(nr::WRITE, &[fd as usize, b.as_ptr() as usize, b.len()]) } {
            Ok(0) => return,
            Ok(n) => b = &b[n.min(b.len())..],
            Err(4) => {} // EINTR
            Err(_) => return,
        }
    }
}

pub fn close(fd: i32) {
    // SAFETY: closing a descriptor number.
    let _ = unsafe { call(nr::CLOSE, &[fd as usize]) };
}

/// A descriptor closed when dropped.
pub struct Fd(pub i32);

impl Fd {
    pub fn raw(&self) -> usize {
        self.0 as usize
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        close(self.0);
    }
}

/// `openat(dirfd, path, flags, mode)`; `path` ends in a NUL.
pub fn openat(dirfd: usize, path: &[u8], flags: usize, mode: usize) -> Result<Fd, i32> {
    debug_assert!(path.last() == Some(&0));
    // SAFETY: a NUL-terminated path.
    unsafe { call_retry(nr::OPENAT, &[dirfd, path.as_ptr() as usize, flags, mode]) }
        .map(|fd| Fd(fd as i32))
}

/// The fields of `struct stat` that dcjail reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    pub dev: u64,
    pub ino: u64,
    pub mode: u32,
    pub nlink: u64,
    pub uid: u32,
    /// Birth time in nanoseconds, or 0 where the filesystem keeps none:
    /// with `dev` and `ino` it names one file even after its inode number
    /// is reused.
    pub btime: u64,
    /// Whether the path is the root of a mount (something mounted over its
    /// name); `None` where the kernel does not say (before Linux 5.8).
    pub mount_root: Option<bool>,
}

/// `statx` of `dirfd`/`path` (a NUL-terminated path; empty with
/// `AT_EMPTY_PATH` for the descriptor itself).
pub fn stat(dirfd: usize, path: &[u8], flags: usize) -> Result<Stat, i32> {
    // STATX_TYPE | STATX_MODE | STATX_NLINK | STATX_UID | STATX_INO | STATX_BTIME
    const MASK: usize = 0x1 | 0x2 | 0x4 | 0x8 | 0x100 | 0x800;
    let mut st = [0u8; 256];
    // SAFETY: NUL-terminated path; statx writes at most 256 bytes.
    unsafe {
        call(
            nr::STATX,
            &[
                dirfd,
                path.as_ptr() as usize,
                flags,
                MASK,
                st.as_mut_ptr() as usize,
            ],
        )?;
    }
    let u32_at = |o: usize| u32::from_ne_bytes([st[o], st[o + 1], st[o + 2], st[o + 3]]);
    let u64_at = |o: usize| {
        let mut a = [0u8; 8];
        a.copy_from_slice(&st[o..o + 8]);
        u64::from_ne_bytes(a)
    };
    // struct statx: stx_nlink u32 @16, stx_uid @20, stx_mode u16 @28,
    // stx_ino u64 @32, stx_btime {i64 sec, u32 nsec} @80, stx_dev_major/minor
    // u32 @136/@140; stx_mask u32 @0 says whether btime was filled.
    let (major, minor) = (u64::from(u32_at(136)), u64::from(u32_at(140)));
    let btime = if u32_at(0) & 0x800 != 0 {
        u64_at(80)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(u64::from(u32_at(88)))
    } else {
        0
    };
    // stx_attributes u64 @8, stx_attributes_mask u64 @56.
    const ATTR_MOUNT_ROOT: u64 = 0x2000;
    let mount_root =
        (u64_at(56) & ATTR_MOUNT_ROOT != 0).then_some(u64_at(8) & ATTR_MOUNT_ROOT != 0);
    Ok(Stat {
        // glibc's makedev, as `st_dev` reads on the host side.
        dev: ((major & 0xfff) << 8)
            | ((major & !0xfff) << 32)
            | (minor & 0xff)
            | ((minor & !0xff) << 12),
        ino: u64_at(32),
        mode: u32::from(u16::from_ne_bytes([st[28], st[29]])),
        nlink: u64::from(u32_at(16)),
        uid: u32_at(20),
        btime,
        mount_root,
    })
}

/// The decimal digits of `v`, written at the end of `d` (no allocator:
/// for /proc paths and descriptor numbers).
pub fn digits(mut v: u64, d: &mut [u8; 20]) -> &[u8] {
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
