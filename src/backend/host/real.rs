//! [`Probe`] answered by this machine (Linux).

use super::{paths, NsCalls, Probe, Sys};
use std::path::{Path, PathBuf};

/// This machine.
pub struct Real;

/// Files larger than this are not what a probe reads (AppArmor profiles
/// are a few KiB); a bigger one reads as absent.
const READ_LIMIT: u64 = 1 << 20;

impl Probe for Real {
    fn read(&self, path: &str) -> Option<String> {
        use std::io::Read;
        let f = std::fs::File::open(path).ok()?;
        let mut s = String::new();
        f.take(READ_LIMIT + 1).read_to_string(&mut s).ok()?;
        (s.len() as u64 <= READ_LIMIT).then_some(s)
    }

    fn exists(&self, path: &str) -> bool {
        std::fs::symlink_metadata(path).is_ok()
    }

    fn list(&self, dir: &str) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter_map(|e| e.file_name().into_string().ok())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    fn env(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn euid(&self) -> u32 {
        // SAFETY: geteuid never fails.
        unsafe { libc::geteuid() }
    }

    fn kernel_release(&self) -> String {
        self.read(paths::OSRELEASE)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    }

    fn seccomp_filtered(&self) -> bool {
        // SAFETY: a query with no pointer arguments.
        unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) == 2 }
    }

    fn seccomp_available(&self) -> Result<(), String> {
        seccomp_probe()
    }

    fn seccomp_listener(&self) -> bool {
        matches!(self.seccomp_listener_answer(), None | Some(Sys::Ok(_)))
    }

    fn seccomp_listener_answer(&self) -> Option<Sys> {
        if !self.seccomp_filtered() {
            return None;
        }
        // Tried in a throwaway child: a filter that allows everything, with
        // a listener; EBUSY when a filter above holds one.
        let allow = [libc::sock_filter {
            code: (libc::BPF_RET | libc::BPF_K) as u16,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ALLOW,
        }];
        let prog = libc::sock_fprog {
            len: 1,
            filter: allow.as_ptr().cast_mut(),
        };
        const NEW_LISTENER: libc::c_ulong = 1 << 3;
        let r = guarded(true, || {
            // SAFETY: plain prctl, then a sock_fprog of one instruction that
            // outlives the call; in a child that exits right after.
            unsafe {
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return -1;
                }
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    NEW_LISTENER,
                    &prog as *const libc::sock_fprog,
                )
            }
        });
        Some(r)
    }

    fn landlock_abi(&self) -> Sys {
        const LANDLOCK_CREATE_RULESET_VERSION: libc::c_long = 1;
        guarded(self.seccomp_filtered(), || {
            // SAFETY: the version query reads no memory.
            unsafe {
                libc::syscall(
                    libc::SYS_landlock_create_ruleset,
                    std::ptr::null::<libc::c_void>(),
                    0usize,
                    LANDLOCK_CREATE_RULESET_VERSION,
                )
            }
        })
    }

    fn netlink_route(&self) -> Sys {
        if !self.seccomp_filtered() {
            return Sys::Ok(0);
        }
        guarded(true, || {
            // SAFETY: a socket made and closed again, in a child that exits
            // right after.
            unsafe {
                let fd = libc::socket(
                    libc::AF_NETLINK,
                    libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                    libc::NETLINK_ROUTE,
                );
                if fd >= 0 {
                    libc::close(fd);
                }
                fd as libc::c_long
            }
        })
    }

    fn ns_calls(&self) -> NsCalls {
        if !self.seccomp_filtered() {
            return NsCalls::Unfiltered;
        }
        // The low byte of the flags is clone's exit signal, which unshare
        // rejects: EINVAL from the kernel, before anything is created.
        let unshare = guarded(true, || {
            let flags = libc::CLONE_NEWUSER | 1;
            // SAFETY: unshare with flags the kernel refuses; nothing changes.
            unsafe { libc::syscall(libc::SYS_unshare, flags as libc::c_long) }
        });
        // CLONE_NEWUSER with CLONE_FS is always EINVAL (copy_process).
        let clone = guarded(true, || {
            let flags = (libc::CLONE_NEWUSER | libc::CLONE_FS) as libc::c_long;
            // SAFETY: a clone the kernel refuses; should one ever start, the
            // copy leaves at once without touching anything.
            let r = unsafe { libc::syscall(libc::SYS_clone, flags, 0, 0, 0, 0) };
            if r == 0 {
                // SAFETY: leaving the accidental child.
                unsafe { libc::_exit(0) };
            }
            r
        });
        NsCalls::Filtered { unshare, clone }
    }

    fn mount_call(&self) -> Option<Sys> {
        if !self.seccomp_filtered() {
            return None;
        }
        // MS_NOUSER is refused (EINVAL) before the kernel checks
        // privileges or mounts anything; "/" resolves everywhere.
        Some(guarded(true, || {
            // SAFETY: a mount the kernel refuses; the strings are NUL-terminated
            // literals and the other pointers are null, which mount(2) allows.
            unsafe {
                libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_NOUSER,
                    std::ptr::null(),
                ) as libc::c_long
            }
        }))
    }

    fn canonical(&self, p: &Path) -> Option<PathBuf> {
        std::fs::canonicalize(p).ok()
    }

    fn setuid_root(&self, p: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(p)
            .map(|m| m.uid() == 0 && m.mode() & libc::S_ISUID != 0)
            .unwrap_or(false)
    }

    fn bwrap(&self) -> Result<PathBuf, String> {
        // `doctor` asks with no plan: the caller's PATH and uid, read here.
        let facts = crate::plan::Facts::gather().map_err(|r| r.message)?;
        crate::backend::bwrap::find(&facts, None)
    }

    fn bwrap_version(&self, bwrap: &Path) -> Option<(u32, u32, u32)> {
        crate::backend::bwrap::version(bwrap)
    }

    fn try_bwrap(&self, bwrap: &Path, net: bool) -> Result<(), String> {
        let out = std::process::Command::new(bwrap)
            .args(net.then_some("--unshare-net"))
            .args([
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--proc",
                "/proc",
                "--unshare-user",
                "--unshare-pid",
                "--unshare-ipc",
                "--unshare-uts",
                "--unshare-cgroup-try",
                "--die-with-parent",
                "--new-session",
                "--cap-drop",
                "ALL",
                "--",
                "true",
            ])
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", bwrap.display()))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }

    fn second_stage(&self) -> Result<(), String> {
        let facts = crate::plan::Facts::gather().map_err(|r| r.message)?;
        crate::backend::bwrap::layer_bytes_for_default(&facts)
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

const LONG: usize = std::mem::size_of::<libc::c_long>();
/// The child's answer on the pipe: the return value, then errno.
const ANSWER: usize = LONG + 4;

/// Runs one system call, in a throwaway child when a seccomp filter might
/// kill the caller for it.
fn guarded(filtered: bool, call: impl Fn() -> libc::c_long) -> Sys {
    let answer = |r: libc::c_long| {
        if r >= 0 {
            Sys::Ok(r)
        } else {
            Sys::Err(errno())
        }
    };
    if !filtered {
        return answer(call());
    }
    let mut fds = [0; 2];
    // SAFETY: a pipe into a two-int array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Sys::Err(errno());
    }
    let (r, w) = (fds[0], fds[1]);
    // SAFETY: the child makes one system call, writes its answer and
    // `_exit`s; it allocates nothing and touches no lock.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let v = call();
        let e = if v < 0 { errno() } else { 0 };
        let mut buf = [0u8; ANSWER];
        buf[..LONG].copy_from_slice(&v.to_le_bytes());
        buf[LONG..].copy_from_slice(&e.to_le_bytes());
        // SAFETY: writing a stack buffer to our pipe, then leaving.
        unsafe {
            libc::write(w, buf.as_ptr().cast(), buf.len());
            libc::_exit(0);
        }
    }
    // SAFETY: closing our copy of the write end.
    unsafe { libc::close(w) };
    if pid < 0 {
        let e = errno();
        // SAFETY: closing the read end we own.
        unsafe { libc::close(r) };
        return Sys::Err(e);
    }
    let mut buf = [0u8; ANSWER];
    let mut got = 0usize;
    while got < buf.len() {
        // SAFETY: reading into the rest of a stack buffer.
        let n = unsafe { libc::read(r, buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        if n > 0 {
            got += n as usize;
        } else if n < 0 && errno() == libc::EINTR {
            continue;
        } else {
            break;
        }
    }
    // SAFETY: closing the read end we own.
    unsafe { libc::close(r) };
    let mut ws = 0;
    loop {
        // SAFETY: waiting for our own child.
        let w = unsafe { libc::waitpid(pid, &mut ws, 0) };
        if w == pid || (w < 0 && errno() != libc::EINTR) {
            break;
        }
    }
    if libc::WIFSIGNALED(ws) {
        return Sys::Killed(libc::WTERMSIG(ws));
    }
    if got < buf.len() {
        return Sys::Err(libc::EIO);
    }
    let mut v = [0u8; LONG];
    v.copy_from_slice(&buf[..LONG]);
    let mut e = [0u8; 4];
    e.copy_from_slice(&buf[LONG..]);
    let v = libc::c_long::from_le_bytes(v);
    if v >= 0 {
        Sys::Ok(v)
    } else {
        Sys::Err(i32::from_le_bytes(e))
    }
}

/// Whether this kernel takes seccomp filters returning errno.
fn seccomp_probe() -> Result<(), String> {
    crate::backend::seccomp::arch()?;
    let action: u32 = 0x0005_0000; // SECCOMP_RET_ERRNO
                                   // SAFETY: SECCOMP_GET_ACTION_AVAIL only reads the u32 it is given.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_ACTION_AVAIL,
            0,
            &action as *const u32,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        let e = std::io::Error::last_os_error();
        Err(format!(
            "seccomp filters are not available in this kernel ({e})"
        ))
    }
}

/// `p` itself when it is absolute, plain (no `.`, `..`, `//`) and no
/// component of it is a symlink: then it is its own canonical path. One path
/// walk (openat2 with RESOLVE_NO_SYMLINKS) instead of realpath's one per
/// component, on every launch (`bwrap::find`). None means "find out the
/// slow way".
pub fn without_symlinks(p: &Path) -> Option<(PathBuf, std::fs::Metadata)> {
    use std::os::unix::ffi::OsStrExt;
    let plain = p.is_absolute()
        && p.components()
            .skip(1)
            .all(|c| matches!(c, std::path::Component::Normal(_)))
        && !p.as_os_str().as_bytes().windows(2).any(|w| w == b"//")
        && !p.as_os_str().as_bytes().ends_with(b"/");
    if !plain {
        return None;
    }
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).ok()?;
    // SAFETY: open_how is plain data.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_PATH | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_NO_SYMLINKS;
    // SAFETY: valid C string and open_how of the size given.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: the fd was just opened and is owned from here.
    let f = std::fs::File::from(unsafe {
        <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd as i32)
    });
    // fstat works on an O_PATH descriptor: the metadata of what was opened.
    let m = f.metadata().ok()?;
    Some((p.to_path_buf(), m))
}

/// Whether `p` lies on a read-only mount, the name itself (a symlink is
/// not followed): the nested check's question (`backend::nested`).
pub fn on_read_only_mount(p: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(p.as_os_str()))
    else {
        return false;
    };
    // SAFETY: `c` is a NUL-terminated path; the descriptor is closed below.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return false;
    }
    // SAFETY: an all-zero statvfs is a valid value to be filled.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open and `st` is writable for the call.
    let r = unsafe { libc::fstatvfs(fd, &mut st) };
    // SAFETY: `fd` is ours and closed once.
    unsafe { libc::close(fd) };
    r == 0 && st.f_flag & libc::ST_RDONLY != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_namespace_probes_change_nothing_here() {
        // Asked through the guarded child, as under a filter: the kernel's
        // own answer to both calls is EINVAL, and no namespace appears.
        let before = std::fs::read_link("/proc/self/ns/user").unwrap();
        // SAFETY: unshare with an invalid flag combination creates nothing.
        let unshare = guarded(true, || unsafe {
            libc::syscall(libc::SYS_unshare, (libc::CLONE_NEWUSER | 1) as libc::c_long)
        });
        assert_eq!(unshare, Sys::Err(libc::EINVAL));
        // SAFETY: unshare with an invalid flag combination creates nothing.
        let direct = guarded(false, || unsafe {
            libc::syscall(libc::SYS_unshare, (libc::CLONE_NEWUSER | 1) as libc::c_long)
        });
        assert_eq!(direct, Sys::Err(libc::EINVAL));
        assert_eq!(std::fs::read_link("/proc/self/ns/user").unwrap(), before);
    }

    #[test]
    fn the_mount_probe_gets_the_kernels_einval_and_mounts_nothing() {
        // SAFETY: as in `mount_call`: refused before anything is mounted.
        let r = guarded(true, || unsafe {
            libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_NOUSER,
                std::ptr::null(),
            ) as libc::c_long
        });
        assert_eq!(r, Sys::Err(libc::EINVAL));
    }

    #[test]
    fn a_killed_asker_is_reported_not_fatal() {
        // SAFETY: raise only signals the throwaway child that asks.
        let r = guarded(true, || unsafe {
            libc::raise(libc::SIGKILL) as libc::c_long
        });
        assert_eq!(r, Sys::Killed(libc::SIGKILL));
    }

    #[test]
    fn landlock_query_answers_the_same_either_way() {
        // SAFETY: the version query reads no memory.
        let a = guarded(false, || unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                1 as libc::c_long,
            )
        });
        let b = Real.landlock_abi();
        assert_eq!(a, b);
    }
}
