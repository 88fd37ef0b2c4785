//! Hard links between two writable roots. bwrap mounts each writable root
//! apart, and the kernel refuses a link across two mounts (EXDEV) even
//! where the host holds both roots on one filesystem: pnpm then keeps a
//! second store in every project, uv copies. The launch opens each root in
//! the host's mount namespace (`Program::hosts`); when the sandbox's link
//! fails with EXDEV the broker makes the same link there, for a file and a
//! directory it checked in the sandbox's own view first:
//! - the file is a regular file, no mount is over its name (a kept file,
//!   a masked one) and the command could open it for reading and writing
//!   (its mount is not read-only, its mode lets this user, the layer's
//!   rules grant it): so no kept or denied file gets a new name, and a
//!   file outside the writable roots has no host twin to link;
//! - the directory is one the command can write into (not read-only
//!   mounted, like `.git/hooks`), beside the checks `link` made already
//!   (no guard, the layer's rights, REFER);
//! - each is found again beneath its root's host descriptor, without
//!   following any symlink or crossing a mount, and must be the very inode
//!   checked (device and inode number): what the command renames or swaps
//!   meanwhile makes the link fail, never land elsewhere.
//!
//! A command that restricted itself (a shadow acts for it) keeps EXDEV:
//! its own domain's rules attach to inodes of the sandbox's tree, some of
//! which the host's paths do not pass, so a check made there could grant
//! what the same domain refuses inside. Renames keep EXDEV too: `mv` and
//! the like copy then; a directory moved through the host's mount would
//! carry the read-only mounts' names out from under them, and a file
//! renamed there onto an existing name would replace a kept file that the
//! sandbox holds by a mount over that name (EBUSY inside).

use super::*;

const W_OK: usize = 2;
const R_OK: usize = 4;
const X_OK: usize = 1;
const AT_EACCESS: usize = 0x200;
const RESOLVE_NO_XDEV: u64 = 0x01;
const RESOLVE_NO_SYMLINKS: u64 = 0x04;
const RESOLVE_BENEATH: u64 = 0x08;

/// The link `link` made in the sandbox failed with EXDEV: makes it through
/// the host's mount of the roots, or answers EXDEV as the kernel did.
/// `src` is the file checked by `link`, `to` where its new name goes.
pub(super) fn link(c: &Ctx<'_>, src: &Fd, to: &At) -> Result<Reply, i32> {
    if c.shadow >= 0 || !c.prog.hosts().any(|(fd, _)| fd >= 0) {
        return Err(EXDEV);
    }
    let (host_src, host_dir) = match (may_link(c, src, to), twins(c, src, &to.dir)) {
        (Ok(()), Ok(t)) => t,
        _ => return Err(EXDEV),
    };
    if !c.valid() {
        return Ok(Reply::None);
    }
    let mut p = Buf::new();
    self_path(&host_src, &mut p)?;
    // Our own descriptor's magic link: the inode found and compared above.
    let args = [
        Arg::N(AT_FDCWD),
        Arg::B(p.c()),
        Arg::N(host_dir.raw()),
        Arg::B(to.name.c()),
        Arg::N(AT_SYMLINK_FOLLOW),
    ];
    perform(c, nr::LINKAT, &args, None)?;
    Ok(Reply::Val(0))
}

/// What the sandbox's own view says of the file and the directory: see
/// the module's list. Any refusal is EXDEV, the kernel's own answer.
fn may_link(c: &Ctx<'_>, src: &Fd, to: &At) -> Result<(), i32> {
    let st = stat_fd(src)?;
    if st.mode & S_IFMT != S_IFREG || st.mount_root != Some(false) {
        return Err(EXDEV);
    }
    let need = right::READ_FILE | right::WRITE_FILE;
    if rights_of(c.prog, src)? & need != need {
        return Err(EXDEV);
    }
    // As this process: the command's user and groups, no capability.
    access(src, R_OK | W_OK)?;
    access(&to.dir, W_OK | X_OK)?;
    Ok(())
}

/// faccessat2 of the descriptor itself, with the effective ids: EROFS for
/// a read-only mount, EACCES for the mode.
fn access(fd: &Fd, mode: usize) -> Result<(), i32> {
    // SAFETY: an empty NUL-terminated path and AT_EMPTY_PATH: the descriptor.
    unsafe {
        sys::call(
            sys::FACCESSAT2,
            &[
                fd.raw(),
                c"".as_ptr() as usize,
                mode,
                AT_EACCESS | AT_EMPTY_PATH,
            ],
        )
    }
    .map(|_| ())
}

/// The host's descriptors of the file and of the directory.
fn twins(c: &Ctx<'_>, src: &Fd, dir: &Fd) -> Result<(Fd, Fd), i32> {
    Ok((twin(c, src, 0)?, twin(c, dir, O_DIRECTORY)?))
}

/// `fd` found again beneath the host's descriptor of the writable root its
/// path lies in (the deepest one): no symlink followed, no mount crossed,
/// and the same device and inode, or EXDEV.
fn twin(c: &Ctx<'_>, fd: &Fd, dir: usize) -> Result<Fd, i32> {
    let mut path = Buf::new();
    path_of(fd, &mut path)?;
    let p = path.bytes();
    let (root_fd, root) = c
        .prog
        .hosts()
        .filter(|(h, r)| *h >= 0 && is_under(p, r))
        .max_by_key(|(_, r)| r.len())
        .ok_or(EXDEV)?;
    let rest = if root == b"/" { p } else { &p[root.len()..] };
    let rest = {
        let mut i = 0;
        while i < rest.len() && rest[i] == b'/' {
            i += 1;
        }
        &rest[i..]
    };
    let mut rel = Buf::new();
    rel.set(&[if rest.is_empty() { b"." } else { rest }])?;
    #[repr(C)]
    struct How {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = How {
        flags: (O_PATH | O_NOFOLLOW | O_CLOEXEC | dir) as u64,
        mode: 0,
        resolve: RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: a NUL-terminated path and an open_how of the size given.
    let got = unsafe {
        sys::call(
            sys::OPENAT2,
            &[
                root_fd as usize,
                rel.c().as_ptr() as usize,
                &how as *const How as usize,
                core::mem::size_of::<How>(),
            ],
        )
    }
    .map_err(|_| EXDEV)?;
    let got = Fd(got as i32);
    let (a, b) = (stat_fd(fd)?, stat_fd(&got)?);
    if (a.dev, a.ino) != (b.dev, b.ino) {
        return Err(EXDEV);
    }
    Ok(got)
}
